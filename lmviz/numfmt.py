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
