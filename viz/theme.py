"""One colour per concept, used by every figure builder (Okabe-Ito palette: colour-blind safe).

A query is always blue, a key orange, a value green, the chosen token vermillion and masked
cells grey, on every page, so a student who learned the colours once can read every figure.
"""
from __future__ import annotations

import re
import unicodedata

import plotly.graph_objects as go

COLORS: dict[str, str] = {
    "query": "#0072B2",     # blue
    "key": "#E69F00",       # orange
    "value": "#009E73",     # bluish green
    "chosen": "#D55E00",    # vermillion: the picked token / the winner
    "masked": "#BBBBBB",    # grey: masked or discarded
    "token": "#56B4E9",     # sky blue: tokens, inputs
    "positive": "#009E73",  # good / kept
    "negative": "#CC79A7",  # reddish purple: bad / removed
    "neutral": "#999999",   # grey
    "accent": "#CC79A7",    # highlights that are not a winner
    "train": "#0072B2",     # training curve
    "val": "#D55E00",       # validation curve
}

# Alternating colours for token chips (tokens next to each other must differ).
TOKEN_CYCLE: tuple[str, ...] = ("#CFE8F7", "#FBE3C0", "#CDEBDD", "#F4D6E7", "#E6E6E6", "#F7F0B6")

HEATMAP = "Viridis"   # sequential, perceptually uniform, colour-blind safe
DIVERGING = "RdBu"    # for signed values (reverse so that positive is blue)
FONT = "Noto Sans, Noto Sans CJK SC, Source Han Sans SC, sans-serif"


_AXIS = dict(gridcolor="#E5ECF6", linecolor="#C8D4E3", zerolinecolor="#C8D4E3", ticks="",
             automargin=True, title=dict(standoff=12))
# A small template with the plotly_white look. Naming "plotly_white" makes plotly deep-copy its
# large template on every figure (~100 ms each here); this one costs ~2 ms.
TEMPLATE = go.layout.Template(layout=dict(
    paper_bgcolor="white", plot_bgcolor="white", colorway=list(COLORS[k] for k in (
        "query", "key", "value", "chosen", "accent", "token", "neutral")),
    xaxis=_AXIS, yaxis=_AXIS, hoverlabel=dict(font=dict(family=FONT)),
    font=dict(family=FONT, size=14, color="#2a3f5f")))


