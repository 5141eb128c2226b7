"""The attention chapter's computations: the causal mask on the toy sentence, the weighted sum
of values, and softmax of raw against scaled scores.

- the causal mask on the toy sentence                  -> :func:`causal_demo`
- [0.2, 0.3, 0.5] x V = [1.2, 1.6]                     -> :func:`weighted_sum_terms`
- softmax of q.k raw vs divided by sqrt(d_k)           -> :func:`softmax_example`
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lmviz.chapters.about_model import find_span  # noqa: F401 - the pronoun test's, and its callers'

from lmviz.attention import weighted_sum
from lmviz.chapters.embedding import toy_embedding  # noqa: F401  (the doctests use the toy table)
from lmviz.model import causal_mask

# -----------------------------------------------------------------------------
# the causal mask on the toy sentence

@dataclass(frozen=True)
class CausalDemo:
    scores: torch.Tensor     # [n, n] scaled scores, query rows, key columns
    masked: torch.Tensor     # [n, n] the same with the future set to -inf
    weights: torch.Tensor    # [n, n] softmax rows: lower-triangular, each row sums to 1


def causal_demo(X: torch.Tensor) -> CausalDemo:
    """Scores X X^T / sqrt(d) (identity Q and K projections), masked, softmaxed.

    >>> w = causal_demo(toy_embedding().E[:5]).weights
    >>> bool((w.triu(1) == 0).all()), torch.allclose(w.sum(-1), torch.ones(5, dtype=w.dtype))
    (True, True)
    """
    n, d = X.shape
    s = X @ X.T / math.sqrt(d)                                   # [n, n]
    m = s.masked_fill(~causal_mask(n), float("-inf"))            # [n, n]
    return CausalDemo(s, m, torch.softmax(m, dim=-1))


# -----------------------------------------------------------------------------
# the weighted sum of values

@dataclass(frozen=True)
class WeightedSum:
    weights: torch.Tensor    # [n] attention weights of one query
    values: torch.Tensor     # [n, d_v] value vectors
    terms: torch.Tensor      # [n, d_v] w_i * v_i
    output: torch.Tensor     # [d_v] the sum of the terms


def weighted_sum_terms(weights, values) -> WeightedSum:
    """Attention's last step with each term kept (weighted-sum example).

    >>> weighted_sum_terms([0.2, 0.3, 0.5], [[1, 0], [0, 2], [2, 2]]).output.tolist()
    [1.2, 1.6]
    """
    w = torch.as_tensor(weights, dtype=torch.float64)
    v = torch.as_tensor(values, dtype=torch.float64)
    if w.dim() != 1 or v.dim() != 2 or v.shape[0] != w.shape[0]:
        raise ValueError(f"need weights [n] and values [n, d], got {tuple(w.shape)} and {tuple(v.shape)}")
    return WeightedSum(w, v, (w[:, None] * v).round(decimals=12), weighted_sum(w, v))


# -----------------------------------------------------------------------------
# √d_k scaling for one query: softmax of raw vs scaled scores

@dataclass(frozen=True)
class SoftmaxPair:
    d_k: int                 # query/key dimension
    raw: torch.Tensor        # [n_keys] softmax(q.k) — saturates as d_k grows
    scaled: torch.Tensor     # [n_keys] softmax(q.k / sqrt(d_k))


def softmax_example(d_k: int, n_keys: int = 8, seed: int = 0) -> SoftmaxPair:
    """One random query against ``n_keys`` random keys (N(0, 1) entries), both softmaxes.

    >>> p = softmax_example(256); float(p.raw.max()) > float(p.scaled.max())
    True
    """
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=g, dtype=torch.float64)             # [d_k]
    k = torch.randn(n_keys, d_k, generator=g, dtype=torch.float64)     # [n_keys, d_k]
    s = k @ q                                                          # [n_keys]
    return SoftmaxPair(int(d_k), torch.softmax(s, -1), torch.softmax(s / math.sqrt(d_k), -1))


# -----------------------------------------------------------------------------
# why attention: a pronoun must find its referent (把书交给小李，因为他需要参考)

@dataclass(frozen=True)
class PronounAttention:
    query_pos: int                 # the pronoun's last token (0-based): where it has read the pronoun
    ref_span: tuple[int, int]      # [start, stop) token positions of the referent
    share: torch.Tensor            # [L, H] attention weight each head puts on the referent's tokens
    best: tuple[int, int]          # (layer, head), 0-based, of the largest share
    best_share: float              # that share
    row: torch.Tensor              # [query_pos + 1] the best head's attention row from the pronoun
    uniform: float                 # the share a head attending evenly to all visible tokens would give
    mean: float                    # the share averaged over all L * H heads


def pronoun_attention(weights, query_pos: int, ref_span: tuple[int, int]) -> PronounAttention:
    """How much each head's attention from ``query_pos`` lands on the referent's tokens.

    ``weights``: the layers' attention weights, a list of [H, T, T] (ModelTrace layers' ``weights``).

    >>> w = torch.tensor([[[1.0, 0, 0], [0.5, 0.5, 0], [0.7, 0.2, 0.1]]])   # one layer, one head
    >>> p = pronoun_attention([w], 2, (0, 1))
    >>> round(p.best_share, 2), p.best, round(p.uniform, 3)
    (0.7, (0, 0), 0.333)
    """
    a, b = ref_span
    if not 0 <= a < b <= query_pos + 1:
        raise ValueError("the referent must end at or before the query position")
    share = torch.stack([w[:, query_pos, a:b].sum(-1) for w in weights]).float()   # [L,H]
    flat = int(share.reshape(-1).argmax())
    H = share.shape[1]
    best = (flat // H, flat % H)
    return PronounAttention(query_pos=query_pos, ref_span=(a, b), share=share, best=best,
                            best_share=float(share[best]), row=weights[best[0]][best[1], query_pos, :query_pos + 1],
                            uniform=(b - a) / (query_pos + 1), mean=float(share.mean()))


@dataclass(frozen=True)
class PronounControl:
    """One head's look at the referent against two ways to get the same look without reference."""
    referent: float     # the head's share on the referent, from the pronoun
    control: float      # the same head, same sentence with a non-referent in the referent's place
    recency: float      # the same head's share the same distance back, from the sentence's other positions
    uniform: float      # an even spread over the tokens the pronoun can see
    distance: int       # how far back (tokens) the referent's first token is from the pronoun


