"""A chart's text twin: what a Plotly figure plots, read from its own data, in a few sentences.

``describe(fig, tr, lang)`` names the figure and its axes, then says for each trace what it holds:
a line's first and last point, its lowest and highest point and its trend; a bar chart's highest
and lowest bar (every bar when there are few); a heatmap's size and its largest and smallest cell;
the labels of a picture drawn with annotations only. Nothing is typed per chart, so the twin can
never disagree with the chart it describes. ``tr(key, **fmt)`` looks up the sentence patterns
(``twin.*`` in the catalogues; pass ``ui.i18n.translate`` bound to a language, or ``t``);
numbers are written by ``lmviz.numfmt.short`` in that language. Pure: no streamlit.
"""
from __future__ import annotations

import html
import math
import re
from typing import Callable

import numpy as np
import plotly.graph_objects as go

from lmviz.numfmt import short
from viz.theme import unwrapped

MAX_TRACES = 6      # traces described one by one; the rest are counted
MAX_BARS = 8        # up to this many bars are all listed
MAX_LABELS = 12     # labels of an annotation-only picture

Tr = Callable[..., str]


_TAGS = re.compile(r"</?(?:b|i|em|strong|sup|sub|span|a|s|u)(?:\s[^>]*)?>", re.I)


def plain(text) -> str:
    """Plotly rich text as plain text: tags dropped, <br> a space, entities decoded."""
    if text is None:
        return ""
    s = re.sub(r"<br\s*/?>", " ", str(text), flags=re.I)
    s = _TAGS.sub("", s)      # Plotly's own tags only: "<BOS>" is a token, not markup
    return re.sub(r"\s+", " ", html.unescape(s)).strip()


def _title(obj) -> str:
    t = getattr(obj, "title", None)
    text = getattr(t, "text", None) if t is not None else None
    return plain(unwrapped(text) if text else text)      # a long title's <br> is theme.wrapped's own


def _values(arr) -> list:
    if arr is None:
        return []
    if isinstance(arr, np.ndarray):
        return arr.tolist()
    return list(arr)


def _is_num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) \
        and math.isfinite(float(v))


def _label(v, lang: str) -> str:
    """An x or y value as it is read: a number written short, a category as its text."""
    if _is_num(v):
        return short(float(v), lang)
    return plain(v) or "∅"


def _sep(lang: str) -> str:
    return "、" if lang == "zh" else ", "


def _join(items: list[str], lang: str) -> str:
    return _sep(lang).join(items)


def _end(lang: str) -> str:
    return "。" if lang == "zh" else "."


def _trend(ys: np.ndarray, tr: Tr) -> str:
    """Rises / falls throughout, rises / falls overall, ends where it starts, level."""
    lo, hi = float(ys.min()), float(ys.max())
    if hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return tr("twin.trend.flat")
    d = np.diff(ys)
    if np.all(d >= 0):
        return tr("twin.trend.rises_always")
    if np.all(d <= 0):
        return tr("twin.trend.falls_always")
    change = ys[-1] - ys[0]
    if abs(change) < 0.1 * (hi - lo):
        return tr("twin.trend.same")
    return tr("twin.trend.rises" if change > 0 else "twin.trend.falls")


def _numbers(arr) -> np.ndarray:
    """A trace's values as floats (NaN where a value is missing or not a number), vectorised."""
    try:
        out = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        out = np.array([float(v) if _is_num(v) else np.nan for v in arr], dtype=float)
    return np.where(np.isfinite(out), out, np.nan) if out.size else out


def _positions(arr, n: int) -> list:
    values = _values(arr)
    return values if len(values) == n else list(range(n))


