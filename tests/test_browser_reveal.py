"""Predict, then reveal, in the real browser: the section that answers a question is not in the
page (not merely hidden) until the student answers or skips; then its numbers are."""
from __future__ import annotations

import pytest

from lmviz.chapters.questions import by_id
from tests.browser_util import exceptions, shot, wait_idle
from ui.i18n import translate

pytestmark = pytest.mark.browser


def _slider_labels(pg) -> list[str]:
    return [x.strip() for x in
            pg.locator("[data-testid=stSlider] [data-testid=stWidgetLabel]").all_inner_texts()]


@pytest.mark.parametrize("lang,how", [("en", "check"), ("zh", "skip")])
def test_answering_numbers_are_absent_until_the_reveal(server, browser, lang, how):
    s = by_id("gen_tau_half").solve()
    answer = s.explain_args["p2"]       # p(A) at τ = 0.5: in the explanation and in the τ table
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(server.url("generation", lang=lang), wait_until="domcontentloaded")
        wait_idle(pg)
        assert exceptions(pg) == []
        html = pg.content()
        assert translate("q.gen_tau_half.prompt", lang, **s.prompt_args) in pg.inner_text("body")
        assert answer not in html
        assert translate("gen.tau", lang) not in _slider_labels(pg)   # nor is the τ slider
        assert translate("class.hidden_solo", lang) in pg.inner_text("body")
        shot(pg, f"reveal-before-{lang}")
        if how == "check":
            pg.get_by_text(translate("q.gen_tau_half.opt.falls", lang), exact=True).first.click()
            pg.wait_for_timeout(300)
            wait_idle(pg)
            pg.get_by_role("button", name=translate("class.check", lang)).first.click()
        else:
            pg.get_by_role("button", name=translate("class.skip", lang)).first.click()
        pg.wait_for_timeout(300)
        wait_idle(pg)
        pg.wait_for_selector("[data-testid=stSlider]")
        assert answer in pg.content()
        assert translate("gen.tau", lang) in _slider_labels(pg)
        assert exceptions(pg) == []
        shot(pg, f"reveal-after-{lang}")
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_student_alone_reveals_a_section_without_rerunning_the_chapter(server, lang):
    """A pick, Check or Skip of a student alone reruns the question's own section (a fragment),
    not the whole chapter: a room of students skipping their way through a chapter cost the
    server one whole run per question each. The answering section arrives in that run."""
    from tests.conftest import run_async
    from ui.headless import FINISHED_OK, Session

    s = by_id("gen_tau_half").solve()
    answer = s.explain_args["p2"]

    async def scenario():
        async with Session(server.port, "generation", f"lang={lang}", auto_rerun=False) as c:
            await c.wait_idle(120)
            skip = c.button("class_solo:gen_tau_half:skip")
            assert skip is not None and skip.fragment_id            # drawn inside a fragment
            assert not any(answer in x for x in c.texts)
            await c.click(skip, timeout=120)
            return c.finished_status, c.texts, c.errors

    status, texts, errors = run_async(scenario())
    assert errors == []
    assert status == FINISHED_OK[1]                                  # a fragment run, not the page's
    assert any(answer in x for x in texts)                           # the explanation and the τ table


def test_a_revealed_section_that_runs_a_task_follows_the_page(server):
    """A section whose body polls a task (the training chapter's run) is drawn in the page's own
    run once revealed, not inside the question's fragment: with the run's buttons inside that
    fragment, a started training's Pause stayed disabled. After Skip, the page's run draws the
    buttons outside any fragment, and Start enables Pause."""
    import asyncio
    import time

    from tests.conftest import run_async
    from ui.headless import FINISHED_OK, Session

    async def scenario():
        async with Session(server.port, "training", "lang=en") as c:
            await c.wait_idle(120)
            skip = c.button("class_solo:train_lr_start:skip")
            assert skip is not None and skip.fragment_id
            await c.click(skip, timeout=120)
            whole = c.finished_status == FINISHED_OK[0]   # the poll asked for the page's run at once
            start = c.button("train_start")
            assert start is not None and not start.disabled
            if start.fragment_id:
                return whole, start.fragment_id, False, c.errors
            await c.click(start, timeout=120)
            t0, pause = time.perf_counter(), None
            while time.perf_counter() - t0 < 60:
                pause = c.button("train_pause")
                if pause is not None and not pause.disabled:
                    break
                await asyncio.sleep(0.1)
            enabled = pause is not None and not pause.disabled
            stop = c.button("train_stop")
            if stop is not None and not stop.disabled:
                await c.click(stop, timeout=120)
            return whole, start.fragment_id, enabled, c.errors

    whole, fragment, enabled, errors = run_async(scenario())
    assert errors == []
    assert whole and fragment == ""                     # Start is drawn in the page's run
    assert enabled                                      # the run's buttons follow the run
