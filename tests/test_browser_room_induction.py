"""The room predicts, the run answers (issue 57), as a class: the lecturer (presenter mode, in
Chinese) starts a class on /training with the induction preset, asks how the loss will go when the
second half becomes predictable, an English student on a phone answers; the lecturer starts the
run, and the reveal is possible only once the run's own evaluations settle the answer (a head
formed). The projector then shows the head switching on, the sentence the run's data choose and
the head's attention before and now; the lecturer asks whether a one-layer model will learn it,
the phone answers, one press trains the one-layer control, and its reveal comes once the control
has trained past the step the two-layer run formed at. The phone's verdict names the run's answer.

Screenshots (``LMVIZ_SCREENSHOTS``, default ./screenshots) ``room-induction-<who>-<step>-<lang>.png``.
"""
from __future__ import annotations

import re

import pytest

from tests.browser_util import SHOTS, end_class, exceptions, own_browser, own_server, shot, wait_idle  # noqa: F401 - own_browser, own_server: this module's fixtures
from tests.test_browser_classroom import _until
from tests.test_browser_room_acts import LIVE, _button, _desktop, _phone, _plain, _sees, _text
from ui.i18n import translate

pytestmark = pytest.mark.browser

LANG, PHONE = "zh", "en"              # the lecture in Chinese, a student's phone in English


# [the step that holds the element, the step shown] (assets/js/slides.js), for a CSS selector
_STEP_OF = r"""(sel) => {
  const S = window.lmvizSlides, el = document.querySelector(sel);
  if (!S || !S.steps || !el) return null;
  return [S.steps.findIndex(st => st.els.some(e => e.contains(el))), S.i];
}"""


def _key(key: str) -> str:
    """The button of a Streamlit widget key (its class st-key-<key>, where Streamlit writes each
    character outside [A-Za-z0-9_-] as "-")."""
    return ".st-key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key) + " button"


def _press(pg, key: str, timeout_ms: int = 240_000, required: bool = True) -> None:
    """The lecturer steps the projector (PageDown, or PageUp to a step behind, within the section
    shown) until the button of widget ``key`` is on the slide shown, waits until it is enabled,
    and presses it (not
    ``required``: unless it stays disabled, as Stop does for a run that has already ended)."""
    import time

    sel = _key(key)
    shown, enabled = pg.locator(f"{sel}{LIVE}"), pg.locator(f"{sel}{LIVE}:not([disabled])")
    deadline = time.monotonic() + timeout_ms / 1000
    while not enabled.count():
        if time.monotonic() > deadline:
            assert not required, (key, _text(pg)[-2000:])
            return
        if not shown.count():           # a rerun may lay the slides out again: step to it again
            got = pg.evaluate(_STEP_OF, sel)     # None or [-1, i]: being drawn or laid out again
            if got and got[0] >= 0 and got[0] != got[1]:
                pg.keyboard.press("PageUp" if got[0] < got[1] else "PageDown")
            wait_idle(pg)
            assert "/training" in pg.url, (key, pg.url)
        pg.wait_for_timeout(500)
    enabled.first.click()
    wait_idle(pg)


def _projector(pg, key: str, name: str) -> None:
    """Step the projector to the slide that holds widget ``key`` and save what the room sees."""
    sel = ".st-key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)
    for _ in range(30):
        got = pg.evaluate(_STEP_OF, sel)
        if got and got[0] == got[1]:
            break
        if got and got[0] >= 0:
            pg.keyboard.press("PageUp" if got[0] < got[1] else "PageDown")
        pg.wait_for_timeout(500)
        wait_idle(pg)
    pg.wait_for_timeout(800)
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"))


def _verdict(pg, qid: str) -> str:
    """The option the lecturer's reveal marks right (the histogram's ✓), as an option id."""
    text = _plain(_text(pg))
    right = [o for o in ("smooth", "sudden", "bump", "yes", "no")
             if _plain(translate(f"q.{qid}.opt.{o}", LANG)) + "✓" in text]
    assert len(right) == 1, text[-2000:]
    return right[0]


def _answer(phone, option_label: str) -> None:
    send = _button(phone, translate("class.send", PHONE))
    assert _until(phone, lambda: send.count() > 0, 90_000), _text(phone)[:2000]
    wait_idle(phone)
    phone.locator(f"[data-testid=stRadio]{LIVE}").last.get_by_text(option_label, exact=True).click()
    send.first.click()
    assert _until(phone, lambda: send.count() == 0)


def _phone_sees_verdict(phone, qid: str, right: str, mine: str) -> None:
    label = translate(f"q.{qid}.opt.{right}", PHONE)
    said = translate("class.right" if mine == right else "class.wrong", PHONE, answer=label)
    assert _until(phone, lambda: _plain(said) in _plain(_text(phone)), 60_000), _text(phone)[-2000:]


