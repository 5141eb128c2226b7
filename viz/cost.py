"""Figures of the Cost chapter: measured attention time on log-log axes with the n^2 guide (n² attention-cost example),
FlashAttention's tile grid and one row's running softmax statistics (FlashAttention example), memory traffic and
FLOPs dense vs tiled, FLOPs per component of the live model, and the budget calculators (compute-budget example).

Pure builders: numbers (lists, numpy arrays, lmviz records) and already-translated labels in,
Plotly figures out. No streamlit, no torch import.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lmviz.numfmt import axis_ticks, tick_label
from viz import theme
from viz.theme import COLORS, log_range

# tile-grid cell states (the z values of the grid heatmap)
PENDING, DONE, CURRENT, SKIPPED, MASKED = 0, 1, 2, 3, 4
_STATE_COLORS = ["#FFFFFF", COLORS["value"], COLORS["chosen"], COLORS["masked"], "#E4E4E4"]
# the three parts of a layer's FLOPs, always in these colours
PART_COLORS = {"attention": COLORS["chosen"], "projections": COLORS["query"], "mlp": COLORS["value"]}


def _np(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------- n² attention cost, measured -------
def n2_guide(ns, t_anchor: float, n_anchor: int) -> np.ndarray:
    """t(n) = t_anchor * (n / n_anchor)^2: the slope-2 line through one measured point.

    >>> n2_guide([512, 1024], 1.0, 512).tolist()
    [1.0, 4.0]
    """
    return t_anchor * (_np(ns) / n_anchor) ** 2


def timing_figure(ns, t_scores, t_full, *, names: dict, x_title: str, y_title: str,
                  title: str | None = None, height: int = 380, full_spread=None, lang: str = "en") -> go.Figure:
    """Measured seconds vs n on log-log axes, with the n^2 guide through the largest n of the
    full-attention curve (on log-log axes any power law is a straight line; n^2 has slope 2).

    `names`: {"scores", "full", "guide"} -> legend labels. `full_spread`: (fastest, slowest)
    seconds per n over repeated rounds, drawn as error bars on the full-attention curve.
    """
    ns, ts, tf = _np(ns), _np(t_scores) * 1e3, _np(t_full) * 1e3   # milliseconds
    err = None
    if full_spread is not None:
        lo, hi = (_np(x) * 1e3 for x in full_spread)
        err = dict(type="data", symmetric=False, array=hi - tf, arrayminus=tf - lo, thickness=1.5)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ns, y=ts, mode="lines+markers", name=names["scores"],
                             line=dict(color=COLORS["key"], width=3),
                             hovertemplate="n=%{x}: %{y:.3f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(x=ns, y=tf, mode="lines+markers", name=names["full"], error_y=err,
                             line=dict(color=COLORS["query"], width=3),
                             hovertemplate="n=%{x}: %{y:.3f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(x=ns, y=n2_guide(ns, tf[-1], ns[-1]), mode="lines",
                             name=names["guide"], line=dict(color=COLORS["neutral"], dash="dash"),
                             hoverinfo="skip"))
    every = list(ts) + list(tf) + list(n2_guide(ns, tf[-1], ns[-1])) + ([] if full_spread is None else list(lo) + list(hi))
    fig.update_xaxes(type="log", title=x_title, range=log_range(ns, pad=0.15),
                     **axis_ticks(0, 0, lang, at=[int(n) for n in ns]))
    fig.update_yaxes(type="log", title=y_title, dtick="D2", range=log_range(every, pad=0.1))  # 1, 2, 5 x 10^k only
    return theme.apply(fig, height=height, title=title)


# ---------------------------------------------------------------- FlashAttention -----
def tile_states(n_q: int, n_k: int, visits, step: int, causal: bool = True) -> np.ndarray:
    """[n_q, n_k] cell states after `step` tile visits (1-based: visit step-1 is CURRENT).

    Cells of visits before it are DONE (or MASKED when causal and in the future inside a
    computed tile), skipped tiles are SKIPPED once reached, later tiles PENDING.

    >>> from types import SimpleNamespace as V
    >>> vs = [V(q_range=(0, 1), k_range=(0, 1), skipped=False), V(q_range=(0, 1), k_range=(1, 2), skipped=True)]
    >>> tile_states(1, 2, vs, 1).tolist()
    [[2, 0]]
    """
    z = np.full((n_q, n_k), PENDING, dtype=np.int64)
    offset = n_k - n_q
    for i, v in enumerate(visits[:step]):
        (q0, q1), (k0, k1) = v.q_range, v.k_range
        if v.skipped:
            z[q0:q1, k0:k1] = SKIPPED
            continue
        z[q0:q1, k0:k1] = CURRENT if i == step - 1 else DONE
        if causal:
            qpos = np.arange(q0, q1)[:, None] + offset
            future = np.arange(k0, k1)[None, :] > qpos
            block = z[q0:q1, k0:k1]
            block[future] = MASKED
    return z


def tile_grid_figure(states, block_q: int, block_k: int, *, row: int, state_names: Sequence[str],
                     x_title: str, y_title: str, row_text: str, title: str | None = None,
                     tick_labels: Sequence[str] | None = None, height: int = 440) -> go.Figure:
    """The [n_q, n_k] score matrix that FlashAttention never stores, drawn as its tiles:
    query rows top to bottom, key columns left to right, tile borders as lines, the traced
    row outlined. `state_names` labels the five states (pending, done, current, skipped,
    masked) in the legend.
    """
    z = np.asarray(states)
    n_q, n_k = z.shape
    k = len(_STATE_COLORS)
    scale = []
    for i, c in enumerate(_STATE_COLORS):   # a discrete colour scale: one flat band per state
        scale += [[i / k, c], [(i + 1) / k, c]]
    names = np.asarray(state_names, dtype=object)[z]
    fig = go.Figure(go.Heatmap(z=z, zmin=-0.5, zmax=k - 0.5, colorscale=scale, showscale=False,
                               customdata=names, xgap=0.5, ygap=0.5,
                               hovertemplate="q=%{y}, k=%{x}: %{customdata}<extra></extra>"))
    # tile borders and the traced row's outline as two line traces (one shape per line is slow)
    xs = sorted({*range(0, n_k, block_k), n_k})
    ys = sorted({*range(0, n_q, block_q), n_q})
    bx, by = [], []
    for x in xs:
        bx += [x - 0.5, x - 0.5, None]; by += [-0.5, n_q - 0.5, None]
    for y in ys:
        bx += [-0.5, n_k - 0.5, None]; by += [y - 0.5, y - 0.5, None]
    fig.add_trace(go.Scatter(x=bx, y=by, mode="lines", line=dict(color="#444444", width=1.5),
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=[-0.5, n_k - 0.5, n_k - 0.5, -0.5, -0.5],
                             y=[row - 0.5, row - 0.5, row + 0.5, row + 0.5, row - 0.5], mode="lines",
                             line=dict(color=COLORS["query"], width=3), hoverinfo="skip",
                             name=row_text))
    for i, (name, c) in enumerate(zip(state_names, _STATE_COLORS)):  # legend swatches
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker=dict(symbol="square", size=14, color=c,
                                             line=dict(color="#888888", width=1))))
    ticks = {}
    if tick_labels is not None and len(tick_labels) == n_k and n_k <= 40:
        ticks = dict(tickmode="array", tickvals=list(range(n_k)), ticktext=list(tick_labels))
    fig.update_xaxes(title=x_title, range=[-0.5, n_k - 0.5], showgrid=False, zeroline=False,
                     side="top", **ticks)
    ticks_y = {}
    if tick_labels is not None and len(tick_labels) == n_q and n_q <= 40:
        ticks_y = dict(tickmode="array", tickvals=list(range(n_q)), ticktext=list(tick_labels))
    fig.update_yaxes(title=y_title, range=[n_q - 0.5, -0.5], showgrid=False, zeroline=False,
                     scaleanchor="x", constrain="domain", **ticks_y)
    theme.apply(fig, height=height, title=title)
    fig.update_layout(margin=dict(l=10, r=80, t=60 if title else 40, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.02, x=0))
    return fig


def row_stats_figure(updates, *, names: dict, x_title: str, title: str | None = None,
                     height: int = 440) -> go.Figure:
    """One query row's online softmax, key tile by key tile: the tile's max score and the
    running max m (top), the running sum l of exp(s - m) (bottom). A drop in l's growth where
    m jumps is the rescaling exp(m_old - m_new) at work.

    `updates`: lmviz.attention.RowUpdate records so far; `names`: {"tile_max", "m", "l"}.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    x = [f"{u.k_range[0]}–{u.k_range[1] - 1}" for u in updates]
    tile_max = [u.tile_max if np.isfinite(u.tile_max) else None for u in updates]
    fig.add_trace(go.Bar(x=x, y=tile_max, name=names["tile_max"], marker_color=COLORS["key"],
                         opacity=0.6), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=[u.m for u in updates], mode="lines+markers", name=names["m"],
                             line=dict(color=COLORS["query"], width=3)), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=[u.l for u in updates], mode="lines+markers", name=names["l"],
                             line=dict(color=COLORS["value"], width=3),
                             text=[f"×{u.rescale:.3f}" for u in updates],
                             hovertemplate="l=%{y:.4f} (rescale %{text})<extra></extra>"),
                  row=2, col=1)
    fig.update_xaxes(type="category", title=x_title, row=2, col=1)
    fig.update_yaxes(title="m", row=1, col=1)
    fig.update_yaxes(title="l", row=2, col=1)
    return theme.apply(fig, height=height, title=title)


