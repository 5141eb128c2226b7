"""Figures of the embedding chapter: the toy table with the looked-up row highlighted (toy embedding table),
token + position (position-vector example), two orders without positions (word-order example), position signals and RoPE."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme
from viz.attention import _np, _ticks, heatmap
from viz.theme import COLORS


def table_figure(E, row_labels: list[str], col_labels: list[str], *, highlight=(), title: str = "",
                 x_title: str = "", y_title: str = "", height: int | None = None) -> go.Figure:
    """An embedding table as a heatmap (rows = token IDs); the rows in ``highlight`` get a frame."""
    E = _np(E)
    fig = heatmap(E, x_labels=col_labels, y_labels=row_labels, title=title, x_title=x_title,
                  y_title=y_title, diverging=True, height=height)
    n_c = E.shape[1]
    for r in highlight:
        fig.add_shape(type="rect", x0=-0.5, x1=n_c - 0.5, y0=r - 0.5, y1=r + 0.5,
                      line=dict(color=COLORS["chosen"], width=4))
    return fig


def vector_sum_figure(parts: list[tuple[str, object, str]], dim_labels: list[str], *,
                      title: str = "", y_title: str = "") -> go.Figure:
    """Grouped bars, one group per dimension: e.g. token row, position vector and their sum."""
    fig = go.Figure()
    for name, vec, color in parts:
        v = _np(vec).astype(float)
        fig.add_trace(go.Bar(x=dim_labels, y=v, name=name, marker_color=color,
                             text=[f"{x:+.2f}" for x in v], textposition="outside"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title=y_title, zeroline=True, zerolinecolor="#444")
    return theme.apply(fig, height=360, title=title)


def two_orders_figure(rows_a, rows_b, labels_a, labels_b, col_labels, titles) -> go.Figure:
    """Word order: the rows of two token orders side by side (same colours: the same rows, reordered)."""
    A, B = _np(rows_a), _np(rows_b)
    lim = float(max(np.abs(A).max(), np.abs(B).max())) or 1.0
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.12)
    for c, (M, lab) in enumerate(((A, labels_a), (B, labels_b)), start=1):
        fig.add_trace(go.Heatmap(z=M, x=list(range(M.shape[1])), y=list(range(M.shape[0])),
                                 text=[[f"{x:.2f}" for x in r] for r in M], texttemplate="%{text}",
                                 colorscale=theme.DIVERGING, reversescale=True, zmin=-lim, zmax=lim,
                                 showscale=c == 2, colorbar=dict(thickness=12)), 1, c)
        fig.update_xaxes(**_ticks(col_labels, M.shape[1]), row=1, col=c)
        fig.update_yaxes(autorange="reversed", **_ticks(lab, M.shape[0]), row=1, col=c)
    theme.apply(fig, height=280)
    fig.update_layout(margin=dict(t=40))
    return fig


def rope_plane_figure(demo, *, names: tuple[str, str], title: str = "", max_points: int = 8) -> go.Figure:
    """The first (x[0], x[dh/2]) pair of q and k as arrows, rotated to positions 0, 1, 2, ..."""
    dh = demo.q_rot.shape[-1]
    fig = go.Figure()
    for vecs, name, color in ((demo.q_rot, names[0], COLORS["query"]), (demo.k_rot, names[1], COLORS["key"])):
        V = _np(vecs)
        for p in range(min(max_points, V.shape[0])):
            x, y = float(V[p, 0]), float(V[p, dh // 2])
            fig.add_trace(go.Scatter(x=[0, x], y=[0, y], mode="lines+markers+text",
                                     text=["", f"{name}{p}"], textposition="top center",
                                     line=dict(color=color, width=2), opacity=1 - 0.08 * p,
                                     marker=dict(size=[0, 7], color=color), showlegend=p == 0,
                                     name=name, legendgroup=name))
    lim = float(max(np.abs(_np(demo.q_rot)).max(), np.abs(_np(demo.k_rot)).max())) * 1.3
    fig.update_xaxes(range=[-lim, lim], zeroline=True)
    fig.update_yaxes(range=[-lim, lim], zeroline=True, scaleanchor="x")
    return theme.apply(fig, height=400, title=title)
