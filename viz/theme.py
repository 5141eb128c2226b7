"""One colour per concept, used by every figure builder (Okabe-Ito palette: colour-blind safe).

A query is always blue, a key orange, a value green, the chosen token vermillion and masked
cells grey, on every page, so a student who learned the colours once can read every figure.
"""
from __future__ import annotations

import base64
import copy
import re
import unicodedata

import numpy as np
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
    # a margin given names the sides it sets; the others stay the common ones (the top: the title's)
    lay["margin"] = {**lay["margin"], **extra.pop("margin", {})}
    lay.update(extra)
    return lay


TITLE_UNITS = 44     # a title wider than this (a CJK character counts 2) is wrapped: a chart in a
#                      third of the page holds about 44 at the title's size, and Plotly cuts a
#                      longer title at the chart's edge (seen on the KV cache and beyond chapters)
TITLE_LINE_PX = 20   # the top margin (and the height) one more title line adds


def _units(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrapped(title: str, units: int = TITLE_UNITS) -> str:
    """``title`` in lines of at most ``units`` (joined by Plotly's ``<br>``), as few and as even
    as fit: broken after a space, after Chinese punctuation or before an opening bracket where
    that gives as few lines, else also between two CJK characters; nothing is dropped, so removing
    the ``<br>`` gives the title back (:func:`unwrapped`). A title with markup of its own is left
    as it is.

    >>> wrapped("Next-token probabilities (greedy choice highlighted)")
    'Next-token probabilities <br>(greedy choice highlighted)'
    >>> wrapped("窗口中各位置的损失：唐诗（留出部分）以及更多的说明文字在这里")
    '窗口中各位置的损失：唐诗（留出部分）<br>以及更多的说明文字在这里'
    >>> wrapped("修改后各层缓存 K 的每一行变化了多少（各头上的最大 |ΔK|）")
    '修改后各层缓存 K 的每一行变化了多少<br>（各头上的最大 |ΔK|）'
    >>> wrapped("一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十")
    '一二三四五六七八九十一二三四五<br>六七八九十一二三四五六七八九十'
    >>> wrapped("Short"), wrapped("a <b>b</b> " * 10) == "a <b>b</b> " * 10
    ('Short', True)
    """
    total = _units(title)
    if total <= units or "<" in title:
        return title
    n = -(-total // units)                       # as few lines as fit, as even as the words allow
    for pieces in (_PHRASE, _WORD):
        for limit in range(-(-total // n), units + 1):
            lines = _greedy(title, limit, pieces)
            if len(lines) <= n:
                return "<br>".join(lines)
    return "<br>".join(lines)


_WORD = re.compile(r"\S+\s*|\s+")                                        # a word and its spaces
_OPEN, _CLOSE = "（(【「『“", "，。：；、！？）)】」』”"   # a line may break before these / after these
_PHRASE = re.compile(rf"(?:[{_OPEN}]*[^\s{_OPEN}{_CLOSE}]+[{_CLOSE}]*|[{_OPEN}]+|[{_CLOSE}]+)\s*|\s+")  # or a phrase
_NO_LINE_START = re.compile(rf"\s*.[{_CLOSE}’,.:;!?\s]*", re.S)   # a character and what may not start a line


def _greedy(title: str, limit: int, pieces: re.Pattern = _WORD) -> list[str]:
    lines, line = [], ""
    for piece in pieces.findall(title):
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


_NEGATIVE = re.compile(r"-\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?")   # a number Python printed: "-0.40", "-1,234", "-5%"


def true_minus(v):
    """The labels ``v`` (a string, or nested lists/tuples/arrays of them) with each negative
    number written with the minus sign U+2212, as Plotly writes its axes and d3 its templates
    (Python prints "-0.40", and one chart showed both); any other text is left as it is.

    >>> true_minus(["-0.40", "1.20", "-1,234", "-5%", "C (z=-1)", "-x"])
    ['−0.40', '1.20', '−1,234', '−5%', 'C (z=-1)', '-x']
    >>> true_minus((("-1", "2"),))
    (('−1', '2'),)
    """
    if isinstance(v, str):
        return "\u2212" + v[1:] if _NEGATIVE.fullmatch(v) else v
    if isinstance(v, np.ndarray) and v.dtype.kind in "OU":
        return np.array([true_minus(x) for x in v.tolist()], dtype=object)
    if isinstance(v, (list, tuple)):
        return type(v)(true_minus(x) for x in v)
    return v


def minus_labels(fig: go.Figure) -> go.Figure:
    """``fig`` (changed in place) with its traces' text labels writing a negative number with a
    true minus (:func:`true_minus`); ui.render.figure applies it to every figure a page draws
    (a builder's other results, a Vega-Lite spec, pass unchanged)."""
    if not isinstance(fig, go.Figure):
        return fig
    for tr in fig.data:
        text = getattr(tr, "text", None)
        if text is not None and not isinstance(text, str):
            tr.text = true_minus(text)
    return fig


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


# ---------------------------------------------------------------------------------------------
# A figure as the browser draws it (ui.render.plot): Streamlit's chart look baked in
# ---------------------------------------------------------------------------------------------

_SS = '"Source Sans", sans-serif'
_GREY, _LINE = "#808495", "#e6eaf1"
_AXIS_LOOK = dict(gridcolor=_LINE, zerolinecolor=_LINE, tickcolor=_LINE, tickfont=dict(color=_GREY, size=12))
# What Streamlit 1.67's chart theme (``st.plotly_chart``'s default, theme="streamlit") writes over
# a figure's template in the browser, with this project's .streamlit/config.toml: read from a drawn
# chart's ``gd.layout.template.layout`` (tests/test_browser_flat_charts.py reads it again and
# compares), less what lmviz never draws (ternary axes, range selectors) and the minor grid's
# colour (in a layout, unlike a template, it turns minor grid lines on); its "transparent" is
# written rgba(0,0,0,0), the form plotly.py accepts. Its values win over the
# figure's own template; the figure's layout wins over both, as a template's defaults do. Its
# sizes are Streamlit's rem sizes at the page's 16 px (presenter mode's larger type keeps
# Streamlit's theme: ui.render.plot).
STREAMLIT_LOOK = dict(
    font=dict(color=_GREY, family=_SS, size=12, weight=400),
    hoverlabel=dict(font=dict(family=_SS, color=_GREY, size=12), bgcolor="#FFFFFF", bordercolor="#DCD8D4"),
    paper_bgcolor="#FFFFFF", plot_bgcolor="#FFFFFF",
    xaxis=dict(_AXIS_LOOK, title=dict(standoff=20, font=dict(color=_GREY, size=14)), showgrid=False,
               zeroline=False),
    yaxis=dict(_AXIS_LOOK, title=dict(standoff=24, font=dict(color=_GREY, size=14)),
               ticklabelposition="outside"),
    title=dict(font=dict(family=_SS, size=16, color="#141312"), pad=dict(l=4), xanchor="left", x=0),
    legend=dict(title=dict(font=dict(size=12, color=_GREY), side="top"), valign="top",
                bordercolor="rgba(0,0,0,0)", borderwidth=0, font=dict(size=12, color="#262730")),
    margin=dict(pad=8, r=0, l=0),
    coloraxis=dict(colorbar=dict(thickness=16, xpad=24, ticklabelposition="outside", outlinecolor="rgba(0,0,0,0)",
                                 outlinewidth=8, len=0.75, y=0.5745,
                                 title=dict(font=dict(color=_GREY, size=14)), tickfont=dict(color=_GREY, size=12))),
)
# trace types drawn on x/y axes (a template's xaxis/yaxis reach every axis they use)
_CARTESIAN = {"scatter", "scattergl", "bar", "heatmap", "histogram", "histogram2d", "histogram2dcontour", "box",
              "violin", "contour", "image", "funnel", "waterfall", "candlestick", "ohlc"}
_AXIS_KEY = re.compile(r"^([xy])axis\d*$")


def _under(defaults, own):
    """``own`` with ``defaults`` filled in beneath it, dicts merged key by key (a fresh structure).

    >>> _under({"a": 1, "f": {"size": 12, "color": "grey"}}, {"f": {"size": 14}, "b": 2})
    {'a': 1, 'f': {'size': 14, 'color': 'grey'}, 'b': 2}
    """
    if own is None:
        return copy.deepcopy(defaults)
    if not (isinstance(defaults, dict) and isinstance(own, dict)):
        return own
    out = copy.deepcopy(defaults)
    for k, v in own.items():
        out[k] = _under(out.get(k), v)
    return out


def decoded(arr) -> np.ndarray:
    """An array of a figure's JSON: a list, or plotly's typed array ({"dtype", "bdata"[, "shape"]}).

    >>> decoded({"dtype": "i1", "bdata": "AQID", "shape": "1, 3"}).tolist(), decoded([1.5]).tolist()
    ([[1, 2, 3]], [1.5])
    """
    if isinstance(arr, dict) and "bdata" in arr:
        out = np.frombuffer(base64.b64decode(arr["bdata"]), dtype=np.dtype(arr["dtype"]))
        if "shape" in arr:
            shape = arr["shape"]
            out = out.reshape([int(n) for n in shape.split(",")] if isinstance(shape, str) else shape)
        return out
    return np.asarray(arr)


def _plain(node):
    """A figure's JSON with plotly's typed arrays as lists."""
    if isinstance(node, dict):
        if "bdata" in node and "dtype" in node:
            return decoded(node).tolist()
        return {k: _plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_plain(v) for v in node]
    return node


def flat(fig: go.Figure) -> dict | None:
    """``fig`` as a JSON dict that the browser draws once, as Streamlit's theme would have drawn
    it, with no template (None: a figure whose template sets trace defaults, kept as it is).

    Why: Streamlit 1.67 mounts a chart, then copies its figure (to theme it) and hands Plotly the
    copy, and Plotly redraws every point when the copy's template is a new object or its arrays
    are typed arrays decoded again: every chart was drawn twice (the replay's embedding map ~35 ms
    more a step). Here the template's look (``STREAMLIT_LOOK`` over the figure's own) is written
    into the layout under the figure's own values (every x and y axis gets the axis defaults, a
    title Streamlit's bold), arrays are lists, and a fixed ``datarevision`` tells Plotly that a
    copy's arrays are the same data (a changed figure is a new chart in Streamlit, never a new
    revision of this one), so the second drawing only compares.

    >>> f = go.Figure(go.Bar(x=[1, 2], y=[3, 4]), layout=dict(template=TEMPLATE, title="T",
    ...                                                        yaxis=dict(gridcolor="red")))
    >>> d = flat(f)
    >>> "template" in d["layout"], d["layout"]["datarevision"], d["data"][0]["y"]
    (False, 1, [3, 4])
    >>> d["layout"]["yaxis"]["gridcolor"], d["layout"]["xaxis"]["gridcolor"], d["layout"]["xaxis"]["linecolor"]
    ('red', '#e6eaf1', '#C8D4E3')
    >>> d["layout"]["title"]["text"], d["layout"]["title"]["font"]["weight"], d["layout"]["margin"]["pad"]
    ('T', 'bold', 8)
    >>> flat(go.Figure(go.Bar(x=[1], y=[2]))) is None      # plotly's own template: trace defaults
    True
    """
    spec = _plain(fig.to_plotly_json())
    layout = spec.setdefault("layout", {})
    template = layout.pop("template", None) or {}
    if template.get("data"):
        return None
    look = _under(template.get("layout") or {}, STREAMLIT_LOOK)
    axes = {k for k in layout if _AXIS_KEY.match(k)}
    for tr in spec.get("data") or []:
        if tr.get("type", "scatter") in _CARTESIAN:
            axes |= {_axis_key(tr.get("xaxis") or "x", "x"), _axis_key(tr.get("yaxis") or "y", "y")}
    for k in axes:
        own = layout.get(k) or {}
        layout[k] = _under(look.get(k[0] + "axis"), own)
        # Plotly draws an axis line when a layout (not a template) names its colour or width
        layout[k].setdefault("showline", bool(own.get("linecolor") or own.get("linewidth")))
    for k in [k for k in layout if re.match(r"^coloraxis\d*$", k)]:
        layout[k] = _under(look["coloraxis"], layout[k])
    if layout.get("title") is not None:
        layout["title"] = _under(_under(look.get("title", {}), {"font": {"weight": "bold"}}), layout["title"])
    for k, v in look.items():
        if k not in ("xaxis", "yaxis", "coloraxis", "title"):
            layout[k] = _under(v, layout.get(k))
    layout["datarevision"] = 1
    return spec


def log_range(values, pad: float = 0.06) -> list[float] | None:
    """A log axis's range (log10 units, as Plotly wants it) around the finite positive values,
    padded by ``pad`` decades; None (autorange) when there are none. Give a log axis its range:
    Plotly's autorange on one left the browser laying a chart out ~100 times a second (the
    perplexity panel), and in Streamlit 1.67 drew another's axes over the empty default range
    [-1, 6] while its traces kept the data's (the attention chapter's variance chart).

    >>> log_range([10, 1000])
    [0.94, 3.06]
    >>> log_range([float("nan"), 0, -1]) is None
    True
    """
    v = np.asarray([float(x) for x in values], dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return None
    lo, hi = float(np.log10(v.min())), float(np.log10(v.max()))
    return [round(lo - pad, 6), round(hi + pad, 6)]