def row_compare_figure(tiled, dense, *, names: dict, x_title: str, title: str | None = None,
                       height: int = 300) -> go.Figure:
    """The traced row's output, coordinate by coordinate: tiled (so far) next to dense.

    `names`: {"tiled", "dense"}.
    """
    a, b = _np(tiled), _np(dense)
    x = np.arange(len(b))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=b, name=names["dense"], marker_color=COLORS["neutral"]))
    fig.add_trace(go.Bar(x=x, y=a, name=names["tiled"], marker_color=COLORS["value"]))
    fig.update_layout(barmode="group", bargap=0.15)
    fig.update_xaxes(title=x_title)
    return theme.apply(fig, height=height, title=title)


def traffic_figure(ns, dense_bytes, tiled_bytes, flops, *, names: dict, x_title: str,
                   bytes_title: str, flops_title: str, title: str | None = None,
                   height: int = 380, lang: str = "en") -> go.Figure:
    """Left: bytes moved to/from slow memory, dense vs tiled. Right: the FLOPs, the same curve
    for both (tiling changes where numbers live, not how many multiplications there are).

    `names`: {"dense", "tiled", "flops"}. Numbers are written in ``lang`` (lmviz.numfmt).
    """
    ns = _np(ns)
    mib_d, mib_t, fl = _np(dense_bytes) / 2.0 ** 20, _np(tiled_bytes) / 2.0 ** 20, _np(flops)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12)
    fig.add_trace(go.Scatter(x=ns, y=mib_d, mode="lines+markers",
                             name=names["dense"], line=dict(color=COLORS["negative"], width=3),
                             hovertemplate="n=%{x}: %{y:.2f} MiB<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=ns, y=mib_t, mode="lines+markers",
                             name=names["tiled"], line=dict(color=COLORS["value"], width=3),
                             hovertemplate="n=%{x}: %{y:.2f} MiB<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=ns, y=fl, mode="lines+markers", name=names["flops"],
                             line=dict(color=COLORS["chosen"], width=3),
                             customdata=[tick_label(float(f"{v:.3g}"), lang) for v in fl],
                             hovertemplate="n=%{x}: %{customdata}<extra></extra>"), row=1, col=2)
    ticks = axis_ticks(0, 0, lang, at=[int(n) for n in ns])
    for c in (1, 2):
        fig.update_xaxes(type="log", title=x_title, row=1, col=c, **ticks)
    both = np.concatenate([mib_d, mib_t])
    fig.update_yaxes(type="log", title=bytes_title, row=1, col=1,
                     **axis_ticks(float(both.min()), float(both.max()), lang, log=True))
    fig.update_yaxes(type="log", title=flops_title, row=1, col=2,
                     **axis_ticks(float(fl.min()), float(fl.max()), lang, log=True))
    return theme.apply(fig, height=height, title=title)