def recency_share(weights: torch.Tensor, query_pos: int, span: tuple[int, int]) -> float:
    """Mean share that one head's ``weights`` [T, T] put ``query_pos - span`` back from the other
    query positions: what the head gives a token that distance back, whatever token it is.

    >>> w = torch.eye(4)            # a head that looks only at the token itself
    >>> recency_share(w, 3, (3, 4)), recency_share(w, 3, (1, 2))
    (1.0, 0.0)
    """
    a, b = span
    shares = [float(weights[q2, a + q2 - query_pos:b + q2 - query_pos].sum())
              for q2 in range(weights.shape[0])
              if q2 != query_pos and a + q2 - query_pos >= 0 and b + q2 - query_pos <= q2 + 1]
    return sum(shares) / len(shares) if shares else 0.0


def pronoun_control(p: PronounAttention, weights, control_weights, control_query: int,
                    control_span: tuple[int, int], head: tuple[int, int] | None = None) -> PronounControl:
    """Head ``head`` (default: the best head of ``p``, chosen on the referent sentence) tested on the control sentence
    (its layers' weights ``control_weights``, the pronoun at ``control_query``, the non-referent
    at ``control_span``) and against its own look-back on the referent sentence.

    >>> w = [torch.tensor([[[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.7, 0.2, 0.1, 0], [0.1, 0.6, 0.2, 0.1]]])]
    >>> c = pronoun_control(pronoun_attention(w, 3, (1, 2)), w, w, 3, (0, 1))
    >>> round(c.referent, 2), round(c.control, 2), round(c.recency, 2)
    (0.6, 0.1, 0.7)
    """
    layer, head = head or p.best
    a, b = control_span
    ctrl = float(control_weights[layer][head, control_query, a:b].sum())
    return PronounControl(referent=float(p.share[layer, head]), control=ctrl,
                          recency=recency_share(weights[layer][head], p.query_pos, p.ref_span),
                          uniform=p.uniform, distance=p.query_pos - p.ref_span[0])


# -----------------------------------------------------------------------------
# every head against the control: the largest referent-minus-control margin

