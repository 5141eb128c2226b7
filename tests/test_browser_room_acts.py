"""The room's activities as a class, in real browsers: an English lecturer on the projector
(presenter mode), an English student on a desktop and a Chinese student on a phone, both by the
student link.

- Map the heads together (/attention): every student's page maps heads of the lecturer's
  sentence (not its own language's default), each sends its heads, and the projector counts
  heads from both students.
- Be the language model (/generation): the lecturer asks the room, both students pick, the
  lecturer reveals, and the projector and each phone show the room's result: the two different
  picks are a tie, named as one, and no measure reads "inf".

Screenshots (``LMVIZ_SCREENSHOTS``, default ./screenshots) ``room-<activity>-<role>-<lang>.png``.
"""
from __future__ import annotations

import re

import pytest

from tests.browser_util import ROOT, end_class, exceptions, own_browser, own_server, shot, wait_idle  # noqa: F401 - own_browser, own_server: this module's fixtures
from tests.test_browser_classroom import _until
from tests.test_browser_phone import PHONE_UA
from ui.i18n import translate

pytestmark = pytest.mark.browser


LIVE = ":not([data-lmviz-off] *)"     # an element of the page as drawn now (not a stale one)


def _desktop(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    return ctx, pg


def _phone(browser):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                              device_scale_factor=2, user_agent=PHONE_UA)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    return ctx, pg


def _text(pg) -> str:
    """The page's text ("" while a page is being swapped for another: a wait polls again)."""
    from playwright.sync_api import Error

    try:
        return pg.locator("[data-testid=stMain]").inner_text(timeout=5_000)
    except Error:
        return ""


# the text a person sees on the page: not in a presenter step that is hidden (data-lmviz-off:
# opacity 0), not a chart's 1-pixel text twin; whitespace dropped (bold, code spans and line
# breaks split a sentence into several text nodes)
_SEEN = """() => {
  const m = document.querySelector('[data-testid=stMain]'), out = [];
  if (!m) return '';
  const w = document.createTreeWalker(m, NodeFilter.SHOW_TEXT);
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('[data-lmviz-off]')) continue;
    const r = p.getBoundingClientRect(), cs = getComputedStyle(p);
    if (r.width <= 2 || r.height <= 2 || cs.visibility === 'hidden') continue;
    out.push(n.textContent);
  }
  return out.join('');
}"""


def _plain(text: str) -> str:
    return re.sub(r"\s+|\*\*", "", text)


def _sees(pg, text: str) -> bool:
    return _plain(text) in _plain(pg.evaluate(_SEEN))


# presenter mode: the index of the step (assets/js/slides.js) that holds ``text``, and the one shown
_STEP = r"""(text) => {
  const S = window.lmvizSlides, plain = s => s.replace(/\s+|\*\*/g, '');
  if (!S || !S.steps) return null;
  const j = S.steps.findIndex(st => st.els.some(el => plain(el.innerText).includes(plain(text))));
  return [j, S.i];
}"""


def _step_to(pg, text: str) -> None:
    """The lecturer steps the projector (PageUp / PageDown) to the step that shows ``text``."""
    for _ in range(12):
        if _sees(pg, text):
            return
        got = pg.evaluate(_STEP, text)
        if not got or got[0] < 0:
            pg.wait_for_timeout(500)
            continue
        pg.keyboard.press("PageDown" if got[0] > got[1] else "PageUp")
        pg.wait_for_timeout(400)


def _button(pg, name: str):
    return pg.locator(f"button{LIVE}").filter(has_text=name)


def _section_number(slug: str, key: str) -> int:
    """The presenter's ``?sec=`` of the section ``key`` of chapter ``slug``: its place in the
    chapter file's list of sections (read from the file: a page runs when imported)."""
    from ui.chapters import by_slug

    keys = re.findall(r'\("(\w+\.sec_\w+)",', (ROOT / by_slug(slug).file).read_text())
    return keys.index(key) + 1


def _start_class(server, lec, slug: str, section: str, until: str) -> str:
    """The English lecturer opens the slide link of ``slug``'s ``section`` in presenter mode (the
    walk there from the chapter's first slide, PageDown by PageDown, is the clicker tests' part:
    here it was 20-30 s of CI per class), starts a class and steps slide by slide until the
    projector shows ``until``; the class code."""
    lec.goto(server.url(slug, present=1, lang="en", sec=_section_number(slug, section)),
             wait_until="domcontentloaded")
    wait_idle(lec)
    lec.get_by_role("button", name=translate("class.start", "en")).click()
    lec.wait_for_selector("[data-testid=stCode]")
    link = lec.locator("[data-testid=stCode]").first.inner_text().strip()
    code = re.search(r"follow=([A-Z0-9]+)", link).group(1)
    lec.wait_for_selector(".st-key-lmviz-slides[data-steps]", state="attached")
    for _ in range(40):
        # the slides' own map (assets/js/slides.js): the step shown is the one that holds
        # ``until`` (a page just drawn shows every step until the slides are laid out)
        got = lec.evaluate(_STEP, until)
        if got and got[0] >= 0 and got[0] == got[1] and _sees(lec, until):
            break
        lec.keyboard.press("PageUp" if got and 0 <= got[0] < got[1] else "PageDown")
        lec.wait_for_timeout(500)
        wait_idle(lec)
    assert _sees(lec, until), _text(lec)[:2000]
    return code


