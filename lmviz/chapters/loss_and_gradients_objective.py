"""What training optimises, measured: maximum likelihood, and a loss surface that is not convex.

**Self-supervised maximum likelihood.** Nobody labels the text: the label of every position is
simply the next token of the same text (inputs ``x = ids[:-1]``, labels ``y = ids[1:]``). The
training loss is the mean negative log-likelihood of those labels under the model,

    L(θ) = -(1/N) Σ_t ln p_θ(x_{t+1} | x_≤t),

so minimising the loss is maximising the likelihood the model gives the corpus.
:func:`corpus_likelihood` computes the total NLL (nats) and the mean by hand from the model's
log-softmax, next to the model's own ``cross_entropy`` loss on the same batch: they agree.

**Non-convexity.** Train two small models that differ only in their seed (initial weights and
batch order), then walk the straight line between them, θ(α) = (1 − α) θ_A + α θ_B. A convex
loss would stay at or below the chord between the endpoints; the measured curve rises between
them (:func:`loss_line`). Both models are good solutions, and averaging them is not: there are
many minima (hidden units can be permuted, among other symmetries), and gradient descent
guarantees no global one. Gradient noise (the random batches) makes the path jitter and can help
it leave a poor region, but it does not make the surface convex or promise the best minimum.
With ``same_init`` both models start from the *same* weights and see batches in a different
order: the noise alone is enough to land them in different valleys (a barrier between them too;
0.39 nats for LINE_SEEDS here, against 0.44 from different starts).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from lmviz.data import pad_batch
from lmviz.model import GPT
from lmviz.train import TrainConfig, Trainer

__all__ = ["Likelihood", "corpus_likelihood", "LINE_CONFIG", "LINE_SEEDS", "LINE_TEXT_CHARS", "LossLine",
           "train_endpoints", "eval_windows", "interpolate", "loss_line", "nonconvexity",
           "PositionLoss", "loss_by_position"]

MAX_TOKENS = 8192  # corpus_likelihood scores at most this many next tokens (one batch in memory)


# -----------------------------------------------------------------------------
# maximum likelihood

@dataclass(frozen=True)
class Likelihood:
    n_tokens: int              # next tokens scored (labels), N
    n_windows: int             # windows of block_size the text was cut into (the batch size B)
    block_size: int            # the model's context length, T
    total_nll: float           # -Σ ln p(label): the negative log-likelihood of the text, nats
    mean_nll: float            # total_nll / n_tokens, nats per token (computed here, by hand)
    model_loss: float          # the model's own F.cross_entropy on the same batch
    ppl: float                 # exp(mean_nll)
    bits_per_token: float      # mean_nll / ln 2
    inputs: tuple[int, ...]    # the first window's input ids (first `show` of them)
    labels: tuple[int, ...]    # their labels: the same text shifted by one (self-supervision)
    label_probs: tuple[float, ...]  # p(label | context) for those positions
    unknown: tuple[str, ...]   # characters the tokenizer does not know (dropped before scoring)
    truncated: bool            # the text had more than max_tokens labels; the rest was not scored


@torch.no_grad()
def corpus_likelihood(model: GPT, tokenizer, text: str, max_tokens: int = MAX_TOKENS,
                      show: int = 16) -> Likelihood:
    """The mean -log-likelihood of ``text`` under ``model`` = its training loss on that text.

    The text becomes one batch of non-overlapping windows of block_size inputs (labels shifted
    by one; the last window padded with label -1, which the loss skips), and one forward pass
    scores every label. ValueError when fewer than two known tokens remain.
    """
    ids, unknown = tokenizer.encode_lossy(text)
    truncated = len(ids) - 1 > max_tokens
    ids = ids[:max_tokens + 1]
    if len(ids) < 2:
        raise ValueError("need at least two known tokens")
    T = model.cfg.block_size
    x = torch.tensor(ids[:-1], dtype=torch.long)                        # [N]
    y = torch.tensor(ids[1:], dtype=torch.long)                         # [N] labels: x shifted by one
    N = x.numel()
    B = math.ceil(N / T)
    # [B,W], -1: not scored; W = min(T, N), the longest window: a real model's T is its whole
    # context (8,192 for SmolLM2), and padding 148 tokens to it made /loss-and-gradients 60x slower
    xb, yb = pad_batch([ids[b * T: b * T + T + 1] for b in range(B)])
    W = xb.shape[1]
    xb, yb = xb.to(model.device), yb.to(model.device)
    was_training = model.training
    model.eval()
    try:
        logits, loss = model(xb, yb)                                    # [B,W,V], scalar
    finally:
        model.train(was_training)
    logp = F.log_softmax(logits.float(), dim=-1).view(B * W, -1)[:N]    # [N,V]
    lp = logp.gather(1, y.to(logp.device)[:, None])[:, 0].double().cpu()  # [N] ln p(label)
    total = float(-lp.sum())
    mean = total / N
    k = min(show, N, T)
    return Likelihood(
        n_tokens=N, n_windows=B, block_size=T, total_nll=total, mean_nll=mean,
        model_loss=float(loss), ppl=math.exp(min(mean, 700.0)), bits_per_token=mean / math.log(2),
        inputs=tuple(x[:k].tolist()), labels=tuple(y[:k].tolist()),
        label_probs=tuple(lp[:k].exp().tolist()), unknown=tuple(unknown), truncated=truncated)


# -----------------------------------------------------------------------------
# non-convexity: the loss along a line between two trained models

# lmviz's choice (the notes give no numbers): a one-block model, 32 wide, 400 steps on the first
# LINE_TEXT_CHARS characters of the English corpus: about 2 s for both models on one CPU core, and
# trained far enough that both endpoints beat their midpoint clearly (barrier ≈ 0.44 nats here).
LINE_TEXT_CHARS = 40_000
LINE_CONFIG = TrainConfig(n_layer=1, n_head=2, d_model=32, block_size=16, batch_size=16, max_steps=400,
                          lr=1e-2, warmup_steps=10, eval_every=1000, eval_iters=1, sample_len=0)
LINE_SEEDS = (1, 2)   # the two seeds (weights and batch order); the test pins the barrier for them


@dataclass(frozen=True)
class LossLine:
    alphas: tuple[float, ...]  # α along the line θ(α) = (1-α) θ_A + α θ_B, increasing
    losses: tuple[float, ...]  # mean loss (nats/token) of θ(α) on the fixed evaluation windows
    loss_a: float              # the loss of model A itself (α = 0)
    loss_b: float              # the loss of model B itself (α = 1)
    mid_loss: float            # the loss at α = 0.5
    chord_gap: float           # mid_loss - (loss_a + loss_b)/2: > 0 is impossible for a convex loss
    barrier: float             # max loss for α in [0, 1] minus max(loss_a, loss_b): the hill between
    seeds: tuple[int, int]     # seeds of A and B (0, 0 when the models were given)
    steps: int                 # optimizer steps each model took (0 when the models were given)
    same_init: bool = False    # B started from A's initial weights: only the batch order differed


def train_endpoints(text: str, cfg: TrainConfig = LINE_CONFIG, seeds=LINE_SEEDS, device="cpu",
                    stop=None, same_init: bool = False) -> tuple[Trainer, Trainer]:
    """Two Trainers on the same text and tokenizer, differing only in seed, each run to max_steps.

    The seed sets the initial weights and the batch order; with ``same_init`` B starts from A's
    initial weights, so only the gradient noise (which batches, in which order) differs.
    ``stop`` (a threading.Event) ends both runs early. The tokenizer is built once and shared, so
    the two models index the same vocabulary and can be averaged.
    """
    a = Trainer(text, replace(cfg, seed=int(seeds[0])), device=device, prompt="")
    b = Trainer(text, replace(cfg, seed=int(seeds[1])), device=device, tokenizer=a.tokenizer, prompt="")
    if same_init:
        b.model.load_state_dict(a.model.state_dict())   # in place: b's optimizer keeps its parameters
    for tr in (a, b):
        while not tr.done and not (stop is not None and stop.is_set()):
            tr.step(10)
    return a, b


def eval_windows(ids: torch.Tensor, block_size: int, n: int = 32, seed: int = 0):
    """n fixed windows x, y [n, T] of ids (y = x shifted by one), drawn with their own generator."""
    g = torch.Generator().manual_seed(seed)
    ix = torch.randint(len(ids) - block_size, (n,), generator=g)       # [n]
    offs = torch.arange(block_size)                                    # [T]
    ids = ids.cpu()
    return ids[ix[:, None] + offs], ids[ix[:, None] + offs + 1]


def interpolate(model_a: GPT, model_b: GPT, alpha: float) -> GPT:
    """A new CPU, eval-mode GPT with weights (1 - α) θ_A + α θ_B (α = 0 and 1 give A and B exactly)."""
    if model_a.cfg != model_b.cfg:
        raise ValueError("the two models have different configs; only the same shape can be averaged")
    sa, sb = model_a.state_dict(), model_b.state_dict()
    a = float(alpha)
    m = GPT(model_a.cfg)
    m.load_state_dict({k: (1.0 - a) * sa[k].detach().float().cpu() + a * sb[k].detach().float().cpu()
                       for k in sa})
    return m.eval()


@torch.no_grad()
def _loss(model: GPT, x, y) -> float:
    return float(model(x.to(model.device), y.to(model.device))[1])


def loss_line(model_a: GPT, model_b: GPT, x: torch.Tensor, y: torch.Tensor, alphas=None,
              seeds=(0, 0), steps: int = 0, same_init: bool = False) -> LossLine:
    """The loss of θ(α) on fixed windows x, y [n, T] at each α (default 31 points in [-0.25, 1.25]).

    α = 0, 0.5 and 1 are always included; the endpoint losses are those of the models themselves.
    """
    if alphas is None:
        alphas = torch.linspace(-0.25, 1.25, 31).tolist()
    alphas = sorted(set(round(float(a), 6) for a in alphas) | {0.0, 0.5, 1.0})
    losses = [_loss(interpolate(model_a, model_b, a), x, y) for a in alphas]
    ma, mb = model_a.training, model_b.training
    model_a.eval(), model_b.eval()
    try:
        loss_a, loss_b = _loss(model_a, x, y), _loss(model_b, x, y)
    finally:
        model_a.train(ma), model_b.train(mb)
    mid = losses[alphas.index(0.5)]
    inside = [l for a, l in zip(alphas, losses) if 0.0 <= a <= 1.0]
    return LossLine(alphas=tuple(alphas), losses=tuple(losses), loss_a=loss_a, loss_b=loss_b,
                    mid_loss=mid, chord_gap=mid - 0.5 * (loss_a + loss_b),
                    barrier=max(inside) - max(loss_a, loss_b),
                    seeds=(int(seeds[0]), int(seeds[1])), steps=int(steps), same_init=bool(same_init))


def nonconvexity(text: str, cfg: TrainConfig = LINE_CONFIG, seeds=LINE_SEEDS, alphas=None,
                 n_windows: int = 32, stop=None, same_init: bool = False) -> LossLine:
    """Train two models of different seeds on ``text`` (CPU) and measure the loss along the line
    between them on fixed held-out windows. Run it in a background job: a few seconds.
    ``same_init``: both start from the same weights, and only the gradient noise differs."""
    a, b = train_endpoints(text, cfg, seeds, device="cpu", stop=stop, same_init=same_init)
    x, y = eval_windows(a.val_ids, cfg.block_size, n_windows, seed=0)
    return loss_line(a.model, b.model, x, y, alphas, seeds=seeds, steps=min(a.steps_done, b.steps_done),
                     same_init=same_init)


# -----------------------------------------------------------------------------
# holding a context is not using it: the loss at each position of the window

@dataclass(frozen=True)
class PositionLoss:
    positions: tuple[int, ...]   # 1..T: how many tokens the model has read when it predicts
    losses: tuple[float, ...]    # mean loss (nats) at each position over the windows
    n_windows: int               # non-overlapping windows of T + 1 tokens scored
    plateau: float               # mean loss over the last quarter of the window
    used_until: int              # first position from which no position's loss is above the
    #                              plateau by more than `tolerance` + its `spread`: the curve is level
    tolerance: float             # nats
    spread: tuple[float, ...]    # two standard errors of each position's mean over the windows
    #                              (nats): how far chance alone moves a point (0 with one window)


LOSS_LOGIT_FLOATS = 2**25     # logits held at once by loss_by_position (128 MiB): 64 windows of a
#                               small model, one short batch of a 50k-token vocabulary
LOSS_FLOPS = 1e11             # forward FLOPs loss_by_position may spend (~1 s on one CPU core): all
#                               128 windows of lmviz's own models, 2 windows of 128 of SmolLM2 or
#                               GPT-2 small (2e11 and windows of 256 kept /beyond at 3.1-3.2 s with
#                               SmolLM2, 2 s of it here, over its 3 s target)
LOSS_WINDOW = 128             # longest window it measures (lmviz's models: 64; a pretrained model's
#                               context is cut to this many positions, two windows at least)


@torch.no_grad()
def loss_by_position(model: GPT, ids, n_windows: int = 128, tolerance: float = 0.1) -> PositionLoss:
    """The model's mean next-token loss at each position of its context window, on ``ids`` [N]
    cut into non-overlapping windows from the start. Falls while extra context helps, then flat:
    past ``used_until`` the window holds more tokens than the model puts to use.
    A position's mean over a hundred windows still scatters by a tenth of a nat or more, so
    ``used_until`` asks that each later point stay within ``tolerance`` of the plateau give or take
    that point's own ``spread``: where the spread is wider than the tolerance, a small gain past
    it would not show (the page says so).
    The window is the model's block_size, at most LOSS_WINDOW; at most LOSS_FLOPS of forward
    passes and 4 x LOSS_LOGIT_FLOATS logits (at least one window), LOSS_LOGIT_FLOATS at a time,
    are spent on it.
    ValueError when ids hold less than one window."""
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()
    T = min(model.cfg.block_size, LOSS_WINDOW)
    by_flops = max(1, int(LOSS_FLOPS // (2 * model.num_params() * T)))
    by_logits = max(1, 4 * LOSS_LOGIT_FLOATS // (T * model.cfg.vocab_size))   # the softmaxes' cost
    n = min(int(n_windows), (len(ids) - 1) // T, by_flops, by_logits)
    if n < 1:
        raise ValueError(f"need at least block_size + 1 = {T + 1} tokens, got {len(ids)}")
    batch = max(1, min(64, LOSS_LOGIT_FLOATS // (T * model.cfg.vocab_size)))
    starts = torch.arange(n) * T
    offs = torch.arange(T)
    was_training = model.training
    model.eval()
    total = torch.zeros(T, dtype=torch.float64)
    squares = torch.zeros(T, dtype=torch.float64)
    try:
        for i in range(0, n, batch):                                 # a batch at a time: bounded memory
            s = starts[i:i + batch]
            x = ids[s[:, None] + offs].to(model.device)              # [b,T]
            y = ids[s[:, None] + offs + 1].to(model.device)          # [b,T]
            logits = model(x)[0].float()                             # [b,T,V]
            nll = F.cross_entropy(logits.transpose(1, 2), y, reduction="none").double().cpu()   # [b,T]
            total += nll.sum(0)
            squares += (nll * nll).sum(0)
    finally:
        model.train(was_training)
    mean = total / n                                                 # [T]
    var = ((squares - n * mean * mean) / (n - 1)).clamp(min=0) if n > 1 else torch.zeros(T, dtype=torch.float64)
    spread = (2 * (var / n).sqrt()).tolist()                         # [T] two standard errors
    per = mean.tolist()
    q = max(1, T // 4)
    plateau = sum(per[-q:]) / q
    used = level_from(per, spread, plateau, tolerance)
    return PositionLoss(tuple(range(1, T + 1)), tuple(per), n, plateau, used, float(tolerance), tuple(spread))


def level_from(losses, spread, plateau: float, tolerance: float) -> int:
    """The first position (from 1) after which no loss is above ``plateau`` by more than
    ``tolerance`` plus its own ``spread``: the last point above, plus one (1 when none is). A
    point that only touches the level before the curve rises again is not where it levels.

    >>> level_from([2.0, 1.2, 1.9, 1.2, 1.2], [0.0] * 5, 1.2, 0.1)
    4
    >>> level_from([2.0, 1.2, 1.9, 1.2, 1.2], [0.6] * 5, 1.2, 0.1)
    2
    """
    above = [i + 1 for i, (v, e) in enumerate(zip(losses, spread)) if v > plateau + tolerance + e]
    return max(above) + 1 if above else 1
