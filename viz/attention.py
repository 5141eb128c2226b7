"""Figures of the attention chapter: score/weight heatmaps with token labels, all heads of a
layer, the weighted sum of values (weighted-sum example) and the sqrt(d_k) experiment (√d_k-scaling example).

Token labels repeat (a char model sees "l" twice in "hello"), so heatmaps use numeric axes with
tick text: categorical axes would merge equal labels.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz import theme
from viz.theme import COLORS, log_range


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


NICE_STEPS = (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256, 500, 512, 1000)
INDEX_TICKS = 10     # an axis of bare positions is numbered at most this often


def _ticks(labels, axis_len: int, max_ticks: int = 32) -> dict:
    """Tick values and texts for an axis of ``axis_len`` cells: named by ``labels`` at most
    ``max_ticks`` times, or, with no labels (positions, dimensions), numbered at most
    ``INDEX_TICKS`` times in round steps (64 positions were numbered 0, 2, ..., 62: the numbers
    ran into each other at half the page's width).

    >>> _ticks(None, 64)["tickvals"][:3], _ticks(None, 128)["tickvals"][:3], _ticks(list("abc"), 3)["ticktext"]
    ([0, 8, 16], [0, 16, 32], ['a', 'b', 'c'])
    """
    idx = list(range(0, axis_len, max(1, -(-axis_len // max_ticks)))) if labels else index_ticks(axis_len)
    return dict(tickmode="array", tickvals=idx, ticktext=[labels[i] for i in idx] if labels else idx)


def index_ticks(n: int) -> list[int]:
    """The positions of an axis of ``n`` cells that are numbered: at most ``INDEX_TICKS`` of
    them, in a round step (``NICE_STEPS``).

    >>> index_ticks(30), index_ticks(7)
    ([0, 4, 8, 12, 16, 20, 24, 28], [0, 1, 2, 3, 4, 5, 6])
    """
    step = next((s for s in NICE_STEPS if s * INDEX_TICKS >= n), -(-n // INDEX_TICKS))
    return list(range(0, n, step))


def heatmap(M, *, x_labels=None, y_labels=None, title: str = "", x_title: str = "",
            y_title: str = "", diverging: bool = False, text: bool | None = None, fmt: str = ".2f",
            masked_text: str = "−∞", zmin=None, zmax=None, height: int | None = None,
            colorbar_title: str = "") -> go.Figure:
    """A matrix as a heatmap, rows top to bottom; -inf cells are drawn grey with ``masked_text``.

    ``text`` prints the values in the cells (default: when the matrix is at most 10 x 10).
    """
    M = _np(M).astype(float)
    n_r, n_c = M.shape
    masked = np.isneginf(M)
    Z = np.where(masked, np.nan, M)
    show = (n_r <= 10 and n_c <= 10) if text is None else text
    cells = None
    if show:
        cells = [[masked_text if masked[i, j] else format(M[i, j], fmt) for j in range(n_c)]
                 for i in range(n_r)]
    finite = Z[np.isfinite(Z)]
    if diverging and finite.size:
        lim = float(np.abs(finite).max()) or 1.0
        zmin, zmax = (-lim, lim) if zmin is None else (zmin, zmax)
    trace = go.Heatmap(
        z=Z, x=list(range(n_c)), y=list(range(n_r)), text=cells,
        texttemplate="%{text}" if show else None, textfont=dict(size=11),
        colorscale=theme.DIVERGING if diverging else theme.HEATMAP, reversescale=diverging,
        zmin=zmin, zmax=zmax, hoverongaps=False, colorbar=dict(title=colorbar_title, thickness=12),
        hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>")
    h = height or int(min(620, max(260, 90 + 26 * n_r)))
    layout = theme.layout(height=h, title=title or None, plot_bgcolor=COLORS["masked"],
                     xaxis=dict(title=x_title, showgrid=False, tickangle=0 if n_c <= 24 else None,
                                **_ticks(x_labels, n_c, 32 if n_c <= 32 else 16)),
                     yaxis=dict(title=y_title, autorange="reversed", showgrid=False, **_ticks(y_labels, n_r)))
    return go.Figure(trace, layout)


HEADS_PER_ROW = 8    # the heads of a layer wrap after this many panels (12 heads: 2 rows of 6)


def _span(x0: float, x1: float) -> list[float]:
    """A Plotly domain [x0, x1] inside [0, 1]: sums of gaps and widths land a rounding error past
    1 (1.0000000000000002 for 12 heads), which Plotly refuses.

    >>> _span(0.9441, 1.0000000000000002)
    [0.9441, 1.0]
    """
    return [min(1.0, max(0.0, round(x0, 6))), min(1.0, max(0.0, round(x1, 6)))]


def grid_domains(n: int, per_row: int = HEADS_PER_ROW, gap_x: float = 0.03,
                 gap_y: float = 0.12) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) of ``n`` panels in rows of at most ``per_row``, the rows as even as
    possible, row 1 at the top; every domain inside [0, 1] and of positive size for any ``n``.

    >>> [len({tuple(y) for _, y in grid_domains(h)}) for h in (1, 8, 9, 12, 32)]   # rows
    [1, 1, 2, 2, 4]
    >>> all(0 <= a < b <= 1 and 0 <= c < d <= 1 for h in range(1, 65) for (a, b), (c, d) in grid_domains(h))
    True
    """
    if n < 1:
        return []
    rows = -(-n // per_row)
    cols = -(-n // rows)
    gx = min(gap_x, 0.5 / max(cols - 1, 1))          # the gaps take at most half the width
    gy = min(gap_y, 0.5 / max(rows - 1, 1)) if rows > 1 else 0.0
    w = (1 - gx * (cols - 1)) / cols
    h = (1 - gy * (rows - 1)) / rows
    out = []
    for i in range(n):
        r, c = divmod(i, cols)
        x0, y1 = c * (w + gx), 1 - r * (h + gy)
        out.append((_span(x0, x0 + w), _span(y1 - h, y1)))
    return out


def heads_figure(weights, labels, head_titles: list[str], *, x_title: str = "", y_title: str = "",
                 highlight: int | None = None) -> go.Figure:
    """All heads of a layer: weights [H, T, T], one heatmap per head (shared 0..1), in rows of at
    most ``HEADS_PER_ROW`` (:func:`grid_domains`).

    The axes are laid out by hand (make_subplots costs ~10x more to build).

    >>> import numpy as np
    >>> f = heads_figure(np.full((12, 3, 3), 1 / 3), list("abc"), [str(h) for h in range(12)])
    >>> len(f.data), max(f.layout[f"xaxis{h}"].domain[1] for h in range(2, 13))
    (12, 1.0)
    """
    W = _np(weights).astype(float)
    H, T, _ = W.shape
    cells = grid_domains(H)
    rows = len({tuple(y) for _, y in cells})
    traces, axes, notes = [], {}, []
    for h, (dx, dy) in enumerate(cells):
        sx = "" if h == 0 else str(h + 1)
        first_col = dx[0] == 0.0
        traces.append(go.Heatmap(z=W[h], x=list(range(T)), y=list(range(T)), zmin=0, zmax=1,
                                 xaxis=f"x{sx}", yaxis=f"y{sx}", colorscale=theme.HEATMAP,
                                 showscale=h == H - 1, colorbar=dict(thickness=12),
                                 hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"))
        axes[f"xaxis{sx}"] = dict(domain=dx, anchor=f"y{sx}", showticklabels=T <= 24 and rows == 1,
                                  tickangle=0, tickfont=dict(size=10),
                                  title=x_title if h == 0 and rows == 1 else None, **_ticks(labels, T, 24))
        axes[f"yaxis{sx}"] = dict(domain=dy, anchor=f"x{sx}", autorange="reversed", tickfont=dict(size=10),
                                  showticklabels=first_col, title=y_title if h == 0 else None,
                                  **_ticks(labels, T, 24))
        chosen = h == highlight
        notes.append(dict(text=head_titles[h], x=(dx[0] + dx[1]) / 2, y=dy[1], xref="paper", yref="paper",
                          xanchor="center", yanchor="bottom", showarrow=False,
                          font=dict(size=15 if chosen else 14, color=COLORS["chosen"] if chosen else "#333")))
    layout = theme.layout(height=340 if rows == 1 else 60 + 230 * rows, annotations=notes, **axes)
    layout["margin"] = dict(l=10, r=10, t=40, b=10)
    return go.Figure(traces, layout)


def weighted_sum_figure(ws, value_names: list[str], output_name: str, *, title: str = "") -> go.Figure:
    """The weighted sum in the plane: the value vectors, each scaled by its weight, added head to tail."""
    V, terms, out = _np(ws.values), _np(ws.terms), _np(ws.output)
    w = _np(ws.weights)
    fig = go.Figure()
    for i, v in enumerate(V):
        fig.add_trace(go.Scatter(x=[0, v[0]], y=[0, v[1]], mode="lines+markers+text",
                                 name=f"{value_names[i]} = {v.tolist()}",
                                 text=["", value_names[i]], textposition="top center",
                                 line=dict(color=COLORS["value"], width=2, dash="dot"),
                                 marker=dict(size=[0, 9], color=COLORS["value"])))
    start = np.zeros(2)
    for i, tv in enumerate(terms):  # head-to-tail: w1 v1, then + w2 v2, then + w3 v3
        end = start + tv
        fig.add_trace(go.Scatter(x=[start[0], end[0]], y=[start[1], end[1]], mode="lines+markers",
                                 name=f"{w[i]:g} × {value_names[i]}", showlegend=True,
                                 line=dict(color=COLORS["query"], width=4),
                                 marker=dict(size=[0, 7], color=COLORS["query"])))
        start = end
    fig.add_trace(go.Scatter(x=[0, out[0]], y=[0, out[1]], mode="lines+markers+text",
                             name=f"{output_name} = [{out[0]:g}, {out[1]:g}]",
                             text=["", output_name], textposition="middle right",
                             line=dict(color=COLORS["chosen"], width=3),
                             marker=dict(size=[0, 12], color=COLORS["chosen"], symbol="star")))
    fig.update_xaxes(range=[-0.3, 2.6], zeroline=True, dtick=0.5)
    fig.update_yaxes(range=[-0.3, 2.4], zeroline=True, dtick=0.5, scaleanchor="x")
    theme.apply(fig, height=420, title=title)
    fig.update_layout(legend=dict(orientation="v", x=1.02, y=1, xanchor="left", yanchor="top"),
                      margin=dict(t=60 if title else 20))
    return fig


def variance_figure(rows, *, x_title: str, y_title: str, names: tuple[str, str, str],
                    title: str = "") -> go.Figure:
    """Why scale by √d_k: measured Var(q·k) against d_k, raw and divided by sqrt(d_k), with the line y = d_k."""
    d = [r.d_k for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=d, y=[r.var_raw for r in rows], mode="lines+markers", name=names[0],
                             line=dict(color=COLORS["negative"], width=3)))
    fig.add_trace(go.Scatter(x=d, y=[r.var_scaled for r in rows], mode="lines+markers", name=names[1],
                             line=dict(color=COLORS["positive"], width=3)))
    # drawn last, dark and dashed: the raw variance lies on it (that is the point), and drawn first
    # it was hidden under that curve
    fig.add_trace(go.Scatter(x=d, y=d, mode="lines", name=names[2],
                             line=dict(color="#333333", dash="dash", width=2)))
    ys = d + [r.var_raw for r in rows] + [r.var_scaled for r in rows]
    fig.update_xaxes(type="log", title=x_title, tickvals=d, range=log_range(d, pad=0.15))
    fig.update_yaxes(type="log", title=y_title, dtick="D2", range=log_range(ys, pad=0.15))
    return theme.apply(fig, height=380, title=title)


def saturation_figure(rows, *, x_title: str, y_title: str, names: tuple[str, str],
                      title: str = "") -> go.Figure:
    """Why scale by √d_k: the mean largest softmax weight over n keys, with and without the scaling."""
    d = [str(r.d_k) for r in rows]
    fig = go.Figure([
        go.Bar(x=d, y=[r.max_weight_raw for r in rows], name=names[0], marker_color=COLORS["negative"]),
        go.Bar(x=d, y=[r.max_weight_scaled for r in rows], name=names[1], marker_color=COLORS["positive"]),
    ])
    fig.update_xaxes(title=x_title, type="category")
    fig.update_yaxes(title=y_title, range=[0, 1])
    fig.update_layout(barmode="group")
    return theme.apply(fig, height=380, title=title)


def softmax_pair_figure(raw, scaled, *, x_title: str, y_title: str, names: tuple[str, str],
                        title: str = "") -> go.Figure:
    """One query's softmax over its keys, from raw and from scaled scores."""
    raw, scaled = _np(raw), _np(scaled)
    x = [str(i + 1) for i in range(len(raw))]
    fig = go.Figure([
        go.Bar(x=x, y=raw, name=names[0], marker_color=COLORS["negative"]),
        go.Bar(x=x, y=scaled, name=names[1], marker_color=COLORS["positive"]),
    ])
    fig.update_xaxes(title=x_title, type="category")
    fig.update_yaxes(title=y_title, range=[0, 1])
    fig.update_layout(barmode="group")
    return theme.apply(fig, height=340, title=title)


def pronoun_grid_figure(share, best: tuple[int, int], *, layer_labels: list[str], head_labels: list[str],
                        title: str, margin: bool = False, x_title: str = "") -> go.Figure:
    """Why attention, every head: the share of attention from the pronoun that lands on the
    referent, layers as rows and heads as columns -- with ``margin``, that share minus the share on
    the control word (-1..1, diverging); head ``best`` framed. Taller with many layers (30 rows for
    SmolLM2). A figure of its own beside :func:`pronoun_row_figure`: on a phone the page stacks the
    two, each at the screen's width.

    >>> import numpy as np
    >>> f = pronoun_grid_figure(np.zeros((30, 9)), (24, 4), layer_labels=[str(i) for i in range(30)],
    ...                         head_labels=[str(i) for i in range(9)], title="", margin=True)
    >>> f.layout.height, f.data[0].zmin, f.layout.xaxis.type
    (700, -1, 'category')
    """
    S = _np(share).astype(float)
    L, H = S.shape
    fmt = "{:+.2f}" if margin else "{:.2f}"
    grid = go.Heatmap(z=S, x=head_labels, y=layer_labels, zmin=-1 if margin else 0, zmax=1,
                      colorscale=theme.DIVERGING if margin else theme.HEATMAP, reversescale=margin,
                      text=[[fmt.format(v) for v in line] for line in S], texttemplate="%{text}",
                      textfont=dict(size=9 if L * H > 64 else 12),
                      showscale=False, hovertemplate="%{y} · %{x}: %{z:.3f}<extra></extra>")
    layout = theme.layout(
        height=max(360, 100 + 20 * L), title=title or None, showlegend=False,
        # categories: head labels "1".."9" would otherwise make a numeric axis ticked 2, 4, 6, 8
        xaxis=dict(side="bottom", tickangle=0, title=x_title or None, type="category"),
        yaxis=dict(autorange="reversed", type="category"))
    fig = go.Figure([grid], layout)
    fig.add_shape(type="rect", x0=best[1] - 0.5, x1=best[1] + 0.5, y0=best[0] - 0.5, y1=best[0] + 0.5,
                  line=dict(color=COLORS["chosen"], width=3))
    return fig


def pronoun_row_figure(row, tokens: list[str], ref_span: tuple[int, int], *, title: str, y_title: str,
                       height: int = 360) -> go.Figure:
    """Why attention, one head: its attention row from the pronoun over the tokens it can see,
    the referent's bars highlighted.

    >>> import numpy as np
    >>> f = pronoun_row_figure(np.array([0.1, 0.7, 0.2]), list("abc"), (1, 2), title="t", y_title="w")
    >>> list(f.data[0].marker.color) == [COLORS["neutral"], COLORS["chosen"], COLORS["neutral"]]
    True
    """
    r = _np(row).astype(float)
    a, b = ref_span
    colors = [COLORS["chosen"] if a <= i < b else COLORS["neutral"] for i in range(len(r))]
    bars = go.Bar(x=list(range(len(r))), y=r, marker_color=colors,
                  text=[f"{v:.2f}" if v >= 0.05 else "" for v in r], textposition="outside",
                  hovertext=tokens[:len(r)], hovertemplate="%{hovertext}: %{y:.3f}<extra></extra>")
    layout = theme.layout(height=height, title=title or None, showlegend=False,
                          xaxis=dict(tickangle=0, **_ticks(tokens[:len(r)], len(r), 40)),
                          yaxis=dict(range=[0, 1.12], title=y_title))
    return go.Figure([bars], layout)


def multi_head_figure(mh, tokens: list[str], *, head_titles: list[str], heads_title: str, concat_title: str,
                      proj_title: str) -> go.Figure:
    """Multi-head attention's last steps for one layer (a lmviz.chapters.attention_heads.MultiHead): each head's output
    [T, d_h] side by side, their concatenation [T, d] (head boundaries drawn) and the result after
    the output projection W_O [T, d]. Heads and concatenation share one colour scale (the same numbers)."""
    heads = _np(mh.head_out).astype(float)
    cat, proj = _np(mh.concat).astype(float), _np(mh.projected).astype(float)
    H, T, dh = heads.shape
    d = cat.shape[1]
    lim1 = float(np.abs(cat).max()) or 1.0
    lim2 = float(np.abs(proj).max()) or 1.0
    gap_b = 0.04                                      # between the three blocks
    block = (1 - 2 * gap_b) / 3
    gap_h = min(0.006, 0.3 * block / max(H - 1, 1))   # between heads: at most 30 % of the block
    wh = (block - gap_h * (H - 1)) / H
    traces, axes, notes = [], {}, []
    panels = [(heads[h], h * (wh + gap_h), wh, head_titles[h], 1) for h in range(H)]
    panels += [(cat, block + gap_b, block, concat_title, 1), (proj, 2 * (block + gap_b), block, proj_title, 2)]
    for k, (Z, x0, w, title, ax) in enumerate(panels):
        sx = "" if k == 0 else str(k + 1)
        traces.append(go.Heatmap(z=Z, x=list(range(Z.shape[1])), y=list(range(T)), xaxis=f"x{sx}", yaxis=f"y{sx}",
                                 coloraxis="coloraxis" if ax == 1 else "coloraxis2",
                                 hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>"))
        axes[f"xaxis{sx}"] = dict(domain=_span(x0, x0 + w), anchor=f"y{sx}", showticklabels=False, showgrid=False)
        axes[f"yaxis{sx}"] = dict(domain=[0, 0.9], anchor=f"x{sx}", autorange="reversed", showgrid=False,
                                  showticklabels=k == 0, tickfont=dict(size=10), **_ticks(tokens, T, 24))
        notes.append(dict(text=title, x=x0 + w / 2, y=0.905, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=dict(size=11 if k < H else 13)))
    notes.append(dict(text=heads_title, x=block / 2, y=0.96, xref="paper", yref="paper", xanchor="center",
                      yanchor="bottom", showarrow=False, font=dict(size=13)))
    layout = theme.layout(height=int(min(560, max(300, 120 + 10 * T))), annotations=notes, **axes,
                          coloraxis=dict(colorscale=theme.DIVERGING, reversescale=True, cmin=-lim1, cmax=lim1,
                                         showscale=False),
                          coloraxis2=dict(colorscale=theme.DIVERGING, reversescale=True, cmin=-lim2, cmax=lim2,
                                          showscale=False))
    layout["margin"] = dict(l=10, r=10, t=40, b=10)
    fig = go.Figure(traces, layout)
    cx = str(H + 1)
    for h in range(1, H):
        fig.add_shape(type="line", x0=h * dh - 0.5, x1=h * dh - 0.5, y0=-0.5, y1=T - 0.5,
                      xref=f"x{cx}", yref=f"y{cx}", line=dict(color="#222", width=1.5))
    return fig


def head_map_figure(delta, layer_labels: list[str], head_labels: list[str], *, title: str = "",
                    colorbar_title: str = "", text_missing: str = "") -> go.Figure:
    """The room's map of the heads: the rise of the loss when each head is removed, [L, H] (NaN:
    no result yet, drawn empty with ``text_missing``); red for a head the text needs, blue for one
    it is better without, on a scale symmetric about 0.

    >>> f = head_map_figure([[0.2, float("nan")]], ["L1"], ["h1", "h2"], text_missing="?")
    >>> f.data[0].text.tolist()
    [['+0.200', '?']]
    """
    D = _np(delta).astype(float)
    lim = float(np.nanmax(np.abs(D))) if np.isfinite(D).any() else 1.0
    text = np.where(np.isfinite(D), np.vectorize(lambda v: f"{v:+.3f}")(np.nan_to_num(D)), text_missing)
    fig = go.Figure(go.Heatmap(z=D, x=head_labels, y=layer_labels, zmid=0, zmin=-max(lim, 1e-6),
                               zmax=max(lim, 1e-6), colorscale=theme.DIVERGING, reversescale=True,
                               text=text, texttemplate="%{text}", hoverongaps=False,
                               colorbar=dict(title=colorbar_title, thickness=12),
                               hovertemplate="%{y} · %{x}: %{z:+.4f}<extra></extra>"))
    return theme.apply(fig, height=max(220, 70 * D.shape[0] + 90), title=title,
                       yaxis=dict(autorange="reversed", type="category"), xaxis=dict(type="category"))


GROUP_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")


def gqa_figure(n_head: int, n_kv_head: int, *, query_labels: list[str], kv_labels: list[str],
               query_title: str, kv_title: str, title: str = "") -> go.Figure:
    """Grouped-query attention in one layer: ``n_head`` query heads (top row) each joined to the
    key/value head it reads (bottom row), query head h reading K/V head h // (n_head / n_kv_head),
    as the model's ``repeat_interleave`` does; one colour per group.

    >>> f = gqa_figure(9, 3, query_labels=[f"Q{i}" for i in range(9)], kv_labels=["A", "B", "C"],
    ...                query_title="q", kv_title="kv")
    >>> len(f.data), [round(x, 1) for x in f.data[-1].x]   # 9 links, the query row, the K/V row
    (11, [1.0, 4.0, 7.0])
    """
    if n_kv_head < 1 or n_head % n_kv_head:
        raise ValueError(f"{n_head} query heads cannot share {n_kv_head} key/value heads evenly")
    g = n_head // n_kv_head
    kv_x = [k * g + (g - 1) / 2 for k in range(n_kv_head)]           # each K/V head under its group
    color = [GROUP_COLORS[(h // g) % len(GROUP_COLORS)] for h in range(n_head)]
    links = [go.Scatter(x=[h, kv_x[h // g]], y=[1, 0], mode="lines", line=dict(color=color[h], width=2),
                        hoverinfo="skip", showlegend=False) for h in range(n_head)]
    size = max(10, min(34, int(520 / n_head)))
    queries = go.Scatter(x=list(range(n_head)), y=[1] * n_head, mode="markers+text", text=query_labels,
                         textposition="top center", marker=dict(symbol="square", size=size, color=color),
                         hovertext=query_labels, hoverinfo="text", showlegend=False, cliponaxis=False)
    kvs = go.Scatter(x=kv_x, y=[0] * n_kv_head, mode="markers+text", text=kv_labels, textposition="bottom center",
                     marker=dict(symbol="square", size=size + 8,
                                 color=[GROUP_COLORS[k % len(GROUP_COLORS)] for k in range(n_kv_head)]),
                     hovertext=kv_labels, hoverinfo="text", showlegend=False, cliponaxis=False)
    # the rows' names centred above the query labels and below the K/V labels, clear of both
    notes = [dict(text=query_title, x=0.5, y=1, xref="paper", yref="y", xanchor="center", yanchor="bottom",
                  yshift=size / 2 + 26, showarrow=False, font=dict(size=13, color="#555")),
             dict(text=kv_title, x=0.5, y=0, xref="paper", yref="y", xanchor="center", yanchor="top",
                  yshift=-(size / 2 + 30), showarrow=False, font=dict(size=13, color="#555"))]
    fig = go.Figure(links + [queries, kvs])
    fig.update_xaxes(visible=False, range=[-0.8, n_head - 0.2])
    fig.update_yaxes(visible=False, range=[-0.9, 1.9])
    return theme.apply(fig, height=360, title=title or None, annotations=notes)
