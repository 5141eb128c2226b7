"""Figures for the "beyond" chapter: structure learning (capital-corpus example), robot action tokens (robot-actions example), and where
knowledge lives (context, retrieval, the context window, post-training). Pure Plotly; every label
arrives already translated."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lmviz.numfmt import axis_ticks
from viz import theme
from viz.theme import COLORS

BIGRAM, TRANSFORMER = COLORS["neutral"], COLORS["query"]


def _ticks(tokens: list[str]) -> dict:
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[str(t) for t in tokens])


def position_loss_figure(targets: list[str], bigram, transformer, country: int, *, names: tuple[str, str],
                         y_label: str, country_label: str, title: str | None = None) -> go.Figure:
    """Grouped bars: the loss (nats) of each next token, bigram vs transformer; the country starred."""
    x = list(range(len(targets)))
    fig = go.Figure()
    fig.add_bar(x=x, y=np.asarray(bigram, dtype=float), name=names[0], marker_color=BIGRAM)
    fig.add_bar(x=x, y=np.asarray(transformer, dtype=float), name=names[1], marker_color=TRANSFORMER)
    fig.add_vrect(x0=country - 0.5, x1=country + 0.5, fillcolor=COLORS["chosen"], opacity=0.15, line_width=0)
    top = float(max(np.max(bigram), np.max(transformer)))
    fig.add_annotation(x=country, y=top * 1.08, text=country_label, showarrow=False,
                       font=dict(color=COLORS["chosen"]))
    fig.update_layout(barmode="group", xaxis=_ticks(targets), yaxis_title=y_label)
    return theme.apply(fig, height=340, title=title)


def attention_figure(tokens: list[str], weights: np.ndarray, city: tuple[int, int], *, row_label: str,
                     city_label: str, title: str | None = None) -> go.Figure:
    """Heatmap: rows = (layer, head), columns = tokens; the query is the last token. The city's
    columns are outlined."""
    L, H, T = weights.shape
    z = weights.reshape(L * H, T)                                          # [L*H,T]
    rows = [row_label.format(layer=l + 1, head=h + 1) for l in range(L) for h in range(H)]   # counted from 1
    fig = go.Figure(go.Heatmap(z=z, x=list(range(T)), y=list(range(L * H)), zmin=0, zmax=1,
                               colorscale=theme.HEATMAP, colorbar=dict(thickness=12),
                               hovertemplate="%{z:.2f}<extra></extra>"))
    fig.add_shape(type="rect", x0=city[0] - 0.5, x1=city[1] - 0.5, y0=-0.5, y1=L * H - 0.5,
                  line=dict(color=COLORS["chosen"], width=3))
    fig.add_annotation(x=(city[0] + city[1] - 1) / 2, y=L * H - 0.5, yshift=12, text=city_label,
                       showarrow=False, font=dict(color=COLORS["chosen"]))
    fig.update_layout(xaxis=_ticks(tokens), yaxis=dict(tickmode="array", tickvals=list(range(L * H)),
                                                       ticktext=rows, autorange="reversed"))
    return theme.apply(fig, height=120 + 40 * L * H, title=title)


def summary_figure(groups: list[str], bigram: list[float], transformer: list[float], *,
                   names: tuple[str, str], y_label: str, title: str | None = None) -> go.Figure:
    """Mean loss at the country: bigram vs transformer, on trained and held-out cities."""
    fig = go.Figure()
    fig.add_bar(x=groups, y=bigram, name=names[0], marker_color=BIGRAM, text=[f"{v:.2f}" for v in bigram])
    fig.add_bar(x=groups, y=transformer, name=names[1], marker_color=TRANSFORMER,
                text=[f"{v:.2f}" for v in transformer])
    fig.update_layout(barmode="group", yaxis_title=y_label)
    return theme.apply(fig, height=320, title=title)


def loss_curve_figure(curves: dict[str, list[float]], *, x_label: str, y_label: str,
                      title: str | None = None) -> go.Figure:
    fig = go.Figure()
    colors = [COLORS["train"], COLORS["val"], COLORS["value"]]
    for i, (name, ys) in enumerate(curves.items()):
        fig.add_scatter(x=list(range(1, len(ys) + 1)), y=list(ys), mode="lines", name=name,
                        line=dict(color=colors[i % len(colors)]))
    fig.update_layout(xaxis_title=x_label, yaxis_title=y_label)
    return theme.apply(fig, height=280, title=title)


# ------------------------------------------------------------------ robot (robot-actions example) -----------
def binning_figure(values, decoded, edges, *, x_label: str, y_label: str, err_label: str,
                   names: tuple[str, str], title: str | None = None) -> go.Figure:
    """Top: continuous action -> decoded bin centre (a staircase) with the bin edges; bottom: the
    quantisation error, which stays within half a bin."""
    v, d = np.asarray(values), np.asarray(decoded)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.06)
    fig.add_scatter(x=v, y=v, mode="lines", name=names[0], line=dict(color=COLORS["neutral"], dash="dot"),
                    row=1, col=1)
    fig.add_scatter(x=v, y=d, mode="lines", name=names[1], line=dict(color=COLORS["chosen"], shape="hv"),
                    row=1, col=1)
    for e in edges:
        fig.add_vline(x=float(e), line=dict(color=COLORS["masked"], width=1), row=1, col=1)
    half = float(edges[1] - edges[0]) / 2
    fig.add_scatter(x=v, y=d - v, mode="lines", showlegend=False, line=dict(color=COLORS["accent"]), row=2, col=1)
    for s in (-half, half):
        fig.add_hline(y=s, line=dict(color=COLORS["neutral"], dash="dash", width=1), row=2, col=1)
    fig.update_xaxes(title_text=x_label, row=2, col=1)
    fig.update_yaxes(title_text=y_label, row=1, col=1)
    fig.update_yaxes(title_text=err_label, row=2, col=1)
    return theme.apply(fig, height=420, title=title)


def token_row_figure(labels: list[str], groups: list[str], *, group_names: dict[str, str],
                     predicted_from: int, title: str | None = None) -> go.Figure:
    """One control step as a row of token chips, coloured by group; the predicted ones outlined."""
    colour = {"instr": COLORS["token"], "ox": COLORS["key"], "oy": COLORS["key"],
              "ax": COLORS["chosen"], "ay": COLORS["chosen"]}
    fig = go.Figure()
    for i, (lab, g) in enumerate(zip(labels, groups)):
        fig.add_shape(type="rect", x0=i + 0.05, x1=i + 0.95, y0=0, y1=1, fillcolor=colour[g], opacity=0.35,
                      line=dict(color=colour[g], width=3 if i >= predicted_from else 1,
                                dash="solid" if i >= predicted_from else "dot"))
        fig.add_annotation(x=i + 0.5, y=0.64, text=f"<b>{lab}</b>", showarrow=False, font=dict(size=15))
        fig.add_annotation(x=i + 0.5, y=0.16, text=group_names[g], showarrow=False, font=dict(size=12))
    fig.add_vline(x=predicted_from, line=dict(color=COLORS["neutral"], dash="dash"))
    fig.update_xaxes(visible=False, range=[0, len(labels)])
    fig.update_yaxes(visible=False, range=[-0.05, 1.05])
    # a chip holds two lines of label and one of group: 150 px left them ~50 px, on top of each other
    return theme.apply(fig, height=230, title=title)


def bin_probs_figure(centres, px, py, expert: tuple[int, int], *, titles: tuple[str, str], x_label: str,
                     y_label: str) -> go.Figure:
    """The model's distribution over the x bins and over the y bins; the demonstrator's bin marked."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, shared_yaxes=True)
    for c, (p, e) in enumerate(((px, expert[0]), (py, expert[1])), start=1):
        colours = [COLORS["chosen"] if i == int(np.argmax(p)) else COLORS["token"] for i in range(len(p))]
        fig.add_bar(x=[f"{x:+.2f}" for x in centres], y=np.asarray(p, dtype=float), marker_color=colours,
                    showlegend=False, row=1, col=c)
        fig.add_annotation(x=f"{centres[e]:+.2f}", y=float(np.max(p)) * 1.1 + 0.02, text="▼", showarrow=False,
                           font=dict(color=COLORS["value"], size=16), row=1, col=c)
        fig.update_xaxes(title_text=x_label, row=1, col=c)
    fig.update_yaxes(title_text=y_label, range=[0, 1.15], row=1, col=1)
    return theme.apply(fig, height=320)


