"""Byte Pair Encoding, small and honest: a trainer that records every merge, and an encoder.

Training (Sennrich et al., "Neural Machine Translation of Rare Words with Subword Units"):
start from single characters (or single UTF-8 bytes), count every adjacent pair of tokens in
the corpus, merge the most frequent pair into a new token, repeat.

    >>> tok = train_bpe("low low lower", 2)
    >>> tok.merges
    [('l', 'o'), ('lo', 'w')]
    >>> tok.decode(tok.encode("lower low"))
    'lower low'

Rules, all deterministic:

- Pre-split (``split_words=True``): the text is cut into chunks -- runs of word characters,
  runs of punctuation, runs of whitespace (``PRE_SPLIT``) -- and no merge crosses a chunk
  boundary. With ``split_words=False`` the whole text is one sequence.
- Counting: a pair is counted once per adjacent position, times the chunk's frequency
  ("aaa" holds the pair (a, a) twice). A merge replaces occurrences left to right.
- Tie rule: among pairs with the same count, the pair whose left token has the smaller ID wins,
  then the smaller right-token ID. Base tokens get IDs in code-point (char level) or byte order;
  each merged token gets the next ID. This is the order HF ``tokenizers`` uses too. On
  "low low lower", (l, o) and (o, w) both occur 3 times; l < o, so (l, o) wins.
- Stopping: after ``num_merges`` merges, or earlier when the best pair occurs fewer than
  ``min_count`` times (default 2: a pair seen once compresses nothing reusable) or no pair is
  left (every chunk is one token). ``stop_reason`` says which.
- Encoding new text applies the learned merges by rank (earliest learned first); it never
  recounts the corpus.

Training is incremental: an index pair -> {chunks holding it} and a max-heap with lazy deletion
mean a merge only revisits the chunks it touches, so 500 merges on 1 MB take about a second.
"""
from __future__ import annotations

import heapq
import re
from collections import Counter
from dataclasses import dataclass, field

from .data import split
from .cancel import check_cancel

__all__ = ["PRE_SPLIT", "Candidate", "MergeStep", "Token", "BPETokenizer", "train_bpe",
           "VocabPoint", "split_heldout", "vocab_tradeoff", "text_from_bytes",
           "pre_split", "byte_label", "UNK", "TrainedBPE"]

# chunks: a run of word characters, a run of punctuation/symbols, or a run of whitespace
PRE_SPLIT = r"\w+|[^\w\s]+|\s+"
_PRE_SPLIT_RE = re.compile(PRE_SPLIT)
UNK = "<unk>"  # char level only: the token for a character the training text never contained


def pre_split(text: str, split_words: bool = True) -> list[str]:
    """Cut text into the chunks merges may not cross.

    >>> pre_split("low, lower!")
    ['low', ',', ' ', 'lower', '!']
    """
    if not split_words:
        return [text] if text else []
    return _PRE_SPLIT_RE.findall(text)


def byte_label(b: bytes) -> str:
    """A token's bytes as readable text; bytes that are not whole UTF-8 characters become <XX>.

    >>> byte_label("é".encode()), byte_label("学".encode()[:1]), byte_label(b"ab\\xe4")
    ('é', '<E5>', 'ab<E4>')
    """
    s = b.decode("utf-8", errors="surrogateescape")
    return "".join(f"<{ord(c) - 0xDC00:02X}>" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in s)


@dataclass(frozen=True)
class Candidate:
    pair: tuple[str, str]  # the two tokens, as display labels
    ids: tuple[int, int]   # their IDs
    count: int             # adjacent occurrences in the corpus, weighted by chunk frequency


@dataclass(frozen=True)
class MergeStep:
    step: int                           # 1-based merge number
    pair: tuple[str, str]               # the pair merged, as display labels
    ids: tuple[int, int]                # IDs of its two tokens
    new_id: int                         # ID given to the merged token
    token: str                          # the merged token's display label
    count: int                          # occurrences of the pair when it was chosen
    candidates: tuple[Candidate, ...]   # pair counts before this merge, best first (top history_top)
    n_candidates: int                   # how many distinct pairs there were in total
    tied: tuple[tuple[str, str], ...]   # pairs sharing the top count, winner first; () if no tie
    reason: str                         # "most_frequent" or "tie_smaller_ids"
    words: tuple[tuple[str, int, tuple[str, ...]], ...]  # (chunk, count, segmentation after)