# ---------------------------------------------------------------- where the time goes -----
MIN_LABELLED_SHARE = 7.0   # % of a stacked bar below which its segment is not labelled


def flops_share_figure(records, *, names: dict, x_title: str, y_title: str, crossover: float,
                       crossover_text: str, title: str | None = None,
                       height: int = 380, lang: str = "en") -> go.Figure:
    """Share of a forward pass's FLOPs per component (attention, projections, MLP), one
    stacked bar per n. `records`: lmviz.chapters.cost.LayerFlops; `names`: part -> legend label.
    The dashed line marks the n where attention passes the rest (n = (2 + r) d).
    """
    x = [tick_label(r.n, lang) for r in records]
    fig = go.Figure()
    for part in ("attention", "projections", "mlp"):
        share = [100.0 * getattr(r, part) / r.total for r in records]
        fig.add_trace(go.Bar(x=x, y=share, name=names[part], marker_color=PART_COLORS[part],
                             # a share too thin for its number shows none (Plotly shrank "3%" to a speck)
                             text=[f"{s:.0f}%" if s >= MIN_LABELLED_SHARE else "" for s in share],
                             textposition="inside",
                             hovertemplate=f"{names[part]}" + ": %{y:.1f}%<extra></extra>"))
    fig.update_layout(barmode="stack")
    ns = [r.n for r in records]
    # the crossover between two categories, interpolated on the log scale of n
    pos = float(np.interp(np.log2(crossover), np.log2(ns), np.arange(len(ns)))) if ns else 0.0
    if ns and ns[0] <= crossover <= ns[-1]:
        # the line stops at the bars' top, under its note (drawn the chart's full height, it ran
        # through the note's words)
        fig.add_shape(type="line", x0=pos, x1=pos, y0=0, y1=100, xref="x", yref="y",
                      line=dict(color="#333333", dash="dash", width=2))
        fig.add_annotation(x=pos, y=103, text=crossover_text, showarrow=False, yanchor="bottom")
    fig.update_xaxes(type="category", title=x_title)
    fig.update_yaxes(title=y_title, range=[0, 112])
    return theme.apply(fig, height=height, title=title)


