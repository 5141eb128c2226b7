"""The one rule for text a person sends to others (a room sentence, a line of "my own sentences").

:func:`clean_text` is what every caller uses, so the lecturer's queue shows exactly the text that
the corpus then holds, and nothing in it can hide, reorder or disguise what is on the screen:

1. bidi controls are removed: the embeddings and overrides U+202A-U+202E, the isolates
   U+2066-U+2069, the marks U+200E, U+200F and U+061C (they reorder what the projector draws:
   "Trojan Source");
2. zero-width characters are removed: U+200B, U+200C, U+200D, U+2060, U+FEFF. The zero-width
   joiner U+200D goes too, also between emoji: a family emoji then shows as its members side by
   side. Keeping it "only inside an emoji sequence" needs the Extended_Pictographic property,
   which :mod:`unicodedata` does not have, and a guess at it would keep a joiner that hides
   between two symbols; one glyph is not worth that;
3. C0 controls (U+0000-U+001F, U+007F), C1 controls (U+0080-U+009F) and lone surrogates are
   removed, except the whitespace among them (tab, newline, ...), which step 5 folds;
4. the text is put in Unicode NFC (one code point sequence for one look: "é" typed two ways is
   one text, and a BPE learns one token for it);
5. every run of whitespace (Python's ``str.split``: newlines, U+3000, no-break spaces too) becomes
   one space, and the ends are stripped.

Removal comes before NFC (a removed character between a letter and its accent would otherwise
leave a text that is not NFC), and folding after it. What is empty after cleaning is refused, and
so is what is longer than the bound after cleaning (NFC may lengthen a text a little).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["clean_text", "REMOVED"]

_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
_CONTROLS = "\x00-\x1f\x7f\x80-\x9f\ud800-\udfff"
# every character step 1-3 removes (whitespace controls are folded by step 5 instead)
REMOVED = re.compile(f"[{_BIDI}{_ZERO_WIDTH}{_CONTROLS}]")


def _drop(m: re.Match) -> str:
    return " " if m.group().isspace() else ""     # \t \n \r \x0b \x0c \x1c-\x1f \x85: whitespace


def clean_text(text: Any, max_chars: int) -> str | None:
    """``text`` as it is kept and shown (see the module docstring): "" when nothing is left of
    it, None when it is not a string or longer than ``max_chars`` (before cleaning it may be up
    to four times that: a paste with many spaces still fits once folded).

    >>> clean_text("  a\\u202eb\\u200b c\\n\\nd\\x07 ", 20), clean_text("e\\u0301", 20), clean_text("\\u200b", 20)
    ('ab c d', 'é', '')
    >>> clean_text("x" * 21, 20), clean_text(None, 20)
    (None, None)
    """
    if not isinstance(text, str) or len(text) > 4 * max_chars:
        return None
    out = " ".join(unicodedata.normalize("NFC", REMOVED.sub(_drop, text)).split())
    return out if len(out) <= max_chars else None
