"""Figures of the Transformer-block chapter: norms step by step (LayerNorm/RMSNorm example), the residual stream's
size through the blocks, and the cosine of one token's vectors in two contexts (contextual-vector example)."""
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
