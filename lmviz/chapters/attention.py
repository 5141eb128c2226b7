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
# √d_k-scaling example for one query: softmax of raw vs scaled scores

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
