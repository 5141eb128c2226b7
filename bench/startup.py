"""Cold start benchmark: a chapter opened as the first visit of a freshly started server.

    python bench/startup.py [--chapters attention,generation,kv-cache] [--runs 1] [--modes ...]

For each chapter and each mode, a fresh server on a free port of 127.0.0.1, then one new Chromium
opens the chapter once the server reports healthy, and times, from the request:

- **title**: the chapter's title painted (the first ``h1`` holding it, and the frame after it:
  measured in the page from its navigation start, so Playwright's polling adds nothing);
- **page title**: Streamlit's own title of the chapter painted (the same, inside ``stMain``);
- **content**: the script finished after that title (every element has reached the browser: the
  server's part);
- **chapter**: the whole chapter painted (the script finished, every chart drawn: the rest is the
  browser's part, mostly plotly.js drawing the charts).

Modes, side by side in one run (the same chapters, the same browser, the same machine):

- ``app.py, no warm-up``: ``streamlit run app.py`` with LMVIZ_WARMUP=0: the chapter imports
  torch and loads the default model itself (the behaviour before issue 16);
- ``app.py``: ``streamlit run app.py``; the first visit's run of app.py starts the warm-up;
- ``serve.py, no warm views``: README's ``streamlit run serve.py`` with LMVIZ_WARM_VIEWS=0: the
  warm-up loads torch and the model but does not visit the chapters (before issue 28);
- ``serve.py``: README's ``streamlit run serve.py``: the warm-up starts with the server, visits
  every chapter in both languages (the default views computed once, shared), and the page sent
  for a chapter's URL holds its title and loading line (ui/first_paint.py);
- ``serve.py, home first``: the same, after someone opened the home page 10 s before: what every
  later first visitor of a chapter sees.

Chromium runs on the same 2 cores as the server here (in a lecture the browsers are the students'
own machines), so these figures are an upper bound. Targets (issue 16): title < 1 s, chapter < 3 s.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_util import CHROMIUM, LAUNCH_ARGS, Server, wait_charts  # noqa: E402
from ui.chapters import by_slug  # noqa: E402
from ui.i18n import translate  # noqa: E402

MODES = ("app.py, no warm-up", "app.py", "serve.py, no warm views", "serve.py", "serve.py, home first")

# In the page, before its own scripts: the time (ms from navigation start) of the frame after the
# first h1 holding the title appeared, anywhere and inside Streamlit's main block, and of the
# script's end after that.
_PAINT_PROBE = """
(() => {
  const want = %s, marks = {any: null, main: null, done: null};
  window.__lmvizPaint = marks;
  const painted = (k) => { marks[k] = -1; requestAnimationFrame(() => requestAnimationFrame(
      () => { marks[k] = performance.now(); })); };
  new MutationObserver(() => {
    for (const h of document.querySelectorAll('h1')) {
      if (!h.textContent.includes(want)) continue;
      if (marks.any === null) painted('any');
      if (marks.main === null && h.closest('[data-testid=stMain]')) painted('main');
    }
    const app = document.querySelector('[data-testid=stApp]');
    if (marks.main !== null && marks.done === null && app
        && app.getAttribute('data-test-script-state') === 'notRunning') marks.done = performance.now();
  }).observe(document, {childList: true, subtree: true, attributes: true});
})();
"""


def one_run(chapter: str, mode: str, lang: str = "en", healthy_for: float = 0.0
            ) -> tuple[float, float, float, float]:
    """(title, page title, content, whole chapter) in s from the request, for one fresh server
    that has been healthy for ``healthy_for`` seconds (0: the visitor arrives with the server)."""
    from playwright.sync_api import sync_playwright

    os.environ.pop("LMVIZ_WARMUP", None)
    os.environ.pop("LMVIZ_WARM_VIEWS", None)
    if mode.endswith("no warm-up"):
        os.environ["LMVIZ_WARMUP"] = "0"
    elif mode.endswith("no warm views"):
        os.environ["LMVIZ_WARM_VIEWS"] = "0"
    srv = Server("serve.py" if mode.startswith("serve.py") else "app.py")
    title = translate(by_slug(chapter).heading_key, lang)
    try:
        time.sleep(healthy_for)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            if mode.endswith("home first"):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(srv.url(""), wait_until="domcontentloaded")
                page.wait_for_selector("[data-testid=stMain] h1", timeout=60_000)
                page.wait_for_timeout(10_000)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(_PAINT_PROBE % json.dumps(title))
            t1 = time.perf_counter()
            page.goto(srv.url(chapter, lang=lang), wait_until="commit")
            # the page's own title first: before the script has started, the app also reads
            # "notRunning"
            page.wait_for_function("window.__lmvizPaint.main > 0", timeout=90_000, polling=50)
            page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]",
                                   timeout=90_000, state="attached")
            wait_charts(page, 90_000, every=True)
            t_all = time.perf_counter() - t1
            marks = page.evaluate("window.__lmvizPaint")
            browser.close()
    finally:
        srv.stop()
        os.environ.pop("LMVIZ_WARMUP", None)
        os.environ.pop("LMVIZ_WARM_VIEWS", None)
    return marks["any"] / 1000, marks["main"] / 1000, marks["done"] / 1000, t_all


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chapters", default="attention,generation,kv-cache")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--lang", default="en", choices=("en", "zh"))
    ap.add_argument("--healthy-for", type=float, default=0.0,
                    help="seconds between the server's health and the visit (issue 28's target: 60)")
    ap.add_argument("--modes", default=";".join(MODES), help="';'-separated, from: " + "; ".join(MODES))
    args = ap.parse_args()
    chapters = [c.strip() for c in args.chapters.split(",") if c.strip()]
    modes = [m.strip() for m in args.modes.split(";") if m.strip() in MODES]
    rows: dict[tuple[str, str], list] = {}
    for _ in range(args.runs):              # runs outermost: a noisy minute hits every mode alike
        for chapter in chapters:
            for mode in modes:
                r = one_run(chapter, mode, args.lang, args.healthy_for)
                rows.setdefault((chapter, mode), []).append(r)
                print(f"/{chapter or 'home':<20} {mode:<22} title {r[0]:5.2f} s  page title {r[1]:5.2f} s  "
                      f"content {r[2]:5.2f} s  chapter {r[3]:5.2f} s", flush=True)
    print(f"\nmedians in s (targets: title < 1, chapter < 3); lang {args.lang}, healthy for "
          f"{args.healthy_for:.0f} s; load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    for mode in modes:
        med = [[statistics.median(x[i] for x in rows[(c, mode)]) for c in chapters] for i in range(4)]
        print(f"  {mode:<22} " + " | ".join(
            f"{name} " + " ".join(f"{v:.2f}" for v in vals)
            for name, vals in zip(("title", "page title", "content", "chapter"), med))
            + f"   ({', '.join(c or 'home' for c in chapters)})")


if __name__ == "__main__":
    main()
