"""Numbers as a reader of each language writes them (pure functions, no streamlit).

English counts large numbers in thousands (K, M, B, T: the units model cards use); Chinese counts
them in 万 (10⁴) and 亿 (10⁸): 69.2 B parameters is "692 亿", 1.38 T tokens "1.38 万亿",
4.29 × 10⁹ operations "42.9 亿". One function for every page, so the two languages never mix units.
"""
from __future__ import annotations

import math
import re

_EN = (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3))
_ZH = (("万亿", 1e12), ("亿", 1e8), ("万", 1e4))
_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def magnitude(x: float, lang: str = "en", digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits and the language's unit for its size.

    >>> magnitude(69.2e9), magnitude(69.2e9, "zh")
    ('69.2 B', '692 亿')
    >>> magnitude(1.38e12, "zh"), magnitude(4.29e9, "zh"), magnitude(12_300, "zh"), magnitude(950, "zh")
    ('1.38 万亿', '42.9 亿', '1.23 万', '950')
    >>> magnitude(12_300_000), magnitude(-2.5e6, "zh"), magnitude(1e18), magnitude(1e18, "zh")
    ('12.3 M', '-250 万', '1 × 10¹⁸', '1 × 10¹⁸')
    >>> magnitude(6.71e7, "zh"), magnitude(5e13)
    ('6710 万', '50 T')
    """
    if not math.isfinite(x):
        return str(x)
    units = _ZH if lang == "zh" else _EN
    if abs(x) >= 1000 * units[0][1]:
        return sci(x, digits)
    for unit, v in units:
        if abs(x) >= v:
            return f"{_sig(x / v, digits)} {unit}"
    return _sig(x, digits)


def _sig(v: float, digits: int) -> str:
    """``digits`` significant digits, never exponent notation (6710, not 6.71e+03)."""
    text = f"{v:.{digits}g}"
    return f"{v:.0f}" if "e" in text else text


def sci(x: float, digits: int = 3) -> str:
    """5.88e23 -> '5.88 × 10²³' (Unicode superscripts: plain text, safe in Markdown).

    >>> sci(5.88e23), sci(1e18), sci(-2.06e-9)
    ('5.88 × 10²³', '1 × 10¹⁸', '-2.06 × 10⁻⁹')
    """
    if x == 0:
        return "0"
    e = int(math.floor(math.log10(abs(x))))
    m = float(f"{x / 10 ** e:.{digits}g}")
    if abs(m) >= 10:   # rounding carried into the next power
        m, e = m / 10, e + 1
    return f"{m:.{digits}g} × 10{str(e).translate(_SUP)}"


_UNIT_SPACE = re.compile(r"(\d (?:万亿|亿|万)) (?=[\u4e00-\u9fff])")


def tidy_zh(text: str) -> str:
    """Chinese prose after a magnitude was put into a pattern ("{n} 个参数" with n = "692 亿"):
    no space between the unit and the next Han character.

    >>> tidy_zh("692 亿 个参数、1.38 万亿 个 token")
    '692 亿个参数、1.38 万亿个 token'
    """
    return _UNIT_SPACE.sub(r"\1", text)


def short(x: float, lang: str = "en") -> str:
    """A measured value in a sentence read aloud: three significant digits, the unit of its size
    from 10⁴ on (see :func:`magnitude`), a true minus sign, no exponent notation for small ones.

    >>> short(0.000123), short(3.14159), short(-0.5), short(2.0), short(1234567, "zh")
    ('0.000123', '3.14', '−0.5', '2', '123 万')
    >>> short(2.06e-9), short(-8.76e-27)
    ('2.06 × 10⁻⁹', '−8.76 × 10⁻²⁷')
    """
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1e4:
        text = magnitude(x, lang)
    elif x == 0:
        text = "0"
    elif abs(x) < 1e-4:
        text = sci(x)
    else:
        e = math.floor(math.log10(abs(x)))
        text = f"{round(x, max(0, 2 - e)):.{max(0, 2 - e)}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
    return text.replace("-", "−")


def duration(seconds: float, lang: str = "en") -> str:
    """A time span in a sentence: seconds under 90 s (to a tenth under 10 s, so a short one never
    reads "0 s"), minutes under 90 min, else hours; "—" when unknown (infinite or not a number).

    >>> duration(42.4), duration(150, "zh"), duration(1800), duration(7200, "zh"), duration(float("inf"))
    ('42 s', '2.5 分钟', '30 min', '2 小时', '—')
    >>> duration(0.44), duration(3.0, "zh"), duration(0.01)
    ('0.4 s', '3 秒', '0.01 s')
    """
    s = float(seconds)
    if not math.isfinite(s) or s < 0:
        return "—"
    if s < 90:
        value, en, zh = s, "s", "秒"
    elif s < 90 * 60:
        value, en, zh = s / 60, "min", "分钟"
    else:
        value, en, zh = s / 3600, "h", "小时"
    if s < 0.1 and s > 0:
        text = f"{s:.2g}"
    elif s < 10 or (s >= 90 and value < 10):
        text = f"{value:.1f}".rstrip("0").rstrip(".")
    else:
        text = f"{value:.0f}"
    return f"{text} {zh if lang == 'zh' else en}"


_PLURAL = re.compile(r"\{(\w+)\|([^{}|]*)\|([^{}|]*)\}")


def fill(text: str, params: dict) -> str:
    """A catalogue sentence formatted with ``params`` (``str.format``), after each
    ``{name|one|many}`` in it is replaced by ``one`` when ``params[name]`` is 1, else by ``many``
    (English counts: "1 token", "3 tokens"; a Chinese sentence needs none).

    >>> fill("Kept: {n} {n|token|tokens}", {"n": 1}), fill("{n:,} {n|token|tokens}", {"n": 1200})
    ('Kept: 1 token', '1,200 tokens')
    """
    return _PLURAL.sub(lambda m: m.group(2) if params.get(m.group(1)) == 1 else m.group(3), text).format(**params)


def tick_label(x: float, lang: str = "en") -> str:
    """A tick's or a bar's number read exactly: in the language's units (:func:`magnitude`) where
    three significant digits say it exactly, else a whole number in full with thousands commas (the
    catalogues write ``{n:,}`` in both languages), else three significant digits.

    >>> [tick_label(v, "zh") for v in (1e4, 2.1e5, 1e8, 1e12, 65536, 5000, 0.5)]
    ['1 万', '21 万', '1 亿', '1 万亿', '65,536', '5,000', '0.5']
    >>> [tick_label(v) for v in (1e4, 2.1e5, 1e8, 1e12, 65536, 256, 1.5e3, 1024)]
    ['10 K', '210 K', '100 M', '1 T', '65,536', '256', '1.5 K', '1,024']
    >>> tick_label(6.71e7, "zh"), tick_label(1.34e8, "zh"), tick_label(1.34e8)
    ('6710 万', '1.34 亿', '134 M')
    """
    if not math.isfinite(x):
        return str(x)
    units = _ZH if lang == "zh" else _EN
    if x == int(x) and abs(x) < units[-1][1]:
        return f"{int(x):,}"
    for digits in range(1, 4):
        if x == 0 or math.isclose(float(f"{x:.{digits}g}"), x, rel_tol=1e-9):
            return magnitude(x, lang, digits)
    return f"{int(x):,}" if x == int(x) and abs(x) < 1e15 else magnitude(x, lang)


def _nice_step(span: float, most: int) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10ᵏ that cuts ``span`` into at most ``most`` - 1 steps."""
    raw = span / max(1, most - 1)
    e = 10 ** math.floor(math.log10(raw))
    return next(m * e for m in (1, 2, 2.5, 5, 10) if m * e >= raw)


def axis_ticks(lo: float, hi: float, lang: str = "en", *, log: bool = False, at=None,
               most: int = 7) -> dict:
    """An axis's ticks as Plotly's ``tickmode="array"`` keys, every label written by
    :func:`tick_label` in ``lang`` (万/亿 on a Chinese chart, K/M/B/T on an English one): the one
    way a chart in lmviz labels its numbers. ``at``: the positions (else chosen over ``lo``..``hi``:
    on a log axis each power of ten, every other one or more when there are over ``most``, with
    2 and 5 × between when the span is under two decades; on a linear axis round steps, one beyond
    each end so that Plotly's padding still shows a tick; Plotly draws none outside the range).

    >>> axis_ticks(1e4, 1e12, "zh", log=True)["ticktext"]
    ['1 万', '100 万', '1 亿', '100 亿', '1 万亿']
    >>> axis_ticks(1e4, 1e6, log=True)["ticktext"]
    ['10 K', '100 K', '1 M']
    >>> axis_ticks(2.1e5, 2.5e5, "zh")["ticktext"]
    ['20 万', '21 万', '22 万', '23 万', '24 万', '25 万', '26 万']
    >>> axis_ticks(0, 0, "zh", at=[256, 65536])
    {'tickmode': 'array', 'tickvals': [256, 65536], 'ticktext': ['256', '65,536']}
    >>> axis_ticks(3e4, 9e4, "zh", log=True)["ticktext"]
    ['1 万', '2 万', '5 万', '10 万']
    """
    if at is not None:
        vals = list(at)
    elif log:
        lo, hi = max(lo, 1e-300), max(hi, lo)
        e0, e1 = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
        step = max(1, -(-(e1 - e0) // (most - 1)))
        vals = [10.0 ** e for e in range(e0, e1 + 1, step)]
        if e1 - e0 < 2:
            vals = sorted(v * m for v in vals for m in (1, 2, 5) if v * m <= 10.0 ** e1)
    else:
        step = _nice_step(hi - lo, most - 2) if hi > lo else (abs(lo) or 1.0)
        first = math.floor(lo / step) - (1 if lo < 0 or lo - step >= 0 else 0)
        vals = [float(f"{k * step:.12g}") for k in range(first, math.ceil(hi / step) + 2)]
    return dict(tickmode="array", tickvals=vals, ticktext=[tick_label(v, lang) for v in vals])