def prefill_decode_figure(prefill, decode, *, names: dict, groups: Sequence[str], y_title: str,
                          title: str | None = None, height: int = 340, lang: str = "en") -> go.Figure:
    """FLOPs per component for a whole prefill of n tokens vs one decode step with n cached
    keys, on a log axis (they differ by orders of magnitude). `groups`: the two x labels; the
    numbers are written in ``lang`` (lmviz.numfmt: 1.34 亿 on a Chinese chart, 134 M on an English one)."""
    fig = go.Figure()
    every = []
    for part in ("attention", "projections", "mlp"):
        ys = [float(getattr(prefill, part)), float(getattr(decode, part))]
        every += ys
        text = [tick_label(float(f"{v:.3g}"), lang) for v in ys]
        fig.add_trace(go.Bar(x=list(groups), y=ys, name=names[part], marker_color=PART_COLORS[part],
                             text=text, textposition="outside", cliponaxis=False,
                             hovertemplate="%{x}: %{text}<extra>" + names[part] + "</extra>"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(type="log", title=y_title, **axis_ticks(min(every), max(every), lang, log=True))
    return theme.apply(fig, height=height, title=title)


# ---------------------------------------------------------------- budgets (compute-budget example) ----------
def chinchilla_figure(cs, n_rule, n_fit, points, c_now: float, *, names: dict, x_title: str,
                      y_title: str, title: str | None = None, height: int = 380, lang: str = "en") -> go.Figure:
    """Compute-optimal parameters vs compute on log-log axes: the 20-tokens-per-parameter line,
    the paper's approach-3 fit, the paper's Table 3 points and the chosen budget.

    `points`: [(compute, params)]; `names`: {"rule", "fit", "table", "now"}.
    """
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=_np(cs), y=_np(n_rule), mode="lines", name=names["rule"],
                             line=dict(color=COLORS["query"], width=3)))
    fig.add_trace(go.Scatter(x=_np(cs), y=_np(n_fit), mode="lines", name=names["fit"],
                             line=dict(color=COLORS["key"], width=3, dash="dash")))
    fig.add_trace(go.Scatter(x=[c for c, _ in points], y=[n for _, n in points], mode="markers",
                             name=names["table"], marker=dict(color=COLORS["neutral"], size=10,
                                                             symbol="diamond")))
    fig.add_vline(x=c_now, line=dict(color=COLORS["chosen"], width=2))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=names["now"],
                             line=dict(color=COLORS["chosen"], width=2)))
    fig.update_xaxes(type="log", title=x_title, exponentformat="power")
    ys = np.concatenate([_np(n_rule), _np(n_fit), _np([n for _, n in points])])
    fig.update_yaxes(type="log", title=y_title, **axis_ticks(float(ys.min()), float(ys.max()), lang, log=True))
    return theme.apply(fig, height=height, title=title)


def memory_figure(recipes: Sequence[str], parts: dict, *, names: dict, x_title: str,
                  title: str | None = None, height: int = 360) -> go.Figure:
    """Bytes per parameter by recipe, stacked: weights, fp32 master copy, gradients, optimizer.

    `parts`: part -> [bytes per parameter, one per recipe]; `names`: part -> legend label.
    """
    colours = {"weights": COLORS["query"], "master": COLORS["token"], "grads": COLORS["key"],
               "optimizer": COLORS["accent"]}
    fig = go.Figure()
    for part in ("weights", "master", "grads", "optimizer"):
        fig.add_trace(go.Bar(y=list(recipes), x=parts[part], name=names[part], orientation="h",
                             marker_color=colours[part],
                             hovertemplate="%{y}: %{x} B<extra>" + names[part] + "</extra>"))
    totals = np.sum([parts[p] for p in ("weights", "master", "grads", "optimizer")], axis=0)
    fig.add_trace(go.Scatter(y=list(recipes), x=totals, mode="text", text=[f" {v:g}" for v in totals],
                             textposition="middle right", showlegend=False, hoverinfo="skip"))
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_xaxes(title=x_title, range=[0, float(totals.max()) * 1.18])
    fig.update_yaxes(autorange="reversed")
    return theme.apply(fig, height=height, title=title)
