"""Accessibility in the real browser: chart toolbars are out of the Tab order except their PNG
button; every control shows a visible focus ring. (The axe-core sweep of every chapter in both
languages runs inside tests/test_browser.py's one visit per page.)"""
from __future__ import annotations

import pytest

from tests.browser_util import exceptions, skip_questions, wait_charts, wait_idle

pytestmark = pytest.mark.browser


@pytest.fixture()
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    yield pg
    ctx.close()


def _open(server, pg, slug: str, lang: str) -> None:
    pg.goto(server.url(slug, lang=lang), wait_until="domcontentloaded")
    wait_idle(pg)
    skip_questions(pg, lang)          # the whole chapter, answers included
    wait_charts(pg, every=True, at_least=1)
    assert exceptions(pg) == []


def test_chart_toolbars_are_out_of_the_tab_order_but_png_export(server, page):
    _open(server, page, "generation", "en")
    info = page.evaluate("""() => [...document.querySelectorAll('.modebar-btn')].map(b => [
        b.getAttribute('data-title') || b.getAttribute('aria-label') || '', b.tabIndex])""")
    assert info, "no chart toolbar on /generation"
    png = [t for name, t in info if "png" in name.lower()]
    others = [t for name, t in info if "png" not in name.lower()]
    assert png and all(t >= 0 for t in png)
    assert all(t < 0 for t in others)


def test_every_control_shows_a_visible_focus_ring(server, page):
    _open(server, page, "generation", "en")
    missing = []
    for _ in range(40):
        page.keyboard.press("Tab")
        page.wait_for_timeout(40)
        r = page.evaluate("""() => { const a = document.activeElement; if (!a || a === document.body) return null;
          const cs = getComputedStyle(a);
          const ring = (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2) || /rgb/.test(cs.boxShadow);
          return [a.tagName + ' ' + (a.getAttribute('aria-label') || a.innerText || '').slice(0, 30), ring]; }""")
        if r and not r[1]:
            missing.append(r[0])
    assert missing == []