def _join(server, pg, code: str, lang: str) -> None:
    pg.goto(server.url("", follow=code, lang=lang), wait_until="domcontentloaded")


def test_the_room_maps_the_lecturers_heads_whatever_its_language(server, browser):
    lctx, lec = _desktop(browser)
    ectx, en = _desktop(browser)
    zctx, zh = _phone(browser)
    try:
        code = _start_class(server, lec, "attention", "att.sec_heads_map", translate("att.hm_fill", "en"))
        sentence = "The capital of France is Paris."
        assert sentence in _text(lec)
        _join(server, en, code, "en")
        _join(server, zh, code, "zh")
        for pg, lang in ((en, "en"), (zh, "zh")):
            send = _button(pg, translate("att.hm_send", lang))
            assert _until(pg, lambda: "/attention" in pg.url and send.count() > 0, 60_000), _text(pg)[:2000]
            wait_idle(pg)
            assert _sees(pg, translate("att.hm_sentence", lang, text=sentence))   # the lecturer's sentence
            assert "床前明月光" not in _text(pg)
            send.first.click()
            assert _until(pg, lambda: _sees(pg, translate("att.hm_sent", lang)))
        # the projector: every head, from both students
        room = translate("att.hm_room", "en", k=16, n=16, r=2, s=2)
        assert _until(lec, lambda: _plain(room) in _plain(_text(lec))), _text(lec)[-1500:]
        wait_idle(lec)
        _step_to(lec, room)
        assert _sees(lec, room)
        assert exceptions(lec) == exceptions(en) == exceptions(zh) == []
        shot(lec, "room-heads-projector-en")
        zh.get_by_text(sentence).first.scroll_into_view_if_needed()
        assert _sees(zh, translate("att.hm_sentence", "zh", text=sentence))
        shot(zh, "room-heads-phone-zh")
    finally:
        end_class(lec, "en")
        for ctx in (lctx, ectx, zctx):
            ctx.close()


def test_the_room_plays_the_language_model_and_sees_a_tie(server, browser):
    lctx, lec = _desktop(browser)
    ectx, en = _desktop(browser)
    zctx, zh = _phone(browser)
    try:
        # the room's section (the chapter's own questions have an "Ask the room" button too)
        code = _start_class(server, lec, "generation", "gen.sec_room",
                            translate("gen.room_choices", "en", choices="").rstrip("."))
        _button(lec, translate("gen.room_ask", "en")).first.click()
        wait_idle(lec)
        _join(server, en, code, "en")
        _join(server, zh, code, "zh")
        for pg, lang in ((en, "en"), (zh, "zh")):
            send = _button(pg, translate("class.send", lang))
            assert _until(pg, lambda: "/generation" in pg.url and send.count() > 0, 60_000), _text(pg)[:2000]
            wait_idle(pg)
            radio = pg.locator(f"[data-testid=stRadio]{LIVE}").last
            # two different picks: the English student the model's first choice, the Chinese one
            # "another token"
            if lang == "en":
                radio.locator("label:has(input[type=radio])").first.click()
            else:
                radio.get_by_text(translate("gen.room_other", lang), exact=True).click()
            send.first.click()
            assert _until(pg, lambda: send.count() == 0)
        answered = translate("class.answered_n", "en", n=2)
        # generous: on CI's loaded 2-core machine the projector's count took longer than 15 s once
        # (its text was being swapped, "", at the last look)
        assert _until(lec, lambda: _plain(answered) in _plain(_text(lec)), 60_000), \
            (lec.url, _text(lec)[-1500:] or lec.locator("body").inner_text()[-1500:])
        _step_to(lec, answered)
        assert _sees(lec, answered)
        assert _sees(lec, translate("class.senders", "en", k=1))      # on the projector: both students, one address
        shot(lec, "room-lm-projector-count-en")
        _button(lec, translate("class.reveal_all", "en")).first.click()
        wait_idle(lec)
        for pg, lang in ((lec, "en"), (en, "en"), (zh, "zh")):
            tie = translate("claim.room_favourite.tie", lang).split("{")[0]
            assert _until(pg, lambda: _plain(tie) in _plain(_text(pg)), 30_000), _text(pg)[-2000:]
            wait_idle(pg)
            if pg is lec:
                _step_to(lec, tie)
            assert _sees(pg, tie)
            shown = _text(pg)
            assert _plain(translate("gen.room_measures", lang).split("{")[0]) in _plain(shown)
            assert not re.search(r"\binf\b|\bnan\b|∞", shown), shown
            assert exceptions(pg) == []
        shot(lec, "room-lm-projector-en")
        lec.keyboard.press("PageUp")                    # the step before: the room beside the model
        lec.wait_for_timeout(600)
        shot(lec, "room-lm-projector-chart-en")
        zh.get_by_text(translate("class.asked", "zh")).first.scroll_into_view_if_needed()
        shot(zh, "room-lm-phone-zh")
    finally:
        end_class(lec, "en")
        for ctx in (lctx, ectx, zctx):
            ctx.close()