def rollout_figure(paths: dict[str, np.ndarray], start, target, *, start_label: str, target_label: str,
                   title: str | None = None) -> go.Figure:
    """Trajectories of the robot in the plane, one per policy, towards the target."""
    fig = go.Figure()
    colours = [COLORS["query"], COLORS["neutral"], COLORS["value"]]
    for i, (name, p) in enumerate(paths.items()):
        fig.add_scatter(x=p[:, 0], y=p[:, 1], mode="lines+markers", name=name,
                        line=dict(color=colours[i % len(colours)]), marker=dict(size=6))
    fig.add_scatter(x=[start[0]], y=[start[1]], mode="markers+text", name=start_label, text=[start_label],
                    textposition="bottom center", marker=dict(size=12, color=COLORS["token"], symbol="circle"))
    fig.add_scatter(x=[target[0]], y=[target[1]], mode="markers+text", name=target_label, text=[target_label],
                    textposition="top center", marker=dict(size=16, color=COLORS["chosen"], symbol="star"))
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return theme.apply(fig, height=420, title=title)


# ------------------------------------------------------------------ knowledge -------------
def shift_figure(tokens: list[str], p_without, p_with, *, names: tuple[str, str], y_label: str,
                 title: str | None = None) -> go.Figure:
    """Next-token probabilities without and with extra context, for the union of both top lists."""
    fig = go.Figure()
    x = list(range(len(tokens)))
    fig.add_bar(x=x, y=np.asarray(p_without, dtype=float), name=names[0], marker_color=COLORS["neutral"])
    fig.add_bar(x=x, y=np.asarray(p_with, dtype=float), name=names[1], marker_color=COLORS["value"])
    fig.update_layout(barmode="group", xaxis=_ticks(tokens), yaxis_title=y_label)
    return theme.apply(fig, height=320, title=title)


