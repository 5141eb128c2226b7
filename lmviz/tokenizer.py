"""Two small tokenizers with one interface: characters, and a fixed word list.

- ``CharTokenizer``: every distinct character of a training text is a token (sorted, nothing
  else: no BOS/EOS, no byte fallback). A Chinese character is one token, like a letter.
- ``WordTokenizer``: a given vocabulary of words, e.g. the lecture's toy vocabulary
  ``<BOS> I love robot s <EOS>`` or ``<开始> 我 喜欢 学习 数学 <结束>``. Text is split on
  whitespace and each piece is matched greedily, longest listed token first, so "robots" and
  "我喜欢学习" split as well.

A ``CharTokenizer`` may name one of its characters the unknown token (``unk``, e.g. "□"): then
``encode`` encodes every character outside the vocabulary as it instead of raising, while
``encode_lossy`` still drops and reports them (the poetry vocabulary keeps the characters covering
99.5 % of the corpus, see ``lmviz.poetry``).

Both: ``encode`` (raises ``UnknownCharacters`` unless there is an ``unk``), ``encode_lossy`` (drops unknowns, reports
them), ``decode``, ``vocab_size``, ``token(i)``, ``to_dict``/``from_dict`` (JSON-safe).
"""
from __future__ import annotations

from dataclasses import dataclass


class UnknownCharacters(ValueError):
    """Text holds pieces the vocabulary lacks; ``.unknown`` lists them in first-seen order."""

    def __init__(self, unknown: list[str]):
        self.unknown = unknown
        shown = ", ".join(repr(u) for u in unknown[:20]) + (" ..." if len(unknown) > 20 else "")
        super().__init__(f"{len(unknown)} unknown token(s): {shown}")


def _unique(seq) -> list[str]:
    return list(dict.fromkeys(seq))


