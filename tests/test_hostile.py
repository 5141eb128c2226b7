"""Hostile input through links: a value from a URL is shown as literal text, never Markdown/HTML.

A crafted lecture link must not plant a live link (``?tau=[click](https://…)``) nor make every
visitor's browser fetch an image from any host (``?tau=![x](http://host/x.png)``). The "not valid
here" note shows the value inside a Markdown code span (``ui.urlstate.literal``). Checkpoint
uploads have their own catalogue in tests/test_checkpoint.py; the real browser rendering of a
hostile link is checked in tests/test_browser_first_visit.py.
"""
from __future__ import annotations

import doctest
import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_util import APP, TIMEOUT, skip_questions
from ui import urlstate
from ui.i18n import translate
from ui.i18n import literal
from ui.urlstate import URL_VALUE_CHARS

PAYLOADS = [
    "[click](https://x.example/phish)",
    "![x](http://h.example/x.png)",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "`](https://x.example)` [a](https://x.example)",
    "``` [a](https://x.example) ```",
    "a\n\n[b](https://x.example)",
    "**bold** _it_ :red[red] :material/home: $x^2$",
    "https://x.example/autolink www.x.example",
    "\u202eevil\u200b",
]


def test_doctests():
    assert doctest.testmod(urlstate).failed == 0


def code_spans_removed(md: str) -> str:
    """``md`` with its inline code spans cut out (CommonMark: a run of n backticks opens a span
    that the next run of exactly n backticks closes)."""
    out, i = [], 0
    while i < len(md):
        if md[i] == "`":
            n = len(re.match(r"`+", md[i:]).group())
            close = re.compile(r"(?<!`)" + "`" * n + r"(?!`)")
            m = close.search(md, i + n)
            if m:
                i = m.end()
                continue
            out.append(md[i:i + n])
            i += n
            continue
        out.append(md[i])
        i += 1
    return "".join(out)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_literal_is_one_code_span_holding_exactly_the_text(payload):
    md = literal(payload)
    assert "\n" not in md and "\r" not in md
    assert code_spans_removed(md).strip() == ""                     # nothing outside the span
    fence = re.match(r"`+", md).group()
    inner = md[len(fence):-len(fence)]
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
        inner = inner[1:-1]                                          # CommonMark strips one space
    assert inner == "".join(c if c.isprintable() else "\ufffd" for c in payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_note_shows_a_link_value_as_text(payload):
    at = skip_questions(AppTest.from_file(APP, default_timeout=TIMEOUT))
    at.query_params["lang"] = "en"
    at.query_params["T"] = payload
    at.run()
    at.switch_page("chapters/autoregression.py").run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [el.value for el in at.info if "“T”" in el.value]
    assert notes == [translate("common.url_bad", "en", param="T", value=literal(payload[:URL_VALUE_CHARS]))]
    rest = code_spans_removed(notes[0])
    for marker in ("](", "![", "<", "http", "www.", "**", ":red[", "$"):
        assert marker not in rest, (marker, rest)


def test_the_note_stays_through_reruns_until_the_value_changes():
    at = skip_questions(AppTest.from_file(APP, default_timeout=TIMEOUT))
    at.query_params["lang"] = "en"
    at.query_params["T"] = PAYLOADS[0]
    at.run()
    at.switch_page("chapters/autoregression.py").run()

    def notes():
        return [el.value for el in at.info if "“T”" in el.value]

    assert len(notes()) == 1
    at.run()                                                     # a rerun of the whole app
    assert len(notes()) == 1
    at.slider(key="ar_mask_T").set_value(3).run()               # the user picks a value
    assert notes() == []
