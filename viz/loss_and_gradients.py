"""Figures for the Logits, loss and gradients chapter: logits -> probabilities with the right
answer marked, the -ln p curve, the one-parameter descent on its parabola, and mini-batch
gradient noise. Pure builders: records in, Plotly figures out; labels come in translated."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme
from viz.theme import COLORS, log_range


def softmax_figure(names: list[str], logits: list[float], probs: list[float], target: int, *,
                   titles: tuple[str, str], answer: str) -> go.Figure:
    """Logits (left) and their softmax probabilities (right); the right answer in the chosen colour."""
    colors = [COLORS["chosen"] if i == target else COLORS["token"] for i in range(len(names))]
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.1)
    fig.add_trace(go.Bar(x=names, y=logits, marker_color=colors, text=[f"{z:.2f}" for z in logits],
                         textposition="outside", showlegend=False,
                         hovertemplate="%{x}: z = %{y:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=names, y=probs, marker_color=colors, text=[f"{p:.3f}" for p in probs],
                         textposition="outside", showlegend=False,
                         hovertemplate="%{x}: p = %{y:.4f}<extra></extra>"), row=1, col=2)
    lo, hi = min(0.0, min(logits)), max(0.0, max(logits))
    pad = 0.2 * (hi - lo or 1.0)
    fig.update_yaxes(range=[lo - pad, hi + pad], zeroline=True, row=1, col=1)
    fig.update_yaxes(range=[0, 1.15], row=1, col=2)
    fig.add_annotation(x=names[target], y=probs[target], text=answer, showarrow=True, arrowhead=2,
                       ay=-40, xref="x2", yref="y2", font=dict(color=COLORS["chosen"]))
    return theme.apply(fig, height=340)


def nll_curve_figure(p: float, *, x_title: str, y_title: str, point: str) -> go.Figure:
    """The loss -ln p of the right answer as its probability p goes from 0 to 1, p marked."""
    xs = np.linspace(0.005, 1.0, 200)
    fig = go.Figure(go.Scatter(x=xs, y=-np.log(xs), mode="lines", line=dict(color=COLORS["neutral"]),
                               showlegend=False, hovertemplate="p = %{x:.3f}<br>−ln p = %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[p], y=[-math.log(max(p, 1e-300))], mode="markers+text",
                             marker=dict(color=COLORS["chosen"], size=13), text=[point],
                             textposition="top right", showlegend=False,
                             hovertemplate="p = %{x:.4f}<br>−ln p = %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title=x_title, range=[0, 1.02])
    fig.update_yaxes(title=y_title, range=[0, 5.5])
    return theme.apply(fig, height=340)


def descent_figure(ws: list[float], losses: list[float], x: float, y: float, *, x_title: str,
                   y_title: str, step_name: str, curve_name: str) -> go.Figure:
    """The parabola L(w) = (w x - y)^2 / 2 with the visited weights w_0, w_1, ... joined in order."""
    w_star = y / x
    span = max(3.0, *(abs(w - w_star) * 1.15 for w in ws[:8]))
    grid = np.linspace(w_star - span, w_star + span, 300)
    fig = go.Figure(go.Scatter(x=grid, y=(grid * x - y) ** 2 / 2, mode="lines", name=curve_name,
                               line=dict(color=COLORS["neutral"]), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=ws, y=losses, mode="lines+markers+text", name=step_name,
                             line=dict(color=COLORS["chosen"], dash="dot"),
                             marker=dict(color=COLORS["chosen"], size=10),
                             text=[f"w{i}" if i < 3 else "" for i in range(len(ws))],
                             textposition="top center",
                             hovertemplate="w = %{x:.4f}<br>L = %{y:.4f}<extra></extra>"))
    top = max(losses[: min(len(losses), 8)] + [float(((w_star - span) * x - y) ** 2 / 2)])
    fig.update_xaxes(title=x_title, range=[w_star - span, w_star + span])
    fig.update_yaxes(title=y_title, range=[-0.05 * top, top * 1.1])
    return theme.apply(fig, height=360)


def noise_scatter_figure(rows, ref_norm: float, *, x_title: str, y_title: str, ref_name: str,
                         batch_name: str) -> go.Figure:
    """Each mini-batch gradient projected on (the reference direction, the main noise direction):
    small batches scatter widely, large ones gather around the reference gradient (a star)."""
    palette = [COLORS["negative"], COLORS["key"], COLORS["token"], COLORS["query"], COLORS["value"]]
    fig = go.Figure()
    for i, r in enumerate(rows):
        xs, ys = zip(*r.coords)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=batch_name.format(b=r.batch_size),
                                 marker=dict(size=10, color=palette[i % len(palette)], opacity=0.85),
                                 hovertemplate="(%{x:.3g}, %{y:.3g})<extra></extra>"))
    fig.add_trace(go.Scatter(x=[ref_norm], y=[0.0], mode="markers", name=ref_name,
                             marker=dict(symbol="star", size=18, color=COLORS["chosen"],
                                         line=dict(color="black", width=1))))
    fig.add_trace(go.Scatter(x=[0, ref_norm], y=[0, 0], mode="lines", showlegend=False,
                             line=dict(color=COLORS["chosen"], width=2), hoverinfo="skip"))
    fig.update_xaxes(title=x_title, zeroline=True)
    fig.update_yaxes(title=y_title, zeroline=True, scaleanchor="x", scaleratio=1)
    return theme.apply(fig, height=420)


def noise_error_figure(rows, *, x_title: str, y_title: str, measured: str, guide: str) -> go.Figure:
    """Relative error |g_B - g| / |g| against batch size B (log-log), with a 1/sqrt(B) guide
    through the B = 1 mean (independent samples would follow it)."""
    bs = [r.batch_size for r in rows]
    means = [float(np.mean(r.rel_errors)) for r in rows]
    fig = go.Figure()
    for r in rows:
        fig.add_trace(go.Scatter(x=[r.batch_size] * len(r.rel_errors), y=r.rel_errors, mode="markers",
                                 marker=dict(color=COLORS["token"], size=7, opacity=0.6),
                                 showlegend=False, hovertemplate="B = %{x}: %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=bs, y=means, mode="lines+markers", name=measured,
                             line=dict(color=COLORS["query"]), marker=dict(size=10)))
    fig.add_trace(go.Scatter(x=bs, y=[means[0] * math.sqrt(bs[0] / b) for b in bs], mode="lines",
                             name=guide, line=dict(color=COLORS["neutral"], dash="dash")))
    every = [e for r in rows for e in r.rel_errors] + means
    fig.update_xaxes(title=x_title, type="log", tickvals=bs, range=log_range(bs, pad=0.15))
    fig.update_yaxes(title=y_title, type="log", dtick="D2", range=log_range(every, pad=0.1))
    return theme.apply(fig, height=420)


def line_figure(alphas, losses, loss_a: float, loss_b: float, *, x_title: str, y_title: str,
                curve_name: str, chord_name: str, ends: tuple[str, str]) -> go.Figure:
    """The loss along θ(α) = (1 − α) θ_A + α θ_B, the chord between the two ends (dashed; a convex
    loss would stay at or below it for α in [0, 1]) and the two trained models marked."""
    fig = go.Figure(go.Scatter(x=list(alphas), y=list(losses), mode="lines+markers", name=curve_name,
                               line=dict(color=COLORS["query"]), marker=dict(size=6),
                               hovertemplate="α = %{x:.2f}<br>L = %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0.0, 1.0], y=[loss_a, loss_b], mode="lines", name=chord_name,
                             line=dict(color=COLORS["neutral"], dash="dash"), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[0.0, 1.0], y=[loss_a, loss_b], mode="markers+text", showlegend=False,
                             marker=dict(color=COLORS["chosen"], size=13), text=list(ends),
                             textposition="bottom center",
                             hovertemplate="α = %{x:.0f}<br>L = %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title=x_title, zeroline=False)
    fig.update_yaxes(title=y_title)
    theme.apply(fig, height=400)
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig
