"""Mounting lmviz's charts in Chromium: with the margins they are given vs lmviz's usual 10 px sides.

    python bench/chart_mount.py [--rounds 30] [--width 600]

A chart whose margins are too small for its axes is drawn twice by Plotly: its automargin draws
every trace, measures the axes, widens the margins and draws again. The charts redrawn most (the
temperature section's two, at every move of τ on every follower's screen; the replay's map and
bars, at every scrub step) are given the margins Plotly makes (viz.generation.BARS_MARGIN,
CURVES_MARGIN; viz.replay.EMBEDDING_MARGIN, DISTRIBUTION_MARGIN). This mounts each figure, as
lmviz hands it to Streamlit (``ui.render._flat_figure``), in a blank page with the plotly.js the
``plotly`` package ships, both ways, alternating, and prints the median time of ``Plotly.newPlot``
and the margins drawn. Same input and same work for both: only the four sides differ.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def figures() -> dict:
    """{name: figure as lmviz hands it over}: the temperature section's two charts (en) and the
    replay's embedding map (1,024 points, the poems' vocabulary size) and next-token bars."""
    import numpy as np

    from chapters.generation import temperature_figures
    from ui.render import _flat_figure
    from viz import replay as vr

    bars, curves = temperature_figures(0.5, "en")
    rng = np.random.default_rng(0)
    classes = ["lower", "upper", "digit", "space", "punct", "cjk"]
    n = 1024
    figs = {
        "τ bars": bars,
        "τ curves": curves,
        "replay map": vr.embedding_figure(rng.normal(size=(n, 2)), [f"t{i}" for i in range(n)],
                                          rng.choice(classes, n).tolist(), {c: c for c in classes}),
        "replay bars": vr.distribution_figure(list("白日依山尽黄河入海流"), np.sort(rng.random(10))[::-1] / 2,
                                              y_title="p"),
    }
    return {k: _flat_figure(f) for k, f in figs.items()}


MOUNT = """async ([fig, width]) => {
  const div = document.createElement('div'); div.style.width = width + 'px'; document.body.appendChild(div);
  const t0 = performance.now();
  await Plotly.newPlot(div, fig.data, fig.layout, {displaylogo: false, responsive: false});
  const ms = performance.now() - t0, s = div._fullLayout._size;
  Plotly.purge(div); div.remove();
  return [ms, [s.l, s.r, s.t, s.b].map(Math.round)];
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30, help="mounts of each figure each way (3 more not counted)")
    ap.add_argument("--width", type=int, default=600, help="the chart's width in px (half of a wide page)")
    args = ap.parse_args()
    import plotly
    from playwright.sync_api import sync_playwright

    from tests.browser_util import CHROMIUM, LAUNCH_ARGS

    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    ways = {}
    for name, fig in figures().items():
        given = fig.to_plotly_json()
        usual = fig.to_plotly_json()
        usual["layout"]["margin"] = dict(usual["layout"].get("margin", {}), l=10, r=10, b=10)
        ways[name] = {"given": given, "usual 10 px": usual}
    times = {(n, w): [] for n in ways for w in ways[n]}
    drawn = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        page = browser.new_page(viewport={"width": args.width + 100, "height": 900})
        page.set_content("<html><body></body></html>")
        page.add_script_tag(path=str(js))
        for rnd in range(args.rounds + 3):
            for name, pair in ways.items():
                for way in (list(pair) if rnd % 2 else list(pair)[::-1]):     # alternate which goes first
                    ms, sides = page.evaluate(MOUNT, [pair[way], args.width])
                    if rnd >= 3:
                        times[name, way].append(ms)
                        drawn[name, way] = sides
        browser.close()
    version = next((w for w in js.read_text(encoding="utf-8")[:200].split() if w.startswith("v")), "?")
    print(f"plotly.js {version} (the plotly package's copy), Chromium, {args.width} px wide, "
          f"{args.rounds} mounts each way")
    for name, pair in ways.items():
        a, b = (statistics.median(times[name, w]) for w in pair)
        given = [pair["given"]["layout"]["margin"].get(k) for k in "lrtb"]
        print(f"{name:12s} given {given} drawn {drawn[name, 'given']}: {a:6.1f} ms;  usual 10 px, drawn "
              f"{drawn[name, 'usual 10 px']}: {b:6.1f} ms;  ratio {b / a:.2f}", flush=True)


if __name__ == "__main__":
    main()
