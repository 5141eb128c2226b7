"""Classroom mode in real browsers: a lecturer (presenter mode) starts a class, a follower opens
the student link on the home page and is taken to the lecturer's chapter and slider value in
its own language, answers the question the lecturer asks (the section that answers it is drawn
for no one before the reveal), the lecturer's screen counts the answers without showing them,
the reveal reaches the follower, the lecturer's slider does too, the lecturer's next chapter does too, and ending the class leaves the follower a note.

Screenshots (``LMVIZ_SCREENSHOTS``, default ./screenshots) ``class-<role>-<step>-<lang>.png``.
"""
from __future__ import annotations

import re

import pytest

from tests.browser_util import SLIDER, end_class, exceptions, shot, wait_idle
from ui.i18n import translate

pytestmark = pytest.mark.browser


def _page(browser, width=1280, height=800):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    return ctx, pg


def _until(pg, cond, timeout_ms=60_000, step_ms=250) -> bool:
    """Poll `cond` until it holds or `timeout_ms` of wall-clock time pass (generous: a wait that
    succeeds returns at once, and CI runs the suite on a loaded 2-core machine). The clock, not
    the sleeps, counts: a `cond` that itself waits (a page being swapped) made a 60 s wait 20 min."""
    import time

    end = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < end:
        if cond():
            return True
        pg.wait_for_timeout(step_ms)
    return cond()


def _text(pg) -> str:
    """The page's text ("" while Streamlit swaps the page for another: a wait polls again)."""
    from playwright.sync_api import Error

    try:
        return pg.locator("[data-testid=stMain]").inner_text(timeout=5_000)
    except Error:
        return ""


# one pairing: a Chinese lecturer and an English follower (the clicker's and the room's class tests
# have an English lecturer and a Chinese phone; the other pairing here repeated them, 87 s of CI)
@pytest.mark.parametrize("lect_lang,fol_lang", [("zh", "en")])
def test_a_class_follows_answers_and_ends(server, browser, lect_lang, fol_lang):
    L = lambda key, **kw: translate(key, lect_lang, **kw)   # noqa: E731
    F = lambda key, **kw: translate(key, fol_lang, **kw)    # noqa: E731
    lctx, lec = _page(browser)
    fctx, fol = _page(browser)
    try:
        lec.goto(server.url("generation", present=1, lang=lect_lang), wait_until="domcontentloaded")
        wait_idle(lec)
        lec.get_by_role("button", name=L("class.start")).click()
        lec.wait_for_selector("[data-testid=stCode]")
        link = lec.locator("[data-testid=stCode]").first.inner_text().strip()
        code = re.search(r"follow=([A-Z0-9]+)", link).group(1)
        assert link.startswith(f"http://127.0.0.1:{server.port}/?follow=")
        # predict, then reveal, for the room: the section that answers is drawn for no one yet
        ask = lec.locator("button:not([data-lmviz-off] *)").filter(has_text=L("class.ask"))
        for _ in range(5):                     # presenter mode: step to the question's slide
            if ask.count():
                break
            lec.keyboard.press("PageDown")
            lec.wait_for_timeout(400)
        ask.first.click()
        wait_idle(lec)
        assert lec.locator(SLIDER).count() == 0

        # the student opens the link on the home page: taken to /generation and the question
        fol.goto(server.url("", follow=code, lang=fol_lang), wait_until="domcontentloaded")
        send = fol.get_by_role("button", name=F("class.send"))
        assert _until(fol, lambda: "/generation" in fol.url and send.count() > 0, 60_000), _text(fol)[:1500]
        wait_idle(fol)
        assert F("gen.title") in _text(fol)
        assert F("class.following", cls=code).replace("**", "") in _text(fol)
        assert fol.locator(SLIDER).count() == 0
        # a student has no lecturer controls
        assert fol.get_by_role("button", name=F("class.end")).count() == 0
        assert fol.get_by_role("button", name=F("class.ask")).count() == 0
        shot(fol, f"class-follower-following-{fol_lang}")
        shot(lec, f"class-lecturer-started-{lect_lang}")
        fol.get_by_text(F("q.gen_tau_half.opt.rises"), exact=True).first.click()
        send.click()
        wait_idle(fol)
        # the projector shows how many answered, not how they answered
        answered = L("class.answered_n", n=1).replace("**", "")
        assert _until(lec, lambda: answered in _text(lec), 60_000), _text(lec)[-1500:]
        assert L("class.answers", n=1) not in _text(lec)
        assert L("class.senders", k=1) in _text(lec)          # this machine's browsers: one address
        shot(lec, f"class-lecturer-histogram-{lect_lang}")
        shot(fol, f"class-follower-answered-{fol_lang}")
        lec.get_by_role("button", name=L("class.reveal_all")).click()
        wait_idle(lec)
        right = F("class.right", answer=F("q.gen_tau_half.opt.rises"))
        assert _until(fol, lambda: right in _text(fol) and fol.locator(SLIDER).count() > 0, 60_000), _text(fol)[:1500]
        shot(fol, f"class-follower-revealed-{fol_lang}")

        # the lecturer moves τ (with the mouse: in presenter mode the keys step the slides)
        live = lec.locator(f"{SLIDER}:not([data-lmviz-off] *)")
        for _ in range(6):
            if live.count():
                break
            lec.keyboard.press("PageDown")
            lec.wait_for_timeout(500)
        for frac in (0.3, 0.5):
            tau = live.first.input_value()
            track = lec.locator("[data-testid=stSlider]:not([data-lmviz-off] *) [data-orientation=horizontal]").first
            box = track.bounding_box()
            lec.mouse.click(box["x"] + box["width"] * frac, box["y"] + box["height"] / 2)
            lec.wait_for_timeout(600)
            wait_idle(lec)
            tau2 = lec.locator(SLIDER).first.input_value()
            assert tau2 != tau
            assert _until(fol, lambda: fol.locator(SLIDER).count() > 0
                          and fol.locator(SLIDER).first.input_value() == tau2, 60_000), tau2

        # the lecturer steps past the chapter's last section: the follower changes chapter too
        for _ in range(60):     # slide by slide (ui/render.py's presenter steps)
            if "/kv-cache" in lec.url:
                break
            lec.keyboard.press("PageDown")
            lec.wait_for_timeout(500)
            wait_idle(lec)
        assert "/kv-cache" in lec.url
        assert _until(fol, lambda: "/kv-cache" in fol.url and F("kv.title") in _text(fol), 60_000), (fol.url, _text(fol)[:1500])
        assert _until(fol, lambda: F("class.asked") not in _text(fol), 30_000)   # last chapter's question put away
        shot(fol, f"class-follower-next-chapter-{fol_lang}")

        # the class ends: a note, not an error
        lec.get_by_role("button", name=L("class.end")).click()
        wait_idle(lec)
        note = F("class.reason.ended_by_lecturer")
        assert _until(fol, lambda: note in _text(fol), 60_000), _text(fol)[:1500]
        wait_idle(fol)
        assert exceptions(fol) == [] and exceptions(lec) == []
        shot(fol, f"class-follower-ended-{fol_lang}")
    finally:
        end_class(lec, lect_lang)        # a failed run's class would count against later class tests
        lctx.close()
        fctx.close()


