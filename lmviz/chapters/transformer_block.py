"""The Transformer-block chapter's computations: LayerNorm and RMSNorm step by step, and how a
token's vector changes with its context, layer by layer.

- LayerNorm vs RMSNorm on one vector, step by step     -> :func:`norm_steps`
- the same token in two sentences, cosine per layer    -> :func:`contextual_cosine`
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lmviz.model import NORM_EPS

# -----------------------------------------------------------------------------
# LayerNorm and RMSNorm on one vector, step by step

@dataclass(frozen=True)
class NormSteps:
    h: torch.Tensor          # [d] the input vector
    mean: float              # LayerNorm: mean(h)
    centered: torch.Tensor   # [d] LayerNorm: h - mean
    var: float               # LayerNorm: mean((h - mean)^2) (biased, as in torch)
    ln_den: float            # LayerNorm: sqrt(var + eps)
    layernorm: torch.Tensor  # [d] gamma * (h - mean) / sqrt(var + eps) + beta
    mean_sq: float           # RMSNorm: mean(h^2), no mean removed
    rms_den: float           # RMSNorm: sqrt(mean(h^2) + eps)
    rmsnorm: torch.Tensor    # [d] gamma * h / sqrt(mean(h^2) + eps)
    eps: float               # numerical safety term


def norm_steps(h, gamma=None, beta=None, eps: float = NORM_EPS) -> NormSteps:
    """Both norms of one vector, every intermediate kept (gamma = 1, beta = 0 by default).

    >>> s = norm_steps([3.0, 4.0], eps=0.0)  # mean 3.5, var 0.25; mean square 12.5
    >>> s.layernorm.tolist(), [round(x, 4) for x in s.rmsnorm.tolist()]
    ([-1.0, 1.0], [0.8485, 1.1314])
    """
    h = torch.as_tensor(h, dtype=torch.float64).reshape(-1)
    if h.numel() < 1:
        raise ValueError("need a vector with at least one number")
    g = torch.ones_like(h) if gamma is None else torch.as_tensor(gamma, dtype=torch.float64)
    b = torch.zeros_like(h) if beta is None else torch.as_tensor(beta, dtype=torch.float64)
    mu = float(h.mean())
    c = h - mu
    var = float((c * c).mean())
    ln_den = math.sqrt(var + eps)
    ms = float((h * h).mean())
    rms_den = math.sqrt(ms + eps)
    return NormSteps(h=h, mean=mu, centered=c, var=var, ln_den=ln_den, layernorm=g * c / ln_den + b,
                     mean_sq=ms, rms_den=rms_den, rmsnorm=g * h / rms_den, eps=eps)


# -----------------------------------------------------------------------------
# the contextual-vector example: the same token in two sentences, layer by layer

@dataclass(frozen=True)
class ContextCosine:
    stages: list[str]        # "token", "input", "block 1".., "final": where the vectors were read
    cosine: list[float]      # cosine similarity of the two vectors at each stage
    pos_a: int               # token position read in sentence a
    pos_b: int               # token position read in sentence b


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine similarity of two vectors.

    >>> cosine(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]))  # 45 degrees
    0.7071067690849304
    """
    return float(torch.nn.functional.cosine_similarity(a.reshape(1, -1), b.reshape(1, -1))[0])


def find_word(ids: list[int], word_ids: list[int]) -> int | None:
    """Position of the last token of the first occurrence of ``word_ids`` in ``ids`` (None if absent).

    The last token of a word is where the model has read the whole word.

    >>> find_word([5, 1, 2, 3, 1, 2], [1, 2])
    2
    """
    n = len(word_ids)
    if n == 0:
        return None
    for i in range(len(ids) - n + 1):
        if ids[i:i + n] == word_ids:
            return i + n - 1
    return None


def contextual_cosine(trace_a, trace_b, pos_a: int, pos_b: int) -> ContextCosine:
    """Cosine between the vectors of one token in two traces (ModelTrace), stage by stage:
    the token row, the block input (token + position), each block's output, the final hidden.
    """
    la, lb = trace_a.layers, trace_b.layers
    stages = ["token", "input"] + [f"block {i + 1}" for i in range(len(la))] + ["final"]
    pairs = [(trace_a.tok_emb, trace_b.tok_emb), (trace_a.x0, trace_b.x0)]
    pairs += [(a.resid_out, b.resid_out) for a, b in zip(la, lb)]
    pairs += [(trace_a.hidden, trace_b.hidden)]
    return ContextCosine(stages, [cosine(a[pos_a], b[pos_b]) for a, b in pairs], pos_a, pos_b)


@dataclass(frozen=True)
class ContextCurve:
    embed: float               # cosine of the token rows (1.0: one word, one row)
    with_pos: float            # cosine at the block input (token + position)
    blocks: list[float]        # cosine after each block, in order
    final: float               # cosine after the final norm
    lowest: float              # the smallest cosine after the embedding (blocks and final)
    lowest_stage: int          # its index into ContextCosine.stages
    changed: bool              # True when some stage after the input differs from it by > tol


def context_curve(cc: ContextCosine, tol: float = 5e-4) -> ContextCurve:
    """What the cosine curve does after the embedding: the numbers the page's sentence quotes.

    >>> c = context_curve(ContextCosine(["token", "input", "block 1", "block 2", "final"],
    ...                                 [1.0, 1.0, 0.98, 0.99, 0.97], 3, 3))
    >>> c.blocks, c.lowest, c.lowest_stage, c.changed
    ([0.98, 0.99], 0.97, 4, True)
    """
    after = cc.cosine[2:]
    k = min(range(len(after)), key=lambda i: (after[i], i))
    return ContextCurve(embed=cc.cosine[0], with_pos=cc.cosine[1], blocks=list(cc.cosine[2:-1]),
                        final=cc.cosine[-1], lowest=after[k], lowest_stage=k + 2,
                        changed=any(abs(c - cc.cosine[1]) > tol for c in after))
