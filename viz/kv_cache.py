"""Figures of the KV-cache chapter. Pure Plotly: arrays and (already translated) labels in.

Colours follow viz/theme: queries blue, keys orange, values green, the new/chosen thing
vermillion, skipped work grey.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lmviz.numfmt import axis_ticks
from viz import theme
from viz.theme import COLORS, DIVERGING


def _rect(fig, row, col, x0, x1, y0, y1, color):
    fig.add_shape(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, row=row, col=col,
                  line=dict(color=color, width=3), fillcolor="rgba(0,0,0,0)")


def cache_figure(K: np.ndarray, V: np.ndarray, visible: int, new_rows: range, row_labels: list[str],
                 *, k_title: str, v_title: str, layer_label: str, feature_label: str,
                 layer_numbers: list[int] | None = None) -> go.Figure:
    """Per-layer K and V caches as heatmaps: K, V [L, T, F] (F = kv heads x head_dim).

    Rows >= visible are not in the cache yet (blank); new_rows (written this step) are framed.
    ``layer_label`` is a template with {n}; ``layer_numbers`` names the layers shown (default 1..L).
    """
    L, T, Fdim = K.shape
    Kz, Vz = K.astype(float).copy(), V.astype(float).copy()
    Kz[:, visible:], Vz[:, visible:] = np.nan, np.nan
    # K and V get their own colour range (their magnitudes differ a lot in a trained model)
    lims = [float(np.abs(A[:, :visible]).max()) if visible else 1.0 for A in (K, V)]
    nums = list(layer_numbers) if layer_numbers is not None else list(range(1, L + 1))
    titles = [layer_label.format(n=nums[l]) + f" · {t}" for l in range(L) for t in (k_title, v_title)]
    fig = make_subplots(rows=L, cols=2, subplot_titles=titles, horizontal_spacing=0.15,
                        vertical_spacing=0.12 if L > 1 else 0.05)
    for l in range(L):
        for c, (Z, name) in enumerate(((Kz, k_title), (Vz, v_title)), start=1):
            lim = lims[c - 1] or 1.0
            fig.add_trace(go.Heatmap(
                z=Z[l], x=list(range(Fdim)), y=list(range(T)), zmin=-lim, zmax=lim, zmid=0,
                colorscale=DIVERGING, reversescale=True, showscale=False, xgap=1, ygap=1, name=name,
                hovertemplate=f"{name}<br>%{{customdata}}<br>{feature_label} %{{x}}: %{{z:.3f}}<extra></extra>",
                customdata=[[row_labels[i] if i < visible else ""] * Fdim for i in range(T)]), row=l + 1, col=c)
            if len(new_rows):
                _rect(fig, l + 1, c, -0.5, Fdim - 0.5, new_rows.start - 0.5, new_rows.stop - 0.5, COLORS["chosen"])
            ticks = [lab if i < visible else f"{i}" for i, lab in enumerate(row_labels)]
            fig.update_yaxes(tickvals=list(range(T)), ticktext=ticks, autorange="reversed",
                             row=l + 1, col=c, showgrid=False, tickfont=dict(size=14 if T <= 14 else 9))
            fig.update_xaxes(showticklabels=False, showgrid=False, row=l + 1, col=c)
    for a in fig.layout.annotations:  # subplot titles: K orange, V green
        a.font = dict(color=COLORS["key"] if k_title in a.text else COLORS["value"], size=14)
    return theme.apply(fig, height=max(260, 40 + L * (60 + min(28 * T, 480))))


def query_figure(weights: np.ndarray, row_labels: list[str], *, title: str, head_label: str,
                 y_label: str) -> go.Figure:
    """The new token's attention over every cached row: weights [H, T] (one bar group per row)."""
    H, T = weights.shape
    fig = go.Figure()
    shades = [COLORS["query"], COLORS["token"], "#004C7A", "#7FB8DA"]
    for h in range(H):
        fig.add_bar(x=row_labels, y=weights[h], name=head_label.format(n=h + 1), marker_color=shades[h % len(shades)],
                    text=[f"{w:.2f}" for w in weights[h]], textposition="outside", cliponaxis=False)
    fig.update_layout(barmode="group", yaxis=dict(range=[0, 1.12], title=y_label), xaxis=dict(type="category"))
    fig = theme.apply(fig, height=300, title=title)
    fig.update_layout(title_font_size=13, legend=dict(y=1.0, yanchor="bottom", x=1, xanchor="right"))
    return fig