# How large a best margin is evidence. The threshold comes from a null experiment on SmolLM2-135M
# (270 heads; lmviz.chapters.attention_pronoun.margin_calibration, checked by
# tests/test_chapter_attention_pronoun.py): in NULL_SENTENCES sentences of the pronoun toy's
# patterns with an object in the person's place ("I gave the book to the pen because she..."),
# another object as the control, no word the pronoun can mean, the best of the 270 heads' margins
# was >= MARGIN_EVIDENCE in NULL_AT_EVIDENCE of them and >= MARGIN_WEAK in NULL_AT_WEAK; with the
# person in its place, >= 0.50 in 42 and >= 0.25 in 91. Ratios to the spread over heads (the
# margins' standard deviation, their MAD, the largest margin the other way) separate the two less
# than the margin itself: a swap of objects moves few heads, so its spread is small and its best
# head stands out of it as far as a real referent's does (best / std: median 3.8 null, 3.1 real).
MARGIN_EVIDENCE = 0.5      # a best margin at least this: evidence (a swap of objects: 5 in 100)
MARGIN_WEAK = 0.25         # at least this, below MARGIN_EVIDENCE: weak evidence (a swap: 24 in 100)
NULL_MODEL = "SmolLM2-135M-Instruct"   # the model of the null experiment
NULL_HEADS = 270           # its heads (30 layers x 9): the best of this many margins
NULL_SENTENCES = 100       # the null experiment's sentences
NULL_AT_EVIDENCE = 5       # of them, with a best margin >= MARGIN_EVIDENCE
NULL_AT_WEAK = 24          # of them, with a best margin >= MARGIN_WEAK


def margin_verdict(best_margin: float) -> str:
    """"evidence", "weak" or "none" for the largest referent-minus-control margin over the heads.

    >>> margin_verdict(0.79), margin_verdict(0.3), margin_verdict(0.19)
    ('evidence', 'weak', 'none')
    """
    if best_margin >= MARGIN_EVIDENCE:
        return "evidence"
    return "weak" if best_margin >= MARGIN_WEAK else "none"


@dataclass(frozen=True)
class PronounMargin:
    """Every head's share on the referent minus its share on the control word standing in the
    referent's place (each read from the position that writes the pronoun), and the head with the
    largest margin: a head that looks at the referent because of the word, not its place."""
    referent: torch.Tensor     # [L, H] each head's share on the referent (the referent sentence)
    control: torch.Tensor      # [L, H] each head's share on the control word (the control sentence)
    margin: torch.Tensor       # [L, H] referent - control
    best: tuple[int, int]      # (layer, head), 0-based, of the largest margin
    best_margin: float         # that margin
    row: torch.Tensor          # [query_pos + 1] that head's attention row from the pronoun (referent sentence)
    spread: float              # the margins' standard deviation over all L * H heads
    n_heads: int               # L * H: how many heads were compared
    verdict: str               # margin_verdict(best_margin): "evidence" | "weak" | "none"


def pronoun_margin(weights, query_pos: int, ref_span: tuple[int, int], control_weights, control_query: int,
                   control_span: tuple[int, int]) -> PronounMargin:
    """Every head's margin: its share on the referent (``weights``, the referent sentence's layers
    [H, T, T], from ``query_pos``) minus its share on the control word (``control_weights``, from
    ``control_query``). One forward of each sentence gives all heads (270 for SmolLM2).

    >>> w = [torch.tensor([[[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.7, 0.2, 0.1, 0], [0.1, 0.6, 0.2, 0.1]],
    ...                    [[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.7, 0.2, 0.1, 0], [0.1, 0.8, 0.0, 0.1]]])]
    >>> c = [torch.tensor([[[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.7, 0.2, 0.1, 0], [0.1, 0.5, 0.2, 0.2]],
    ...                    [[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.7, 0.2, 0.1, 0], [0.1, 0.1, 0.1, 0.7]]])]
    >>> m = pronoun_margin(w, 3, (1, 2), c, 3, (1, 2))
    >>> m.best, round(m.best_margin, 2), m.verdict, m.row.tolist()
    ((0, 1), 0.7, 'evidence', [0.10000000149011612, 0.800000011920929, 0.0, 0.10000000149011612])
    """
    a, b = ref_span
    ca, cb = control_span
    if not 0 <= a < b <= query_pos + 1 or not 0 <= ca < cb <= control_query + 1:
        raise ValueError("the referent and the control must end at or before their query positions")
    ref = torch.stack([w[:, query_pos, a:b].sum(-1) for w in weights]).float()                  # [L,H]
    ctl = torch.stack([w[:, control_query, ca:cb].sum(-1) for w in control_weights]).float()    # [L,H]
    margin = ref - ctl
    H = margin.shape[1]
    flat = int(margin.reshape(-1).argmax())
    best = (flat // H, flat % H)
    m = float(margin[best])
    return PronounMargin(referent=ref, control=ctl, margin=margin, best=best, best_margin=m,
                         row=weights[best[0]][best[1], query_pos, :query_pos + 1].float(),
                         spread=float(margin.std()) if margin.numel() > 1 else 0.0,
                         n_heads=margin.numel(), verdict=margin_verdict(m))
