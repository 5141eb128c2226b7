"""Startup benchmark: seconds from `streamlit run` to the home page painted in Chromium, and to
a chapter page that imports torch (first visit, cold server).

    python bench/startup.py [--runs 3] [--chapter attention]

Prints one line per run and the median. Target (issue 2): home page < 3 s after the server
reports healthy.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_util import CHROMIUM, LAUNCH_ARGS, Server, wait_charts, wait_idle  # noqa: E402


def one_run(chapter: str) -> tuple[float, float, float]:
    from playwright.sync_api import sync_playwright

    t0 = time.perf_counter()
    srv = Server()
    t_healthy = time.perf_counter()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            t1 = time.perf_counter()
            page.goto(srv.url(""), wait_until="domcontentloaded")
            # the home page's first picture: the pipeline, an inline SVG
            page.wait_for_selector("[data-testid=stMain] svg[role=img]", timeout=60_000)
            t_home = time.perf_counter() - t1
            t2 = time.perf_counter()
            page.goto(srv.url(chapter), wait_until="domcontentloaded")
            wait_idle(page)
            wait_charts(page)
            t_chapter = time.perf_counter() - t2
            browser.close()
    finally:
        srv.stop()
    return t_healthy - t0, t_home, t_chapter


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chapter", default="attention")
    args = ap.parse_args()
    rows = []
    for i in range(args.runs):
        rows.append(one_run(args.chapter))
        h, home, chap = rows[-1]
        print(f"run {i + 1}: server healthy after {h:.2f} s; home painted {home:.2f} s after healthy; "
              f"/{args.chapter} painted {chap:.2f} s after that")
    med = [statistics.median(r[i] for r in rows) for i in range(3)]
    print(f"median: healthy {med[0]:.2f} s, home {med[1]:.2f} s (target < 3 s), "
          f"/{args.chapter} {med[2]:.2f} s")


if __name__ == "__main__":
    main()