def test_a_follower_takes_the_lecturers_move_without_asking(server):
    """Push, not poll: a follower whose client never asks for its check (no fragment timers, as if
    its timer were hours long) still takes the lecturer's new slider value: when the class moves,
    the server reruns the check of every follower of that class (``ui.follow.pushes``).
    Before, such a follower kept the old value for ever. And the check takes a slider's move by
    rerunning the slider's own section (a fragment), as the lecturer's page did, not the whole
    page (``ui.follow._fragments_for``)."""
    import asyncio
    import sys

    from tests.conftest import ROOT, run_async
    from ui.headless import Session

    sys.path.insert(0, str(ROOT / "bench"))
    import follow

    async def scenario():
        async with Session(server.port, "generation", "lang=en&present=1") as lect:
            code, _ = await follow.open_class(lect)
            async with Session(server.port, "", f"follow={code}&lang=zh", auto_rerun=False) as fol:
                on_page = await follow.wait_for(lambda: follow.tau_slider(fol) is not None, 60)
                before = follow.tau_slider(fol).value if on_page else None
                w = follow.tau_slider(lect)
                value = 0.25 if w.value and abs(w.value[0] - 0.25) > 1e-9 else 2.0
                import time

                await asyncio.sleep(1)
                whole = fol.whole_runs
                sent = time.perf_counter()
                await lect.move_slider(w, value, timeout=60)
                got = await follow.wait_for(lambda: follow.shown_at(fol, value, sent) is not None, 30)
                await asyncio.sleep(1)
                return (on_page, before, value, got, fol._timers, fol.whole_runs - whole,
                        lect.errors + fol.errors)

    on_page, before, value, got, timers, whole_runs, errors = run_async(scenario())
    assert on_page and before is not None and before[0] != value
    assert timers == {}              # the follower never ran a timer of its own
    assert got, "the follower never showed the lecturer's new value"
    assert whole_runs == 0           # a slider's move reran the slider's section, not the page
    assert errors == []


def test_a_students_pick_and_send_rerun_the_answer_box_not_the_chapter(server):
    """Be the language model with a room: a student's pick and Send rerun the answer box alone (a
    fragment), not the whole chapter (a room of 100 answering within a second cost the server 200
    runs of /generation); the page still says the answer was sent."""
    import asyncio
    import sys

    from tests.conftest import ROOT, run_async
    from ui.headless import Session

    sys.path.insert(0, str(ROOT / "bench"))
    import follow
    import room_ws

    async def scenario():
        async with Session(server.port, "generation", f"lang=en&present=1&sec={room_ws.ROOM_SECTION}") as lect:
            await lect.wait_idle(180)
            await lect.skip_questions()
            code, _ = await follow.start_class(lect)
            async with Session(server.port, "", f"follow={code}&lang=zh", auto_rerun=False) as fol:
                await follow.wait_for(lambda: room_ws.fresh_button(lect, "room_ask:", set()) is not None, 30)
                ask = room_ws.fresh_button(lect, "room_ask:", set())
                qid = ask.id.split("room_ask:", 1)[1]
                await lect.click(ask, timeout=120)
                ready = await follow.wait_for(lambda: fol.radio(f"room_ans:{qid}") is not None
                                              and fol.button(f"room_ans:{qid}:send") is not None, 60)
                await asyncio.sleep(1)
                whole = fol.whole_runs
                await fol.choose_and_click(fol.radio(f"room_ans:{qid}"), 0, fol.button(f"room_ans:{qid}:send"),
                                           timeout=120)
                sent = await follow.wait_for(lambda: any(room_ws.SENT.search(a) for a in fol.alerts), 30)
                return ready, sent, fol.whole_runs - whole, lect.errors + fol.errors

    ready, sent, whole_runs, errors = run_async(scenario())
    assert ready, "the student never saw the room's question"
    assert sent, "the student's page never said the answer was sent"
    assert whole_runs == 0
    assert errors == []