def _scatter(trace, name: str, tr: Tr, lang: str, fx: Callable, fy: Callable) -> str | None:
    ys = _numbers(_values(trace.y))
    mode = trace.mode or "lines+markers"
    ok = np.flatnonzero(~np.isnan(ys)) if ys.ndim == 1 else np.array([], dtype=int)
    if not ok.size:
        labels = [plain(s) for s in _values(trace.text) if plain(s)]
        if "text" in mode and labels:
            return tr("twin.labels", name=name, labels=_join(labels[:MAX_LABELS], lang),
                      more=_more(len(labels) - MAX_LABELS, tr))
        return None
    xs = _positions(trace.x, len(ys))
    if trace.fill == "toself" and ok.size == len(ys) and len(ys) % 2 == 0:
        # a band drawn as one closed outline: its top left to right, then its bottom back
        h = len(ys) // 2
        top, bottom = ys[:h], ys[h:][::-1]
        return tr("twin.band", name=name, x0=_label(fx(xs[0]), lang), x1=_label(fx(xs[h - 1]), lang),
                  lo=short(float(bottom.min()), lang), hi=short(float(top.max()), lang))

    def x(i):
        return _label(fx(xs[i]), lang)

    def y(i):
        return short(float(ys[i]), lang)
    if ok.size == 1:
        return tr("twin.point", name=name, x=x(ok[0]), y=y(ok[0]))
    lo, hi = ok[int(np.argmin(ys[ok]))], ok[int(np.argmax(ys[ok]))]
    key = "twin.line" if "lines" in mode else "twin.points"
    return tr(key, name=name, n=ok.size, x0=x(ok[0]), y0=y(ok[0]), x1=x(ok[-1]), y1=y(ok[-1]),
              xmin=x(lo), ymin=y(lo), xmax=x(hi), ymax=y(hi), trend=_trend(ys[ok], tr))


def _more(n: int, tr: Tr) -> str:
    return tr("twin.more_labels", n=n) if n > 0 else ""


def _bar(trace, name: str, tr: Tr, lang: str, fx: Callable, fy: Callable) -> str | None:
    horizontal = trace.orientation == "h"
    vals = _numbers(_values(trace.x if horizontal else trace.y))
    ok = np.flatnonzero(~np.isnan(vals)) if vals.ndim == 1 else np.array([], dtype=int)
    if not ok.size:
        return None
    cats = _positions(trace.y if horizontal else trace.x, len(vals))
    fc = fy if horizontal else fx

    def c(i):
        return _label(fc(cats[i]), lang)
    if ok.size <= MAX_BARS:
        listed = _join([tr("twin.pair", label=c(i), value=short(float(vals[i]), lang)) for i in ok], lang)
        return tr("twin.bars_all", name=name, n=ok.size, bars=listed)
    lo, hi = ok[int(np.argmin(vals[ok]))], ok[int(np.argmax(vals[ok]))]
    return tr("twin.bars", name=name, n=ok.size, hi=c(hi), vhi=short(float(vals[hi]), lang),
              lo=c(lo), vlo=short(float(vals[lo]), lang))


def _heatmap(trace, name: str, tr: Tr, lang: str, fx: Callable, fy: Callable) -> str | None:
    z = _numbers(_values(trace.z)) if trace.z is not None else np.zeros((0, 0))
    if z.ndim != 2 or z.size == 0 or np.isnan(z).all():
        return None
    rows, cols = z.shape
    xs, ys = _positions(trace.x, cols), _positions(trace.y, rows)
    r_hi, c_hi = np.unravel_index(np.nanargmax(z), z.shape)
    r_lo, c_lo = np.unravel_index(np.nanargmin(z), z.shape)
    n_empty = int(np.isnan(z).sum())
    extra = tr("twin.heatmap_empty", n=n_empty) if n_empty else ""
    if z[r_hi, c_hi] == z[r_lo, c_lo]:
        return tr("twin.heatmap_same", name=name, rows=rows, cols=cols, v=short(z[r_hi, c_hi], lang)) + extra
    return tr("twin.heatmap", name=name, rows=rows, cols=cols,
              vhi=short(z[r_hi, c_hi], lang), rhi=_label(fy(ys[r_hi]), lang), chi=_label(fx(xs[c_hi]), lang),
              vlo=short(z[r_lo, c_lo], lang), rlo=_label(fy(ys[r_lo]), lang), clo=_label(fx(xs[c_lo]), lang)) + extra


