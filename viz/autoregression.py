"""Figures for the Autoregression chapter: the chain rule as one bar per predicted token, and the
causal mask as scores -> masked -> weights. Pure builders: records in, Plotly figures out; every
label comes in already translated."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme
from viz.theme import COLORS
from viz.tokenization import visible


def chain_figure(tokens: list[str], probs: list[float], *, contexts: list[str] | None = None,
                 best: list[str] | None = None, x_title: str = "", y_title: str = "",
                 hover_best: str = "", title: str | None = None, height: int = 340) -> go.Figure:
    """One bar per position t: P(x_t | x_<t), the token x_t under it, ln P written on the bar.

    tokens[i] is the predicted token of bar i; contexts (hover) the prefix it was read from;
    best (hover) the model's own most probable guess there.
    """
    n = len(tokens)
    labels = [f"{i + 1}·{visible(tok)}" for i, tok in enumerate(tokens)]   # unique categories
    hover = []
    for i in range(n):
        h = f"P = {probs[i]:.4f}<br>ln P = {math.log(max(probs[i], 1e-300)):.3f}"
        if contexts:
            h = f"{visible(contexts[i])[-40:]} → <b>{visible(tokens[i])}</b><br>" + h
        if best:
            h += f"<br>{hover_best} {visible(best[i])}"
        hover.append(h)
    fig = go.Figure(go.Bar(
        x=labels, y=probs, marker_color=COLORS["token"],
        text=[f"{math.log(max(p, 1e-300)):.2f}" for p in probs], textposition="outside",
        hovertext=hover, hoverinfo="text", name="P"))
    fig.update_xaxes(title=x_title, type="category", tickangle=0 if n <= 16 else -60)
    fig.update_yaxes(title=y_title, range=[0, 1.12])
    return theme.apply(fig, height=height, title=title)


def mask_figure(scores: np.ndarray, masked: np.ndarray, weights: np.ndarray, labels: list[str], *,
                titles: tuple[str, str, str], x_title: str, y_title: str) -> go.Figure:
    """Three [T,T] heatmaps side by side (query rows, key columns): raw scores, the same with the
    future set to -inf (grey cells), and the row softmax (exact zeros above the diagonal)."""
    s, m, w = (np.asarray(a, dtype=float) for a in (scores, masked, weights))
    T = s.shape[0]
    # each panel names its rows (a phone stacks the panels): room for them between the panels (at
    # 0.06 "<BOS>" ran into the panel on its left)
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.1)
    lab = [visible(x) for x in labels]
    blocked = np.isneginf(m)
    vmax = float(np.abs(s).max()) or 1.0
    fig.add_trace(go.Heatmap(z=s, x=lab, y=lab, colorscale=theme.DIVERGING, reversescale=True,
                             zmin=-vmax, zmax=vmax, showscale=False, text=np.round(s, 2),
                             texttemplate="%{text}", hovertemplate="%{y} → %{x}: %{z:.2f}<extra></extra>"),
                  row=1, col=1)
    shown = np.where(blocked, np.nan, m)
    txt = np.where(blocked, "−∞", np.vectorize(lambda v: f"{round(v, 1) + 0.0:.1f}")(np.nan_to_num(m, neginf=0)))  # never "-0.0"
    fig.add_trace(go.Heatmap(z=np.where(blocked, 1.0, np.nan), x=lab, y=lab,
                             colorscale=[[0, COLORS["masked"]], [1, COLORS["masked"]]],
                             showscale=False, hoverinfo="skip"), row=1, col=2)
    fig.add_trace(go.Heatmap(z=shown, x=lab, y=lab, colorscale=theme.DIVERGING, reversescale=True,
                             zmin=-vmax, zmax=vmax, showscale=False, text=txt, texttemplate="%{text}",
                             hovertemplate="%{y} → %{x}: %{text}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Heatmap(z=w, x=lab, y=lab, colorscale=theme.HEATMAP, zmin=0, zmax=1,
                             text=np.round(w, 2), texttemplate="%{text}",
                             colorbar=dict(thickness=12, len=0.9),
                             hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"), row=1, col=3)
    for c in (1, 2, 3):
        fig.update_yaxes(autorange="reversed", type="category", row=1, col=c,
                         title=y_title if c == 1 else None)
        fig.update_xaxes(type="category", side="bottom", title=x_title, row=1, col=c)
    return theme.apply(fig, height=max(300, 60 * T + 120))


def attention_figure(weights: np.ndarray, labels: list[str], *, x_title: str, y_title: str,
                     title: str | None = None) -> go.Figure:
    """One real attention-weight matrix [T,T] (query rows, key columns)."""
    w = np.asarray(weights, dtype=float)
    lab = [f"{i}·{visible(x)}" for i, x in enumerate(labels)]
    fig = go.Figure(go.Heatmap(z=w, x=lab, y=lab, colorscale=theme.HEATMAP, zmin=0, zmax=1,
                               colorbar=dict(thickness=12),
                               hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", type="category", title=y_title)
    fig.update_xaxes(type="category", title=x_title, tickangle=-60 if len(labels) > 12 else 0)
    return theme.apply(fig, height=max(320, 18 * len(labels) + 140), title=title)
