"""The charts' text twins and <html lang> as the browser (and so a screen reader) sees them."""
from __future__ import annotations

import re

import pytest

from tests.browser_util import skip_questions, exceptions, shot, wait_charts, wait_idle

pytestmark = pytest.mark.browser
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_twins_are_read_but_not_seen_and_html_lang_follows_the_language(server, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.goto(server.url("loss-and-gradients", lang="zh"), wait_until="domcontentloaded")
    wait_idle(pg)
    skip_questions(pg, "zh")                   # every chart of the chapter (predict, then reveal)
    n = wait_charts(pg, every=True, at_least=2)
    assert exceptions(pg) == [] and n >= 2
    assert pg.evaluate("document.documentElement.lang") == "zh"
    twins = pg.locator("p.lmviz-twin")
    assert twins.count() == n
    main = pg.locator("[data-testid=stMain]").aria_snapshot()
    for i in range(n):
        text = twins.nth(i).text_content()
        assert CJK.search(text) and twins.nth(i).get_attribute("lang") == "zh"
        box = twins.nth(i).evaluate("e => { const r = e.closest('[data-testid=stElementContainer]')"
                                    ".getBoundingClientRect(); return [r.width, r.height]; }")
        assert box[0] <= 1 and box[1] <= 1                                  # out of sight
        assert text[:30] in main                                            # in the accessibility tree
    shot(pg, "twins-loss-zh")
    # the language switch: <html lang> and the twins follow
    pg.locator("[data-testid=stSidebar] label").filter(has_text="English").click()
    pg.wait_for_timeout(600)
    wait_idle(pg)
    # the rerun replaces the elements one by one: wait for the new language, do not race it
    pg.wait_for_function("() => document.documentElement.lang === 'en' && "
                         "document.querySelector('p.lmviz-twin')?.lang === 'en'", timeout=60_000)
    first = pg.locator("p.lmviz-twin").first
    assert not CJK.search(first.text_content())
    ctx.close()