def _same(v):
    return v


_BUILDERS = {"scatter": _scatter, "scattergl": _scatter, "bar": _bar, "heatmap": _heatmap}


def _axis(layout, ref: str | None, letter: str):
    ref = ref or letter
    try:
        return layout[f"{letter}axis" + ref[1:]]
    except (KeyError, ValueError):
        return None


def _ticks(axis) -> Callable | None:
    """For an axis labelled with its own tick texts (positions 0, 1, 2 … shown as tokens), the
    function mapping a position to the text under it; None for a plain axis."""
    vals, texts = _values(getattr(axis, "tickvals", None)), _values(getattr(axis, "ticktext", None))
    pairs = [(float(v), plain(t)) for v, t in zip(vals, texts) if _is_num(v)]
    if not pairs:
        return None
    pos = np.array([p for p, _ in pairs])
    step = float(np.min(np.diff(np.sort(pos)))) if len(pos) > 1 else 1.0
    # positions 0, 1, 2 … name the category around them; numbers on a number axis (round ticks
    # such as 10⁴, 10⁵) name only the value they stand at
    near = step / 2 + 1e-9 if abs(step - 1.0) < 1e-9 else 0.0

    def label(v):
        if not _is_num(v):
            return v
        j = int(np.argmin(np.abs(pos - float(v))))
        return pairs[j][1] if abs(pos[j] - float(v)) <= max(near, 1e-9 * abs(float(v))) else v
    return label


def _hidden(axis) -> bool:
    return axis is not None and axis.visible is False


def _panel_titles(layout) -> list[tuple[float, float, str]]:
    """(x, y, text) of the titles make_subplots writes above its panels, read once per figure
    (each Plotly property read is validated: a chart's annotations read per trace cost more than
    the rest of its description)."""
    out = []
    for a in layout.annotations or ():
        d = a.to_plotly_json()
        if d.get("xref") == "paper" and d.get("yref") == "paper" and d.get("yanchor") == "bottom" \
                and d.get("showarrow") is False and d.get("x") is not None and d.get("y") is not None:
            out.append((d["x"], d["y"], d.get("text") or ""))
    return out


def _panel_title(titles, xa, ya) -> str:
    """The title make_subplots wrote above the panel drawn on axes ``xa`` / ``ya`` ("" if none);
    ``titles`` is ``_panel_titles(layout)``."""
    if not titles or xa is None or ya is None or xa.domain is None or ya.domain is None:
        return ""
    (x0, x1), top = xa.domain, ya.domain[1]
    for x, y, text in titles:
        if x0 - 1e-6 <= x <= x1 + 1e-6 and abs(y - top) < 0.02:
            return plain(text)
    return ""


def _diagram_labels(fig) -> list[str]:
    """The texts of a picture drawn on hidden axes (boxes, trees): trace texts, then annotations."""
    out = []
    for trace in fig.data:
        for v in _values(getattr(trace, "text", None)):
            if plain(v) and plain(v) not in out:
                out.append(plain(v))
    for a in fig.layout.annotations or ():
        if plain(a.text) and plain(a.text) not in out:
            out.append(plain(a.text))
    return out


