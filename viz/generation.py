"""Figures for the Generation chapter: temperature bars and curves, the top-k / top-p filter with
its cumulative-mass line, candidate distributions of a live decoding step, and the greedy-vs-best search
tree. Pure builders: numbers and already-translated labels in, Plotly figures out."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme
from viz.theme import COLORS

_SERIES = (COLORS["token"], COLORS["query"], COLORS["chosen"])  # colours of successive bar series
# The temperature section's two charts (redrawn at each move of τ, on every follower's screen too)
# are given the sides Plotly's automargin makes for their axes, so that Plotly draws each once
# rather than drawing it, widening lmviz's 10 px margins and drawing it again
# (tests/test_browser_flat_charts.py measures them, as for the replay's charts)
BARS_MARGIN = dict(l=69, r=10, b=34)     # y ticks 0 ... 1 and their title; one row of x labels
CURVES_MARGIN = dict(l=71, r=16, b=66)   # the same y axis; log τ ticks and the τ axis's title


def _figure(data=None, **subplots) -> go.Figure:
    """A go.Figure, or a make_subplots grid when ``subplots`` are given."""
    return make_subplots(**subplots) if subplots else go.Figure(data)


def _np(x) -> np.ndarray:
    """Tensor / list -> float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def prob_bars(labels: Sequence[str], probs, *, highlight: int | None = None, y_title: str = "",
              title: str | None = None, height: int = 320, name: str = "") -> go.Figure:
    """One bar per token with its probability printed on it; bar `highlight` in the chosen colour.

    >>> prob_bars(["A", "B"], [0.75, 0.25], highlight=0).data[0].marker.color[0] == COLORS["chosen"]
    True
    """
    p = _np(probs)
    colours = [COLORS["chosen"] if i == highlight else COLORS["token"] for i in range(len(p))]
    fig = _figure(go.Bar(x=list(labels), y=p, marker_color=colours, name=name,
                           text=[f"{v:.3f}" for v in p], textposition="outside", cliponaxis=False,
                           hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    return theme.apply(fig, height=height, title=title, xaxis=dict(type="category"),
                       yaxis=dict(title=y_title, range=[0, 1.12]), margin=BARS_MARGIN)


def temperature_curves_figure(taus, probs, labels: Sequence[str], tau_now: float, *,
                              x_title: str, y_title: str, marker_text: str,
                              title: str | None = None) -> go.Figure:
    """p_i(τ) on a log τ axis, one line per token ([len(taus), V] probs), current τ marked.

    τ = 0 (greedy by convention) cannot sit on a log axis: the marker then stands at the left
    edge, and `marker_text` says so (the caller passes the label).
    """
    taus, P = _np(taus), _np(probs)
    fig = _figure([go.Scatter(x=taus, y=P[:, i], mode="lines", name=lab,
                              line=dict(color=_SERIES[i % len(_SERIES)], width=3),
                              hovertemplate=f"{lab}: " + "τ=%{x:.2f}, p=%{y:.3f}<extra></extra>")
                   for i, lab in enumerate(labels)])
    x = max(float(tau_now), float(taus.min()))
    ticks = [v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5) if taus.min() <= v <= taus.max()]
    return theme.apply(
        fig, height=340, title=title, margin=CURVES_MARGIN,
        shapes=[dict(type="line", x0=np.log10(x), x1=np.log10(x), xref="x",  # log axis: log10
                     y0=0, y1=1, yref="paper",
                     line=dict(color=COLORS["neutral"], dash="dash", width=2))],
        annotations=[dict(x=np.log10(x), y=1.04, text=marker_text, showarrow=False,
                          yanchor="bottom", xanchor="left" if x < 1 else "right", font=dict(size=13))],
        xaxis=dict(title=x_title, type="log", range=[np.log10(taus.min()), np.log10(taus.max())],
                   tickvals=ticks, ticktext=[f"{v:g}" for v in ticks]),
        yaxis=dict(title=y_title, range=[0, 1.12]))


def filter_figure(labels: Sequence[str], probs, final, kept: Sequence[int], p: float | None, *,
                  names: tuple[str, str, str, str], y_title: str, title: str | None = None
                  ) -> go.Figure:
    """Top-k / top-p on one distribution: original bars, renormalised bars of the kept tokens,
    and the cumulative mass (most probable first) with the threshold p as a horizontal line.

    names = (original, renormalised, cumulative mass, threshold label).
    `labels`/`probs` are in rank order (most probable first), as the cumulative line needs.
    """
    q, f = _np(probs), _np(final)
    kept, x = set(kept), np.arange(len(q))
    fig = _figure()
    fig.add_trace(go.Bar(x=x - 0.2, y=q, width=0.38, name=names[0],
                         marker_color=[COLORS["token"] if i in kept else COLORS["masked"]
                                       for i in range(len(q))],
                         text=[f"{v:.2f}" for v in q], textposition="outside", cliponaxis=False,
                         customdata=list(labels), hovertemplate="%{customdata}: %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Bar(x=x + 0.2, y=f, width=0.38, name=names[1], marker_color=COLORS["positive"],
                         text=[f"{v:.3f}" if v > 0 else "" for v in f], textposition="outside",
                         cliponaxis=False, customdata=list(labels),
                         hovertemplate="%{customdata}: %{y:.3f}<extra></extra>"))
    # the running sum is drawn at the right edge of each token: the mass once that token is in
    cum = np.cumsum(q) / q.sum()
    fig.add_trace(go.Scatter(x=x + 0.5, y=cum, name=names[2], mode="lines+markers+text",
                             line=dict(color=COLORS["key"], width=3), text=[f"Σ {c:.2f}" for c in cum],
                             # below-right of each point, clear of the bar labels; above-left for
                             # the last one (at the right edge) and for one just above the p line
                             textposition=["top left" if i == len(cum) - 1 or (p is not None and 0 <= c - p < 0.1)
                                           else "bottom right" for i, c in enumerate(cum)],
                             customdata=list(labels),
                             hovertemplate="≤ %{customdata}: Σ=%{y:.3f}<extra></extra>"))
    thr = [] if p is None else [dict(type="line", x0=0, x1=1, xref="paper", y0=p, y1=p, yref="y",
                                      line=dict(color=COLORS["negative"], dash="dot", width=2))]
    notes = [] if p is None else [dict(x=1, xref="paper", y=p, text=names[3], showarrow=False,
                                       xanchor="right", yanchor="top")]
    return theme.apply(fig, height=380, title=title, shapes=thr, annotations=notes,
                   xaxis=dict(tickvals=x, ticktext=list(labels), range=[-0.6, len(q) - 0.3],
                              showgrid=False),
                   yaxis=dict(title=y_title, range=[0, 1.15]))


def candidates_figure(labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *,
                      chosen: int | None = None, y_title: str = "", title: str | None = None
                      ) -> go.Figure:
    """Grouped bars of the top candidates of one decoding step along the filter chain.

    series = [(name, probs over `labels`), ...] e.g. raw softmax, after τ, after top-k/top-p;
    the last series' bar of `chosen` gets the chosen colour and a thick outline.
    """
    fig = _figure()
    for j, (name, vals) in enumerate(series):
        v = _np(vals)
        last = j == len(series) - 1
        colours = [COLORS["chosen"] if last and i == chosen else _SERIES[j % len(_SERIES)]
                   for i in range(len(v))]
        colours = colours if last else _SERIES[j % len(_SERIES)]
        fig.add_trace(go.Bar(x=list(labels), y=v, name=name, marker_color=colours,
                             opacity=1.0 if last else 0.55,
                             hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>"))
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(labels))
    fig.update_yaxes(title=y_title, rangemode="tozero")
    return theme.apply(fig, height=360, title=title)


def greedy_steps_figure(vocab: Sequence[str], steps: Sequence[tuple[str, Sequence[float], int]], *,
                        y_title: str, title: str | None = None) -> go.Figure:
    """Greedy decoding: one small bar chart per greedy step (rows), the arg-max bar highlighted in each.

    steps = [(prefix text, probs over vocab, chosen index), ...].
    """
    n = max(1, len(steps))
    fig = _figure(rows=1, cols=n, shared_yaxes=True, horizontal_spacing=0.02,
                        subplot_titles=[s[0] for s in steps] or [""])
    for c, (_, probs, chosen) in enumerate(steps, start=1):
        p = _np(probs)
        fig.add_trace(go.Bar(x=list(vocab), y=p, showlegend=False,
                             marker_color=[COLORS["chosen"] if i == chosen else COLORS["token"]
                                           for i in range(len(p))],
                             text=[f"{v:.2f}" if i == chosen else "" for i, v in enumerate(p)],
                             textposition="outside", cliponaxis=False,
                             hovertemplate="%{x}: %{y:.2f}<extra></extra>"), row=1, col=c)
        fig.update_xaxes(type="category", tickangle=-60, row=1, col=c)
    fig.update_yaxes(range=[0, 1.1], title=y_title, row=1, col=1)
    for a in fig.layout.annotations:  # subplot titles: small, they hold whole prefixes
        a.font = dict(size=11)
    return theme.apply(fig, height=300, title=title)


def tree_figure(nodes, labels: Sequence[str], greedy: Sequence, best: Sequence, *,
                names: tuple[str, str, str], title: str | None = None,
                height: int | None = None) -> go.Figure:
    """Node-link tree of a search (lmviz.sampling.SearchResult.nodes) left to right.

    Each edge carries the conditional probability, each node its token (`labels[i]`) and the
    joint probability of its path. Edges on the greedy path and on the best path are coloured;
    names = (greedy path, best path, other) for the legend.
    """
    # leaves get consecutive y slots; a parent sits at the mean of its children
    children: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    for i, n in enumerate(nodes):
        if n.parent >= 0:
            children[n.parent].append(i)
    y: dict[int, float] = {}
    slot = [0]

    def place(i: int) -> float:
        if not children[i]:
            y[i] = -slot[0]
            slot[0] += 1
        else:
            y[i] = float(np.mean([place(c) for c in children[i]]))
        return y[i]

    place(0)
    x = {i: len(n.path) for i, n in enumerate(nodes)}
    g, b = tuple(greedy), tuple(best)

    def kind(i: int) -> int:  # 0 greedy, 1 best, 2 other (a node on both paths counts as greedy)
        p = nodes[i].path
        return 0 if p == g[: len(p)] else 1 if p == b[: len(p)] else 2

    colours = (COLORS["chosen"], COLORS["positive"], COLORS["masked"])
    fig = _figure()
    for k in (2, 1, 0):  # draw grey first, coloured paths on top
        xs, ys = [], []
        for i, n in enumerate(nodes):
            if n.parent >= 0 and kind(i) == k:
                xs += [x[n.parent], x[i], None]
                ys += [y[n.parent], y[i], None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=names[k], hoverinfo="skip",
                                 line=dict(color=colours[k], width=5 if k < 2 else 2)))
        # edge labels: conditional probability at the edge's midpoint
        mids = [(0.5 * (x[n.parent] + x[i]), 0.5 * (y[n.parent] + y[i]), n.prob)
                for i, n in enumerate(nodes) if n.parent >= 0 and kind(i) == k]
        if mids:
            fig.add_trace(go.Scatter(
                x=[m[0] for m in mids], y=[m[1] for m in mids], mode="text", showlegend=False,
                text=[f"{m[2]:.2f}" for m in mids], textposition="top center",
                textfont=dict(color=colours[k] if k < 2 else "#555", size=13), hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=[x[i] for i in range(len(nodes))], y=[y[i] for i in range(len(nodes))],
        mode="markers+text", showlegend=False,
        textposition=["middle right" if not children[i] else "top center" for i in range(len(nodes))],
        text=[f"<b>{labels[i]}</b>" + (f"  Π={n.joint:.3f}" if n.parent >= 0 else "")
              for i, n in enumerate(nodes)],
        marker=dict(size=14, color=[colours[kind(i)] if i else COLORS["token"] for i in range(len(nodes))],
                    line=dict(color="white", width=1)),
        hovertemplate="%{text}<extra></extra>"))
    depth = max(x.values()) if x else 1
    fig.update_xaxes(visible=False, range=[-0.3, depth + 0.9])
    fig.update_yaxes(visible=False, range=[-slot[0] + 0.4, 0.6])
    return theme.apply(fig, height=height or min(900, max(280, 46 * slot[0] + 110)), title=title)


def room_figure(labels: Sequence[str], room, model, *, names: tuple[str, str], y_title: str = "",
                title: str | None = None, height: int = 340) -> go.Figure:
    """The room's share of answers beside the model's probability, one pair of bars per choice.

    >>> f = room_figure(["学", "other"], [0.75, 0.25], [0.5, 0.5], names=("room", "model"))
    >>> [t.name for t in f.data], [float(v) for v in f.data[0].y]
    (['room', 'model'], [0.75, 0.25])
    >>> list(room_figure(["a", "b"], [1.0, 0.0], [0.999, 0.001], names=("r", "m")).data[1].text)
    ['1.00', '']
    """
    r, m = _np(room), _np(model)
    # a bar too low to see has no number on top: side by side, two "0.00" ran into one another on
    # a phone ("0.000.00"), and the hover still gives the value
    bars = [go.Bar(x=list(labels), y=v, name=nm, marker_color=c, text=[f"{x:.2f}" if x >= 0.005 else "" for x in v],
                   textposition="outside", cliponaxis=False,
                   hovertemplate=f"{nm} · " + "%{x}: %{y:.3f}<extra></extra>")
            for v, nm, c in ((r, names[0], COLORS["chosen"]), (m, names[1], COLORS["token"]))]
    fig = _figure(bars)
    top = float(max(r.max(initial=0), m.max(initial=0)))
    return theme.apply(fig, height=height, title=title, barmode="group", xaxis=dict(type="category"),
                       yaxis=dict(title=y_title, range=[0, max(0.2, min(1.0, top) * 1.18)]))


def branch_figure(steps: Sequence[str], greedy_cum, branch_cum, fork: int, *, names: tuple[str, str],
                  x_title: str, y_title: str, title: str | None = None) -> go.Figure:
    """Branch on another token: the running sum of ln p along both continuations (one point per
    generated token, ``steps`` its labels), the step where the branch leaves greedy marked.

    >>> f = branch_figure(["1", "2"], [-0.5, -2.0], [-1.0, -1.2], 0, names=("g", "b"), x_title="", y_title="")
    >>> [len(t.y) for t in f.data], f.data[1].line.color == COLORS["chosen"]
    ([2, 2], True)
    """
    fig = _figure()
    for name, ys, colour, dash in ((names[0], greedy_cum, COLORS["query"], "solid"),
                                   (names[1], branch_cum, COLORS["chosen"], "dash")):
        fig.add_trace(go.Scatter(x=list(range(1, len(ys) + 1)), y=_np(ys), name=name, mode="lines+markers",
                                 line=dict(color=colour, dash=dash, width=3), customdata=list(steps),
                                 hovertemplate="%{customdata}: Σ ln p = %{y:.3f}<extra>" + name + "</extra>"))
    fig.add_vline(x=fork + 1, line=dict(color=COLORS["neutral"], dash="dot"))
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=list(range(1, len(steps) + 1)))
    fig.update_yaxes(title=y_title)
    return theme.apply(fig, height=340, title=title)
