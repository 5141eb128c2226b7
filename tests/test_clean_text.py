"""The one rule for text a student sends (lmviz/clean_text.py), as properties over any text."""
from __future__ import annotations

import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lmviz.clean_text import clean_text

MAX = 200
FORBIDDEN = ([chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
             + ["\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]
             + [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)])

# any text, with the characters the rule is about mixed in often
_nasty = st.sampled_from(FORBIDDEN + ["e", "\u0301", " ", "\u3000", "\u00a0", "\n", "語", "👩", "Å"])
texts = st.lists(st.one_of(st.characters(), _nasty), max_size=4 * MAX + 10).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
@example("e\u200b\u0301")            # a removed character between a letter and its accent
@example("a\u3000\u0301 b")
@example("\u202eevil\u202c\u2066x\u2069")
def test_cleaning_is_idempotent_nfc_bounded_and_leaves_no_hidden_character(text):
    out = clean_text(text, MAX)
    if out is None:
        return
    assert clean_text(out, MAX) == out
    assert unicodedata.is_normalized("NFC", out)
    assert len(out) <= MAX
    assert not any(c in out for c in FORBIDDEN)
    assert "  " not in out and out == out.strip() and not any(c.isspace() and c != " " for c in out)


# plain text: letters, digits, punctuation and symbols of any script, one space between words
_plain_char = st.characters(categories=("L", "N", "P", "S"), exclude_characters="\u061c")
plain = st.lists(st.text(_plain_char, min_size=1, max_size=12), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(plain)
@example("我喜欢学习 语言模型")
@example("<b>bold</b> & <script>x</script>")
def test_plain_text_comes_back_unchanged(words):
    text = unicodedata.normalize("NFC", words)
    assert clean_text(text, 10_000) == text


def test_empty_after_cleaning_and_too_long_are_told_apart():
    assert clean_text("\u200b \u202e\n\t\x00", MAX) == ""
    assert clean_text("x" * (MAX + 1), MAX) is None
    assert clean_text(" " * (4 * MAX) , MAX) == ""          # folded away, within the raw bound
    assert clean_text(" " * (4 * MAX + 1), MAX) is None      # past it: not even looked at
    assert clean_text(12, MAX) is None and clean_text(None, MAX) is None
