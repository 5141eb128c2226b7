"""English/Chinese strings for the app.

Catalogues are flat JSON files, one per language, in ``assets/i18n/``. ``t(key, **fmt)`` returns
the string for the language chosen in the sidebar (kept in ``st.session_state["lang"]`` and in the
URL as ``?lang=zh``). A key missing from the current language falls back to English and then to
the key itself, so a page never crashes on a missing string; ``tests/test_i18n.py`` makes sure
none is missing.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from lmviz.numfmt import fill

LANGS = ("en", "zh")
LANG_NAMES = {"en": "English", "zh": "中文"}
CATALOGUE_DIR = Path(__file__).resolve().parent.parent / "assets" / "i18n"


@lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    """The flat key -> string catalogue of one language."""
    with open(CATALOGUE_DIR / f"{lang}.json", encoding="utf-8") as f:
        return json.load(f)


def lang() -> str:
    """The current language code ("en" or "zh")."""
    import streamlit as st

    code = st.session_state.get("lang", "en")
    return code if code in LANGS else "en"


def translate(key: str, code: str, **fmt) -> str:
    """Look ``key`` up in language ``code``; format with ``fmt`` when given (``lmviz.numfmt.fill``:
    a catalogue string picks a word by a number with ``{n|token|tokens}``)."""
    text = catalogue(code).get(key) or catalogue("en").get(key) or key
    return fill(text, fmt) if fmt else text


def t(key: str, **fmt) -> str:
    """The string for ``key`` in the current language."""
    return translate(key, lang(), **fmt)


def said(message) -> str:
    """A background task's message in the current language: a ``lmviz.server.tasks.Said`` (it
    names its catalogue key) is said in it; any other message, as it is."""
    key, params = getattr(message, "key", None), getattr(message, "params", None)
    if isinstance(key, str) and isinstance(params, dict) and key in catalogue("en"):
        return t(key, **params)
    return str(message)


def _questions_follow_the_page() -> None:
    """Questions whose example differs by language solve in the page's language (lmviz.chapters.questions
    cannot import Streamlit, so it asks this module's :func:`lang`)."""
    from lmviz.chapters import questions

    questions.language_source = lang


_questions_follow_the_page()

def listed(items, code: str | None = None) -> str:
    """Items of a list built by code, joined as the language writes a list: "a, b" / "甲、乙".

    >>> listed(["我", "喜欢"], "zh"), listed(["I", "love"], "en")
    ('我、喜欢', 'I, love')
    """
    return ("、" if (code or lang()) == "zh" else ", ").join(str(x) for x in items)


def sentences(*parts: str, code: str | None = None) -> str:
    """Sentences built apart, written one after another as the language does: a space between
    them in English, none in Chinese (whose full stop is full-width). Empty parts are left out.

    >>> sentences("A.", "B.", code="en"), sentences("甲。", "", "乙。", code="zh")
    ('A. B.', '甲。乙。')
    """
    return ("" if (code or lang()) == "zh" else " ").join(p for p in parts if p)


def language_names(codes, code: str | None = None) -> str:
    """Language codes from a model's records (ISO 639-1) as the page names them, listed: "English" /
    "英文"; a code the app does not speak stays as it is."""
    code = code or lang()
    return listed([translate(f"common.language.{c}", code) if c in LANGS else c for c in codes], code)


def device(name: str, code: str | None = None) -> str:
    """A compute device as a sentence names it in the language: torch's "cpu" or "cuda:0" (or
    lmviz.device_name's "CPU") as a word of the page ("处理器（CPU）", "显卡（GPU）"); a GPU's own
    name (NVIDIA H100 …) stays as its maker writes it; what follows " · " (the node a Ray
    training runs on) is kept.

    >>> device("cpu", "zh"), device("CPU", "en"), device("cuda:0 · node-2", "zh"), device("NVIDIA H100", "zh")
    ('处理器（CPU）', 'CPU', '显卡（GPU） · node-2', 'NVIDIA H100')
    """
    head, sep, rest = name.partition(" · ")
    kind = head.strip().lower().split(":")[0]
    word = {"cpu": "common.cpu", "cuda": "common.gpu", "gpu": "common.gpu", "mps": "common.gpu"}.get(kind)
    return (translate(word, code or lang()) if word else head) + sep + rest


def literal(value: str) -> str:
    """``value`` as Markdown that renders as exactly that text: an inline code span (inside one
    nothing is a link, image, emphasis, HTML, emoji, math or colour directive).

    Characters that are not printable (newlines, which could end the span, controls) become
    U+FFFD; the fence is one backtick longer than the longest run inside, padded with spaces
    when the text starts or ends with a backtick or a space.

    >>> literal("[click](https://x)")
    '`[click](https://x)`'
    >>> literal("a`b"), literal("`x"), literal("")
    ('``a`b``', '`` `x ``', '""')
    >>> literal("two\\n\\nlines")
    '`two\ufffd\ufffdlines`'
    """
    text = "".join(c if c.isprintable() else "\ufffd" for c in str(value))
    if not text:
        return '""'
    longest, run = 0, 0
    for c in text:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"
