"""The hand-out in the real browser (issue 24): downloaded from a chapter, opened from file://
with the network off, it reads like the page: the same prose, its formulas typeset by the KaTeX
inlined in it, its tables and code blocks."""
from __future__ import annotations

import re

import pytest

from tests.browser_util import exceptions, shot, skip_questions, wait_idle
from ui.i18n import translate

pytestmark = pytest.mark.browser


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_handout_opened_offline_reads_like_the_page(server, browser, lang, tmp_path):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(server.url("loss-and-gradients", lang=lang), wait_until="domcontentloaded")
        wait_idle(pg)
        skip_questions(pg, lang)
        wait_idle(pg)
        assert exceptions(pg) == []
        main = pg.locator("[data-testid=stMain]")
        paragraphs = [_norm(p) for p in pg.evaluate(
            """() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stMarkdownContainer] p')]
                 .filter(p => !p.closest('[data-testid=stButton],[data-testid=stDownloadButton],summary,'
                                         + '[data-testid=stMetric],[data-testid=stAlert],'
                                         + '[data-testid=stWidgetLabel],label'))
                 .map(p => p.innerText)""")]
        paragraphs = [p for p in paragraphs if len(p) > 30]
        n_tex = main.locator(".katex-display").count()
        n_tables = main.locator("[data-testid=stDataFrame]").count()
        assert paragraphs and n_tex >= 3 and n_tables >= 2
        path = tmp_path / f"handout-{lang}.html"
        # the file is made when the button is pressed (a deferred download); once in a clean-clone
        # CI run the first press gave no download within 90 s (cause not found: a rerun between
        # drawing the button and the press replaces its deferred file), so a second press is allowed,
        # as a student would press again, within the same 90 s in all
        for attempt in (1, 2):
            wait_idle(pg)
            try:
                with pg.expect_download(timeout=45_000) as dl:
                    pg.get_by_role("button", name=translate("common.download_html", lang)).click()
                break
            except Exception:  # noqa: BLE001 - playwright's TimeoutError; the second one fails the test
                if attempt == 2:
                    raise
        dl.value.save_as(path)
        off = browser.new_context(offline=True)
        fetched = []
        off.on("request", lambda r: fetched.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        hp = off.new_page()
        errors = []
        hp.on("pageerror", lambda e: errors.append(str(e)))
        hp.goto(path.as_uri())
        hp.wait_for_selector(".katex")
        text = _norm(hp.inner_text("body"))
        missing = [p for p in paragraphs if p[:40] not in text]
        assert not missing, missing[:3]
        assert hp.locator(".tex .katex").count() == n_tex                   # every formula typeset
        assert hp.locator("table").count() >= n_tables
        assert fetched == [] and errors == []
        assert "&quot;" not in text and "&amp;" not in text
        hp.screenshot(path=str(tmp_path / "handout.png"))
        shot(hp, f"handout-{lang}")
        off.close()
    finally:
        ctx.close()