PLAN_CODE = {"skip": 0, "reuse": 1, "compute": 2}


def recompute_figure(plans: list[list[dict[str, str]]], row_labels: list[str], titles: list[str],
                     words: dict[str, str]) -> go.Figure:
    """Side-by-side grids (one per plan): rows = positions, columns q, k, v; each cell says
    whether this step computes it, reuses it from the cache or does not need it."""
    scale = [[0, "#EEEEEE"], [0.33, "#EEEEEE"], [0.33, COLORS["key"]], [0.66, COLORS["key"]],
             [0.66, COLORS["chosen"]], [1, COLORS["chosen"]]]
    fig = make_subplots(rows=1, cols=len(plans), subplot_titles=titles, horizontal_spacing=0.12)
    for c, plan in enumerate(plans, start=1):
        z = [[PLAN_CODE[r[x]] for x in ("q", "k", "v")] for r in plan]
        text = [[words[r[x]] for x in ("q", "k", "v")] for r in plan]
        fig.add_trace(go.Heatmap(z=z, x=["q", "k", "v"], y=list(range(len(plan))), zmin=0, zmax=2,
                                 colorscale=scale, showscale=False, xgap=3, ygap=3, text=text,
                                 texttemplate="%{text}", hoverinfo="text"), row=1, col=c)
        fig.update_yaxes(tickvals=list(range(len(plan))), ticktext=row_labels, autorange="reversed",
                         row=1, col=c)
    fig = theme.apply(fig, height=110 + 36 * len(row_labels))
    fig.update_layout(margin=dict(t=60))
    return fig


def edit_figure(diff: np.ndarray, row_labels: list[str], edit_pos: int, *, title: str,
                layer_label: str, color_label: str) -> go.Figure:
    """How far each layer's cached K rows moved after an edit: diff [L, T] of max |change|.

    Each cell prints its value, so there is no colour bar (at a chart two rows high it was a
    squashed sliver under its own title); ``color_label`` names the value on hover.
    """
    L, T = diff.shape
    fig = go.Figure(go.Heatmap(
        z=diff, x=row_labels, y=[layer_label.format(n=l + 1) for l in range(L)], colorscale=theme.HEATMAP,
        zmin=0, text=[[f"{v:.2f}" for v in r] for r in diff], texttemplate="%{text}", xgap=2, ygap=2,
        showscale=False, hovertemplate="%{y}, %{x}: " + color_label + " = %{z:.2f}<extra></extra>"))
    fig.add_vrect(x0=edit_pos - 0.5, x1=T - 0.5, line=dict(color=COLORS["chosen"], width=3, dash="dash"),
                  fillcolor="rgba(0,0,0,0)")
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(type="category")
    return theme.apply(fig, height=110 + 45 * L, title=title)


def bytes_figure(ns: np.ndarray, series: list[tuple[str, np.ndarray]], marker_n: int, *, x_label: str,
                 y_label: str, lang: str = "en") -> go.Figure:
    """Cache size (GiB) against context length, one line per variant; a dotted line at marker_n;
    the axes' numbers in ``lang`` (lmviz.numfmt)."""
    colors = [COLORS["negative"], COLORS["query"], COLORS["value"], COLORS["neutral"]]
    fig = go.Figure()
    for i, (name, b) in enumerate(series):
        fig.add_scatter(x=ns, y=np.asarray(b) / 2**30, name=name, mode="lines",
                        line=dict(color=colors[i % len(colors)], width=3))
    fig.add_vline(x=marker_n, line=dict(color=COLORS["chosen"], dash="dot"))
    gib = np.concatenate([np.asarray(b, dtype=float) for _, b in series]) / 2**30 if series else np.zeros(1)
    fig.update_xaxes(type="log", title=x_label, **axis_ticks(float(np.min(ns)), float(np.max(ns)), lang, log=True))
    fig.update_yaxes(title=y_label, rangemode="tozero", **axis_ticks(0.0, float(gib.max()), lang))
    return theme.apply(fig, height=340)