def scores_figure(names: list[str], scores, chosen: int, *, x_label: str, title: str | None = None) -> go.Figure:
    """Horizontal bars of retrieval scores; the passage used is highlighted."""
    colours = [COLORS["chosen"] if i == chosen else COLORS["token"] for i in range(len(names))]
    fig = go.Figure(go.Bar(x=np.asarray(scores, dtype=float), y=names, orientation="h", marker_color=colours))
    # every passage named (dtick 1: Plotly otherwise drops every other name when rows are tight)
    fig.update_layout(xaxis_title=x_label, yaxis=dict(autorange="reversed", dtick=1))
    return theme.apply(fig, height=120 + 30 * len(names), title=title)


def context_figure(n, kv_bytes, attn_entries, block_size: int, *, x_label: str, names: tuple[str, str],
                   limit_label: str, title: str | None = None, lang: str = "en") -> go.Figure:
    """KV-cache memory (linear in n) and attention score entries (quadratic) against context length,
    with the model's trained context limit marked; the axes' numbers in ``lang`` (lmviz.numfmt)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=n, y=kv_bytes, name=names[0], line=dict(color=COLORS["value"], width=3),
                    secondary_y=False)
    fig.add_scatter(x=n, y=attn_entries, name=names[1], line=dict(color=COLORS["key"], dash="dash", width=3),
                    secondary_y=False)   # one log axis: slope 1 (memory) vs slope 2 (scores) shows
    # the trained limit as a trace (shapes on log axes are placed inconsistently)
    lo, hi = float(np.min(kv_bytes)), float(np.max(kv_bytes))
    fig.add_scatter(x=[block_size, block_size], y=[lo, hi], mode="lines+text", name=limit_label,
                    text=["", limit_label], textposition="middle right", showlegend=False,
                    line=dict(color=COLORS["chosen"], dash="dot"), textfont=dict(color=COLORS["chosen"]),
                    secondary_y=False)
    ys = np.concatenate([np.asarray(kv_bytes, dtype=float), np.asarray(attn_entries, dtype=float)])
    fig.update_xaxes(title_text=x_label, type="log",
                     **axis_ticks(float(np.min(n)), float(np.max(n)), lang, log=True))
    fig.update_yaxes(type="log", secondary_y=False, **axis_ticks(float(ys.min()), float(ys.max()), lang, log=True))
    return theme.apply(fig, height=340, title=title)


def pipeline_figure(stages: list[tuple[str, str]], title: str | None = None) -> go.Figure:
    """Boxes joined by arrows: (name, what it learns from) per stage."""
    fig = go.Figure()
    colours = [COLORS["token"], COLORS["key"], COLORS["value"], COLORS["accent"]]
    for i, (name, body) in enumerate(stages):
        x0 = i * 1.3
        fig.add_shape(type="rect", x0=x0, x1=x0 + 1, y0=0, y1=1, fillcolor=colours[i % 4], opacity=0.3,
                      line=dict(color=colours[i % 4], width=2))
        # dark words on the pale boxes (the chart's grey text was faint on a projector)
        fig.add_annotation(x=x0 + 0.5, y=0.78, text=f"<b>{name}</b>", showarrow=False,
                           font=dict(size=15, color="#1a1a1a"))
        fig.add_annotation(x=x0 + 0.5, y=0.38, text=body, showarrow=False, font=dict(size=13, color="#333333"))
        if i:
            fig.add_annotation(x=x0 - 0.02, y=0.5, ax=x0 - 0.28, ay=0.5, xref="x", yref="y", axref="x",
                               ayref="y", showarrow=True, arrowhead=3, arrowsize=1.5, arrowcolor=COLORS["neutral"])
    fig.update_xaxes(visible=False, range=[-0.05, len(stages) * 1.3 - 0.25])
    fig.update_yaxes(visible=False, range=[-0.05, 1.05])
    return theme.apply(fig, height=220, title=title)


def position_use_figure(positions, losses, used_until: int, plateau: float, *, x_label: str, y_label: str,
                        curve_name: str, plateau_name: str, used_label: str, title: str | None = None,
                        spread=None, tolerance: float = 0.0, band_name: str = "") -> go.Figure:
    """The model's mean loss at each position of its window (how much it has read), the level at
    the end of the window, and the position from which extra context stops helping; with
    ``spread`` (each point's chance scatter, nats), a band around the level of ``tolerance`` plus
    that scatter: from ``used_until`` on, every point lies below its top."""
    fig = go.Figure()
    if spread is not None:
        x = list(positions)
        upper = [plateau + tolerance + e for e in spread]
        lower = [max(0.0, plateau - tolerance - e) for e in spread]     # a loss is never below 0 nats
        fig.add_scatter(x=x + x[::-1], y=upper + lower[::-1], fill="toself", mode="none", name=band_name,
                        fillcolor="rgba(153,153,153,0.22)", hoverinfo="skip")
    fig.add_scatter(x=list(positions), y=list(losses), mode="lines+markers", name=curve_name,
                    line=dict(color=COLORS["query"], width=2), marker=dict(size=5),
                    hovertemplate="%{x}: %{y:.3f}<extra></extra>")
    fig.add_scatter(x=[positions[0], positions[-1]], y=[plateau, plateau], mode="lines", name=plateau_name,
                    line=dict(color=COLORS["neutral"], dash="dash"), hoverinfo="skip")
    fig.add_vline(x=used_until, line=dict(color=COLORS["chosen"], dash="dot"))
    fig.add_annotation(x=used_until, y=max(losses), text=used_label, showarrow=False, xanchor="left",
                       xshift=6, font=dict(color=COLORS["chosen"]))
    fig.update_xaxes(title_text=x_label)
    fig.update_yaxes(title_text=y_label)
    theme.apply(fig, height=380, title=title)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.32, x=0), margin=dict(b=90))
    return fig
