"""A real model's tokenizer, read from its ``tokenizer.json``: byte-level BPE (GPT-2, Llama 3,
Qwen2, SmolLM2), written here in plain Python so the app needs neither ``tokenizers`` nor
``transformers`` (a test checks that the ids equal ``tokenizers``' own).

What ``tokenizer.json`` says, and what is done with it, in order:

1. **Added tokens** (``<|endoftext|>``, ``<|im_start|>`` ...) are cut out of the text first;
   each is one id and is never split.
2. **Normalizer**: none, or a Unicode normal form (NFC, NFD, NFKC, NFKD; Qwen2 uses NFC).
3. **Pre-tokenizer**: the text is cut into pieces no merge may cross: ``Split`` with the json's
   regex when it is one of the known ones (Llama 3's, Qwen2's, GPT-2's: ``KNOWN_PATTERNS`` says
   why no other), ``ByteLevel`` with GPT-2's regex, ``Digits``. The regexes use
   ``\\p{L}`` (letters) and ``\\p{N}`` (numbers), which Python's ``re`` lacks: they are rewritten
   as character classes built from ``unicodedata``, and ``\\s`` as Unicode's White_Space (what the
   Rust library's regex engine means by it).
4. **Bytes**: each piece becomes its UTF-8 bytes, each byte a printable stand-in character
   (GPT-2's byte map: a space is ``Ġ``, a newline ``Ċ``), so a token is a string of them.
5. **BPE**: inside a piece, the adjacent pair whose merge was learned earliest is merged, again
   and again (``ignore_merges``: a piece that is already one token stays one).

A token is a run of **bytes**, not of characters: a Chinese character's three UTF-8 bytes may be
split over two tokens, and a piece like ``b"\\xe5\\xad"`` is no text at all. ``raw(i)`` gives
the bytes, ``token(i)`` a label that shows such bytes as ``<E5><AD>`` (never "�"), and
``tokens(text)`` every piece with its bytes and where it starts, as ``lmviz.bpe`` does.

Everything in the file is checked before it is used (every field's type through
``lmviz.fields.typed``, sizes, ids, merges, the kinds of each step); what lmviz cannot reproduce
exactly, or could not run in bounded time, is refused with a :class:`TokenizerError`: a catalogue
key (``hf.err_tok_*``) and its placeholders, so a page says it in its own language and ``str()``
is the English sentence.
"""
from __future__ import annotations

import functools
import heapq
import itertools
import json
import operator
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .bpe import Token, byte_label
from .fields import ABSENT, typed
from .limits import SaidError

MAX_TOKENIZER_BYTES = 64 * 2**20    # tokenizer.json (Qwen2's is 7 MB, Llama 3's 9 MB)
MAX_VOCAB = 1_000_000               # token ids (Qwen2: 151,665; Gemma: 256,000)
MAX_TOKEN_CHARS = 1_000             # longest token string
MAX_PATTERN_CHARS = 2_000           # a pre-tokenizer regex
MAX_ADDED_TOKENS = 1_024            # added tokens, one alternation of the regex cut out first (Llama 3: 256)
MAX_STEPS = 8                       # pre-tokenizer or normalizer steps, Sequences flattened (real ones: 1-4)
MAX_NESTING = 3                     # Sequences inside Sequences
NORMAL_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}", 1)    # one digit a piece
# The Split regexes lmviz runs are these, compared exactly, and no other. Python's re backtracks:
# a tokenizer.json may hold a regex such as (\p{L}|\p{L}|\p{L}\p{L})*! that takes 15 s on a
# 20-letter word (exponential in its length), and a running match cannot be interrupted, so it
# holds the interpreter -- every session of the server -- until it ends. The other guards are
# incomplete: a check for nested quantifiers misses overlapping alternatives under one quantifier
# and polynomial chains (\p{L}*\p{L}*\p{L}*...!); a trial on adversarial strings finds only the
# strings it thought of; a time limit needs a process per encode. The known regexes are those
# of the families lmviz reads (SmolLM2 uses GPT-2's through ByteLevel); a new family's regex is
# added here with a test.
KNOWN_PATTERNS = {GPT2_PATTERN: "GPT-2", LLAMA3_PATTERN: "Llama 3", QWEN2_PATTERN: "Qwen2"}