def variants_figure(names: list[str], gib: list[float], savings: list[float], *, y_label: str,
                    title: str) -> go.Figure:
    """MHA / GQA / MQA cache size bars with the saving factor written on each."""
    colors = [COLORS["negative"], COLORS["query"], COLORS["value"]]
    fig = go.Figure(go.Bar(x=names, y=gib, marker_color=colors[: len(names)],
                           text=[f"{g:.3g} GiB" + (f" (÷{s:g})" if s > 1 else "") for g, s in zip(gib, savings)],
                           textposition="outside", cliponaxis=False))
    fig.update_xaxes(type="category")
    fig.update_yaxes(title=y_label, rangemode="tozero", range=[0, max(gib) * 1.2 if gib else 1])
    return theme.apply(fig, height=320, title=title)


def speed_figure(lens: list[int], cached_ms: list[float], uncached_ms: list[float], *, cached_name: str,
                 uncached_name: str, x_label: str, y_label: str, title: str,
                 fits: tuple[list[float], list[float]] | None = None, fit_names: tuple[str, str] = ("", ""),
                 flops: tuple[list[float], list[float]] | None = None,
                 flop_names: tuple[str, str] = ("", ""), flop_label: str = "FLOPs", lang: str = "en") -> go.Figure:
    """Measured per-step decode time against context length, with and without the cache (dots,
    one per step), with their least-squares lines (``fits``, solid). With ``flops`` (cached,
    uncached FLOPs per step at the same lengths) the counted work is drawn dashed on a second,
    logarithmic axis on the right. The time axis stops above the 98th percentile: a few steps
    stalled by the machine's load would otherwise flatten everything else."""
    fig = make_subplots(specs=[[{"secondary_y": flops is not None}]])
    for ys, name, colour in ((uncached_ms, uncached_name, COLORS["negative"]), (cached_ms, cached_name, COLORS["query"])):
        fig.add_scatter(x=lens, y=ys, name=name, mode="markers", marker=dict(size=4, color=colour, opacity=0.55),
                        secondary_y=False)
    if fits is not None:
        for ys, name, colour in ((fits[1], fit_names[1], COLORS["negative"]), (fits[0], fit_names[0], COLORS["query"])):
            fig.add_scatter(x=lens, y=ys, name=name, mode="lines", line=dict(color=colour, width=3), secondary_y=False)
    if flops is not None:
        fc, fu = flops
        fig.add_scatter(x=lens, y=fu, name=flop_names[1], mode="lines", secondary_y=True,
                        line=dict(color=COLORS["negative"], width=2, dash="dash"))
        fig.add_scatter(x=lens, y=fc, name=flop_names[0], mode="lines", secondary_y=True,
                        line=dict(color=COLORS["query"], width=2, dash="dash"))
        every = np.asarray(list(fc) + list(fu), dtype=float)
        fig.update_yaxes(title_text=flop_label, type="log", secondary_y=True, showgrid=False,   # 100 万, 1000 万 …
                         **axis_ticks(float(every.min()), float(every.max()), lang, log=True))
    all_ms = np.sort(np.asarray(list(cached_ms) + list(uncached_ms), dtype=float))
    top = float(all_ms[int(0.98 * (len(all_ms) - 1))]) * 1.3 if len(all_ms) else 1.0
    fig.update_xaxes(title_text=x_label, **axis_ticks(float(min(lens, default=0)), float(max(lens, default=1)), lang))
    fig.update_yaxes(title_text=y_label, range=[0, top], secondary_y=False)
    theme.apply(fig, height=420, title=title)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.18, x=0))
    return fig


def next_token_figure(words: list[str], probs: np.ndarray, chosen: int, *, title: str) -> go.Figure:
    """Probabilities of the next token, the greedy choice in vermillion."""
    colors = [COLORS["chosen"] if i == chosen else COLORS["token"] for i in range(len(words))]
    fig = go.Figure(go.Bar(x=words, y=probs, marker_color=colors, text=[f"{p:.2f}" for p in probs],
                           textposition="outside", cliponaxis=False))
    fig.update_yaxes(range=[0, 1.15])
    fig.update_xaxes(type="category")
    return theme.apply(fig, height=260, title=title)
