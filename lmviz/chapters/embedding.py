"""The embedding chapter's computations: the toy table of the notes, lookup by id, adding a
position vector, why order needs positions, the RoPE offset property, and user text -> ids.

- the toy table E [6, 3] and lookup by ID (notes §2)   -> :func:`toy_embedding`, :func:`lookup`
- robot + P3 = [0.85, 0.00, -0.20]                     -> :func:`add_position`
- "robot love" vs "love robot" without positions       -> :func:`order_check`
- RoPE: q.k after rotation depends only on the offset  -> :func:`rope_offset_demo`
- text -> ids the live model can read (every chapter)   -> :func:`encode_for_model`

Each returns a record (a dataclass of tensors/floats) that a figure builder draws.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lmviz.model import rope_rotate
from lmviz.tokenizer import TOY_EN, ContextIds, fit_context

# -----------------------------------------------------------------------------
# the toy embedding table of the notes (000 §2): lookup, position, word order

# Rows 0-4 are the notes' numbers. The notes lost the sixth token and its row; <EOS> fits
# §3-4 (the sequence ends with it), and its row is filled in by lmviz (FILLED_ROWS says so).
_TOY_E = [
    [0.10, -0.20, 0.00],    # <BOS>
    [0.40, 0.10, -0.30],    # I
    [-0.20, 0.70, 0.50],    # love
    [0.80, 0.10, -0.40],    # robot
    [0.05, 0.60, 0.20],     # s
    [-0.30, -0.10, 0.60],   # <EOS>  (filled in: not in the notes)
]
FILLED_ROWS = (5,)                       # rows of the toy table that lmviz made up
TOY_P3 = [0.05, -0.10, 0.20]             # the notes' position vector for position 3


@dataclass(frozen=True)
class ToyEmbedding:
    tokens: list[str]        # the six toy tokens, index = ID
    E: torch.Tensor          # [V=6, d=3] float64 embedding table
    filled: tuple[int, ...]  # rows not given by the notes (filled in by lmviz)


def toy_embedding() -> ToyEmbedding:
    """The notes' 6 x 3 table with the sixth row (<EOS>) filled in.

    >>> e = toy_embedding(); tuple(e.E.shape), e.tokens[3], e.E[3].tolist()
    ((6, 3), 'robot', [0.8, 0.1, -0.4])
    """
    return ToyEmbedding(list(TOY_EN), torch.tensor(_TOY_E, dtype=torch.float64), FILLED_ROWS)


def lookup(E: torch.Tensor, ids) -> torch.Tensor:
    """Embedding lookup is row indexing: ids [n] -> E[ids] [n, d]. Bad IDs raise ValueError.

    >>> lookup(toy_embedding().E, [3, 2]).tolist()  # robot, love
    [[0.8, 0.1, -0.4], [-0.2, 0.7, 0.5]]
    """
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= E.shape[0]):
        raise ValueError(f"IDs must lie in 0..{E.shape[0] - 1}, got {ids.tolist()}")
    return E[ids]


def add_position(token_vec, pos_vec) -> torch.Tensor:
    """Additive positions: the input vector is token row + position vector (position-vector example), rounded to 1e-12.

    >>> add_position(toy_embedding().E[3], TOY_P3).tolist()  # robot at position 3
    [0.85, 0.0, -0.2]
    """
    a = torch.as_tensor(token_vec, dtype=torch.float64)
    b = torch.as_tensor(pos_vec, dtype=torch.float64)
    return (a + b).round(decimals=12)


@dataclass(frozen=True)
class OrderCheck:
    rows_a: torch.Tensor      # [n, d] rows of sequence a, no positions
    rows_b: torch.Tensor      # [n, d] rows of sequence b, no positions
    same_multiset: bool       # the two sequences give the same rows, reordered
    same_sequence: bool       # ... and in the same order (false when the order differs)
    pos_a: torch.Tensor       # [n, d] rows of a plus position vectors
    pos_b: torch.Tensor       # [n, d] rows of b plus position vectors
    same_multiset_with_pos: bool  # with positions added the multisets are no longer equal


def _rows_key(rows: torch.Tensor) -> list[tuple[float, ...]]:
    return sorted(tuple(round(float(x), 9) for x in r) for r in rows)


def order_check(E: torch.Tensor, ids_a, ids_b, P: torch.Tensor) -> OrderCheck:
    """The word-order example: without positions two orderings of the same tokens give the same rows, reordered;
    adding position vectors P [n, d] tells them apart.

    >>> e = toy_embedding().E; P = torch.tensor([[0.0, 0, 0], [0.05, -0.1, 0.2]], dtype=torch.float64)
    >>> c = order_check(e, [3, 2], [2, 3], P); c.same_multiset, c.same_sequence, c.same_multiset_with_pos
    (True, False, False)
    """
    a, b = lookup(E, ids_a), lookup(E, ids_b)
    n = a.shape[0]
    pa, pb = a + P[:n], b + P[: b.shape[0]]
    return OrderCheck(
        rows_a=a, rows_b=b, same_multiset=_rows_key(a) == _rows_key(b),
        same_sequence=a.shape == b.shape and bool(torch.equal(a, b)), pos_a=pa, pos_b=pb,
        same_multiset_with_pos=_rows_key(pa) == _rows_key(pb))


# -----------------------------------------------------------------------------
# RoPE: rotate q and k by position; the score depends only on the offset

@dataclass(frozen=True)
class RopeDemo:
    positions: torch.Tensor  # [P] positions 0..P-1
    q_rot: torch.Tensor      # [P, dh] q rotated to each position
    k_rot: torch.Tensor      # [P, dh] k rotated to each position
    scores: torch.Tensor     # [P, P] q at position m (rows) . k at position n (columns)
    by_offset: torch.Tensor  # [P] score for offset m - n = 0..P-1 (read from column 0)
    max_spread: float        # largest spread of the scores along any diagonal (~0: offset only)


def rope_offset_demo(q, k, n_pos: int = 12, base: float = 10000.0) -> RopeDemo:
    """Rotate fixed q, k [dh] to positions 0..n_pos-1 and score every pair (m, n).

    >>> d = rope_offset_demo([1.0, 0.0, 0.5, 0.2], [0.3, 1.0, -0.2, 0.4], n_pos=6)
    >>> d.max_spread < 1e-9
    True
    """
    q = torch.as_tensor(q, dtype=torch.float64).reshape(1, -1)
    k = torch.as_tensor(k, dtype=torch.float64).reshape(1, -1)
    if q.shape != k.shape or q.shape[-1] % 2:
        raise ValueError("q and k need the same even length")
    pos = torch.arange(n_pos)
    qr = rope_rotate(q.expand(n_pos, -1), pos, base, angle_dtype=torch.float64)  # [P, dh], exact angles
    kr = rope_rotate(k.expand(n_pos, -1), pos, base, angle_dtype=torch.float64)  # [P, dh]
    s = qr @ kr.T                                         # [P, P]
    spread = 0.0
    for off in range(-(n_pos - 1), n_pos):
        dg = torch.diagonal(s, offset=-off)
        spread = max(spread, float(dg.max() - dg.min()))
    return RopeDemo(pos, qr, kr, s, s[:, 0].clone(), spread)


def random_pair(dim: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A query and a key of ``dim`` standard-normal numbers from ``seed``: the RoPE demo's
    vectors, the same on every machine."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(dim, generator=g), torch.randn(dim, generator=g)


# -----------------------------------------------------------------------------
# user text -> ids the live model can read

@dataclass(frozen=True)
class Encoded:
    ids: list[int]           # token ids kept (known tokens, at most max_len)
    tokens: list[str]        # their printable labels
    unknown: list[str]       # pieces the vocabulary lacks (dropped), first-seen order
    truncated: bool          # True when the text had more than max_len known tokens
    context: ContextIds      # the cut itself (total tokens, limit, how many left out)


def encode_for_model(tokenizer, text: str, max_len: int) -> Encoded:
    """Encode ``text`` leniently: unknown pieces are dropped and reported; keep the first max_len.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> e = encode_for_model(CharTokenizer("abc "), "a bad cab", 5); e.tokens, e.unknown, e.truncated
    (['a', '␣', 'b', 'a', '␣'], ['d'], True)
    """
    fit = fit_context(tokenizer, text, max_len)
    labels = [_label(tokenizer.token(i)) for i in fit.ids]
    return Encoded(fit.ids, labels, fit.unknown, fit.cut > 0, fit)


def _label(tok: str) -> str:
    """A visible label for a token (spaces and control characters made visible)."""
    return tok.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"