def describe(fig: go.Figure, tr: Tr, lang: str = "en") -> str:
    """The figure's text twin: one short paragraph, never empty.

    >>> words = {"twin.figure": "Chart: {title}.", "twin.untitled": "A chart.",
    ...          "twin.axes": "{x} across, {y} up.", "twin.line": "{name}: {n} points from {y0} at {x0} "
    ...          "to {y1} at {x1}, lowest {ymin} at {xmin}, highest {ymax} at {xmax}; {trend}.",
    ...          "twin.trend.falls_always": "falls throughout"}
    >>> fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3.0, 2.0, 1.5], name="loss", mode="lines"))
    >>> _ = fig.update_layout(title="Training", xaxis_title="step", yaxis_title="nat")
    >>> describe(fig, lambda k, **f: words[k].format(**f))
    'Chart: Training. step across, nat up. loss: 3 points from 3 at 1 to 1.5 at 3, lowest 1.5 at 3, highest 3 at 1; falls throughout.'
    """
    layout = fig.layout
    title = _title(layout).rstrip(".。:：")
    parts = [tr("twin.figure", title=title) if title else tr("twin.untitled")]
    seen_axes: set[tuple[str, str]] = set()
    described = 0
    ticks: dict[str, Callable] = {}   # axis ref -> its tick-text mapping (one per axis)
    skipped = 0
    titles = _panel_titles(layout)
    for i, trace in enumerate(fig.data):
        build = _BUILDERS.get(trace.type)
        if build is None or trace.visible is False:
            continue
        xa = _axis(layout, getattr(trace, "xaxis", None), "x")
        ya = _axis(layout, getattr(trace, "yaxis", None), "y")
        if _hidden(xa) and _hidden(ya) and trace.type != "heatmap":
            continue    # positions of a drawn picture, not data: its labels are read below
        if described >= MAX_TRACES:
            skipped += 1
            continue
        xr, yr = getattr(trace, "xaxis", None) or "x", getattr(trace, "yaxis", None) or "y"
        if xr not in ticks:
            ticks[xr] = _ticks(xa) or _same
        if yr not in ticks:
            ticks[yr] = _ticks(ya) or _same
        fx, fy = ticks[xr], ticks[yr]
        name = plain(trace.name) or _panel_title(titles, xa, ya)
        if not name and len(fig.data) == 1:
            # the only series: call it by what it measures
            value_axis = xa if trace.type == "bar" and trace.orientation == "h" else ya
            name = _title(value_axis) if value_axis is not None else ""
        text = build(trace, name or tr("twin.series", i=i + 1), tr, lang, fx, fy)
        if not text:
            continue
        axes = (getattr(trace, "xaxis", None) or "x", getattr(trace, "yaxis", None) or "y")
        if axes not in seen_axes:
            seen_axes.add(axes)
            xt, yt = _title(xa) if xa is not None else "", _title(ya) if ya is not None else ""
            if trace.type == "bar" and trace.orientation == "h":
                xt, yt = yt, xt   # the categories run up the side: say them first
            if xt and yt:
                parts.append(tr("twin.axes", x=xt, y=yt))
            elif xt or yt:
                parts.append(tr("twin.axis_x", x=xt) if xt else tr("twin.axis_y", y=yt))
        parts.append(text)
        described += 1
    if skipped:
        parts.append(tr("twin.more_series", n=skipped))
    if not described:
        labels = _diagram_labels(fig)
        if labels:
            parts.append(tr("twin.picture", labels=_join(labels[:MAX_LABELS], lang),
                            more=_more(len(labels) - MAX_LABELS, tr)))
        else:
            parts.append(tr("twin.empty"))
    if lang == "zh":
        return spaced("".join(p.strip() for p in parts))
    return " ".join(p.strip() for p in parts)


_HAN = "\u4e00-\u9fff"
_LATIN = r"A-Za-z0-9\[\]()+\-−<>_|‖√·"


def spaced(text: str) -> str:
    """Chinese text with one half-width space between a Han character and a Latin word, number or
    symbol (the glossary's rule), whatever the values put into a pattern were.

    >>> spaced("共3根柱：最高的是robot（0.5），在第2层")
    '共 3 根柱：最高的是 robot（0.5），在第 2 层'
    """
    text = re.sub(rf"([{_HAN}])([{_LATIN}])", r"\1 \2", text)
    return re.sub(rf"([{_LATIN}])([{_HAN}])", r"\1 \2", text)