# Unicode's White_Space property: what \s means in the regex engine of HF tokenizers (Python's
# \s also matches U+001C..U+001F)
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


class TokenizerError(SaidError, ValueError):
    """A tokenizer.json lmviz refuses: ``key`` is a catalogue key (``hf.err_tok_*``, or one of
    ``lmviz.hf``'s file sentences), ``params`` its placeholders; ``str()`` is the English sentence."""


def _name(s) -> str:
    """A name read from the file (a step's kind) as it may be shown (``lmviz.checkpoint._name``)."""
    from .checkpoint import _name

    return _name(s)


def _get(d, key: str, kind, default=ABSENT, where: str = ""):
    """A tokenizer.json field of type ``kind`` (lmviz.fields.typed); ``where`` names the object
    that holds it (``pre_tokenizer.pattern``), so the refusal says which field is wrong."""
    def fail(k):
        raise TokenizerError("hf.err_tok_field", field=f"{where + '.' if where else ''}{k}")

    return typed(d, key, kind, default, fail=fail)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte map: each of the 256 bytes -> a printable character (printable Latin-1 bytes
    map to themselves, the rest to U+0100 onwards).

    >>> m = bytes_to_unicode(); m[ord("a")], m[ord(" ")], m[ord("\\n")], len(set(m.values()))
    ('a', 'Ġ', 'Ċ', 256)
    """
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


# -----------------------------------------------------------------------------
# the regex dialect of tokenizer.json, in Python's re

def _ranges(chars: list[int]) -> str:
    """Code points -> a character-class body of ranges, escaped (\\uXXXX / \\UXXXXXXXX)."""
    def esc(c):
        return f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}"

    out, i = [], 0
    while i < len(chars):
        j = i
        while j + 1 < len(chars) and chars[j + 1] == chars[j] + 1:
            j += 1
        out.append(esc(chars[i]) if i == j else f"{esc(chars[i])}-{esc(chars[j])}")
        i = j + 1
    return "".join(out)


_LAST_CP = 0x40000     # planes 4-16 hold no letter and no number (tags, private use, unassigned)


@functools.lru_cache(maxsize=1)
def _categories() -> list[str]:
    """The Unicode general category of every code point below _LAST_CP (built once, C loops)."""
    return list(map(unicodedata.category, "".join(map(chr, range(_LAST_CP)))))


@functools.lru_cache(maxsize=32)
def _category_class(name: str) -> str:
    """The class body of Unicode general category ``name`` ("L", "N", "Lu", ...) (built once)."""
    cps = list(itertools.compress(range(_LAST_CP), map(operator.methodcaller("startswith", name), _categories())))
    if not cps:
        raise TokenizerError("hf.err_tok_category", name=_name(name))
    return _ranges(cps)


_TOKEN = re.compile(r"\\[pP]\{([A-Za-z]{1,2})\}|\\[pP]([A-Za-z])|\\[sS]|\\.|\[|\]|.", re.S)


def translate_regex(pattern: str) -> str:
    """A tokenizer.json regex (Oniguruma: ``\\p{L}``, ``\\p{N}``, Unicode ``\\s``) as Python ``re``.

    >>> re.findall(translate_regex(r" ?\\p{L}+| ?\\p{N}+"), "hi 学生 42")
    ['hi', ' 学生', ' 42']
    """
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
        raise TokenizerError("hf.err_tok_regex_long", limit=MAX_PATTERN_CHARS)
    out, in_class = [], False
    for m in _TOKEN.finditer(pattern):
        tok = m.group(0)
        cat = m.group(1) or m.group(2)
        if cat:
            body = _category_class(cat)
            neg = tok[1] == "P"
            if in_class:
                if neg:
                    raise TokenizerError("hf.err_tok_regex_class", part="\\P{…}")
                out.append(body)
            else:
                out.append(f"[{'^' if neg else ''}{body}]")
        elif tok in ("\\s", "\\S"):
            if in_class and tok == "\\S":
                raise TokenizerError("hf.err_tok_regex_class", part="\\S")
            out.append(WHITE_SPACE if in_class else f"[{'^' if tok == chr(92) + 'S' else ''}{WHITE_SPACE}]")
        elif tok == "[" and not in_class:
            in_class = True
            out.append(tok)
        elif tok == "]" and in_class and not out[-1].endswith("["):
            in_class = False
            out.append(tok)
        else:
            out.append(tok)
    try:
        re.compile("".join(out))
    except re.error:
        raise TokenizerError("hf.err_tok_regex_invalid") from None
    return "".join(out)


# -----------------------------------------------------------------------------
# the steps

def _split_isolated(pieces, rx: re.Pattern):
    """Cut every (text, start) piece at the matches of rx; matches and the gaps between them are
    pieces of their own (the ``Isolated`` behaviour)."""
    out = []
    for text, start in pieces:
        pos = 0
        for m in rx.finditer(text):
            if m.start() == m.end():
                continue
            if m.start() > pos:
                out.append((text[pos:m.start()], start + pos))
            out.append((m.group(0), start + m.start()))
            pos = m.end()
        if pos < len(text):
            out.append((text[pos:], start + pos))
    return out


def _pre_tokenizer_steps(spec, where: str = "pre_tokenizer", depth: int = 0) -> list:
    """tokenizer.json's pre_tokenizer -> a list of ("split", compiled regex) / ("prefix_space",)."""
    if spec is None:
        return []
    kind = _get(spec, "type", str, where=where)
    if kind == "Sequence":
        if depth >= MAX_NESTING:
            raise TokenizerError("hf.err_tok_nesting", field="pre_tokenizer", limit=MAX_NESTING)
        subs = _get(spec, "pretokenizers", list, where=where)
        steps = [x for i, s in enumerate(subs)
                 for x in _pre_tokenizer_steps(s, f"{where}.pretokenizers[{i}]", depth + 1)]
        if len(steps) > MAX_STEPS:
            raise TokenizerError("hf.err_tok_steps", field="pre_tokenizer", limit=MAX_STEPS)
        return steps
    if kind == "ByteLevel":
        steps = [("prefix_space",)] if _get(spec, "add_prefix_space", bool, False, where) else []
        if _get(spec, "use_regex", bool, True, where):
            steps.append(("split", re.compile(translate_regex(GPT2_PATTERN))))
        return steps
    if kind == "Split":
        pat = _get(spec, "pattern", dict, where=where)
        behavior = _get(spec, "behavior", str, where=where)
        invert = _get(spec, "invert", bool, False, where)
        if behavior != "Isolated" or invert:
            raise TokenizerError("hf.err_tok_split", behavior=_name(behavior), invert=str(invert).lower())
        regex = _get(pat, "Regex", str, None, f"{where}.pattern")
        if regex is not None:
            if regex not in KNOWN_PATTERNS:
                raise TokenizerError("hf.err_tok_regex_unknown", families=", ".join(KNOWN_PATTERNS.values()))
            rx = translate_regex(regex)
        else:
            rx = re.escape(_get(pat, "String", str, where=f"{where}.pattern"))
        return [("split", re.compile(rx))]
    if kind == "Digits":
        return [("split", re.compile(r"\d" if _get(spec, "individual_digits", bool, False, where) else r"\d+"))]
    raise TokenizerError("hf.err_tok_kind", field="pre_tokenizer", kind=_name(kind))