class _Tokenizer:
    """What both tokenizers share: strict encoding on top of their ``encode_lossy``."""

    def encode_lossy(self, text: str) -> tuple[list[int], list[str]]:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; raises :class:`UnknownCharacters` naming what it cannot encode."""
        ids, unknown = self.encode_lossy(text)
        if unknown:
            raise UnknownCharacters(unknown)
        return ids


class CharTokenizer(_Tokenizer):
    """Character-level tokenizer.

    >>> tok = CharTokenizer("hello")
    >>> tok.chars, tok.encode("hole")
    (['e', 'h', 'l', 'o'], [1, 3, 2, 0])
    >>> tok.decode([1, 0, 2, 2, 3])
    'hello'
    """

    kind = "char"
    unk: str | None = None          # the unknown token, when the vocabulary has one

    def __init__(self, text: str):
        if not isinstance(text, str) or not text:
            raise ValueError("CharTokenizer needs a non-empty text")
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def token(self, i: int) -> str:
        return self.chars[i]

    def encode_lossy(self, text: str) -> tuple[list[int], list[str]]:
        """(ids of the known characters, unknown characters in first-seen order)."""
        ids, unknown = [], []
        for c in text:
            i = self.stoi.get(c)
            if i is None:
                unknown.append(c)
            else:
                ids.append(i)
        return ids, _unique(unknown)

    def encode(self, text: str) -> list[int]:
        """Token ids; unknown characters raise :class:`UnknownCharacters`, or, when the
        vocabulary has an ``unk`` token, are encoded as it (``encode_lossy`` still drops them).

        >>> tok = CharTokenizer.from_chars(["a", "b", "?"], unk="?")
        >>> tok.encode("abc"), tok.decode(tok.encode("abc")), tok.encode_lossy("abc")
        ([0, 1, 2], 'ab?', ([0, 1], ['c']))
        """
        if self.unk is None:
            return super().encode(text)
        unk_id = self.stoi[self.unk]
        return [self.stoi.get(c, unk_id) for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)

    def to_dict(self) -> dict:
        d = {"type": "char", "chars": self.chars}
        if self.unk is not None:
            d["unk"] = self.unk
        return d

    @classmethod
    def from_chars(cls, chars: list[str], unk: str | None = None) -> "CharTokenizer":
        """A tokenizer over exactly these characters; ``unk`` (one of them) is the unknown token."""
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars) or len(set(chars)) != len(chars):
            raise ValueError("a char vocabulary must be distinct single characters")
        if unk is not None and unk not in chars:
            raise ValueError("the unknown token must be one of the characters")
        tok = cls.__new__(cls)
        tok.chars = list(chars)
        tok.stoi = {c: i for i, c in enumerate(tok.chars)}
        if unk is not None:
            tok.unk = unk
        return tok

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size}" + (f", unk={self.unk!r})" if self.unk else ")")


class WordTokenizer(_Tokenizer):
    """A fixed list of word tokens; ids are list positions.

    >>> tok = WordTokenizer(["<BOS>", "I", "love", "robot", "s", "<EOS>"])
    >>> tok.encode("<BOS> I love robots <EOS>")
    [0, 1, 2, 3, 4, 5]
    >>> tok.decode([3, 4])
    'robot s'
    >>> WordTokenizer(["<开始>", "我", "喜欢", "学习", "数学", "<结束>"], sep="").encode("我喜欢学习")
    [1, 2, 3]
    """

    kind = "word"

    def __init__(self, words: list[str], sep: str = " "):
        words = list(words)
        if not words:
            raise ValueError("WordTokenizer needs at least one word")
        if any(not isinstance(w, str) or not w or any(c.isspace() for c in w) for w in words):
            raise ValueError("words must be non-empty strings without whitespace")
        if len(set(words)) != len(words):
            raise ValueError("words must be distinct")
        self.words = words
        self.sep = sep                       # joins tokens in decode ("" suits Chinese)
        self.stoi = {w: i for i, w in enumerate(words)}
        self._longest = max(len(w) for w in words)

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def token(self, i: int) -> str:
        return self.words[i]

    def encode_lossy(self, text: str) -> tuple[list[int], list[str]]:
        """Greedy longest match inside each whitespace piece; unmatched characters are dropped
        and reported (a run of them counts as one unknown piece)."""
        ids, unknown = [], []
        for piece in text.split():
            i, bad = 0, ""
            while i < len(piece):
                for n in range(min(self._longest, len(piece) - i), 0, -1):
                    j = self.stoi.get(piece[i:i + n])
                    if j is not None:
                        break
                else:
                    bad += piece[i]
                    i += 1
                    continue
                if bad:
                    unknown.append(bad)
                    bad = ""
                ids.append(j)
                i += n
            if bad:
                unknown.append(bad)
        return ids, _unique(unknown)

    def decode(self, ids) -> str:
        return self.sep.join(self.words[int(i)] for i in ids)

    def to_dict(self) -> dict:
        return {"type": "word", "words": self.words, "sep": self.sep}

    def __repr__(self):
        return f"WordTokenizer({self.words!r})"


# the lecture notes' toy vocabularies (W1, W5, W25)
TOY_EN = ["<BOS>", "I", "love", "robot", "s", "<EOS>"]
TOY_ZH = ["<开始>", "我", "喜欢", "学习", "数学", "<结束>"]


def toy_tokenizer(lang: str = "en") -> WordTokenizer:
    """The six-word toy vocabulary of the notes, in English or Chinese."""
    return WordTokenizer(TOY_ZH, sep="") if lang == "zh" else WordTokenizer(TOY_EN)


def tokenizer_from_dict(d: dict):
    """Rebuild a tokenizer from ``to_dict()`` output; ValueError on anything malformed."""
    if not isinstance(d, dict):
        raise ValueError("tokenizer spec must be a JSON object")
    kind = d.get("type")
    if kind == "char":
        chars = d.get("chars")
        if not isinstance(chars, list):
            raise ValueError("char tokenizer spec needs a 'chars' list")
        unk = d.get("unk")
        if unk is not None and not isinstance(unk, str):
            raise ValueError("char tokenizer spec: 'unk' must be a string")
        return CharTokenizer.from_chars(chars, unk=unk)
    if kind == "word":
        words, sep = d.get("words"), d.get("sep", " ")
        if not isinstance(words, list) or not isinstance(sep, str):
            raise ValueError("word tokenizer spec needs a 'words' list and a 'sep' string")
        return WordTokenizer(words, sep=sep)
    raise ValueError(f"unknown tokenizer type {kind!r}")


# -----------------------------------------------------------------------------
# text -> the ids a model reads: the one place a prompt is cut to a model's context

@dataclass(frozen=True)
class ContextIds:
    """A text as a model with a context of ``limit`` tokens reads it."""
    ids: list[int]          # the known token ids the model reads (at most ``limit``)
    unknown: list[str]      # pieces the vocabulary lacks (dropped), first-seen order
    total: int              # known tokens of the whole text, before the cut
    limit: int              # the most tokens the model reads (its block size, or less)
    keep: str               # "start": the first ``limit`` tokens are kept; "end": the last ones

    @property
    def cut(self) -> int:
        """How many known tokens were left out (0: the model reads the whole text)."""
        return self.total - len(self.ids)


def fit_context(tokenizer, text: str, limit: int, keep: str = "start") -> ContextIds:
    """Encode ``text`` leniently (unknown pieces dropped and reported) and keep at most ``limit``
    tokens: the first ones (``keep="start"``: a text the page analyses) or the last ones
    (``keep="end"``: a prompt the model continues). Every page that feeds text to a model goes
    through here with ``limit = model.cfg.block_size`` (or less), and says so when ``cut > 0``.

    >>> f = fit_context(CharTokenizer("abc"), "abcabd", 4); f.ids, f.unknown, f.total, f.cut
    ([0, 1, 2, 0], ['d'], 5, 1)
    >>> fit_context(CharTokenizer("abc"), "abcab", 2, keep="end").ids
    [0, 1]
    """
    if keep not in ("start", "end"):
        raise ValueError(f"keep must be 'start' or 'end', got {keep!r}")
    limit = int(limit)
    if limit < 1:
        raise ValueError(f"a context holds at least one token, got limit={limit}")
    ids, unknown = tokenizer.encode_lossy(text)
    kept = ids[:limit] if keep == "start" else ids[-limit:]
    return ContextIds(list(kept), list(unknown), len(ids), limit, keep)


CharTokenizer.from_dict = staticmethod(tokenizer_from_dict)
WordTokenizer.from_dict = staticmethod(tokenizer_from_dict)
