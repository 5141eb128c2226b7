"""Figures for the Live training chapter: loss curves, perplexity and learning rate, attention.

Pure builders: numbers in (already-translated labels passed by the caller), Plotly figures out.
Long runs are downsampled (bucket means) so a 5,000-step curve still sends a few hundred points.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme
from viz.attention import index_ticks
from viz.theme import COLORS, log_range
from viz.tokenization import visible

MAX_POINTS = 400   # points per curve sent to the browser


def downsample(x, y, max_points: int = MAX_POINTS):
    """Bucket means of (x, y) so that at most ``max_points`` remain (short series unchanged).

    >>> downsample([1, 2, 3, 4], [4.0, 2.0, 3.0, 1.0], 2)
    (array([1.5, 3.5]), array([3., 2.]))
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n <= max_points:
        return x, y
    k = -(-n // max_points)                       # bucket size (ceil)
    m = n // k * k
    xs, ys = x[:m].reshape(-1, k).mean(1), y[:m].reshape(-1, k).mean(1)
    if m < n:                                     # the tail: a last, shorter bucket
        xs, ys = np.append(xs, x[m:].mean()), np.append(ys, y[m:].mean())
    return xs, ys


# dash styles of the reference lines, in the order given (uniform guess, unigram guess, ...)
_DASHES = ("dot", "dash", "dashdot")


def _lines(fig: go.Figure, lines, log: bool = False, **where) -> None:
    """Labelled horizontal reference lines [(y, label), ...]: the first label above its line,
    the next below (two baselines close together must not print over each other). ``log``: the
    y axis is logarithmic (Plotly places an annotation there in log10 units, a line in data units)."""
    for i, (y, label) in enumerate(lines):
        extra = {"annotation_y": float(np.log10(y))} if log and y > 0 else {}
        fig.add_hline(y=float(y), line=dict(color=COLORS["neutral"], dash=_DASHES[i % len(_DASHES)], width=1.5),
                      annotation_text=label, annotation_position="top right" if i % 2 == 0 else "bottom right",
                      **extra, **where)


def loss_figure(steps, losses, eval_steps, val_losses, *, names=("train (batch)", "validation"),
                x_title: str = "step", y_title: str = "loss (nats/token)", lines=(),
                height: int = 340) -> go.Figure:
    """Training loss per step (downsampled) and validation loss at each evaluation, with labelled
    horizontal baselines ``lines = [(loss, label), ...]`` (e.g. the uniform and unigram guesses)."""
    fig = go.Figure()
    xs, ys = downsample(steps, losses)
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=names[0],
                             line=dict(color=COLORS["train"], width=1.5)))
    fig.add_trace(go.Scatter(x=np.asarray(eval_steps, dtype=float), y=np.asarray(val_losses, dtype=float),
                             mode="lines+markers", name=names[1],
                             line=dict(color=COLORS["val"], width=2.5), marker=dict(size=6)))
    _lines(fig, lines)
    fig.update_xaxes(title_text=x_title, rangemode="tozero")
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    return theme.apply(fig, height=height)