def _normal_forms(spec, where: str = "normalizer", depth: int = 0) -> list[str]:
    if spec is None:
        return []
    kind = _get(spec, "type", str, where=where)
    if kind == "Sequence":
        if depth >= MAX_NESTING:
            raise TokenizerError("hf.err_tok_nesting", field="normalizer", limit=MAX_NESTING)
        subs = _get(spec, "normalizers", list, where=where)
        forms = [f for i, s in enumerate(subs) for f in _normal_forms(s, f"{where}.normalizers[{i}]", depth + 1)]
        if len(forms) > MAX_STEPS:
            raise TokenizerError("hf.err_tok_steps", field="normalizer", limit=MAX_STEPS)
        return forms
    if kind in NORMAL_FORMS:
        return [kind]
    raise TokenizerError("hf.err_tok_kind", field="normalizer", kind=_name(kind))


# -----------------------------------------------------------------------------
# the tokenizer

def merge_word(parts: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """Byte-level BPE on one pre-tokenized piece: merge the adjacent pair of lowest rank, the
    leftmost first among equals, until no adjacent pair is a merge (GPT-2's ``bpe``, and
    ``tokenizers``' result). A heap of candidate pairs over a linked list of symbols, as
    ``tokenizers`` does: O(n log n) in the piece's length, where rescanning every pair after each
    merge was O(n^2) (a 10,000-letter word held a script thread for seconds).

    >>> merge_word(list("aaab"), {("a", "a"): 0, ("aa", "b"): 1})
    ['aa', 'a', 'b']
    >>> merge_word(list("aaab"), {("a", "a"): 0, ("a", "b"): 1, ("aa", "ab"): 2})
    ['aaab']
    """
    n = len(parts)
    if n < 2:
        return list(parts)
    sym: list[str | None] = list(parts)
    nxt = list(range(1, n + 1))
    nxt[-1] = -1
    prv = list(range(-1, n - 1))
    heap = [(r, i, parts[i], parts[i + 1]) for i in range(n - 1)
            if (r := ranks.get((parts[i], parts[i + 1]))) is not None]
    heapq.heapify(heap)
    while heap:
        _, i, a, b = heapq.heappop(heap)
        j = nxt[i]
        if sym[i] != a or j < 0 or sym[j] != b:      # a pair one of whose symbols merged since
            continue
        sym[i], sym[j] = a + b, None
        nxt[i] = k = nxt[j]
        if k >= 0:
            prv[k] = i
            r = ranks.get((sym[i], sym[k]))
            if r is not None:
                heapq.heappush(heap, (r, i, sym[i], sym[k]))
        p = prv[i]
        if p >= 0:
            r = ranks.get((sym[p], sym[i]))
            if r is not None:
                heapq.heappush(heap, (r, p, sym[p], sym[i]))
    return [x for x in sym if x is not None]


@dataclass(frozen=True)
class Piece:
    """One token of a text, for the tokenizer chapter."""
    id: int              # token id
    label: str           # its bytes as readable text (<E5><AD> for bytes that are no whole character)
    raw: bytes           # the bytes it stands for
    chars: str           # the characters of the text its bytes fall in (a partial piece: the one it helps spell)
    whole: bool          # its bytes are whole UTF-8 characters
    rank: int | None     # rank of the merge that made it (0 = learned first); None: a base byte or added token


class HFTokenizer:
    """A byte-level BPE tokenizer read from a ``tokenizer.json``, with the interface of lmviz's
    tokenizers (``vocab_size``, ``token``, ``encode``, ``encode_lossy``, ``decode``) plus the
    pieces as bytes (``raw``, ``tokens``) and the merge ranks (``merge_rank``).

    ``vocab_size`` may be given larger than the file's (a model's embedding table is often padded
    past its tokenizer): ids without a token have no bytes and an empty label.
    """

    kind = "hf"
    level = "byte"          # as lmviz.bpe's byte level: every byte is a token, nothing is unknown

    def __init__(self, spec: dict, vocab_size: int | None = None):
        if not isinstance(spec, dict):
            raise TokenizerError("hf.err_json", name="tokenizer.json")
        model = _get(spec, "model", dict)
        if _get(model, "type", str, "BPE", "model") != "BPE" or "vocab" not in model:
            raise TokenizerError("hf.err_tok_not_bpe")
        for k in ("continuing_subword_prefix", "end_of_word_suffix"):
            if _get(model, k, str, "", "model"):
                raise TokenizerError("hf.err_tok_subword", field=f"model.{k}")
        if _get(model, "byte_fallback", bool, False, "model") or _get(model, "dropout", (int, float), 0, "model"):
            raise TokenizerError("hf.err_tok_byte_fallback")
        vocab = _get(model, "vocab", dict, where="model")
        if not 0 < len(vocab) <= MAX_VOCAB:
            raise TokenizerError("hf.err_tok_vocab_size", limit=MAX_VOCAB)
        byte_level = any(isinstance(spec.get(k), dict) and "ByteLevel" in json.dumps(spec.get(k))
                         for k in ("pre_tokenizer", "decoder"))
        if not byte_level:
            raise TokenizerError("hf.err_tok_not_byte_level")
        self.pieces: dict[int, str] = {}            # id -> token string (byte-mapped characters)
        for t, i in vocab.items():
            if (not isinstance(t, str) or not t or len(t) > MAX_TOKEN_CHARS or not isinstance(i, int)
                    or isinstance(i, bool) or not 0 <= i < MAX_VOCAB or i in self.pieces):
                raise TokenizerError("hf.err_tok_entry", field="model.vocab")
            self.pieces[i] = t
        self.ids = {t: i for i, t in self.pieces.items()}
        self.special: dict[str, int] = {}           # added tokens: content -> id, never split
        added = _get(spec, "added_tokens", list, [])
        if len(added) > MAX_ADDED_TOKENS:
            raise TokenizerError("hf.err_tok_count", field="added_tokens", limit=MAX_ADDED_TOKENS)
        for k, a in enumerate(added):
            c, i = _get(a, "content", str, where=f"added_tokens[{k}]"), _get(a, "id", int, where=f"added_tokens[{k}]")
            if not c or len(c) > MAX_TOKEN_CHARS or not 0 <= i < MAX_VOCAB:
                raise TokenizerError("hf.err_tok_entry", field=f"added_tokens[{k}]")
            self.special[c] = i
        self.ranks: dict[tuple[str, str], int] = {}
        merges = _get(model, "merges", list, [], "model")
        if len(merges) > MAX_VOCAB:
            raise TokenizerError("hf.err_tok_count", field="model.merges", limit=MAX_VOCAB)
        for r, m in enumerate(merges):
            pair = tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) if isinstance(m, list) else ()
            if len(pair) != 2 or not all(isinstance(p, str) for p in pair) or (pair[0] + pair[1]) not in self.ids:
                raise TokenizerError("hf.err_tok_merge", n=r + 1)
            self.ranks.setdefault(pair, r)
        self.ignore_merges = _get(model, "ignore_merges", bool, False, "model")
        self.forms = _normal_forms(_get(spec, "normalizer", dict, None))
        self.steps = _pre_tokenizer_steps(_get(spec, "pre_tokenizer", dict, None))
        top = max([*self.pieces, *self.special.values()]) + 1
        self.vocab_size = max(top, int(vocab_size or 0))
        self._special_rx = re.compile("|".join(re.escape(c) for c in sorted(self.special, key=len, reverse=True))) \
            if self.special else None
        self._raw = {i: bytes(CHAR_TO_BYTE[c] for c in t) if all(c in CHAR_TO_BYTE for c in t) else t.encode("utf-8")
                     for i, t in self.pieces.items()}
        for c, i in self.special.items():
            self._raw[i] = c.encode("utf-8")
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_file(cls, path, vocab_size: int | None = None) -> "HFTokenizer":
        """Read and check ``tokenizer.json`` (at most MAX_TOKENIZER_BYTES)."""
        p = Path(path)
        if not p.is_file():
            raise TokenizerError("hf.err_no_tokenizer")
        if p.stat().st_size > MAX_TOKENIZER_BYTES:
            raise TokenizerError("hf.err_too_large", name="tokenizer.json", limit_mb=MAX_TOKENIZER_BYTES // 2**20)
        try:
            spec = json.loads(p.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise TokenizerError("hf.err_json", name="tokenizer.json") from None
        return cls(spec, vocab_size)

    # -- views ---------------------------------------------------------------------------------
    def raw(self, i: int) -> bytes:
        """The bytes token i stands for (b"" for an id without a token)."""
        return self._raw.get(int(i), b"")

    def token(self, i: int) -> str:
        """Token i as readable text: bytes that are no whole UTF-8 character shown as <XX>."""
        return byte_label(self.raw(i))

    def merge_rank(self, i: int) -> int | None:
        """The rank (0 = learned first) of the merge that made token i; None for a base byte, an
        added token, or a token no merge builds."""
        t = self.pieces.get(int(i))
        if t is None or len(t) < 2 or int(i) in self.special.values():
            return None
        best = None
        for k in range(1, len(t)):
            r = self.ranks.get((t[:k], t[k:]))
            if r is not None and (best is None or r < best):
                best = r
        return best

    # -- encode --------------------------------------------------------------------------------
    def _bpe(self, piece: str) -> list[int]:
        hit = self._cache.get(piece)
        if hit is not None:
            return hit
        ids = self.ids
        if self.ignore_merges and piece in ids:
            out = [ids[piece]]
        else:
            parts = merge_word([c for c in piece if c in ids], self.ranks)   # a byte the vocabulary lacks is dropped
            out = [ids[p] for p in parts]
        if len(self._cache) < 100_000:
            self._cache[piece] = out
        return out

    def _segments(self, text: str):
        """(piece, start offset, special id or None), in order; offsets in the normalized text."""
        chunks, pos = [], 0
        if self._special_rx is not None:
            for m in self._special_rx.finditer(text):
                if m.start() > pos:
                    chunks.append((text[pos:m.start()], pos, None))
                chunks.append((m.group(0), m.start(), self.special[m.group(0)]))
                pos = m.end()
        if pos < len(text):
            chunks.append((text[pos:], pos, None))
        for chunk, start, sid in chunks:
            if sid is not None:
                yield chunk, start, sid
                continue
            for f in self.forms:
                chunk = unicodedata.normalize(f, chunk)
            pieces = [(chunk, start)]
            for step in self.steps:
                if step[0] == "prefix_space":
                    pieces = [(p if p.startswith(" ") else " " + p, s) for p, s in pieces]
                else:
                    pieces = _split_isolated(pieces, step[1])
            for p, s in pieces:
                yield p, s, None

    def encode(self, text: str) -> list[int]:
        """Text -> ids, without the special tokens a template would add (as ``tokenizers``'
        ``encode(text, add_special_tokens=False)``)."""
        out: list[int] = []
        for piece, _, sid in self._segments(text):
            if sid is not None:
                out.append(sid)
            else:
                out.extend(self._bpe("".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8"))))
        return out

    def encode_lossy(self, text: str) -> tuple[list[int], list[str]]:
        """(ids, []) -- byte-level BPE encodes any text (a byte the vocabulary lacks is dropped)."""
        return self.encode(text), []

    def tokens(self, text: str) -> list[Token]:
        """Encode text and describe every token: id, label, its bytes, the character it starts in
        (a token may start in the middle of a character: then it starts with a continuation byte)."""
        out: list[Token] = []
        for piece, start, sid in self._segments(text):
            if sid is not None:
                out.append(Token(sid, piece, piece.encode("utf-8"), start, False))
                continue
            data = piece.encode("utf-8")
            char_at = [k for k, ch in enumerate(piece) for _ in range(len(ch.encode("utf-8")))]
            nbytes = 0
            for i in self._bpe("".join(BYTE_TO_CHAR[b] for b in data)):
                raw = self.raw(i)
                out.append(Token(i, byte_label(raw), raw, start + char_at[min(nbytes, len(char_at) - 1)], False))
                nbytes += len(raw)
        return out

    def text_pieces(self, text: str) -> list[Piece]:
        """Every token of ``text`` with its bytes, the characters they fall in and its merge rank.

        A piece whose bytes are part of a character (``whole`` False) names that character: the
        bytes of 学 split as ``<E5><AD>`` + ``<A6>`` give two pieces whose ``chars`` are both 学.
        """
        out: list[Piece] = []
        for seg, _, sid in self._segments(text):
            if sid is not None:
                out.append(Piece(sid, seg, seg.encode("utf-8"), seg, True, None))
                continue
            data = seg.encode("utf-8")
            char_at = [k for k, ch in enumerate(seg) for _ in range(len(ch.encode("utf-8")))]
            b = 0
            for i in self._bpe("".join(BYTE_TO_CHAR[x] for x in data)):
                raw = self.raw(i)
                e = b + max(1, len(raw))
                c0, c1 = char_at[min(b, len(char_at) - 1)], char_at[min(e, len(char_at)) - 1]
                whole = (b == 0 or char_at[b] != char_at[b - 1]) and (e >= len(char_at) or char_at[e] != char_at[e - 1])
                out.append(Piece(i, byte_label(raw), raw, seg[c0:c1 + 1], whole, self.merge_rank(i)))
                b = e
        return out

    def decode(self, ids) -> str:
        """Ids -> text (bytes joined, then read as UTF-8; an incomplete character becomes U+FFFD)."""
        return b"".join(self.raw(i) for i in ids).decode("utf-8", errors="replace")

    def __repr__(self):
        return f"HFTokenizer(vocab_size={self.vocab_size}, merges={len(self.ranks)})"