@dataclass(frozen=True)
class Token:
    id: int          # vocabulary index
    text: str        # display label (partial UTF-8 shown as <XX>)
    raw: bytes       # the UTF-8 bytes this token stands for (b"" for <unk>)
    start: int       # character offset in the encoded text where the token's chunk piece starts
    unk: bool        # char level: the character was not in the training alphabet


@dataclass(eq=False)
class BPETokenizer:
    level: str                         # "char" or "byte"
    split_words: bool                  # pre-split into chunks, no merges across them
    vocab: list                        # id -> token (str at char level, bytes at byte level)
    merge_ids: list[tuple[int, int]]   # ordered merges as (left id, right id); new id = base + rank
    n_base: int                        # number of base tokens (alphabet, incl. <unk>; or 256)
    history: list[MergeStep]           # one record per merge (empty when trained with record=False)
    initial_words: tuple               # (chunk, count, segmentation) before any merge
    requested: int                     # num_merges asked for
    stop_reason: str                   # "done", "min_count" or "no_pairs"
    n_chunks: int = 0                  # chunks in the training text (with repeats)
    _ranks: dict = field(default_factory=dict, repr=False)
    _index: dict = field(default_factory=dict, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._ranks = {p: r for r, p in enumerate(self.merge_ids)}
        self._index = {t: i for i, t in enumerate(self.vocab)}
        self._cache = {}

    # -- views ---------------------------------------------------------------------------------
    @property
    def merges(self) -> list[tuple[str, str]]:
        """Merged pairs in order, as display strings."""
        return [(self.label(a), self.label(b)) for a, b in self.merge_ids]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def stopped_early(self) -> bool:
        return self.stop_reason != "done"

    def label(self, i: int) -> str:
        """Display label of token i (byte level: partial UTF-8 as <XX>, never a U+FFFD glyph)."""
        t = self.vocab[i]
        return byte_label(t) if isinstance(t, bytes) else t

    def raw(self, i: int) -> bytes:
        t = self.vocab[i]
        if isinstance(t, bytes):
            return t
        return b"" if (self.level == "char" and i == 0) else t.encode("utf-8")

    def truncated(self, k: int) -> "BPETokenizer":
        """The tokenizer after only its first k merges (vocab size n_base + k)."""
        k = max(0, min(k, len(self.merge_ids)))
        return BPETokenizer(self.level, self.split_words, self.vocab[: self.n_base + k],
                            self.merge_ids[:k], self.n_base, self.history[:k], self.initial_words,
                            k, "done", self.n_chunks)

    # -- encode / decode -----------------------------------------------------------------------
    def _base_ids(self, chunk: str) -> list[int]:
        if self.level == "byte":
            return list(chunk.encode("utf-8"))
        idx = self._index
        return [idx.get(c, 0) for c in chunk]

    def _encode_chunk(self, chunk: str) -> list[int]:
        hit = self._cache.get(chunk)
        if hit is not None:
            return hit
        ids = self._base_ids(chunk)
        ranks, nb = self._ranks, self.n_base
        while len(ids) >= 2:
            # the adjacent pair learned earliest wins; merge all its occurrences, left to right
            best = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, 1 << 60))
            r = ranks.get(best)
            if r is None:
                break
            ids = _merge(ids, best, nb + r)
        if len(self._cache) < 100_000:
            self._cache[chunk] = ids
        return ids

    def encode(self, text: str, cancel=None) -> list[int]:
        """Text -> token IDs, by applying the learned merges by rank to each chunk (``cancel``:
        an optional callback asked every 1,024 chunks, see ``train_bpe``)."""
        out: list[int] = []
        for k, chunk in enumerate(pre_split(text, self.split_words)):
            if k % 1024 == 0:
                check_cancel(cancel)
            out.extend(self._encode_chunk(chunk))
        return out

    def decode(self, ids: list[int]) -> str:
        """Token IDs -> text. Byte level always round-trips; char level turns <unk> into U+FFFD."""
        if self.level == "byte":
            return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")
        return "".join("\ufffd" if i == 0 else self.vocab[i] for i in ids)

    def tokens(self, text: str) -> list[Token]:
        """Encode text and describe every token (ID, label, bytes, where it starts)."""
        out: list[Token] = []
        pos = 0
        for chunk in pre_split(text, self.split_words):
            ids = self._encode_chunk(chunk)
            if self.level == "byte":
                # byte offsets inside the chunk -> char offsets (a token may start mid-character)
                char_at = [k for k, ch in enumerate(chunk) for _ in range(len(ch.encode("utf-8")))]
                nbytes = 0
                for i in ids:
                    t = self.vocab[i]
                    out.append(Token(i, byte_label(t), t, pos + char_at[nbytes], False))
                    nbytes += len(t)
            else:
                off = 0
                for i in ids:
                    unk = i == 0
                    n = 1 if unk else len(self.vocab[i])
                    piece = chunk[off:off + n]
                    out.append(Token(i, UNK if unk else self.vocab[i], piece.encode("utf-8"),
                                     pos + off, unk))
                    off += n
            pos += len(chunk)
        return out


