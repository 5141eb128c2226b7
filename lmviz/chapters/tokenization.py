"""What a tokenizer reserves, what it does with a character it never saw, and how BPE cuts words.

lmviz's tokenizers, as they are (nothing is added here):

- ``CharTokenizer`` reserves nothing, unless it names one of its characters the unknown token
  (``unk``, e.g. "□", as the shipped default model's tokenizer does): then an unseen character
  becomes that id. Without one, a character outside the training text makes ``encode`` raise
  ``UnknownCharacters`` (``encode_lossy`` drops it and reports it). A marker such as ``<BOS>``
  written in the text is five ordinary tokens ``< B O S >``.
- ``WordTokenizer`` (the notes' toy vocabulary) lists ``<BOS>``/``<EOS>`` (``<开始>``/``<结束>``)
  as words of its own: one id each, a beginning and an end of sequence. Unknown pieces raise.
- The character-level BPE (``lmviz.bpe``, ``TrainedBPE``) reserves id 0 for ``<unk>``: an unseen
  character becomes that id (and decodes to the replacement mark U+FFFD). A byte-level BPE cannot meet an unknown
  character: every text is UTF-8 bytes and all 256 bytes are tokens.
- Padding is not a token in lmviz: where sequences of different lengths share a batch, the
  padded positions get the label -1 (``PAD_LABEL``), which the loss skips (``ignore_index``).

BPE has no notion of a word: it only merges frequent neighbours. A frequent word ends up as one
or two tokens, a rare word of the same length as several pieces (:func:`rare_vs_common`).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from lmviz.chapters.about_model import tokenizer_kind
from lmviz.data import PAD_LABEL

__all__ = ["PAD_LABEL", "ROLES", "MARKERS", "Reserved", "SpecialTokens", "special_tokens", "UnknownResult",
           "encode_unknown", "split_chars", "WordPieces", "word_pieces", "word_counts", "RareVsCommon", "rare_vs_common"]

ROLES = ("bos", "eos", "pad", "unk")  # beginning of sequence, end, padding, unknown
# marker spellings recognised as a role when a vocabulary holds them as single tokens
_NAMES = {
    "bos": ("<BOS>", "<bos>", "<s>", "<|startoftext|>", "<开始>"),
    "eos": ("<EOS>", "<eos>", "</s>", "<|endoftext|>", "<结束>"),
    "pad": ("<PAD>", "<pad>"),
    "unk": ("<UNK>", "<unk>"),
}
MARKERS = {"bos": "<BOS>", "eos": "<EOS>", "pad": "<PAD>", "unk": "<UNK>"}  # how a role is spelled in text


def _labels(tok, ids) -> tuple[str, ...]:
    f = getattr(tok, "token", None) or tok.label
    return tuple(f(int(i)) for i in ids)


def _vocab(tok) -> list[str]:
    return list(_labels(tok, range(tok.vocab_size)))


@dataclass(frozen=True)
class Reserved:
    role: str   # one of ROLES
    text: str   # the token's spelling in the vocabulary
    id: int     # its id


@dataclass(frozen=True)
class SpecialTokens:
    kind: str                          # char | word | bpe | bpe_byte
    vocab_size: int                    # ids 0..vocab_size-1
    reserved: tuple[Reserved, ...]     # the special tokens the vocabulary holds, in ROLES order
    missing: tuple[str, ...]           # roles it has no token for
    marker_pieces: tuple[tuple[str, tuple[str, ...]], ...]  # (role, pieces) a missing role's marker
                                       #   text (MARKERS) becomes: ordinary tokens, not one special one
    unknown_policy: str                # "error": encode refuses | "unk": becomes the <unk> id |
                                       #   "bytes": cannot happen (every byte is a token)
    pad_label: int                     # PAD_LABEL: padding is a label the loss skips, not a token
    others: tuple[Reserved, ...] = ()  # the tokenizer's other special tokens (never split), role "other"

    def id_of(self, role: str) -> int | None:
        return next((r.id for r in self.reserved if r.role == role), None)


def special_tokens(tokenizer, roles: dict | None = None) -> SpecialTokens:
    """What ``tokenizer`` reserves, read from its vocabulary (nothing is assumed per class).
    ``roles``: role -> id as the model's own records name them (a GGUF file's bos and eos ids,
    SmolLM2's ``<|im_start|>`` and ``<|im_end|>``); they win over a spelling found in the vocabulary.
    A real tokenizer's other special tokens (``tokenizer.special``) are listed as ``others``.

    >>> from lmviz.tokenizer import toy_tokenizer
    >>> s = special_tokens(toy_tokenizer("en"))
    >>> [(r.role, r.text, r.id) for r in s.reserved], s.missing, s.unknown_policy
    ([('bos', '<BOS>', 0), ('eos', '<EOS>', 5)], ('pad', 'unk'), 'error')
    >>> [(r.role, r.text) for r in special_tokens(toy_tokenizer("en"), {"eos": 0}).reserved]
    [('eos', '<BOS>')]
    """
    kind = tokenizer_kind(tokenizer)
    vocab = _vocab(tokenizer)
    index = {t: i for i, t in enumerate(vocab)}
    named = {r: i for r, i in (roles or {}).items() if r in ROLES and isinstance(i, int) and 0 <= i < len(vocab)}
    taken = set(named.values())
    reserved = []
    for role in ROLES:
        if role in named:
            reserved.append(Reserved(role, vocab[named[role]], named[role]))
            continue
        hit = next((n for n in _NAMES[role] if n in index and index[n] not in taken), None)
        if hit is not None:
            reserved.append(Reserved(role, hit, index[hit]))
    unk_char = getattr(tokenizer, "unk", None)            # CharTokenizer's named unknown token
    if isinstance(unk_char, str) and unk_char in index and not any(r.role == "unk" for r in reserved):
        reserved.append(Reserved("unk", unk_char, index[unk_char]))
        reserved.sort(key=lambda r: ROLES.index(r.role))
    have = {r.role for r in reserved}
    missing = tuple(r for r in ROLES if r not in have)
    pieces = []
    for role in missing:
        try:
            ids = _encode_lossy(tokenizer, MARKERS[role])[0]
        except ValueError:
            ids = []
        pieces.append((role, _labels(tokenizer, ids)))
    policy = "bytes" if kind == "bpe_byte" else ("unk" if kind == "bpe" or "unk" in have else "error")
    ids = {r.id for r in reserved}
    special = getattr(tokenizer, "special", None)
    others = tuple(Reserved("other", c, i) for c, i in sorted(special.items(), key=lambda x: x[1])
                   if i not in ids) if isinstance(special, dict) else ()
    return SpecialTokens(kind, tokenizer.vocab_size, tuple(reserved), missing, tuple(pieces), policy, PAD_LABEL,
                         others)


def split_chars(tokenizer, text: str) -> tuple[str, ...]:
    """The characters of ``text`` that ``tokenizer`` cuts inside their UTF-8 bytes: no token holds
    the whole character, so its pieces are shown as bytes (a byte-level tokenizer on a character
    it never merged). First-seen order.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> split_chars(CharTokenizer("学a"), "学a")
    ()
    """
    labels = _labels(tokenizer, _encode_lossy(tokenizer, text)[0])
    return tuple(c for c in dict.fromkeys(text) if len(c.encode("utf-8")) > 1 and not any(c in x for x in labels))


def _encode_lossy(tok, text):
    if hasattr(tok, "encode_lossy"):
        return tok.encode_lossy(text)
    bpe = getattr(tok, "bpe", tok)                      # a bare lmviz.bpe.BPETokenizer
    if bpe.level == "byte":
        return bpe.encode(text), []
    known = set(bpe.vocab[1:bpe.n_base])
    return bpe.encode("".join(c for c in text if c in known)), list(dict.fromkeys(c for c in text if c not in known))


@dataclass(frozen=True)
class UnknownResult:
    text: str                     # the text encoded
    policy: str                   # "error" | "unk" | "bytes" (see SpecialTokens.unknown_policy)
    ids: tuple[int, ...] | None   # what encode returns; None when it refused
    pieces: tuple[str, ...]       # labels of ids (of lossy_ids when encode refused)
    error: str | None             # the tokenizer's own message when encode refused
    unknown: tuple[str, ...]      # characters outside the vocabulary's alphabet, first-seen order
    unk_positions: tuple[int, ...]  # positions in ids holding the <unk> id ("unk" policy)
    lossy_ids: tuple[int, ...]    # encode_lossy: the ids with the unknown characters dropped
    decoded: str                  # decode(ids or lossy_ids): what survives the round trip


def encode_unknown(tokenizer, text: str) -> UnknownResult:
    """Encode text that may hold characters the tokenizer never saw, the way the tokenizer does.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> r = encode_unknown(CharTokenizer("abc"), "cab!")
    >>> r.ids, r.error, r.unknown, r.lossy_ids, r.decoded
    (None, "1 unknown token(s): '!'", ('!',), (2, 0, 1), 'cab')
    """
    spec = special_tokens(tokenizer)
    lossy, unknown = _encode_lossy(tokenizer, text)
    try:
        ids = tuple(int(i) for i in tokenizer.encode(text))
        error = None
    except ValueError as e:   # UnknownCharacters is a ValueError
        ids, error = None, str(e)
    unk = spec.id_of("unk")
    unk_pos = tuple(i for i, t in enumerate(ids or ()) if spec.unknown_policy == "unk" and t == unk)
    shown = ids if ids is not None else tuple(lossy)
    return UnknownResult(text=text, policy=spec.unknown_policy, ids=ids, pieces=_labels(tokenizer, shown),
                         error=error, unknown=tuple(unknown), unk_positions=unk_pos,
                         lossy_ids=tuple(int(i) for i in lossy), decoded=tokenizer.decode(list(shown)))


# -----------------------------------------------------------------------------
# rare words split into pieces

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class WordPieces:
    word: str                  # the word (one pre-split chunk of word characters)
    count: int                 # its occurrences as a whole word in the corpus (0 if none given)
    ids: tuple[int, ...]       # its token ids
    pieces: tuple[str, ...]    # their labels: the pieces the tokenizer cuts it into

    @property
    def n_pieces(self) -> int:
        return len(self.ids)


def word_counts(text: str) -> Counter:
    """Whole-word counts (runs of word characters, as BPE's pre-split cuts them)."""
    return Counter(_WORD.findall(text))


def word_pieces(tokenizer, word: str, counts: Counter | None = None) -> WordPieces:
    """How ``tokenizer`` cuts ``word``. Unknown characters are dropped (char tokenizers raise)."""
    ids = _encode_lossy(tokenizer, word)[0]
    return WordPieces(word, int((counts or {}).get(word, 0)), tuple(int(i) for i in ids), _labels(tokenizer, ids))


@dataclass(frozen=True)
class RareVsCommon:
    common: WordPieces   # the corpus's most frequent word of at least min_len characters
    rare: WordPieces     # a word seen once, as long or longer, cut into the most pieces
    vocab_size: int      # the tokenizer's vocabulary size
    n_words: int         # distinct words in the corpus


def rare_vs_common(tokenizer, text: str, min_len: int = 5, spread: int = 3) -> RareVsCommon:
    """A frequent word and a once-seen word of the corpus, each cut by the tokenizer.

    Only alphabetic words without capitals count (Chinese runs qualify). The common word is the most frequent one with at least
    ``min_len`` letters (ties: alphabetical); the rare word is seen exactly once and is as long
    (or, failing that, up to ``spread`` letters longer): the shortest such, cut into the most
    pieces (ties: alphabetical). Similar length, so the difference is frequency, not length.
    ValueError when either is missing.
    """
    counts = word_counts(text)
    long = [(w, c) for w, c in counts.items() if len(w) >= min_len and w.isalpha() and w == w.lower()]
    if not long:
        raise ValueError(f"the text has no word of {min_len} or more letters")
    common, top = min(long, key=lambda wc: (-wc[1], wc[0]))
    if top < 2:
        raise ValueError(f"no word of {min_len} or more letters appears more than once")
    once = [w for w, c in long if c == 1 and w != common and len(common) <= len(w) <= len(common) + spread]
    if not once:
        raise ValueError("the text has no word of similar length that appears only once")
    cut = {w: word_pieces(tokenizer, w, counts) for w in once}
    rare = min(once, key=lambda w: (len(w), -cut[w].n_pieces, w))
    return RareVsCommon(word_pieces(tokenizer, common, counts), cut[rare], tokenizer.vocab_size, len(counts))


_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")


def rare_vs_common_han(tokenizer, text: str, n: int = 2) -> RareVsCommon:
    """The same comparison for Chinese, which has no spaces to mark words: among the runs of
    ``n`` Chinese characters of the corpus, the most frequent one and one seen exactly once,
    cut into the most pieces (ties: the earliest in the text). Counts are of overlapping
    occurrences. ValueError when either is missing.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> r = rare_vs_common_han(CharTokenizer("学习数学好"), "学习数学，学习好")
    >>> r.common.word, r.common.count, r.rare.word
    ('学习', 2, '习数')
    """
    counts: Counter = Counter()
    order: dict[str, int] = {}
    for run in _HAN_RUN.findall(text):
        for i in range(len(run) - n + 1):
            g = run[i:i + n]
            counts[g] += 1
            order.setdefault(g, len(order))
    if not counts:
        raise ValueError("the text has no run of Chinese characters")
    common, top = min(counts.items(), key=lambda gc: (-gc[1], order[gc[0]]))
    if top < 2:
        raise ValueError(f"no run of {n} Chinese characters appears more than once")
    once = [g for g, c in counts.items() if c == 1]
    if not once:
        raise ValueError(f"every run of {n} Chinese characters appears more than once")
    cut = {g: word_pieces(tokenizer, g, counts) for g in once}
    rare = min(once, key=lambda g: (-cut[g].n_pieces, order[g]))
    return RareVsCommon(word_pieces(tokenizer, common, counts), cut[rare], tokenizer.vocab_size, len(counts))


# ------------------------------------------------------------------ the room's corpus -----------
ROOM_ACTIVITY = "corpus.room"    # the class-store activity of the room's sentences (ClassStore.submit)


@dataclass(frozen=True)
class LanguageCost:
    """What one language of the room's sentences costs the tokenizer."""
    language: str               # "zh" (a sentence mostly of Chinese characters) or "en" (the rest)
    sentences: int              # how many of the sentences
    chars: int                  # their characters
    tokens: int                 # their tokens under the tokenizer

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0


def sentence_language(text: str) -> str:
    """"zh" when at least half of the sentence's letters are Chinese characters, else "en".

    >>> sentence_language("我喜欢学习 LLM"), sentence_language("I love learning 学")
    ('zh', 'en')
    """
    han = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    letters = sum(1 for ch in text if ch.isalpha())
    return "zh" if letters and han * 2 >= letters else "en"


def language_costs(tokenizer, sentences) -> list[LanguageCost]:
    """Tokens per language of ``sentences`` under ``tokenizer`` (one with ``encode_lossy``),
    Chinese first; a language with no sentence is left out.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> tk = CharTokenizer("我喜欢学习 I love")
    >>> [(c.language, c.sentences, c.chars, c.tokens) for c in language_costs(tk, ["我喜欢", "I love", "学习"])]
    [('zh', 2, 5, 5), ('en', 1, 6, 6)]
    """
    out = []
    for lang in ("zh", "en"):
        mine = [s for s in sentences if sentence_language(s) == lang]
        if mine:
            out.append(LanguageCost(lang, len(mine), sum(len(s) for s in mine),
                                    sum(len(_encode_lossy(tokenizer, s)[0]) for s in mine)))
    return out
