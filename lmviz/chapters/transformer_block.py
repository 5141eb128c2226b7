"""The Transformer-block chapter's computations: LayerNorm and RMSNorm step by step, and how a
token's vector changes with its context, layer by layer.

- LayerNorm vs RMSNorm on one vector, step by step     -> :func:`norm_steps`
- the same token in two sentences, cosine per layer    -> :func:`contextual_cosine`
- the logit lens: every layer's stream read as a guess  -> :func:`logit_lens`, :func:`lens_lead`
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
    from lmviz.chapters.about_model import find_span

    span = find_span(ids, word_ids)
    return None if span is None else span[1] - 1


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


# -----------------------------------------------------------------------------
# the logit lens: the residual stream after each block read through the final norm and the
# unembedding, as if the model stopped there

@dataclass(frozen=True)
class LogitLens:
    rows: list[str]           # where each row's stream was read: "embed", then "block 1" .. "block L"
    top_ids: torch.Tensor     # [R,T] long: the most probable next token at each row and position
    top_probs: torch.Tensor   # [R,T] its probability (softmax over the whole vocabulary)
    last_probs: torch.Tensor  # [R] the probability of the final row's top token at the last position, row by row


@torch.no_grad()
def lens_logits(model, h: torch.Tensor) -> torch.Tensor:
    """Logits [T,V] (float32, CPU) of residual-stream rows ``h`` [T,d]: the model's own final norm
    and unembedding, as its forward pass applies them after the last block."""
    w = model.lm_head.weight
    return model.lm_head(model.ln_f(h.to(w.device, w.dtype))).float().cpu()


@torch.no_grad()
def logit_lens(model, trace) -> LogitLens:
    """The logit lens of a forward trace (``lmviz.model.ModelTrace``): the block input (token
    embedding, plus positions where the model adds them) and each block's output, each read as
    the final hidden state. The last row is the model's own next-token distribution.

    >>> from lmviz.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(vocab_size=7, block_size=8, n_layer=2, n_head=2, n_kv_head=2, d_model=8)).eval()
    >>> lens = logit_lens(m, m.forward_trace(torch.tensor([1, 2, 3])))
    >>> lens.rows, tuple(lens.top_ids.shape)
    (['embed', 'block 1', 'block 2'], (3, 3))
    """
    streams = [trace.x0] + [layer.resid_out for layer in trace.layers]
    tops, probs, rows = [], [], []
    for h in streams:
        p = torch.softmax(lens_logits(model, h), dim=-1)          # [T,V], one row of the grid at a time
        v, i = p.max(dim=-1)
        tops.append(i)
        probs.append(v)
        rows.append(p[-1])                                        # the last position's distribution
    target = int(tops[-1][-1])
    return LogitLens(rows=["embed"] + [f"block {k + 1}" for k in range(len(trace.layers))],
                     top_ids=torch.stack(tops), top_probs=torch.stack(probs),
                     last_probs=torch.stack([r[target] for r in rows]))


@dataclass(frozen=True)
class LensLead:
    token: int                # the final row's top token at the last position (the model's answer)
    first: int                # the first row where it is the top token at the last position
    stays: int                # the first row from which it stays the top token through the last row
    p_first: float            # its probability at row ``first``
    p_final: float            # its probability at the last row (the model's own)


def lens_lead(lens: LogitLens) -> LensLead:
    """Where the model's answer at the last position first leads the lens, and from where it
    stays ahead: the numbers the page's sentence quotes.

    >>> lens = LogitLens(["embed", "block 1", "block 2", "block 3"], torch.tensor([[4], [9], [4], [9]]),
    ...                  torch.tensor([[0.5], [0.2], [0.3], [0.6]]), torch.tensor([0.01, 0.2, 0.1, 0.6]))
    >>> lens_lead(lens)
    LensLead(token=9, first=1, stays=3, p_first=0.2, p_final=0.6)
    """
    col = [int(x) for x in lens.top_ids[:, -1]]
    token = col[-1]
    first = col.index(token)
    stays = len(col) - 1
    while stays > 0 and col[stays - 1] == token:
        stays -= 1
    return LensLead(token=token, first=first, stays=stays, p_first=round(float(lens.last_probs[first]), 6),
                    p_final=round(float(lens.last_probs[-1]), 6))