def layout(*, height: int | None = 360, title: str | None = None, **extra) -> dict:
    """The common lmviz layout as one dict (pass it to ``go.Figure(layout=...)`` or
    ``update_layout``: each update validates the whole layout again, so one is cheaper).

    With a title, the title sits at the very top and a horizontal legend just under it, above
    the plot, so the two never overlap.
    """
    title = wrapped(title) if title else title
    lines = title.count("<br>") + 1 if title else 0
    lay = dict(
        template=TEMPLATE,
        font=dict(family=FONT, size=14),
        margin=dict(l=10, r=10, t=90 + TITLE_LINE_PX * (lines - 1) if title else 20, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
    )
    if height is not None:
        lay["height"] = height + TITLE_LINE_PX * max(0, lines - 1)
    if title:
        # Plotly lifts a title of several lines anchored at its top by one line only: its first
        # line was cut off at the chart's top edge. Each more line moves it down by one.
        down = TITLE_LINE_PX * (lines - 1) / lay["height"] if lines > 1 and lay.get("height") else 0.0
        lay["title"] = dict(text=title, x=0, xanchor="left", y=0.98 - down, yanchor="top", yref="container")
    lay.update(extra)
    return lay


TITLE_UNITS = 44     # a title wider than this (a CJK character counts 2) is wrapped: a chart in a
#                      third of the page holds about 44 at the title's size, and Plotly cuts a
#                      longer title at the chart's edge (seen on the KV cache and beyond chapters)
TITLE_LINE_PX = 20   # the top margin (and the height) one more title line adds


def _units(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrapped(title: str, units: int = TITLE_UNITS) -> str:
    """``title`` in lines of at most ``units`` (joined by Plotly's ``<br>``), broken after a
    space, or between two CJK characters where a run of them is longer than a line; nothing is
    dropped, so removing the ``<br>`` gives the title back (:func:`unwrapped`). A title with
    markup of its own is left as it is.

    >>> wrapped("Next-token probabilities (greedy choice highlighted)")
    'Next-token probabilities <br>(greedy choice highlighted)'
    >>> wrapped("窗口中各位置的损失：唐诗（留出部分）以及更多的说明文字在这里")
    '窗口中各位置的损失：唐诗（留出<br>部分）以及更多的说明文字在这里'
    >>> wrapped("Short"), wrapped("a <b>b</b> " * 10) == "a <b>b</b> " * 10
    ('Short', True)
    """
    total = _units(title)
    if total <= units or "<" in title:
        return title
    n = -(-total // units)                       # as few lines as fit, as even as the words allow
    for limit in range(-(-total // n), units + 1):
        lines = _greedy(title, limit)
        if len(lines) <= n:
            break
    return "<br>".join(lines)


_NO_LINE_START = re.compile(r"\s*.[)）】」』”’，。：；、！？,.:;!?\s]*", re.S)   # a character and what may not start a line


def _greedy(title: str, limit: int) -> list[str]:
    lines, line = [], ""
    for piece in re.findall(r"\S+\s*|\s+", title):
        for part in ([piece] if _units(piece.rstrip()) <= limit else _NO_LINE_START.findall(piece)):
            if line.strip() and part.strip() and _units((line + part).rstrip()) > limit:
                lines.append(line)
                line = part
            else:
                line += part
    return lines + [line]


def unwrapped(title: str) -> str:
    """A title as it was before :func:`wrapped`.

    >>> t = "Next-token probabilities (greedy choice highlighted)"; unwrapped(wrapped(t)) == t
    True
    """
    return title.replace("<br>", "")


def apply(fig: go.Figure, *, height: int | None = 360, title: str | None = None, **extra) -> go.Figure:
    """Give ``fig`` the common lmviz look (in place, one layout update) and return it."""
    fig.update_layout(**layout(height=height, title=title, **extra))
    return fig


PHONE_PANEL_H = 300   # px per panel when a phone stacks a figure's side-by-side panels


def _axis_key(ref: str, letter: str) -> str:
    """"x2" -> "xaxis2", "y" -> "yaxis" (a trace's or an anchor's axis reference, as a layout key)."""
    return f"{letter}axis{ref[1:]}"


def stacked(fig: go.Figure, panel_height: int = PHONE_PANEL_H) -> go.Figure:
    """A copy of ``fig`` with its side-by-side panels one above the other, in reading order (left
    to right, then top to bottom), each the full width: what a phone (≤ 480 px) can read. Subplot
    titles and colour bars move with their panel; a figure whose panels are not side by side (one
    panel, a column of panels, a secondary y axis) comes back unchanged (the same object).

    >>> from plotly.subplots import make_subplots
    >>> f = make_subplots(rows=1, cols=2, subplot_titles=("a", "b"))
    >>> s = stacked(f)
    >>> [list(s.layout[k].domain) for k in ("xaxis", "xaxis2")], s.layout.yaxis.domain[0] > s.layout.yaxis2.domain[1]
    ([[0.0, 1.0], [0.0, 1.0]], True)
    >>> [(a.text, a.x, round(a.y, 3)) for a in s.layout.annotations]
    [('a', 0.5, 1.0), ('b', 0.5, 0.442)]
    >>> g = make_subplots(rows=2, cols=1); stacked(g) is g
    True
    """
    spec = fig.to_plotly_json()
    layout = spec.get("layout", {})
    panels = []                                        # (x key, y key, x domain, y domain)
    for k, ax in layout.items():
        if not (k.startswith("xaxis") and isinstance(ax, dict)) or ax.get("overlaying"):
            continue
        yk = _axis_key(ax.get("anchor") or "y", "y")
        yd = tuple((layout.get(yk) or {}).get("domain") or (0.0, 1.0))
        panels.append((k, yk, tuple(ax.get("domain") or (0.0, 1.0)), yd))
    if len({p[2] for p in panels}) < 2:                # nothing side by side
        return fig
    panels.sort(key=lambda p: (-p[3][1], p[2][0]))
    n = len(panels)
    gap = min(0.5, 70 / (n * panel_height)) if n > 1 else 0.0   # room for the next panel's title
    moved = set()
    for i, (xk, yk, xd, yd) in enumerate(panels):
        top, bottom = 1 - i / n, 1 - (i + 1) / n
        nd = [bottom + (gap / 2 if i < n - 1 else 0), top - (gap / 2 if i > 0 else 0)]
        layout[xk]["domain"] = [0.0, 1.0]
        for k, ax in layout.items():                   # the panel's y axis and any overlaying it
            if k.startswith("yaxis") and isinstance(ax, dict) and (k == yk or _axis_key(ax.get("overlaying") or "_", "y") == yk):
                ax["domain"] = nd
        for j, a in enumerate(layout.get("annotations") or []):   # its subplot title
            if (j not in moved and a.get("xref") == "paper" and a.get("yref") == "paper"
                    and abs((a.get("x") or 0) - (xd[0] + xd[1]) / 2) < 0.02 and abs((a.get("y") or 0) - yd[1]) < 0.03):
                a["x"], a["y"] = 0.5, nd[1]
                moved.add(j)
        for tr in spec.get("data", []):                # its colour bars
            if _axis_key(tr.get("yaxis") or "y", "y") == yk and "colorbar" in tr:
                tr["colorbar"].update(y=(nd[0] + nd[1]) / 2, len=nd[1] - nd[0], yanchor="middle")
    layout["height"] = n * panel_height + 90
    return go.Figure(spec, skip_invalid=True)
