"""A student's phone (390x844, touch): no horizontal scroll, no Plotly toolbar over the charts'
titles, columns stacked, touch targets of at least 44 px."""
from __future__ import annotations

import pytest

from tests.browser_util import exceptions, shot, skip_questions, wait_charts, wait_idle

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lang,slug", [("en", "generation"), ("zh", "attention")])
def test_phone_layout(server, browser, lang, slug):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                              device_scale_factor=2)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(server.url(slug, lang=lang), wait_until="domcontentloaded")
        wait_idle(pg)
        skip_questions(pg, lang)
        wait_charts(pg, every=True)
        assert exceptions(pg) == []
        r = pg.evaluate("""() => {
          const m = document.querySelector('[data-testid=stMain]');
          const vis = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
          const bars = [...document.querySelectorAll('.modebar-container')].filter(el => getComputedStyle(el).display !== 'none' && vis(el));
          const cols = [...document.querySelectorAll('[data-testid=stMain] [data-testid=stColumn]')].filter(vis)
            .map(c => c.getBoundingClientRect().width);
          const small = [...document.querySelectorAll('[data-testid=stMain] button')].filter(vis)
            .filter(b => !b.closest('[data-testid=stElementToolbar]'))
            .map(b => [b.innerText.slice(0, 20), Math.round(b.getBoundingClientRect().height)]).filter(x => x[1] < 44);
          return {coarse: matchMedia('(pointer:coarse)').matches, sw: m.scrollWidth, cw: m.clientWidth,
                  doc: document.documentElement.scrollWidth, bars: bars.length, cols, small};
        }""")
        assert r["coarse"]
        assert r["sw"] <= r["cw"] + 1 and r["doc"] <= 391, r        # no horizontal scroll
        assert r["bars"] == 0                                        # no toolbar over titles
        assert all(w >= 300 for w in r["cols"]), r["cols"]           # columns stacked
        assert r["small"] == [], r["small"]                          # touch targets >= 44 px
        shot(pg, f"phone-{slug}-{lang}")
    finally:
        ctx.close()
