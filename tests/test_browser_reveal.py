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
