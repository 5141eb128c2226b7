"""Figures of /post-training: which positions SFT grades, the fine-tune's held-out answers, the
DPO steps' margin and distance from the reference. Pure: records in, a figure out."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme
from viz.theme import COLORS
from viz.tokenization import visible


def graded_figure(targets: list[str], losses, graded, *, names: tuple[str, str], y_label: str,
                  title: str | None = None) -> go.Figure:
    """One question with its answer: the loss at each position (its target token below the
    bar), the graded positions (the answer's) in colour, the rest grey. ``names``: (graded, not)."""
    x = list(range(len(targets)))
    fig = go.Figure()
    for on, name, colour in ((False, names[1], COLORS["masked"]), (True, names[0], COLORS["chosen"])):
        xs = [i for i in x if bool(graded[i]) == on]
        fig.add_bar(x=xs, y=[float(losses[i]) for i in xs], name=name, marker_color=colour)
    fig.update_layout(barmode="overlay", bargap=0.15, yaxis_title=y_label,
                      xaxis=dict(tickmode="array", tickvals=x, ticktext=[visible(s) for s in targets], tickangle=0))
    return theme.apply(fig, height=300, title=title)


def accuracy_figure(steps, held, unseen, *, names: tuple[str, str], x_label: str, y_label: str,
                    title: str | None = None) -> go.Figure:
    """The share of questions answered right as the fine-tune goes: the held-out ones (the base
    model read about them) and the unseen ones (it never did)."""
    fig = go.Figure()
    for ys, name, colour in ((held, names[0], COLORS["value"]), (unseen, names[1], COLORS["neutral"])):
        fig.add_scatter(x=list(steps), y=[100 * float(v) for v in ys], mode="lines+markers", name=name,
                        line=dict(color=colour))
    fig.update_layout(xaxis_title=x_label, yaxis_title=y_label, yaxis_range=[-3, 103])
    return theme.apply(fig, height=280, title=title)


def dpo_figure(steps, margin, kl, chosen_shift, rejected_shift, *, names: tuple[str, str, str, str],
               x_label: str, y_labels: tuple[str, str], title: str | None = None) -> go.Figure:
    """Top: the DPO margin and the KL to the reference over the steps; bottom: how far the chosen
    and the rejected answers' log-probabilities moved from the reference's (nats)."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1)
    x = list(steps)
    for ys, name, colour, row in ((margin, names[0], COLORS["chosen"], 1), (kl, names[1], COLORS["query"], 1),
                                  (chosen_shift, names[2], COLORS["value"], 2),
                                  (rejected_shift, names[3], COLORS["negative"], 2)):
        fig.add_scatter(x=x, y=[float(v) for v in ys], mode="lines+markers", name=name, line=dict(color=colour),
                        row=row, col=1)
    fig.add_hline(y=0, line=dict(color=COLORS["neutral"], width=1), row=2, col=1)
    fig.update_xaxes(title_text=x_label, row=2, col=1)
    fig.update_yaxes(title_text=y_labels[0], row=1, col=1)
    fig.update_yaxes(title_text=y_labels[1], row=2, col=1)
    return theme.minus_labels(theme.apply(fig, height=440, title=title))


def learned_figure(cities: list[str], steps, right, *, names: tuple[str, str], x_label: str,
                   title: str | None = None) -> go.Figure:
    """The fine-tune replayed: one row per held-out question (``cities``, top first), one column
    per count (``steps``), each cell answered right or not (``right[row][col]``)."""
    z = [[1 if v else 0 for v in row] for row in right]
    fig = go.Figure(go.Heatmap(z=z, x=[str(s) for s in steps], y=list(cities), zmin=0, zmax=1, xgap=1, ygap=1,
                               colorscale=[[0, COLORS["masked"]], [0.5, COLORS["masked"]], [0.5, COLORS["value"]],
                                           [1, COLORS["value"]]],
                               colorbar=dict(tickvals=[0.25, 0.75], ticktext=[names[1], names[0]], len=0.5),
                               hovertemplate="%{y} · %{x}<extra></extra>"))
    fig.update_layout(xaxis_title=x_label, yaxis=dict(autorange="reversed", tickfont=dict(size=11)))
    return theme.apply(fig, height=max(260, 16 * len(cities) + 120), title=title)
