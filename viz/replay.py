"""Figures for "Replay training": one head's attention, the token embeddings, the next-token bars,
and the loss curve whose selected stretch picks the snapshot.

Pure builders: numbers in (labels already translated by the caller), figures out. The three
pictures of one snapshot are Plotly figures like the rest of lmviz; the loss curve is an Altair
chart, because a brushed interval on it is a linked selection Streamlit hands back to the page
(``st.altair_chart(..., on_select="rerun")``), which Plotly's charts in Streamlit do not do for a
range on one axis.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz import theme
from viz.theme import COLORS
from viz.training import attention_figure, downsample

__all__ = ["attention_figure", "embedding_figure", "distribution_figure", "loss_selection_chart", "at_step",
           "SELECTION", "CLASS_COLORS"]

# The margins Plotly's automargin gives these two charts' axes in Streamlit's look (viz.theme.flat:
# axis titles 14 px, tick labels 12 px), read from the charts drawn in Chromium at the page's widths
# and checked there again (tests/test_browser_flat_charts.py). Given up front, Plotly finds the room
# there and draws a chart once; from lmviz's 10 px it draws every point, measures the axes, widens
# the margins and draws every point again: the 1,024-point map took 64 instead of 30 ms a scrub step
# (and the bars 25 instead of 15). ``r`` of the bars: half a long last tick label past the last bar.
EMBEDDING_MARGIN = dict(l=44, r=10, t=20, b=40)     # no tick labels: the two axis titles only
DISTRIBUTION_MARGIN = dict(l=71, r=20, t=20, b=66)  # y ticks 0 ... 1 and its title, one row of x ticks
PROB_TICKS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]         # the bars' y ticks (the room above is for these)

SELECTION = "stretch"          # the Altair interval parameter's name (the page reads it back)
MAX_LABELLED = 160             # an embedding scatter with at most this many points shows the tokens
CLASS_COLORS = {               # token class (lmviz.replay.token_classes) -> colour (Okabe-Ito, all distinct)
    "lower": "#0072B2", "upper": "#CC79A7", "digit": "#E69F00", "space": "#D55E00",
    "punct": "#009E73", "cjk": "#56B4E9", "mixed": "#444444", "other": "#999999",
}


def embedding_figure(xy, labels, classes, class_names: dict, *, hover: str = "%{text}",
                     height: int = 380) -> go.Figure:
    """Token embeddings in 2-D [P, 2], one trace per token class (legend: ``class_names``).

    With at most MAX_LABELLED points each point is drawn as its token; otherwise as a dot (the
    token on hover). The axes are zoomed to the points, equal in both directions, centred on 0.
    """
    xy = np.asarray(xy, dtype=float)
    labels, classes = list(labels), list(classes)
    as_text = len(labels) <= MAX_LABELLED
    fig = go.Figure()
    for c in [c for c in CLASS_COLORS if c in set(classes)]:
        idx = [i for i, k in enumerate(classes) if k == c]
        fig.add_trace(go.Scatter(
            x=xy[idx, 0], y=xy[idx, 1], mode="text" if as_text else "markers",
            text=[labels[i] for i in idx], name=class_names.get(c, c),
            textfont=dict(color=CLASS_COLORS[c], size=15), marker=dict(color=CLASS_COLORS[c], size=6),
            hovertemplate=hover + "<extra></extra>"))
    r = float(np.abs(xy).max()) * 1.12 if xy.size and np.abs(xy).max() > 0 else 1.0
    fig.update_xaxes(range=[-r, r], zeroline=False, showticklabels=False, title_text="PCA 1")
    fig.update_yaxes(range=[-r, r], zeroline=False, showticklabels=False, title_text="PCA 2",
                     scaleanchor="x", scaleratio=1)
    return theme.apply(fig, height=height, margin=EMBEDDING_MARGIN)


def distribution_figure(labels, probs, *, x_title: str = "", y_title: str = "",
                        hover: str = "%{x}: %{y:.3f}", height: int = 340) -> go.Figure:
    """The most probable next tokens as bars (most probable first; the y axis fixed at 0..1)."""
    probs = np.asarray(probs, dtype=float)
    colors = [COLORS["chosen"]] + [COLORS["token"]] * (len(probs) - 1)
    names = [f"{i + 1}. {lab}" for i, lab in enumerate(labels)]      # unique, though two tokens may read alike
    # a small probability with two significant digits: at step 0 (near uniform over thousands of
    # tokens) ten bars read "0.00"
    fig = go.Figure(go.Bar(x=names, y=probs,
                           marker_color=colors, text=[f"{p:.2f}" if p >= 0.01 else f"{p:.2g}" for p in probs],
                           textposition="outside",
                           hovertemplate=hover + "<extra></extra>"))
    # under each bar its token alone: with its rank ("1. 的") ten labels ran into each other at a
    # third of the page's width; the bars stand in rank order, and hovering one gives its rank
    fig.update_xaxes(title_text=x_title, tickangle=0, tickvals=names, ticktext=list(labels))
    fig.update_yaxes(title_text=y_title, range=[0, 1.08], tickvals=PROB_TICKS)
    return theme.apply(fig, height=height, margin=DISTRIBUTION_MARGIN)


def loss_selection_chart(steps, losses, snap_steps, snap_losses, *, x_title: str, y_title: str,
                         curve_name: str, snap_name: str, height: int = 260) -> dict:
    """The training loss (line, downsampled) and the snapshots (points), with an interval
    selection ``SELECTION`` on the step axis (symlog: the snapshots are log-spaced and step 0 is
    one of them), as a Vega-Lite spec (a dict: Altair builds and validates it once). The rule
    at the step shown is added by :func:`at_step`, so a scrub neither builds nor validates it again."""
    import altair as alt
    import pandas as pd

    xs, ys = downsample(steps, losses) if len(steps) else (np.zeros(0), np.zeros(0))
    curve = pd.DataFrame({"step": xs, "loss": ys, "what": curve_name})
    snaps = pd.DataFrame({"step": np.asarray(snap_steps, dtype=float),
                          "loss": np.asarray([np.nan if v is None else v for v in snap_losses], dtype=float),
                          "what": snap_name}).dropna()
    top = float(max(np.max(xs) if len(xs) else 0.0, max(snaps["step"], default=0.0)))
    x = alt.X("step:Q", title=x_title, scale=alt.Scale(type="symlog"),
              axis=alt.Axis(values=symlog_ticks(top), format=",.0f"))
    y = alt.Y("loss:Q", title=y_title, scale=alt.Scale(zero=False))
    brush = alt.selection_interval(encodings=["x"], name=SELECTION)
    base = alt.Chart(curve).mark_line(color=COLORS["train"], strokeWidth=1.5).encode(
        x=x, y=y, tooltip=[alt.Tooltip("step:Q", format=",.0f"), alt.Tooltip("loss:Q", format=".3f")])
    points = alt.Chart(snaps).mark_point(color=COLORS["key"], filled=True, size=50).encode(
        x=x, y=y, tooltip=[alt.Tooltip("step:Q", format=",.0f"), alt.Tooltip("loss:Q", format=".3f")])
    layers = [base, points] if len(curve) else [points]
    return alt.layer(layers[0].add_params(brush), *layers[1:]).properties(height=height).to_dict()


def symlog_ticks(top: float) -> list[int]:
    """Round steps for a symlog step axis from 0 to ``top``: 0, then 1-2-5 steps, at most 8 of
    them past 0 (Vega's own ticks on a symlog scale bunched: "0 … 40 80 120 … 240").

    >>> symlog_ticks(240)
    [0, 1, 10, 100]
    >>> symlog_ticks(1500), symlog_ticks(0)
    ([0, 1, 10, 100, 1000], [0])
    >>> symlog_ticks(60)
    [0, 1, 2, 5, 10, 20, 50]
    """
    out, k = [0], 1
    while k <= top:
        out += [v for v in (k, 2 * k, 5 * k) if v <= top]
        k *= 10
    if len(out) > 8:                  # decades only: on a symlog axis 1-2-5 crowd past a few decades
        out = [0] + [v for v in out[1:] if str(v).lstrip("1").strip("0") == ""]
    return out


def at_step(spec: dict, selected: float) -> dict:
    """``spec`` (from :func:`loss_selection_chart`; left unchanged) with a rule at step
    ``selected``, on the chart's own step axis.

    >>> spec = {"layer": [{"mark": "line"}], "height": 260}
    >>> at_step(spec, 8)["layer"][-1]["data"]
    {'values': [{'step': 8.0}]}
    >>> len(spec["layer"])
    1
    """
    rule = {"data": {"values": [{"step": float(selected)}]},      # one row: a layer needs data to draw
            "mark": {"type": "rule", "color": COLORS["chosen"], "strokeWidth": 2},
            "encoding": {"x": {"field": "step", "type": "quantitative"}}}
    return {**spec, "layer": [*spec["layer"], rule]}
