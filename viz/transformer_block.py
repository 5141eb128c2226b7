"""Figures of the Transformer-block chapter: norms step by step (LayerNorm/RMSNorm example), the residual stream's
size through the blocks, the cosine of one token's vectors in two contexts (contextual-vector example), and
the logit lens (each block's stream read as a next-token guess)."""
from __future__ import annotations

import plotly.graph_objects as go

from viz import theme
from viz.attention import _np
from viz.theme import COLORS


def norms_figure(steps, *, names: tuple[str, str, str], dim_word: str, title: str = "") -> go.Figure:
    """LayerNorm and RMSNorm: the input vector next to its LayerNorm and RMSNorm, dimension by dimension."""
    x = [f"{dim_word} {i + 1}" for i in range(steps.h.numel())]
    fig = go.Figure()
    for name, v, c in ((names[0], steps.h, COLORS["token"]), (names[1], steps.layernorm, COLORS["query"]),
                       (names[2], steps.rmsnorm, COLORS["key"])):
        v = _np(v).astype(float)
        fig.add_trace(go.Bar(x=x, y=v, name=name, marker_color=c, text=[f"{a:+.3f}" for a in v],
                             textposition="outside"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(zeroline=True, zerolinecolor="#444")
    return theme.apply(fig, height=400, title=title)


def stream_figure(stage_labels: list[str], values: list[float], *, y_title: str, title: str = "") -> go.Figure:
    """A line over the stages of the residual stream (e.g. mean vector length per stage)."""
    fig = go.Figure(go.Scatter(x=list(range(len(values))), y=values, mode="lines+markers",
                               line=dict(color=COLORS["query"], width=3), marker=dict(size=8),
                               hovertemplate="%{text}: %{y:.3f}<extra></extra>", text=stage_labels))
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(values))), ticktext=stage_labels)
    fig.update_yaxes(title=y_title, rangemode="tozero")
    return theme.apply(fig, height=340, title=title)


def cosine_figure(stage_labels: list[str], cosines: list[float], *, y_title: str, title: str = "",
                  name: str = "") -> go.Figure:
    """The contextual vector: cosine similarity of the two contexts' vectors at each stage (1 = same direction)."""
    fig = go.Figure(go.Scatter(x=list(range(len(cosines))), y=cosines, mode="lines+markers+text",
                               name=name, text=[f"{c:.3f}" for c in cosines], textposition="top center",
                               line=dict(color=COLORS["chosen"], width=3), marker=dict(size=9)))
    fig.add_hline(y=1.0, line=dict(color=COLORS["neutral"], dash="dash"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(cosines))), ticktext=stage_labels)
    lo = min(cosines)
    span = max(0.02, 1.0 - lo)            # zoomed to the values (they are printed at each point)
    fig.update_yaxes(title=y_title, range=[lo - 0.4 * span, 1.0 + 0.25 * span])
    return theme.apply(fig, height=360, title=title)


def lens_figure(row_labels: list[str], col_labels: list[str], cells: list[list[str]], probs, *,
                mark: tuple[int, int] | None = None, x_title: str = "", y_title: str = "", hover: str = "",
                colorbar_title: str = "", title: str = "") -> go.Figure:
    """The logit lens: one row per place the residual stream was read (the first at the bottom),
    one column per position; each cell names the top next token read there (``cells``), coloured
    by its probability (``probs`` [R,T]). ``mark`` (row, column) outlines one cell. ``hover``: a
    Plotly hover template over %{customdata[0]} (the row's label), %{customdata[1]} (the column's),
    %{text} and %{z}."""
    z = _np(probs).astype(float)
    R, T = z.shape
    where = [[[row_labels[r], col_labels[c]] for c in range(T)] for r in range(R)]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(T)), y=list(range(R)), text=cells, texttemplate="%{text}", customdata=where,
        textfont=dict(size=11 if T <= 10 else 9), zmin=0.0, zmax=1.0, colorscale=theme.HEATMAP,
        colorbar=dict(title=colorbar_title, thickness=12),
        hovertemplate=(hover or "%{customdata[0]} · %{customdata[1]}: %{text} %{z:.3f}") + "<extra></extra>"))
    if mark is not None:
        r, c = mark
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                      line=dict(color=COLORS["chosen"], width=3))
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=list(range(T)), ticktext=col_labels,
                     showgrid=False, tickangle=0 if T <= 12 else None)
    fig.update_yaxes(title=y_title, tickmode="array", tickvals=list(range(R)), ticktext=row_labels,
                     showgrid=False, tickfont=dict(size=10 if R > 16 else 12))
    return theme.apply(fig, height=int(min(900, max(300, 110 + 22 * R))), title=title)
