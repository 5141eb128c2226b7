"""The browser's work to open a chapter, this checkout beside another one, in one run.

    python bench/chapter_paint.py --base /path/to/other/checkout [--chapters attention,embedding]
                                  [--rounds 4] [--lang en]

Starts ``streamlit run app.py`` in both checkouts (each with its own ``.venv`` if it has one, else
this Python), then, alternating between them, opens each chapter in a fresh headless Chromium tab,
waits until the script has finished and 2 s more, and sums the page's long tasks (the
``longtask`` entries, buffered from the start: Streamlit's own start-up, the chapter's deltas and
every chart's drawing). The first round warms both servers and is not counted. Prints, per
checkout and chapter, the charts drawn and the sums of each counted round with their median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_util import CHROMIUM, LAUNCH_ARGS, free_port, wait_idle  # noqa: E402

LONG_TASKS = ("window.__lt = []; new PerformanceObserver(l => { for (const e of l.getEntries()) "
              "window.__lt.push(e.duration); }).observe({type: 'longtask', buffered: true});")


def start(tree: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    py = tree / ".venv" / "bin" / "python"
    proc = subprocess.Popen([str(py if py.exists() else sys.executable), "-m", "streamlit", "run", "app.py",
                             "--server.headless=true", f"--server.port={port}", "--server.address=127.0.0.1"],
                            cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, LMVIZ_THREADS="1"))
    return proc, port


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="another checkout of lmviz to compare with")
    ap.add_argument("--chapters", default="attention,embedding,generation")
    ap.add_argument("--rounds", type=int, default=4, help="rounds, the first one not counted")
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    trees = {"this": ROOT, "base": Path(args.base).resolve()}
    servers = {k: start(v) for k, v in trees.items()}
    chapters = args.chapters.split(",")
    sums: dict = {(k, c): [] for k in trees for c in chapters}
    charts: dict = {}
    try:
        time.sleep(8)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            for rnd in range(args.rounds):
                for k, (_, port) in servers.items():
                    for c in chapters:
                        page = browser.new_page(viewport={"width": 1400, "height": 1000})
                        page.add_init_script(LONG_TASKS)
                        page.goto(f"http://127.0.0.1:{port}/{c}?lang={args.lang}")
                        wait_idle(page)
                        page.wait_for_timeout(2000)
                        if rnd:
                            sums[k, c].append(sum(page.evaluate("() => window.__lt")))
                            charts[k, c] = page.locator(".js-plotly-plot").count()
                        page.close()
            browser.close()
    finally:
        for proc, _ in servers.values():
            proc.kill()
    for (k, c), xs in sums.items():
        print(f"{k:4s} {c:12s} charts {charts.get((k, c), 0)}, long tasks (ms) "
              f"{', '.join(f'{x:.0f}' for x in xs)}; median {statistics.median(xs):.0f}", flush=True)


if __name__ == "__main__":
    main()