def test_the_room_predicts_and_the_induction_run_answers(server, browser):
    L = lambda key, **kw: translate(key, LANG, **kw)    # noqa: E731
    lctx, lec = _desktop(browser)
    pctx, phone = _phone(browser)
    try:
        lec.goto(server.url("training", present=1, lang=LANG, corpus="induction", preset="induction"),
                 wait_until="domcontentloaded")
        wait_idle(lec)
        lec.get_by_role("button", name=L("class.start")).click()
        lec.wait_for_selector("[data-testid=stCode]")
        code = re.search(r"follow=([A-Z0-9]+)", lec.locator("[data-testid=stCode]").first.inner_text()).group(1)
        wait_idle(lec)
        phone.goto(server.url("", follow=code, lang=PHONE), wait_until="domcontentloaded")
        # the run's section (2) comes after the chapter's own question about the learning rate
        for _ in range(30):
            if "sec=2" in lec.url:
                break
            lec.keyboard.press("PageDown")
            lec.wait_for_timeout(500)
            wait_idle(lec)
        assert "sec=2" in lec.url, lec.url
        _press(lec, "class_show:train_lr_start")
        # 1. how will the loss go? asked before the run; no answer can be shown yet
        _press(lec, "class_ask:train_ind_loss")
        _answer(phone, translate("q.train_ind_loss.opt.sudden", PHONE))
        answered = L("class.answered_n", n=1)
        assert _until(lec, lambda: _plain(answered) in _plain(_text(lec)), 60_000), _text(lec)[-1500:]
        assert L("class.run_pending") in _text(lec)
        assert lec.locator(_key("class_reveal:train_ind_loss") + "[disabled]").count() == 1
        _press(lec, "train_start")
        # the reveal opens once the run has formed a head (bench/induction.py: steps 700-800)
        _press(lec, "class_reveal:train_ind_loss", timeout_ms=300_000)
        right = _verdict(lec, "train_ind_loss")
        _projector(lec, "class_close:train_ind_loss", f"room-induction-projector-verdict-{LANG}")
        _phone_sees_verdict(phone, "train_ind_loss", right, "sudden")
        shot(phone, f"room-induction-phone-loss-{PHONE}")
        _press(lec, "class_close:train_ind_loss")
        # 2. will one layer learn it? asked now; answered by the control, one press away
        _press(lec, "class_ask:train_ind_one_layer")
        _answer(phone, translate("q.train_ind_one_layer.opt.no", PHONE))
        _press(lec, "train_stop", timeout_ms=15_000, required=False)   # the head is seen: no need for more
        text = _text(lec)
        assert L("claim.induction_forming.formed").split("{")[0] in text
        assert L(f"claim.induction_loss.{right}").split("{")[0] in text      # the same answer, in words
        for key in ("train_ind", "train_ind_map_before", "train_ind_map_now", "train_replay_ind"):
            assert lec.locator(f".st-key-{key} .js-plotly-plot").count(), key
        # the run's checkpoint carries its induction record: uploaded later, it draws all of this again
        # (pressed where it is, not stepped to: a PageDown on the way would take the Start on
        # its slide as the clicker's press and start another run)
        with lec.expect_download(timeout=120_000) as dl:
            lec.locator(".st-key-train_download button").first.dispatch_event("click")
        from lmviz.chapters.induction_run import induction_run
        from lmviz.checkpoint import load_checkpoint_with_replay

        saved = induction_run(load_checkpoint_with_replay(dl.value.path())[3].evals)
        assert saved.formed_at is not None and len(saved.maps) == len(saved.steps) >= 10, saved.steps
        _press(lec, "train_ind_control")
        _press(lec, "class_reveal:train_ind_one_layer", timeout_ms=300_000)
        right = _verdict(lec, "train_ind_one_layer")
        assert right == "no", _text(lec)[-2000:]
        _projector(lec, "class_close:train_ind_one_layer", f"room-induction-projector-verdict2-{LANG}")
        _phone_sees_verdict(phone, "train_ind_one_layer", "no", "no")
        shot(phone, f"room-induction-phone-control-{PHONE}")
        text = _text(lec)
        assert L("claim.induction_control.only_deeper").split("{")[0] in text
        assert lec.locator(".st-key-train_ind_compare .js-plotly-plot").count()
        for key in ("train_ind", "train_ind_map_now", "train_ind_compare"):      # what the room saw
            _projector(lec, key, f"room-induction-projector-{key}-{LANG}")
        for pg in (lec, phone):
            assert exceptions(pg) == []
    finally:
        end_class(lec, LANG)
        for ctx in (lctx, pctx):
            ctx.close()
