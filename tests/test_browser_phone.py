"""A student's phone (390x844, touch, a phone's User-Agent): no horizontal scroll, no Plotly
toolbar over the charts' titles, columns stacked, a figure's side-by-side panels stacked, touch
targets of at least 44 px."""
from __future__ import annotations

import pytest

from tests.browser_util import exceptions, shot, skip_questions, wait_charts, wait_idle

pytestmark = pytest.mark.browser
PHONE_UA = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0 Mobile Safari/537.36")


@pytest.mark.parametrize("lang,slug", [("en", "generation"), ("zh", "attention")])
def test_phone_layout(server, browser, lang, slug):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                              device_scale_factor=2, user_agent=PHONE_UA)
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
          // every panel of every chart the full width (x domains [0, 1]): side by side is unreadable here
          const sideBySide = [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
            .map(g => g._fullLayout).filter(Boolean)
            .map(l => Object.keys(l).filter(k => /^xaxis[0-9]*$/.test(k) && !l[k].overlaying).map(k => l[k].domain))
            .filter(ds => ds.some(d => d[1] - d[0] < 0.9));
          const multi = [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
            .map(g => g._fullLayout).filter(l => l && Object.keys(l).filter(k => /^xaxis[0-9]*$/.test(k)).length > 1).length;
          return {coarse: matchMedia('(pointer:coarse)').matches, sw: m.scrollWidth, cw: m.clientWidth,
                  doc: document.documentElement.scrollWidth, bars: bars.length, cols, small, sideBySide, multi};
        }""")
        assert r["coarse"]
        assert r["sw"] <= r["cw"] + 1 and r["doc"] <= 391, r        # no horizontal scroll
        assert r["bars"] == 0                                        # no toolbar over titles
        assert all(w >= 300 for w in r["cols"]), r["cols"]           # columns stacked
        assert r["small"] == [], r["small"]                          # touch targets >= 44 px
        assert r["sideBySide"] == [], r["sideBySide"]                # panels stacked
        assert r["multi"] >= (1 if slug == "attention" else 0)       # (attention has such figures)
        shot(pg, f"phone-{slug}-{lang}")
    finally:
        ctx.close()
