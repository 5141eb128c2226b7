"""A student's phone (390x844, touch, a phone's User-Agent): no horizontal scroll, no Plotly
toolbar over the charts' titles, columns stacked, a figure's side-by-side panels stacked, touch
targets of at least 44 x 44 px on every chapter."""
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
          // every panel of every chart the full width (x domains [0, 1]): side by side is unreadable here
          const sideBySide = [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
            .map(g => g._fullLayout).filter(Boolean)
            .map(l => Object.keys(l).filter(k => /^xaxis[0-9]*$/.test(k) && !l[k].overlaying).map(k => l[k].domain))
            .filter(ds => ds.some(d => d[1] - d[0] < 0.9));
          const multi = [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
            .map(g => g._fullLayout).filter(l => l && Object.keys(l).filter(k => /^xaxis[0-9]*$/.test(k)).length > 1).length;
          return {coarse: matchMedia('(pointer:coarse)').matches, sw: m.scrollWidth, cw: m.clientWidth,
                  doc: document.documentElement.scrollWidth, bars: bars.length, cols, sideBySide, multi};
        }""")
        assert r["coarse"]
        assert r["sw"] <= r["cw"] + 1 and r["doc"] <= 391, r        # no horizontal scroll
        assert r["bars"] == 0                                        # no toolbar over titles
        assert all(w >= 300 for w in r["cols"]), r["cols"]           # columns stacked
        assert r["sideBySide"] == [], r["sideBySide"]                # panels stacked
        assert r["multi"] >= (1 if slug == "attention" else 0)       # (attention has such figures)
        shot(pg, f"phone-{slug}-{lang}")
    finally:
        ctx.close()


# Everything a finger can press, in the main area, the sidebar and the header (the sidebar's »),
# at least 44 x 44 px on a 390 px phone. What is measured instead of what the selector finds:
# - a radio's, checkbox's or toggle's own <input>, and a slider's <input type=range>, are clipped
#   to 1 px by react-aria (visually hidden, for screen readers and the keyboard): a finger presses
#   what is drawn for them, the option's <label> (measured: label:has(input)) and the slider's
#   track (measured: the slider group's child, which takes a press anywhere along it and moves
#   the thumb there; the thumb itself is a drawn dot, dragged but never needed as a target).
# Nothing else is left out (what has no size is not on screen: a closed expander is opened first).
_TARGETS = """() => {
  const sel = 'button, input, select, [role=button], [role=slider], [role=tab], summary, a, '
            + 'label:has(input[type=radio]), label:has(input[type=checkbox]), '
            + '[data-testid=stSlider] [role=group] > div';
  const clipped = el => !!el.parentElement.closest('[style*="inset(50%)"]');
  const out = [];
  for (const root of document.querySelectorAll(ROOTS)) for (const el of root.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || clipped(el)) continue;      // not on screen / drawn as its label
    if (r.width < 44 || r.height < 44) {
      const id = el.closest('[data-testid]');
      out.push(`${el.tagName.toLowerCase()}[${id ? id.dataset.testid : ''}] "${(el.innerText || el.value
        || el.getAttribute('aria-label') || '').trim().slice(0, 24)}" ${Math.round(r.width)}x${Math.round(r.height)}`);
    }
  }
  return out;
}"""


def test_phone_touch_targets_every_chapter(server, browser):
    """Issue 52 item 8: every chapter once (the home page and every slug; en and zh in turn),
    every closed expander opened and every question skipped so that its section is drawn, then
    the sidebar opened: nothing a finger presses is under 44 px either way."""
    from ui.chapters import registered

    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                              device_scale_factor=2, user_agent=PHONE_UA)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    small: dict[str, list[str]] = {}
    try:
        for i, chapter in enumerate(registered()):
            lang = "en" if i % 2 == 0 else "zh"
            page = f"/{chapter.slug} {lang}"
            pg.goto(server.url(chapter.slug, lang=lang), wait_until="domcontentloaded")
            wait_idle(pg)
            skip_questions(pg, lang)
            pg.evaluate("() => document.querySelectorAll('[data-testid=stMain] details:not([open]) > summary')"
                        ".forEach(s => s.click())")
            pg.wait_for_timeout(300)
            assert exceptions(pg) == [], page
            found = pg.evaluate(_TARGETS.replace("ROOTS", "'[data-testid=stMain], [data-testid=stHeader]'"))
            if chapter.slug in ("training", "cost"):                  # to look at: the -/+ steppers
                pg.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
                shot(pg, f"phone-targets-{chapter.slug}-{lang}")
            pg.locator("[data-testid=stExpandSidebarButton]").click()
            pg.wait_for_function("() => { const r = document.querySelector('[data-testid=stSidebar]')"
                                 ".getBoundingClientRect(); return r.left >= 0 && r.width > 200; }", polling=100)
            pg.wait_for_timeout(400)                                  # the slide-in's transition
            found += pg.evaluate(_TARGETS.replace("ROOTS", "'[data-testid=stSidebar]'"))
            pg.locator("[data-testid=stSidebarCollapseButton] button").click()    # as the next visit expects
            pg.wait_for_function("() => document.querySelector('[data-testid=stSidebar]')"
                                 ".dataset.collapsed === 'true'", polling=100)
            if found:
                small[page] = found
        print(f"\ntargets under 44 px: {sum(map(len, small.values()))}")
        for page, found in small.items():
            print(page, *found, sep="\n  ")
        assert small == {}, small
    finally:
        ctx.close()
