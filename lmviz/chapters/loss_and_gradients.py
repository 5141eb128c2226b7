"""The loss-and-gradients chapter's computations: one SGD step, softmax and cross-entropy,
perplexity, the one-parameter model and mini-batch gradient noise.

- ``sgd_step``: 0.80 - 0.10 x 0.30 = 0.77, by hand and with torch.optim.SGD.
- ``cross_entropy``: softmax [2, 1, -1] -> [0.705, 0.259, 0.035]; -ln 0.259 = 1.35.
- ``perplexity``: exp(mean natural-log loss) of a model on a text.
- ``one_param_step`` / ``one_param_autograd``: y_hat = w x stepped by hand and by autograd.
- ``gradient_noise``: mini-batch gradients of one weight matrix against a large-batch one.

The torch functions never write into a model (no .grad, no parameter change): gradients come from
``torch.autograd.grad``, so a model shared by many sessions can be used as is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from lmviz.sampling import softmax_t

# -----------------------------------------------------------------------------
# one SGD step on one embedding entry

@dataclass(frozen=True)
class SGDStep:
    param: float      # value before the step
    grad: float       # dL/dparam
    lr: float         # learning rate eta
    new: float        # param - lr * grad, by hand
    new_torch: float  # the same step taken by torch.optim.SGD on a tensor


def sgd_step(param: float = 0.80, grad: float = 0.30, lr: float = 0.10) -> SGDStep:
    """The one-SGD-step example: theta <- theta - eta * gradient, by hand and by torch.optim.SGD.

    >>> s = sgd_step()
    >>> round(s.new, 2), round(s.new_torch, 2)
    (0.77, 0.77)
    """
    p = torch.nn.Parameter(torch.tensor([param], dtype=torch.float64))
    p.grad = torch.tensor([grad], dtype=torch.float64)
    torch.optim.SGD([p], lr=lr).step()
    return SGDStep(param, grad, lr, param - lr * grad, float(p.detach()[0]))


# -----------------------------------------------------------------------------
# softmax and cross-entropy

@dataclass(frozen=True)
class CrossEntropy:
    logits: list[float]   # z, [V]
    probs: list[float]    # softmax(z), [V], sums to 1
    target: int           # index of the right answer
    loss: float           # -ln probs[target]
    grad: list[float]     # dL/dz = probs - onehot(target), [V]: push the answer up, the rest down
    torch_loss: float     # F.cross_entropy on the same logits (the same number)


def cross_entropy(logits: Sequence[float], target: int) -> CrossEntropy:
    """The softmax and cross-entropy examples: softmax of the logits, the loss of the right answer and its gradient.

    >>> ce = cross_entropy([2.0, 1.0, -1.0], 1)
    >>> [round(p, 3) for p in ce.probs], round(ce.loss, 2)
    ([0.705, 0.259, 0.035], 1.35)
    """
    z = torch.tensor(list(logits), dtype=torch.float64)
    if not 0 <= int(target) < len(z):
        raise ValueError(f"target must be in [0, {len(z)}), got {target}")
    p = softmax_t(z)                                                         # [V]
    onehot = F.one_hot(torch.tensor(int(target)), len(z)).double()
    zz = z.clone().requires_grad_(True)
    tl = F.cross_entropy(zz[None], torch.tensor([int(target)]))
    (g,) = torch.autograd.grad(tl, zz)
    tl = tl.detach()
    assert torch.allclose(g, p - onehot), "autograd agrees with p - onehot"
    return CrossEntropy(z.tolist(), p.tolist(), int(target), float(-torch.log(p[int(target)])),
                        (p - onehot).tolist(), float(tl))


# -----------------------------------------------------------------------------
# perplexity

@dataclass(frozen=True)
class Perplexity:
    n_tokens: int           # tokens predicted (every token but the first)
    n_chars: int            # characters of the text those tokens cover
    n_words: int            # whitespace-separated words of the text
    total_nll: float        # -sum ln P(x_t | x_<t), nats
    mean_loss: float        # total_nll / n_tokens
    ppl: float              # exp(mean_loss): "as unsure as a uniform choice among ppl tokens"
    ppl_per_word: float     # exp(total_nll / n_words): the same probability, counted per word
    bits_per_char: float    # total_nll / n_chars / ln 2
    vocab_size: int         # V: a uniform model would have ppl = V
    unknown: list[str]      # dropped characters


def perplexity_from_losses(losses: Sequence[float]) -> float:
    """PPL = exp(mean natural-log loss).

    >>> round(perplexity_from_losses([math.log(4), math.log(4)]), 6)
    4.0
    """
    losses = list(losses)
    if not losses:
        raise ValueError("no losses")
    return math.exp(sum(losses) / len(losses))


@torch.no_grad()
def perplexity(model, tokenizer, text: str, max_tokens: int = 4096) -> Perplexity:
    """The perplexity example: the model's perplexity on ``text`` (natural log, averaged per token).

    The text is scored in windows of block_size + 1 tokens that overlap by one, so every token
    but the first is predicted once; the context restarts at each window (a page caveat).
    """
    ids, unknown = tokenizer.encode_lossy(text)
    ids = ids[:max_tokens]
    if len(ids) < 2:
        raise ValueError("need at least two known tokens")
    data = torch.tensor(ids, dtype=torch.long)
    T = model.cfg.block_size
    total, n = 0.0, 0
    for s in range(0, len(ids) - 1, T):
        chunk = data[s: s + T + 1].to(model.device)[None]                   # [1,<=T+1]
        logits, _ = model(chunk[:, :-1])
        nll = F.cross_entropy(logits[0].float(), chunk[0, 1:], reduction="sum")
        total += float(nll)
        n += chunk.shape[1] - 1
    covered = tokenizer.decode(ids)
    n_words = max(1, len(covered.split()))
    return Perplexity(
        n_tokens=n, n_chars=len(covered), n_words=n_words, total_nll=total, mean_loss=total / n,
        ppl=math.exp(total / n), ppl_per_word=math.exp(min(700.0, total / n_words)),
        bits_per_char=total / len(covered) / math.log(2), vocab_size=model.cfg.vocab_size,
        unknown=unknown)


# -----------------------------------------------------------------------------
# the one-parameter model y_hat = w x

@dataclass(frozen=True)
class OneParamStep:
    w: float         # weight before the step
    y_hat: float     # w x
    loss: float      # (w x - y)^2 / 2
    grad: float      # dL/dw = (w x - y) x
    w_new: float     # w - lr grad
    y_hat_new: float  # w_new x
    loss_new: float  # loss at w_new


def _one_param_loss(w: float, x: float, y: float) -> float:
    return (w * x - y) ** 2 / 2


def one_param_step(w: float = 1.0, x: float = 2.0, y: float = 6.0, lr: float = 0.1) -> OneParamStep:
    """The one-parameter model by hand: L = (w x - y)^2 / 2, dL/dw = (w x - y) x, w <- w - lr dL/dw.

    >>> s = one_param_step()
    >>> s.loss, s.grad, round(s.w_new, 6), round(s.y_hat_new, 6), round(s.loss_new, 6)
    (8.0, -8.0, 1.8, 3.6, 2.88)
    """
    grad = (w * x - y) * x
    w_new = w - lr * grad
    return OneParamStep(w, w * x, _one_param_loss(w, x, y), grad, w_new, w_new * x,
                        _one_param_loss(w_new, x, y))


@dataclass(frozen=True)
class Contraction:
    best: float        # the w with zero loss: y / x
    curvature: float   # d²L/dw² = x² (the same at every w: the loss is a parabola)
    factor: float      # 1 - lr * x²: each step multiplies the distance to `best` by this


def one_param_contraction(x: float = 2.0, y: float = 6.0, lr: float = 0.1) -> Contraction:
    """Why a learning rate converges or diverges on L = (w x - y)^2 / 2: one step maps
    w - best to (1 - lr x^2)(w - best), so |factor| < 1 converges.

    >>> c = one_param_contraction(2.0, 6.0, 0.1)
    >>> c.best, c.curvature, round(c.factor, 6)
    (3.0, 4.0, 0.6)
    """
    return Contraction(y / x, x * x, 1 - lr * x * x)


def one_param_autograd(w: float = 1.0, x: float = 2.0, y: float = 6.0, lr: float = 0.1) -> OneParamStep:
    """The one-parameter model by torch.autograd: the same record, with the derivative computed by backward().

    >>> one_param_autograd().grad
    -8.0
    """
    wt = torch.tensor(float(w), dtype=torch.float64, requires_grad=True)
    loss = (wt * x - y) ** 2 / 2
    loss.backward()
    grad = float(wt.grad)
    with torch.no_grad():
        w_new = float(wt - lr * wt.grad)
    return OneParamStep(float(w), float(wt.detach() * x), float(loss.detach()), grad, w_new, w_new * x,
                        _one_param_loss(w_new, x, y))


def one_param_descent(w: float = 1.0, x: float = 2.0, y: float = 6.0, lr: float = 0.1,
                      steps: int = 10) -> list[OneParamStep]:
    """``steps`` gradient steps in a row; each record starts where the previous one ended.

    With x = 2 each step multiplies the error (w - 3) by (1 - 4 lr): it shrinks for lr < 0.5
    and grows (diverges) for lr > 0.5.
    """
    out = []
    for _ in range(int(steps)):
        s = one_param_step(w, x, y, lr)
        out.append(s)
        w = s.w_new
        if not math.isfinite(w) or abs(w) > 1e12:
            break
    return out


# -----------------------------------------------------------------------------
# mini-batch gradient noise on a real model

@dataclass(frozen=True)
class NoiseRow:
    batch_size: int           # sequences per mini-batch
    cosines: list[float]      # cos(g_batch, g_ref) for each draw
    rel_errors: list[float]   # |g_batch - g_ref| / |g_ref| for each draw
    coords: list[tuple[float, float]]  # each draw projected on (g_ref direction, main noise direction)


@dataclass(frozen=True)
class GradientNoise:
    param: str                # name of the weight matrix the gradients are taken for
    shape: tuple[int, ...]    # its shape
    ref_batch: int            # sequences in the reference ("full") batch
    block: int                # tokens per sequence
    ref_norm: float           # |g_ref|
    ref_loss: float           # the model's loss on the reference batch
    rows: list[NoiseRow]      # one per batch size


@dataclass(frozen=True)
class NoisePlan:
    """The size of one gradient-noise measurement (``gradient_noise``'s arguments), fitted to a
    model: the full one for a small model, a smaller one for a large model (the page says so)."""
    batch_sizes: tuple[int, ...]  # the mini-batch sizes compared
    draws: int                    # independent mini-batches per size
    ref_batch: int                # windows in the reference batch
    block: int                    # tokens per window
    seconds: float                # the estimated time on the device (6 FLOPs per parameter and token)
    full: bool                    # the full measurement (nothing cut)

    @property
    def tokens(self) -> int:
        return self.block * (self.ref_batch + self.draws * sum(self.batch_sizes))


NOISE_PLANS = (((1, 4, 16, 64), 5, 256, 32),   # the full measurement, then smaller ones, the last the least
               ((1, 4, 16, 64), 3, 128, 32),   # that still shows the cloud tighten
               ((1, 4, 16), 3, 64, 16),
               ((1, 4, 16), 2, 32, 16))
NOISE_S = {"cpu": 20.0, "cuda": 5.0}          # seconds one press may take (estimated before it starts)


def noise_plan(params: int, device: str = "cpu") -> NoisePlan:
    """The largest of NOISE_PLANS whose estimate fits NOISE_S on ``device`` for a model of
    ``params`` parameters (the smallest when none does).

    >>> noise_plan(1_310_000).full, noise_plan(134_515_008).ref_batch
    (True, 32)
    """
    from lmviz.limits import DECODE_FLOPS, device_kind

    kind = device_kind(device)
    plan = None
    for i, (sizes, draws, ref, block) in enumerate(NOISE_PLANS):
        tokens = block * (ref + draws * sum(sizes))
        plan = NoisePlan(sizes, draws, ref, block, 6 * params * tokens / DECODE_FLOPS[kind], i == 0)
        if plan.seconds <= NOISE_S[kind]:
            break
    return plan


def default_noise_param(model) -> str:
    """The last block's query matrix: its gradient needs a backward pass through one block only."""
    return f"blocks.{model.cfg.n_layer - 1}.attn.c_q.weight"


def _grad(model, param: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float]:
    """(dL/dparam as a flat float64 vector, the loss) for one batch, without touching .grad."""
    with torch.enable_grad():
        _, loss = model(x, y)
        (g,) = torch.autograd.grad(loss, [param])
    return g.detach().double().flatten().cpu(), float(loss.detach())


def gradient_noise(model, data: torch.Tensor, batch_sizes: Sequence[int] = (1, 4, 16, 64),
                   draws: int = 6, ref_batch: int = 256, block: int = 32, param: str | None = None,
                   seed: int = 0, chunk: int = 64) -> GradientNoise:
    """Gradients of the loss w.r.t. one weight matrix, from mini-batches of several sizes, compared
    with the gradient of one large reference batch drawn separately (cosine and relative error).

    data: token ids [N] (a training text). Windows of ``block`` tokens are drawn at random with a
    seeded generator; the reference batch is summed in chunks of ``chunk`` sequences.
    """
    from lmviz.data import get_batch

    model_params = dict(model.named_parameters())
    name = param or default_noise_param(model)
    if name not in model_params:
        raise ValueError(f"the model has no parameter {name!r}")
    p = model_params[name]
    block = min(int(block), model.cfg.block_size)
    data = torch.as_tensor(data, dtype=torch.long)
    if len(data) < block + 1:
        raise ValueError(f"need at least {block + 1} tokens of text, got {len(data)}")
    g = torch.Generator().manual_seed(seed)
    dev = model.device

    ref, ref_loss, done = None, 0.0, 0
    while done < ref_batch:
        b = min(chunk, ref_batch - done)
        x, y = get_batch(data, b, block, g)
        gi, li = _grad(model, p, x.to(dev), y.to(dev))
        ref = gi * b if ref is None else ref + gi * b
        ref_loss += li * b
        done += b
    ref, ref_loss = ref / ref_batch, ref_loss / ref_batch                  # [P], mean over sequences
    ref_norm = float(ref.norm())
    u = ref / ref_norm                                                      # [P] unit direction

    grads = {}
    for bs in batch_sizes:
        grads[int(bs)] = [_grad(model, p, *(t.to(dev) for t in get_batch(data, int(bs), block, g)))[0]
                          for _ in range(int(draws))]
    # the main direction of the noise: first principal direction of all residuals orthogonal to u
    resid = torch.stack([gb - (gb @ u) * u for gs in grads.values() for gb in gs])  # [n,P]
    v = torch.linalg.svd(resid, full_matrices=False).Vh[0]                  # [P]
    v = v - (v @ u) * u
    v = v / v.norm()
    rows = []
    for bs, gs in grads.items():
        rows.append(NoiseRow(
            batch_size=bs,
            cosines=[float(gb @ ref / (gb.norm() * ref_norm)) for gb in gs],
            rel_errors=[float((gb - ref).norm() / ref_norm) for gb in gs],
            coords=[(float(gb @ u), float(gb @ v)) for gb in gs]))
    return GradientNoise(name, tuple(p.shape), ref_batch, block, ref_norm, ref_loss, rows)
