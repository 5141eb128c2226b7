"""Cold start benchmark: a chapter opened as the first visit of a freshly started server.

    python bench/startup.py [--chapters attention,generation,kv-cache] [--runs 1]

For each chapter and each mode, a fresh ``streamlit run app.py`` on a free port of 127.0.0.1,
then one Chromium page opens the chapter once the server reports healthy, and times

- **title**: from the request to the chapter's title (its ``h1``) painted;
- **chapter**: from the request to the whole chapter painted (the script finished, charts drawn).

Modes, side by side in one run:

- ``no warm-up``: LMVIZ_WARMUP=0 (ui/warmup.py off): the chapter imports torch and loads the
  default model itself (the behaviour before the warm-up);
- ``warm-up``: the default; the first visit's run of app.py starts the warm-up at its top;
- ``server start``: ``streamlit run serve.py`` (the ASGI entry), whose lifespan starts the
  warm-up when the server starts; the chapter is opened as soon as the server reports healthy;
- ``home first``: someone (the lecturer, or deploy/local-cluster.sh's warm-up visit)
  opened the home page 10 s before: what every later first visitor of a chapter sees.

Targets (issue 16): title < 1 s, whole chapter < 3 s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_util import CHROMIUM, LAUNCH_ARGS, Server, wait_charts  # noqa: E402

MODES = ("no warm-up", "warm-up", "server start", "home first")


def one_run(chapter: str, mode: str) -> tuple[float, float, float]:
    """(seconds to healthy, to the title, to the whole chapter) for one fresh server."""
    from playwright.sync_api import sync_playwright

    if mode == "no warm-up":
        os.environ["LMVIZ_WARMUP"] = "0"
    else:
        os.environ.pop("LMVIZ_WARMUP", None)
    t0 = time.perf_counter()
    srv = Server("serve.py" if mode == "server start" else "app.py")
    healthy = time.perf_counter() - t0
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            if mode == "home first":
                page.goto(srv.url(""), wait_until="domcontentloaded")
                page.wait_for_selector("[data-testid=stMain] h1", timeout=60_000)
                page.wait_for_timeout(10_000)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
            t1 = time.perf_counter()
            page.goto(srv.url(chapter, lang="en"), wait_until="commit")
            page.wait_for_selector("[data-testid=stMain] h1", timeout=90_000)
            t_title = time.perf_counter() - t1
            page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]",
                                   timeout=90_000, state="attached")
            wait_charts(page, 90_000)
            t_all = time.perf_counter() - t1
            browser.close()
    finally:
        srv.stop()
        os.environ.pop("LMVIZ_WARMUP", None)
    return healthy, t_title, t_all


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chapters", default="attention,generation,kv-cache")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    chapters = [c.strip() for c in args.chapters.split(",") if c.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip() in MODES]
    rows: dict[tuple[str, str], list] = {}
    for chapter in chapters:
        for mode in modes:
            for _ in range(args.runs):
                r = one_run(chapter, mode)
                rows.setdefault((chapter, mode), []).append(r)
                print(f"/{chapter:<20} {mode:<20} healthy {r[0]:5.2f} s  title {r[1]:5.2f} s  "
                      f"chapter {r[2]:5.2f} s", flush=True)
    print("\nmedians (title target < 1 s, whole chapter < 3 s):")
    for mode in modes:
        ts = [statistics.median(x[1] for x in rows[(c, mode)]) for c in chapters]
        cs = [statistics.median(x[2] for x in rows[(c, mode)]) for c in chapters]
        print(f"  {mode:<20} title " + "  ".join(f"{c} {v:.2f}" for c, v in zip(chapters, ts))
              + " | chapter " + "  ".join(f"{c} {v:.2f}" for c, v in zip(chapters, cs)))


if __name__ == "__main__":
    main()