def log_ticks(lo: float, hi: float) -> list[float]:
    """The values 1, 2, 5 x 10^k inside a log axis's range [lo, hi] (log10 units).

    >>> log_ticks(0.94, 3.06)
    [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
    """
    out = []
    for k in range(int(np.floor(lo)), int(np.ceil(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** k
            if lo <= np.log10(v) <= hi:
                out.append(v)
    return out


def ppl_lr_figure(eval_steps, ppl, steps, lrs, *, titles=("validation perplexity", "learning rate"),
                  x_title: str = "step", lines=(), height: int = 300) -> go.Figure:
    """Two panels side by side: validation perplexity (log scale, with labelled baselines
    ``lines = [(perplexity, label), ...]``) and the learning-rate schedule."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.12)
    fig.add_trace(go.Scatter(x=np.asarray(eval_steps, dtype=float), y=np.asarray(ppl, dtype=float),
                             mode="lines+markers", name=titles[0], line=dict(color=COLORS["val"]),
                             showlegend=False), row=1, col=1)
    xs, ys = downsample(steps, lrs)
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=titles[1], line=dict(color=COLORS["accent"]),
                             showlegend=False), row=1, col=2)
    _lines(fig, lines, log=True, row=1, col=1)
    # The range is given: autorange on this log axis with the labelled lines kept the browser
    # laying the chart out ~100 times a second (Plotly 3, Chromium). Ticks at 1, 2, 5 x 10^k.
    rng = log_range(list(ppl) + [y for y, _ in lines])
    if rng and lines:       # room above the top line for its label, below the panel's title
        rng[1] = round(rng[1] + 0.12 * (rng[1] - rng[0]), 6)
    ticks = log_ticks(*rng) if rng else None
    ticks = ticks if ticks and len(ticks) >= 2 else None     # less than two: Plotly's own ticks
    fig.update_yaxes(type="log", range=rng, tickvals=ticks, ticktext=[f"{v:,g}" for v in ticks or []],
                     row=1, col=1)
    fig.update_yaxes(exponentformat="e", row=1, col=2)
    fig.update_xaxes(title_text=x_title, rangemode="tozero")
    return theme.apply(fig, height=height)


def attention_figure(weights, labels, *, x_title: str = "key", y_title: str = "query",
                     hover: str = "query %{y} → key %{x}: %{z:.2f}", height: int = 380) -> go.Figure:
    """Heatmap of one head's attention weights [T,T] (rows: queries; the future is blank).

    The rows are labelled "position:token"; the keys along the top by their position alone, at
    most ``viz.attention.INDEX_TICKS`` of them, in round steps (side by side, "position:token"
    labels ran into each other at a third of the page's width); hovering a cell names both tokens.

    >>> f = attention_figure(np.eye(30), [str(i % 10) for i in range(30)])
    >>> list(f.layout.xaxis.ticktext), f.data[0].x[3]
    (['0', '4', '8', '12', '16', '20', '24', '28'], '3:3')
    """
    w = np.array(weights, dtype=float)
    T = w.shape[0]
    w[np.triu_indices(T, 1)] = np.nan             # masked: never attended to, drawn blank
    ticks = [f"{i}:{visible(lab)}" for i, lab in enumerate(labels)]    # a newline shows as ↵
    fig = go.Figure(go.Heatmap(z=w, x=ticks, y=ticks, zmin=0.0, zmax=1.0, colorscale=theme.HEATMAP,
                               hovertemplate=hover + "<extra></extra>", colorbar=dict(thickness=12)))
    keys = index_ticks(T)
    fig.update_xaxes(title_text=x_title, side="top", tickangle=0, tickvals=[ticks[i] for i in keys],
                     ticktext=[str(i) for i in keys])
    fig.update_yaxes(title_text=y_title, autorange="reversed")
    fig.update_layout(plot_bgcolor=COLORS["masked"])
    return theme.apply(fig, height=height)


def entropy(weights) -> np.ndarray:
    """Mean entropy (nats) of the attention rows of [..., T, T]: lower = sharper attention.

    >>> float(entropy(np.eye(3)))
    0.0
    """
    w = np.asarray(weights, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(w > 0, w * np.log(w), 0.0).sum(-1)
    return h.mean(-1)


def induction_figure(steps, loss, first, second, prefix, previous, *, head: tuple[int, int],
                     previous_head: tuple[int, int], uniform: float, names: dict, titles: tuple[str, str],
                     x_title: str = "step", mark=None, formed_at=None, height: int = 520) -> go.Figure:
    """An induction head forming (lmviz.chapters.induction_run.InductionRun), two panels over the
    evaluations ``steps``:

    - above, the training loss and the probe's loss on its first and its second half (their gap is
      the in-context-learning score);
    - below, every head's prefix-matching score, the followed ``head`` (layer, head) drawn thick and
      the others thin, with the best previous-token head's score dotted and even attention's
      prefix score (``uniform``) as a labelled line.

    ``prefix``, ``previous``: [E][L][H]. ``names``: the labels (keys loss, first, second, head,
    others, previous, uniform, formed, mark). ``mark``: (a, b) the steps between which the loss
    fell fastest (or rose: a bump), shaded in both panels; ``formed_at``: the step the head formed,
    a dashed line.

    >>> f = induction_figure([0, 50], [3.4, 3.3], [3.4, 3.4], [3.4, 3.0], [((.1, .2),), ((.1, .5),)],
    ...                      [((.3, .1),), ((.4, .1),)], head=(0, 1), previous_head=(0, 0), uniform=.03,
    ...                      names=dict.fromkeys(("loss", "first", "second", "head", "others", "previous",
    ...                      "uniform", "formed", "mark"), "x"), titles=("a", "b"), mark=(0, 50), formed_at=50)
    >>> [t.y.tolist() for t in f.data if t.line.width == 3.5]
    [[0.2, 0.5]]
    """
    x = np.asarray(steps, dtype=float)
    P, Q = np.asarray(prefix, dtype=float), np.asarray(previous, dtype=float)     # [E,L,H]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.12)
    for y, key, color, dash in ((loss, "loss", COLORS["train"], "solid"), (first, "first", COLORS["neutral"], "dash"),
                                (second, "second", COLORS["chosen"], "solid")):
        fig.add_trace(go.Scatter(x=x, y=np.asarray(y, dtype=float), mode="lines+markers", name=names[key],
                                 line=dict(color=color, dash=dash, width=2), marker=dict(size=4),
                                 legendgroup="loss"), row=1, col=1)
    L, H = P.shape[1], P.shape[2]
    shown = False
    for li in range(L):
        for h in range(H):
            if (li, h) == tuple(head):
                continue
            fig.add_trace(go.Scatter(x=x, y=P[:, li, h], mode="lines", name=names["others"], legendgroup="others",
                                     showlegend=not shown, line=dict(color=COLORS["masked"], width=1),
                                     hoverinfo="skip"), row=2, col=1)
            shown = True
    fig.add_trace(go.Scatter(x=x, y=P[:, head[0], head[1]], mode="lines+markers", name=names["head"],
                             line=dict(color=COLORS["chosen"], width=3.5), marker=dict(size=5)), row=2, col=1)
    fig.add_trace(go.Scatter(x=x, y=Q[:, previous_head[0], previous_head[1]], mode="lines", name=names["previous"],
                             line=dict(color=COLORS["query"], dash="dot", width=2.5)), row=2, col=1)
    _lines(fig, [(uniform, names["uniform"])], row=2, col=1)
    if mark is not None:
        for r in (1, 2):
            fig.add_vrect(x0=float(mark[0]), x1=float(mark[1]), fillcolor=COLORS["key"], opacity=0.18,
                          line_width=0, row=r, col=1)
        fig.add_annotation(x=(mark[0] + mark[1]) / 2, y=1.0, yref="y domain", text=names["mark"], showarrow=False,
                           yanchor="bottom", font=dict(size=12), row=1, col=1)
    if formed_at is not None:
        for r in (1, 2):
            fig.add_vline(x=float(formed_at), line=dict(color=COLORS["chosen"], dash="dash", width=1.5), row=r, col=1)
        fig.add_annotation(x=float(formed_at), y=1.0, yref="y2 domain", text=names["formed"], showarrow=False,
                           xanchor="left", yanchor="top", font=dict(size=12), row=2, col=1)
    fig.update_xaxes(title_text=x_title, rangemode="tozero", row=2, col=1)
    fig.update_yaxes(rangemode="tozero", row=2, col=1)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.14, x=0))
    return theme.apply(fig, height=height)


def icl_compare_figure(steps, icl, names, *, x_title: str = "step", y_title: str = "ICL score (nats)",
                       height: int = 300) -> go.Figure:
    """The in-context-learning score of two runs over their evaluations (this run and the one
    before it, e.g. two layers beside the one-layer control), a zero line between.

    >>> f = icl_compare_figure([[0, 50], [0, 50]], [[0.0, -2.0], [0.0, -0.1]], ["2 layers", "1 layer"])
    >>> [t.name for t in f.data]
    ['2 layers', '1 layer']
    """
    fig = go.Figure()
    for x, y, name, color in zip(steps, icl, names, (COLORS["chosen"], COLORS["query"])):
        fig.add_trace(go.Scatter(x=np.asarray(x, dtype=float), y=np.asarray(y, dtype=float), mode="lines+markers",
                                 name=name, line=dict(color=color, width=2.5), marker=dict(size=4)))
    fig.add_hline(y=0.0, line=dict(color=COLORS["neutral"], width=1))
    fig.update_xaxes(title_text=x_title, rangemode="tozero")
    fig.update_yaxes(title_text=y_title)
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return theme.apply(fig, height=height)