def _merge(ids: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """Replace occurrences of pair by new, left to right.

    >>> _merge([1, 1, 1, 2], (1, 1), 9)
    [9, 1, 2]
    """
    a, b = pair
    out, i, n = [], 0, len(ids)
    while i < n:
        if i < n - 1 and ids[i] == a and ids[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _merge_delta(ids: list[int], pair: tuple[int, int], new: int, f: int, delta: dict,
                 where: dict, w: int) -> list[int]:
    """_merge, also adding to delta the change in each pair's count (times f), and w to where[p]
    for each pair that appears. Stale where entries are harmless (a later merge finds nothing).

    >>> d = {}; _merge_delta([1, 2, 1, 2], (1, 2), 9, 1, d, {}, 0)
    [9, 9]
    >>> sorted((p, c) for p, c in d.items() if c)
    [((1, 2), -2), ((2, 1), -1), ((9, 9), 1)]
    """
    a, b = pair
    out: list[int] = []
    i, n = 0, len(ids)
    while i < n:
        if i < n - 1 and ids[i] == a and ids[i + 1] == b:
            delta[pair] = delta.get(pair, 0) - f
            if out:  # the left neighbour (already merged if the previous site was adjacent)
                prev = out[-1]
                delta[(prev, a)] = delta.get((prev, a), 0) - f
                p = (prev, new)
                delta[p] = delta.get(p, 0) + f
                where.setdefault(p, set()).add(w)
            if i + 2 < n:  # the right neighbour, still unmerged
                nxt = ids[i + 2]
                delta[(b, nxt)] = delta.get((b, nxt), 0) - f
                p = (new, nxt)
                delta[p] = delta.get(p, 0) + f
                where.setdefault(p, set()).add(w)
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train_bpe(text: str, num_merges: int, *, level: str = "char", split_words: bool = True,
              min_count: int = 2, record: bool = True, history_top: int = 40,
              history_words: int = 60, history_tokens: int = 80, cancel=None) -> BPETokenizer:
    """Learn up to num_merges merges on text; see the module docstring for the rules.

    ``cancel``: an optional callback, asked between merges; when it returns True the training
    raises ``lmviz.cancel.Cancelled`` (a background task was stopped).

    record=True keeps a MergeStep per merge with the top history_top candidate pairs (plus every
    pair tied for first) and the segmentation of the history_words most frequent chunks.

    >>> tok = train_bpe("low low lower", 2)
    >>> tok.history[0].tied, tok.history[0].reason
    ((('l', 'o'), ('o', 'w')), 'tie_smaller_ids')
    """
    if level not in ("char", "byte"):
        raise ValueError(f"level must be 'char' or 'byte', got {level!r}")
    if num_merges < 0:
        raise ValueError("num_merges must be >= 0")
    check_cancel(cancel)
    chunk_counts = Counter(pre_split(text, split_words))  # chunk -> frequency
    check_cancel(cancel)
    chunks = list(chunk_counts)  # distinct chunks, in order of first appearance
    freqs = [chunk_counts[c] for c in chunks]

    # base vocabulary
    if level == "byte":
        vocab: list = [bytes([i]) for i in range(256)]
        words = [list(c.encode("utf-8")) for c in chunks]
    else:
        alphabet = sorted(set(text))
        vocab = [UNK] + alphabet
        index = {c: i + 1 for i, c in enumerate(alphabet)}
        words = [[index[ch] for ch in c] for c in chunks]
    n_base = len(vocab)

    def lab(i: int) -> str:
        t = vocab[i]
        return byte_label(t) if isinstance(t, bytes) else t

    # pair counts and the index pair -> chunks that hold it
    counts: dict[tuple[int, int], int] = {}
    where: dict[tuple[int, int], set[int]] = {}
    for w, (ids, f) in enumerate(zip(words, freqs)):
        if w % 4096 == 0:
            check_cancel(cancel)
        for p in zip(ids, ids[1:]):
            counts[p] = counts.get(p, 0) + f
            s = where.get(p)
            if s is None:
                where[p] = {w}
            else:
                s.add(w)
    # max-heap by count, ties to the smaller (left id, right id): entries (-count, a, b)
    heap = [(-c, a, b) for (a, b), c in counts.items()]
    heapq.heapify(heap)

    rec_words = sorted(range(len(chunks)), key=lambda w: -freqs[w])[:history_words] if record else []

    def snapshot():
        # (a long chunk -- split_words=False -- is recorded by its first history_tokens tokens)
        return tuple((chunks[w], freqs[w], tuple(lab(i) for i in words[w][:history_tokens]))
                     for w in rec_words)

    initial = snapshot()
    merge_ids: list[tuple[int, int]] = []
    history: list[MergeStep] = []
    stop = "done"
    while len(merge_ids) < num_merges:
        check_cancel(cancel)
        # pop the best live entry (lazy deletion: skip entries whose count is stale)
        best = None
        while heap:
            negc, a, b = heap[0]
            if counts.get((a, b)) == -negc:
                best = (a, b)
                break
            heapq.heappop(heap)
        if best is None:
            stop = "no_pairs"
            break
        top = -heap[0][0]
        if top < min_count:
            stop = "min_count"
            break
        new = len(vocab)
        if record:
            n_cand = len(counts)
            order = lambda kv: (-kv[1], kv[0])  # noqa: E731  the same order as the heap
            cands = heapq.nsmallest(history_top, counts.items(), key=order)
            tied = sorted((p for p, c in counts.items() if c == top))
            shown = {p for p, _ in cands}
            cands += sorted(((p, top) for p in tied if p not in shown), key=order)
        a, b = best
        vocab.append(vocab[a] + vocab[b])
        merge_ids.append(best)

        # update only the chunks that contain the pair, and only around each merge site
        delta: dict[tuple[int, int], int] = {}
        for w in where.pop(best, ()):
            nw = _merge_delta(words[w], best, new, freqs[w], delta, where, w)
            words[w] = nw
        for p, d in delta.items():
            if d == 0:
                continue
            c = counts.get(p, 0) + d
            if c > 0:
                counts[p] = c
                heapq.heappush(heap, (-c, p[0], p[1]))
            else:
                counts.pop(p, None)

        if record:
            history.append(MergeStep(
                step=len(merge_ids), pair=(lab(a), lab(b)), ids=best, new_id=new,
                token=lab(new), count=top,
                candidates=tuple(Candidate((lab(x), lab(y)), (x, y), c) for (x, y), c in cands),
                n_candidates=n_cand,
                tied=tuple((lab(x), lab(y)) for x, y in tied) if len(tied) > 1 else (),
                reason="tie_smaller_ids" if len(tied) > 1 else "most_frequent",
                words=snapshot()))
    return BPETokenizer(level, split_words, vocab, merge_ids, n_base, history, initial,
                        num_merges, stop, sum(freqs))


# -- vocabulary size trade-off -----------------------------------------------------------------
@dataclass(frozen=True)
class VocabPoint:
    merges: int             # merges used (the first k learned)
    vocab_size: int         # V = base tokens + merges
    n_tokens: int           # tokens the held-out text becomes
    n_chars: int            # characters in the held-out text
    tokens_per_char: float  # n_tokens / n_chars: lower means shorter sequences
    table_params: int       # V * d: parameters in an embedding table of width d


def split_heldout(text: str, frac: float = 0.2) -> tuple[str, str]:
    """Cut text into (train, held-out) with about frac of it held out, at a whitespace within
    the 50 characters before the cut if there is one (Chinese text may have none).

    >>> split_heldout("aa bb cc dd ee", 0.2), split_heldout("一二三四五六七八九十", 0.2)
    (('aa bb cc dd', ' ee'), ('一二三四五六七八', '九十'))
    """
    return split(text, n_val=len(text) - int(len(text) * (1 - frac)), at_space=50)


def vocab_tradeoff(tok: BPETokenizer, heldout: str, merge_counts: list[int],
                   d: int) -> list[VocabPoint]:
    """Measure tokens/char on heldout for the tokenizer truncated to each merge count.

    >>> tok = train_bpe("low low lower low", 2)
    >>> [(p.vocab_size, p.n_tokens) for p in vocab_tradeoff(tok, "low", [0, 2], d=4)]
    [(7, 3), (9, 1)]
    """
    out = []
    n_chars = max(1, len(heldout))
    for k in sorted(set(min(max(0, k), len(tok.merge_ids)) for k in merge_counts)):
        t = tok.truncated(k)
        n = len(t.encode(heldout))
        out.append(VocabPoint(k, t.vocab_size, n, len(heldout), n / n_chars, t.vocab_size * d))
    return out


def text_from_bytes(data: bytes, max_bytes: int, nul_ok: bool = False) -> tuple[str | None, str]:
    """Check an uploaded file: (text, "ok") or (None, why) with why in
    "too_big", "binary", "utf8" (the ONE upload text check; ``nul_ok`` lets NUL bytes through).

    >>> text_from_bytes("低".encode(), 10), text_from_bytes(b"\\xff", 10)[1]
    (('低', 'ok'), 'utf8')
    """
    if len(data) > max_bytes:
        return None, "too_big"
    if not nul_ok and b"\x00" in data:
        return None, "binary"
    try:
        return data.decode("utf-8"), "ok"
    except UnicodeDecodeError:
        return None, "utf8"


# -----------------------------------------------------------------------------
# the tokenizer a training uses

class TrainedBPE:
    """A character-level BPE tokenizer with the ``CharTokenizer`` interface (what a training uses
    and a checkpoint stores).

    >>> tok = TrainedBPE.train("low low lower", 2)
    >>> tok.vocab_size, tok.decode(tok.encode("lower low"))
    (9, 'lower low')
    """

    kind = "bpe"

    def __init__(self, bpe):
        self.bpe = bpe

    @classmethod
    def train(cls, text: str, merges: int, cancel=None) -> "TrainedBPE":
        return cls(train_bpe(text, merges, level="char", record=False, cancel=cancel))

    @property
    def vocab_size(self) -> int:
        return self.bpe.vocab_size

    def token(self, i: int) -> str:
        return self.bpe.label(int(i))

    def encode(self, text: str, cancel=None) -> list[int]:
        return self.bpe.encode(text, cancel=cancel)

    def encode_lossy(self, text: str, cancel=None) -> tuple[list[int], list[str]]:
        known = set(self.bpe.vocab[1:self.bpe.n_base])
        unknown = list(dict.fromkeys(c for c in text if c not in known))
        return self.bpe.encode("".join(c for c in text if c in known), cancel=cancel), unknown

    def decode(self, ids) -> str:
        return self.bpe.decode([int(i) for i in ids])

    def to_dict(self) -> dict:
        b = self.bpe
        return {"type": "bpe", "level": b.level, "split_words": b.split_words,
                "alphabet": list(b.vocab[1:b.n_base]), "merges": [list(m) for m in b.merge_ids]}

    @classmethod
    def from_dict(cls, d: dict) -> "TrainedBPE":
        """Rebuild from ``to_dict()``; ValueError on anything malformed."""
        alphabet, merges = d.get("alphabet"), d.get("merges")
        if d.get("level") != "char" or not isinstance(alphabet, list) or not isinstance(merges, list):
            raise ValueError("bpe tokenizer spec needs level 'char', an 'alphabet' and 'merges'")
        if any(not isinstance(c, str) or len(c) != 1 for c in alphabet) or len(set(alphabet)) != len(alphabet):
            raise ValueError("bpe alphabet must be distinct single characters")
        vocab = [UNK] + list(alphabet)
        n_base = len(vocab)
        pairs = []
        for m in merges:
            if (not isinstance(m, list) or len(m) != 2 or not all(isinstance(i, int) for i in m)
                    or not all(0 <= i < len(vocab) for i in m)):
                raise ValueError("bpe merges must be pairs of earlier token ids")
            pairs.append((m[0], m[1]))
            vocab.append(vocab[m[0]] + vocab[m[1]])
        return cls(BPETokenizer("char", bool(d.get("split_words", True)), vocab, pairs, n_base,
                                [], (), len(pairs), "done"))
