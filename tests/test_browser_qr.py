"""The projector's QR code, as a phone in the room sees it: the lecturer (presenter mode, 1280x720,
the Chinese lecture) starts a class; a screenshot of the class bar as drawn is decoded with
Debian's ``zbarimg`` (zbar-tools) to the student link the bar prints; a touch phone opens the
decoded link and lands on the lecturer's chapter, following the class.

This is the test that would have caught the empty QR box: ``st.html`` drops an inline ``<svg>``,
so the bar's QR element was drawn 0 px high while the server-side string held a valid code.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.browser_util import SHOTS, end_class, exceptions, shot, wait_idle
from ui.i18n import translate

pytestmark = pytest.mark.browser


def _zbarimg() -> str:
    path = shutil.which("zbarimg")
    if path is None:
        if os.environ.get("LMVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail("zbarimg is required here (apt-get install zbar-tools)")
        pytest.skip("zbarimg not found (apt-get install zbar-tools)")
    return path


def test_the_projectors_qr_code_decodes_to_the_student_link_a_phone_follows(server, browser):
    zbar = _zbarimg()
    lctx = browser.new_context(viewport={"width": 1280, "height": 720})
    pctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                               device_scale_factor=2)
    try:
        lec = lctx.new_page()
        lec.set_default_timeout(90_000)
        lec.goto(server.url("generation", present=1, lang="zh"), wait_until="domcontentloaded")
        wait_idle(lec)
        lec.get_by_role("button", name=translate("class.start", "zh")).click()
        lec.wait_for_selector("[data-testid=stCode]")
        wait_idle(lec)
        link = lec.locator("[data-testid=stCode]").first.inner_text().strip()
        assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/\?follow=[A-Z0-9]+", link)
        qr = lec.locator("img.lmviz-qr")
        qr.wait_for(state="visible")
        lec.wait_for_function("() => { const i = document.querySelector('img.lmviz-qr');"
                              " return i && i.complete && i.naturalWidth > 0; }")
        box = qr.bounding_box()
        # big enough to read off a projector: at least a sixth of the window's height
        assert box["height"] >= 720 / 6 and abs(box["width"] - box["height"]) < 2
        # what the camera sees: the class bar as drawn (the code, the link and the QR), not the
        # image's source
        SHOTS.mkdir(parents=True, exist_ok=True)
        bar = SHOTS / "class-qr-bar-zh.png"
        lec.locator("[data-testid=stVerticalBlock]:has(> * img.lmviz-qr), "
                    "[data-testid=stVerticalBlock]:has(img.lmviz-qr)").last.screenshot(path=str(bar))
        out = subprocess.run([zbar, "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", str(bar)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == link

        # the phone opens what it decoded, with no language of its own: the lecturer's chapter
        ph = pctx.new_page()
        ph.set_default_timeout(90_000)
        ph.goto(out.stdout.strip(), wait_until="domcontentloaded")
        code = link.rsplit("=", 1)[1]
        following = translate("class.following", "en", cls=code).replace("**", "")
        ph.wait_for_function("t => document.querySelector('[data-testid=stMain]')?.innerText.includes(t)",
                             arg=following, timeout=30_000, polling=200)
        assert "/generation" in ph.url
        wait_idle(ph)
        assert exceptions(ph) == [] and exceptions(lec) == []
        shot(ph, "class-qr-phone-followed")
    finally:
        end_class(lec, "zh")
        lctx.close()
        pctx.close()
