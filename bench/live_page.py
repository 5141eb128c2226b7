"""The live training page in a real browser: how hard the page makes Chromium work while a model
trains, and how soon a Stop click lands.

    python bench/live_page.py [--seconds 8]

Two parts, each side by side in one run:

1. **The perplexity panel alone**: a one-chart Streamlit page (written to a temporary folder)
   redraws ``viz.training.ppl_lr_figure`` once a second with growing data, as the live page
   does; once with the figure as lmviz builds it (a given log range, the lines' labels placed in
   log10 units) and once as it was built before (autorange, the labels in data units, which on a
   log axis puts them far off the chart). Prints the browser's layouts per second and the share of its
   main thread in tasks (Chrome's Performance metrics ``LayoutCount`` and ``TaskDuration``).
2. **The whole /training page** (a fresh ``streamlit run app.py``): idle, then while the default
   preset trains: layouts per second, main-thread share, copies of each live chart in the page
   (one is right), then the time from the Stop click to the Start button enabled again.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_util import CHROMIUM, LAUNCH_ARGS, Server, wait_idle  # noqa: E402

PANEL_APP = """
import sys; sys.path.insert(0, {root!r})
import streamlit as st
from viz.training import ppl_lr_figure
st.session_state.setdefault("n", 10)

@st.fragment(run_every=1.0)
def body():
    st.session_state["n"] += 10
    k = st.session_state["n"]
    steps = list(range(1, k)); lrs = [1e-3 * min(1, s / 20) for s in steps]
    ev = list(range(0, k, 25))
    fig = ppl_lr_figure(ev, [80 / (1 + e / 50) for e in ev], steps, lrs,
                        lines=[(83.0, "uniform"), (22.4, "unigram")])
    if st.query_params.get("mode") == "before":     # autorange, labels placed in data units
        fig.update_yaxes(range=None, autorange=True, tickvals=None, ticktext=None, dtick="D2", row=1, col=1)
        for a in fig.layout.annotations:
            if a.text in ("uniform", "unigram"):
                a.y = 10 ** a.y
    c1, c2 = st.columns([3, 2])
    with c2:
        st.plotly_chart(fig, key="p", width="stretch")
body()
"""


def metrics(cdp) -> dict:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def rates(page, seconds: float) -> tuple[float, float]:
    """(layouts per second, share of the main thread in tasks) over ``seconds``."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    a = metrics(cdp)
    time.sleep(seconds)
    z = metrics(cdp)
    return (z["LayoutCount"] - a["LayoutCount"]) / seconds, (z["TaskDuration"] - a["TaskDuration"]) / seconds


def panel(browser, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "panel.py"
        app.write_text(PANEL_APP.format(root=str(ROOT)))
        srv = Server(str(app))
        try:
            for mode in ("lmviz", "before", "lmviz", "before"):      # interleaved
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(srv.url("", mode=mode))
                page.wait_for_selector(".js-plotly-plot", timeout=60_000)
                time.sleep(3)
                lay, busy = rates(page, seconds)
                print(f"panel, {mode:6s}: {lay:6.1f} layouts/s, main thread {100 * busy:3.0f} % busy", flush=True)
                page.close()
        finally:
            srv.stop()


def whole_page(browser, seconds: float) -> None:
    srv = Server()
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(srv.url("training", lang="en", corpus="english", preset="default"))
        wait_idle(page)
        lay, busy = rates(page, seconds)
        print(f"/training, idle:     {lay:6.1f} layouts/s, main thread {100 * busy:3.0f} % busy", flush=True)
        page.locator(".st-key-train_start button").click()
        page.wait_for_selector(".st-key-train_loss .js-plotly-plot", state="attached")
        time.sleep(5)
        lay, busy = rates(page, seconds)
        print(f"/training, training: {lay:6.1f} layouts/s, main thread {100 * busy:3.0f} % busy", flush=True)
        for _ in range(3):
            time.sleep(5)
            copies = {k: page.locator(f".st-key-{k} .js-plotly-plot").count()
                      for k in ("train_loss", "train_ppl_lr", "train_att")}
            print(f"/training, copies of each live chart in the page: {copies}", flush=True)
        t0 = time.perf_counter()
        page.locator(".st-key-train_stop button").click()
        t1 = time.perf_counter()
        page.wait_for_selector(".st-key-train_start button:not([disabled])")
        t2 = time.perf_counter()
        print(f"/training, Stop: click landed after {t1 - t0:.2f} s, Start enabled {t2 - t0:.2f} s after the click",
              flush=True)
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each measurement")
    args = ap.parse_args()
    if not 1 <= args.seconds <= 60:
        ap.error("seconds: 1-60")
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("LMVIZ_THREADS", "1")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        panel(browser, args.seconds)
        whole_page(browser, args.seconds)
        browser.close()


if __name__ == "__main__":
    main()
