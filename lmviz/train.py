"""Train a small GPT in front of an audience: presets, a Trainer, and the records it returns.

    >>> cfg = PRESETS["tiny"]
    >>> cfg.validate()
    []

The Trainer is the nanoGPT loop, made observable: AdamW (weight decay on matrices only),
linear warm-up then cosine decay to ``min_lr_frac * lr``, gradient clipping, a train/validation
split (the last ``val_frac`` of the text, never seen in training), and every step returns a
``StepMetrics`` record (loss, learning rate, gradient norm before clipping, tokens/s).
``evaluate()`` estimates train/validation loss and perplexity on fixed batches, ``sample()``
continues a fixed prompt so the audience sees the text improve. A fine-tune (``plan_finetune``,
``finetune_trainer``: the room's sentences) is the same loop from a copy of a trained model.

Determinism: the weights are initialised and the batches drawn from the Trainer's own
``torch.Generator`` (never the global RNG, which other threads of the app also use), so on CPU
the same config, text and seed give the same loss curve bit for bit (a test).
On CUDA the forward pass runs under bf16 autocast; the weights and AdamW stay fp32.

Tokenizers: characters (``CharTokenizer``) or a BPE trained on the corpus by ``lmviz.bpe``
(wrapped by ``TrainedBPE`` so it has the same interface and can be saved in a checkpoint).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Callable, Iterator

import torch

from .bpe import TrainedBPE
from .data import split
from .induction import PROBE_HALF as INDUCTION_PROBE, PROMPT as INDUCTION_PROMPT, induction_text
from .limits import CONFIG_BOUNDS, SaidError, check_budget
from .model import GPT, GPTConfig, init_weights
from .sampling import generate, model_step
from .cancel import check_cancel
from .tokenizer import CharTokenizer

TOKENIZERS = ("char", "bpe")
MAX_TEXT_CHARS = 2_000_000    # user text / upload cap (characters) the trainer accepts


# -----------------------------------------------------------------------------
# config

@dataclass(frozen=True)
class TrainConfig:
    # model
    n_layer: int = 4              # transformer blocks
    n_head: int = 4               # attention heads per block
    d_model: int = 128            # width of the residual stream (divisible by n_head)
    block_size: int = 64          # context length of a training window
    # optimisation
    batch_size: int = 12          # windows per step
    max_steps: int = 2000         # steps of the whole run (the cosine schedule ends here)
    lr: float = 1e-3              # peak learning rate
    min_lr_frac: float = 0.1      # the cosine decays to lr * min_lr_frac
    warmup_steps: int = 50        # linear warm-up from lr/warmup_steps to lr
    weight_decay: float = 0.1     # AdamW decay on matrices (not on biases, norms)
    grad_clip: float = 1.0        # clip the global gradient norm to this (0: no clipping)
    beta2: float = 0.99           # AdamW's second-moment decay (0.99: small batches, nanoGPT)
    # data
    tokenizer: str = "char"       # char | bpe
    bpe_merges: int = 200         # merges when tokenizer == "bpe"
    val_frac: float = 0.1         # last fraction of the text kept for validation
    aligned: bool = False         # a window is one whole sequence of block_size + 1 tokens (a corpus of
    #                               such sequences end to end, e.g. lmviz.induction's), not any stretch
    # monitoring
    eval_every: int = 50          # steps between validation estimates and samples
    eval_iters: int = 4           # batches per loss estimate
    sample_len: int = 120         # tokens generated from the fixed prompt at each evaluation
    seed: int = 1337              # weights, batches and samples all derive from it
    induction_probe: int = 0      # tokens in the random run that each evaluation probes, then repeated
    #                               (lmviz.induction.probe: every head's prefix-matching score, the
    #                               in-context-learning score); 0: no probe

    def validate(self) -> list[str]:
        """Human-readable problems with this config (empty when it is fine).

        >>> TrainConfig(d_model=100, n_head=3).validate()
        ['d_model (100) must be divisible by n_head (3)']
        """
        p = []
        for name, (lo, hi) in CONFIG_BOUNDS.items():
            v = getattr(self, name)
            if isinstance(lo, int):
                if not isinstance(v, int) or isinstance(v, bool):
                    p.append(f"{name} must be a whole number, got {v!r}")
                elif not lo <= v <= hi:
                    p.append(f"{name} must be between {lo} and {hi}, got {v}")
            elif not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                p.append(f"{name} must be a number, got {v!r}")
            elif not lo <= v <= hi:
                p.append(f"{name} must be between {lo:g} and {hi:g}, got {v:g}")
        if self.tokenizer not in TOKENIZERS:
            p.append(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {self.tokenizer!r}")
        if not p and self.d_model % self.n_head:
            p.append(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")
        if not p and self.induction_probe and not 2 <= self.induction_probe <= self.block_size // 2:
            p.append(f"induction_probe ({self.induction_probe}) must be 0 or between 2 and block_size / 2 "
                     f"({self.block_size // 2}): the probe is the run twice")
        return p

    def model_config(self, vocab_size: int) -> GPTConfig:
        return GPTConfig(vocab_size=vocab_size, block_size=self.block_size, n_layer=self.n_layer,
                         n_head=self.n_head, n_kv_head=self.n_head, d_model=self.d_model)

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, TrainConfig] = {
    # ~0.1M parameters: the loss falls within seconds on 2 CPU cores, word-like text in a minute
    "tiny": TrainConfig(n_layer=2, n_head=2, d_model=64, block_size=32, batch_size=16, max_steps=1200,
                        lr=3e-3, warmup_steps=20, eval_every=25, eval_iters=2, sample_len=80),
    # nanoGPT-sized: 4 layers, 128 wide, block 64, batch 12 (~0.8M parameters + embeddings)
    "default": TrainConfig(),
    # Tang poems (lmviz.poetry: its tokenizer, and val_frac from training_text()): below the
    # unigram baseline within a minute on one CPU thread, lines of 5/7 characters by the end
    "poetry": TrainConfig(n_layer=2, n_head=4, d_model=128, block_size=32, batch_size=16, max_steps=1500,
                          lr=3e-3, warmup_steps=30, eval_every=50, eval_iters=2, sample_len=120),
    # induction heads forming live (lmviz.induction): 2 layers on sequences of random symbols with a
    # span copied after a random gap, one sequence per window (with windows anywhere in the stream it
    # did not form in 4,000 steps); a constant rate after the warm-up, no weight decay
    "induction": TrainConfig(n_layer=2, n_head=4, d_model=64, block_size=64, batch_size=32, max_steps=2000,
                             lr=1e-3, warmup_steps=50, min_lr_frac=1.0, weight_decay=0.0, eval_every=50,
                             eval_iters=2, sample_len=40, aligned=True, induction_probe=INDUCTION_PROBE),
    # for a GPU: 6 layers, 256 wide, block 128, batch 32
    "bigger": TrainConfig(n_layer=6, n_head=8, d_model=256, block_size=128, batch_size=32,
                          max_steps=5000, lr=6e-4, warmup_steps=100, eval_every=100, eval_iters=8,
                          sample_len=200),
}
# A student's run while following a class is at most the longest preset's steps: the server's
# training slot is the room's (a lecturer's run goes first, lmviz.server.tasks), and a run of up to
# CONFIG_BOUNDS' 1,000,000 steps is not a lecture's
FOLLOWER_MAX_STEPS = max(p.max_steps for p in PRESETS.values())


def make_config(preset: str = "tiny", **overrides) -> TrainConfig:
    """A preset with some fields replaced; ValueError listing every problem.

    >>> make_config("tiny", max_steps=10).max_steps
    10
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown setting(s): {', '.join(unknown)}")
    cfg = replace(PRESETS[preset], **overrides)
    problems = cfg.validate()
    if problems:
        raise ValueError("; ".join(problems))
    return cfg


# -----------------------------------------------------------------------------
# tokenizers

def build_tokenizer(text: str, cfg: TrainConfig, cancel=None):
    """The tokenizer cfg asks for, trained on text (``cancel``: see ``lmviz.cancel``)."""
    if cfg.tokenizer == "bpe":
        return TrainedBPE.train(text, cfg.bpe_merges, cancel=cancel)
    check_cancel(cancel)
    return CharTokenizer(text)


# -----------------------------------------------------------------------------
# records

@dataclass(frozen=True)
class StepMetrics:
    step: int            # 1-based index of the optimizer step just taken
    loss: float          # training loss of this step's batch (nats/token)
    lr: float            # learning rate used for this step
    grad_norm: float     # global gradient norm before clipping
    tokens_per_s: float  # batch_size * block_size / wall time of this step
    dt_ms: float         # wall time of this step


@dataclass(frozen=True)
class EvalMetrics:
    step: int            # steps taken when measured (0: the untrained model)
    train_loss: float    # mean loss over eval_iters fixed training batches
    val_loss: float      # mean loss over eval_iters fixed validation batches
    val_ppl: float       # exp(val_loss): "as unsure as a uniform choice among this many tokens"
    induction: Any = None    # lmviz.induction.InductionPoint on the run's probe (TrainConfig.induction_probe), else None


@dataclass(frozen=True)
class Sample:
    step: int            # steps taken when generated
    prompt: str          # the fixed prompt
    text: str            # the continuation only (prompt excluded)


# -----------------------------------------------------------------------------
# helpers

def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of 0-based step: linear warm-up, then cosine from lr to lr * min_lr_frac.

    >>> c = TrainConfig(lr=1.0, warmup_steps=10, max_steps=110, min_lr_frac=0.1)
    >>> lr_at(0, c), lr_at(9, c), lr_at(10, c), round(lr_at(60, c), 3), round(lr_at(110, c), 3)
    (0.1, 1.0, 1.0, 0.55, 0.1)
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    frac = min(1.0, (step - cfg.warmup_steps) / span)
    lo = cfg.lr * cfg.min_lr_frac
    return lo + 0.5 * (cfg.lr - lo) * (1.0 + math.cos(math.pi * frac))


def train_steps(model: torch.nn.Module, opt: torch.optim.Optimizer, batch: Callable[[], tuple],
                lr: Callable[[int], float], n: int, *, start: int = 0, clip: float | None = None,
                loss_of: Callable | None = None, cancel=None) -> Iterator[tuple[int, float, float, float]]:
    """The one training loop of lmviz: ``n`` optimizer steps, yielding (step, loss, lr, grad norm)
    after each (1-based step, counted on from ``start``).

    Each step: set the learning rate ``lr(step - 1)``, draw ``batch() -> (x, y)``, loss
    ``loss_of(x, y)`` (default ``model(x, y)[1]``), backward, clip the global gradient norm to
    ``clip`` (None/0: no clipping; the norm before clipping is reported either way), AdamW step.
    ``cancel()`` (optional) is asked before every step and raises ``lmviz.cancel.Cancelled``.
    Used by the Trainer, the chapter demos (``fit_small``) and the KV chapter's toy model.
    """
    params = [p for g in opt.param_groups for p in g["params"]]
    loss_of = loss_of or (lambda x, y: model(x, y)[1])
    for k in range(start, start + n):
        check_cancel(cancel)
        rate = lr(k)
        for g in opt.param_groups:
            g["lr"] = rate
        x, y = batch()
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip:
            norm = torch.nn.utils.clip_grad_norm_(params, clip)
        else:
            norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params if p.grad is not None]))
        opt.step()
        yield k + 1, loss.item(), rate, norm.item()          # one device sync per step


def adamw(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The optimizer of every full training (the Trainer, scripts/train_default.py): AdamW with
    weight decay on matrices only, betas (0.9, cfg.beta2), fused on CUDA."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    cuda = next(model.parameters()).device.type == "cuda"
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=cfg.lr, betas=(0.9, cfg.beta2), fused=cuda or None)


def fit_small(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, steps: int, batch: int | None,
              lr: float, seed: int, clip: float | None = None, warmup: int = 20, cancel=None,
              on_step=None) -> list[float]:
    """The few-second training of the chapter demos (structure, robot actions, the KV toy model).

    Samples ``batch`` rows of ``x [N, T]`` / ``y [N, T]`` (targets, -1 = not scored) with a seeded
    generator (``batch=None``: every row, every step), AdamW at ``lr`` after a linear warm-up of
    ``warmup`` steps (0: none), optional gradient clipping, through :func:`train_steps`;
    ``cancel()`` is asked every step; ``on_step(step, loss)`` reports progress.
    Returns the per-step losses; ``model`` is left in train mode, updated in place.
    """
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)

    def draw():
        if batch is None:
            return x, y
        idx = torch.randint(0, x.shape[0], (batch,), generator=gen)
        return x[idx], y[idx]

    losses: list[float] = []
    model.train()
    for step, loss, _, _ in train_steps(model, opt, draw, lambda k: lr * min(1.0, (k + 1) / max(1, warmup)),
                                        steps, clip=clip, cancel=cancel):
        losses.append(loss)
        if on_step is not None:
            on_step(step, loss)
    return losses


@dataclass
class Toy:
    """A chapter's toy model (the KV-cache walk-through, the pronoun test, the reader)."""
    model: GPT                 # eval mode, CPU
    tokenizer: object          # its word tokenizer
    losses: list[float]        # training loss per step (or a thinned list of them)


def fit_toy(tokenizer, x: torch.Tensor, y: torch.Tensor, *, block_size: int, n_layer: int, n_head: int,
            d_model: int, steps: int, batch: int | None, lr: float, seed: int, warmup: int,
            thin: int = 1) -> Toy:
    """A seeded small GPT over ``tokenizer``'s vocabulary (the same weights on every machine: the
    global torch seed is left as it was), fitted on ``x``/``y`` by :func:`fit_small`, in eval mode;
    its losses kept every ``thin`` steps and at the last."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=block_size, n_layer=n_layer,
                              n_head=n_head, n_kv_head=n_head, d_model=d_model))
    losses = fit_small(model, x, y, steps=steps, batch=batch, lr=lr, seed=seed, warmup=warmup)
    model.eval()
    return Toy(model, tokenizer, losses if thin == 1 else losses[::thin] + losses[-1:])


def load_toy_file(path) -> Toy:
    """A toy written with its losses in the checkpoint's meta (CPU: the toys are tiny)."""
    from .checkpoint import load_checkpoint

    model, tok, meta = load_checkpoint(path, device="cpu")
    return Toy(model, tok, list(meta.get("losses", [])))


def copy_model(model: GPT) -> GPT:
    """A CPU, eval-mode copy of model's weights (for the app to show while training goes on)."""
    m = GPT(model.cfg)
    m.load_state_dict({k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()})
    return m.eval()


# -----------------------------------------------------------------------------
# the trainer

class Trainer:
    """Owns the tokenizer, data, model and optimizer of one run.

    >>> tr = Trainer("hello world " * 50, make_config("tiny", max_steps=3, block_size=8))
    >>> [m.step for m in tr.step(3)], tr.done
    ([1, 2, 3], True)
    """

    def __init__(self, text: str, cfg: TrainConfig, device=None, tokenizer=None, prompt: str | None = None,
                 cancel=None, start: GPT | None = None):
        """``cancel``: an optional callback (True = stop) asked often during the preparation
        (tokenizer, encoding), the evaluations and the samples; ``lmviz.cancel.Cancelled`` is
        raised when it says so. Settable later as ``trainer.cancel``.

        ``start``: a model to fine-tune (see ``plan_finetune``): a copy of its weights is trained,
        with ``tokenizer`` (its own, required) and ``cfg`` of its shape; characters its vocabulary
        lacks are left out of the text (``self.unknown`` lists them) rather than learned as its
        unknown token."""
        self.cancel = cancel
        if start is not None and tokenizer is None:
            raise ValueError("a fine-tune needs the model's own tokenizer")
        problems = cfg.validate()
        if problems:
            raise ValueError("; ".join(problems))
        if not isinstance(text, str) or not text.strip():
            raise ValueError("the training text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"the training text has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}")
        if device is None:
            from . import device as pick

            device = pick()
        self.cfg, self.device = cfg, torch.device(device)
        self.tokenizer = tokenizer if tokenizer is not None else build_tokenizer(text, cfg, cancel)
        check_cancel(cancel)
        # the server's training budget (memory, step time, model bounds), before anything is allocated
        budget = check_budget(cfg, self.tokenizer.vocab_size, self.device.type)
        if not budget.ok or budget.cfg != cfg:
            raise ValueError(" ".join(r.english() for r in budget.reasons))
        if start is not None and cfg.model_config(self.tokenizer.vocab_size) != start.cfg:
            raise ValueError("the fine-tune's config does not have the model's shape (see plan_finetune)")
        enc, self.unknown = self._encode(text, lossy=start is not None)
        ids = torch.tensor(enc, dtype=torch.long)                              # [N]
        check_cancel(cancel)
        n_val = max(cfg.block_size + 1, int(len(ids) * cfg.val_frac))
        if cfg.aligned:                       # the split falls between two sequences
            n_val = -(-n_val // (cfg.block_size + 1)) * (cfg.block_size + 1) + len(ids) % (cfg.block_size + 1)
        if len(ids) - n_val < cfg.block_size + 1:
            raise TextTooShort(len(ids), cfg.block_size)
        train_ids, val_ids = split(ids, cfg.val_frac, n_val=n_val)
        self.train_ids, self.val_ids = train_ids.to(self.device), val_ids.to(self.device)
        self.gen = torch.Generator().manual_seed(cfg.seed)                    # weights and batches
        if start is not None:
            self.model = copy_model(start)                                     # the live model stays as it is
        else:
            self.model = GPT(cfg.model_config(self.tokenizer.vocab_size))
            init_weights(self.model, self.gen)
        self.model.to(self.device).train()
        self.finetune = start is not None
        self.opt = adamw(self.model, cfg)
        self.autocast = self.device.type == "cuda"
        self.steps_done = 0
        self.prompt = prompt if prompt is not None else default_prompt(text)
        self.tokens_per_step = cfg.batch_size * cfg.block_size

    # -- data ----------------------------------------------------------------------------------
    def _encode(self, text: str, lossy: bool = False) -> tuple[list[int], list[str]]:
        """(the tokenizer's ids of text, the characters left out). ``lossy``: characters outside
        the vocabulary are left out and listed; else none is (an unknown one raises, or becomes
        the unknown token). A BPE asks the cancel callback as it goes."""
        tok = self.tokenizer
        if isinstance(tok, TrainedBPE):
            return tok.encode_lossy(text, cancel=self.cancel) if lossy else (tok.encode(text, cancel=self.cancel), [])
        return tok.encode_lossy(text) if lossy else (tok.encode(text), [])

    def _batch(self, data: torch.Tensor, generator: torch.Generator):
        """x, y [B,T] random windows of data (y = x shifted by one: teacher forcing); with
        ``cfg.aligned``, each window one whole sequence of T + 1 tokens."""
        B, T = self.cfg.batch_size, self.cfg.block_size
        if self.cfg.aligned:
            ix = torch.randint(len(data) // (T + 1), (B,), generator=generator).to(data.device) * (T + 1)
        else:
            ix = torch.randint(len(data) - T, (B,), generator=generator).to(data.device)  # [B]
        offs = torch.arange(T, device=data.device)                                    # [T]
        return data[ix[:, None] + offs], data[ix[:, None] + offs + 1]

    def _forward(self, x, y):
        if self.autocast:
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                return self.model(x, y)[1]
        return self.model(x, y)[1]

    @property
    def done(self) -> bool:
        return self.steps_done >= self.cfg.max_steps

    # -- training ------------------------------------------------------------------------------
    def step(self, n: int = 1) -> list[StepMetrics]:
        """Take up to n optimizer steps (never past max_steps); one record per step."""
        out: list[StepMetrics] = []
        n = max(0, min(n, self.cfg.max_steps - self.steps_done))
        t0 = time.perf_counter()
        for step, loss, lr, norm in train_steps(self.model, self.opt, lambda: self._batch(self.train_ids, self.gen),
                                                lambda k: lr_at(k, self.cfg), n, start=self.steps_done,
                                                clip=self.cfg.grad_clip, loss_of=self._forward):
            t1 = time.perf_counter()
            dt, t0 = t1 - t0, t1
            self.steps_done = step
            out.append(StepMetrics(step, loss, lr, norm, self.tokens_per_step / dt, dt * 1e3))
        return out

    @torch.no_grad()
    def evaluate(self) -> EvalMetrics:
        """Train and validation loss on fixed batches (the same ones at every evaluation)."""
        self.model.eval()
        res = []
        for k, data in enumerate((self.train_ids, self.val_ids)):
            g = torch.Generator().manual_seed(self.cfg.seed + 1 + k)
            total = 0.0
            for _ in range(self.cfg.eval_iters):
                check_cancel(self.cancel)
                total += self._forward(*self._batch(data, g)).item()
            res.append(total / self.cfg.eval_iters)
        point = self._probe() if self.cfg.induction_probe else None
        self.model.train()
        return EvalMetrics(self.steps_done, res[0], res[1], math.exp(min(res[1], 50.0)), point)

    def _probe(self):
        """The run's induction probe now (lmviz.induction.probe), with the attention maps at the
        evaluations lmviz.induction.maps_every keeps (and at the last)."""
        from .induction import maps_every, probe, repeated_tokens

        cfg, half = self.cfg, self.cfg.induction_probe
        ids = repeated_tokens(self.tokenizer.vocab_size, half, cfg.seed)
        k = maps_every(cfg.n_layer, cfg.n_head, half, cfg.max_steps // cfg.eval_every + 1)
        keep = (self.steps_done // cfg.eval_every) % k == 0 or self.done
        return probe(self.model, ids, half, keep_maps=keep)

    @torch.no_grad()
    def sample(self, prompt: str | None = None, n: int | None = None, temperature: float = 0.8) -> Sample:
        """Continue the prompt by n tokens (seeded, so a sample changes only because the model did)."""
        prompt = self.prompt if prompt is None else prompt
        n = self.cfg.sample_len if n is None else n
        ids, _ = self.tokenizer.encode_lossy(prompt)
        if not ids:
            ids = [int(self.train_ids[0])]
        g = torch.Generator().manual_seed(self.cfg.seed)
        self.model.eval()
        try:
            new = [st.token for st in generate(model_step(self.model), ids, n, g, temperature, cancel=self.cancel)]
        finally:
            self.model.train()
        return Sample(self.steps_done, prompt, self.tokenizer.decode(new))

    @torch.no_grad()
    def attention(self, prompt: str | None = None):
        """(token labels, weights [L,H,T,T]) of the model on the fixed prompt (causal softmax)."""
        prompt = self.prompt if prompt is None else prompt
        ids, _ = self.tokenizer.encode_lossy(prompt)
        ids = ids[: self.cfg.block_size] or [int(self.train_ids[0])]
        trace = self.model.forward_trace(torch.tensor(ids))
        labels = [self.tokenizer.token(i) for i in ids]
        return labels, torch.stack([lt.weights for lt in trace.layers])

    # -- export --------------------------------------------------------------------------------
    def meta(self, **extra) -> dict:
        return {"trainer": self.cfg.to_dict(), "steps": self.steps_done, **extra}

    def checkpoint_bytes(self, **meta) -> bytes:
        """Weights + model config + tokenizer + meta as safetensors bytes (no pickle)."""
        from .checkpoint import save_checkpoint

        return save_checkpoint(self.model, self.tokenizer, self.meta(**meta))

    def num_params(self) -> int:
        return self.model.num_params()


# name: (how to get the text, the fixed prompt sampled at each evaluation)
CORPORA = {
    "english": ("corpus:english", "The "),
    "chinese": ("corpus:chinese", "我们"),
    "poetry": ("poetry:", "\n春风"),           # lmviz.poetry.PROMPT: a new poem begins with 春风
    "code": ("corpus:code", "def "),
    "toy": ("corpus:toy", "<BOS> I"),
    "capital_en": ("capital:en", "Paris is"),
    "capital_zh": ("capital:zh", "巴黎"),
    "induction": ("induction:", INDUCTION_PROMPT),   # a span, a gap, the span's start (lmviz.induction)
}


def corpus_text(name: str) -> str:
    """The text of a bundled corpus (see CORPORA); the capital corpora are generated (capital-corpus example).

    >>> corpus_text("toy").splitlines()[0]
    '<BOS> I love robot s <EOS>'
    """
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; choose one of {', '.join(CORPORA)}")
    kind, arg = CORPORA[name][0].split(":")
    if kind == "poetry":
        from .poetry import training_text

        return training_text()[0]
    if kind == "induction":
        return induction_text()
    if kind == "capital":
        from lmviz.capitals import capital_corpus

        return capital_corpus(arg, n_sentences=3000, seed=0).text
    from .data import load_corpus

    return load_corpus(arg)


def default_prompt(text: str, corpus: str | None = None) -> str:
    """The corpus's fixed prompt when it has one, else the text's first word (its first 8 chars).

    >>> default_prompt("", "english"), default_prompt("xyz abc")
    ('The ', 'xyz ')
    """
    if corpus in CORPORA:
        return CORPORA[corpus][1]
    words = text.strip().split()
    return words[0][:8] + " " if words else text[:4]


OWN = "own"                              # the user's own text as the corpus (the training chapter's upload)
FIXED_TOKENIZER = {"poetry": "char"}     # corpora that bring their own tokenizer: the user's choice is ignored


def tokens_needed(block_size: int) -> int:
    """The fewest tokens a text must give to be trained on with windows of ``block_size``: one
    window and its next token for training, one for the held-out tail (``lmviz.data.split``).

    >>> tokens_needed(64)
    130
    """
    return 2 * (block_size + 1)


class TextTooShort(SaidError, ValueError):
    """A text too short for the run's windows, said in the page's language."""

    def __init__(self, n: int, block_size: int):
        super().__init__("train.err_short_text", n=n, block=block_size, need=tokens_needed(block_size))


def finetune_shortfall(text: str, tokenizer, block_size: int) -> tuple[int, int] | None:
    """(tokens ``text`` gives under a fine-tuned model's ``tokenizer``, the fewest it needs) when
    the text is too short to fine-tune on (what the trainer would refuse at Start), else None:
    the room's sentences and "my own text" say so before the press. Characters outside the
    vocabulary are left out, as the fine-tune does.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> finetune_shortfall("abcabc", CharTokenizer("abc"), 4)
    (6, 10)
    """
    need = tokens_needed(block_size)
    head = text[:64 * need]                 # a long text is settled by its start (a page asks on every run)
    n = len(tokenizer.encode_lossy(head)[0])
    if n < need and len(head) < len(text):  # mostly characters the vocabulary lacks: the whole text
        n = len(tokenizer.encode_lossy(text)[0])
    return (n, need) if n < need else None


@dataclass(frozen=True)
class TrainingPlan:
    """What one Start would train, decided once (``plan_training``): the page draws it and the
    trainer is built from its ``cfg``."""
    corpus: str                 # a CORPORA name, or OWN
    preset: str                 # a PRESETS name
    tokenizer: str              # the tokenizer the run uses (the corpus's own when it brings one;
    #                             "model": a fine-tune's, the model's own)
    tokenizer_fixed: bool       # the corpus (FIXED_TOKENIZER) or the fine-tuned model brings its own
    error: str                  # make_config's message when the settings are invalid, else ""
    budget: object | None       # lmviz.limits.BudgetCheck of the config (None when ``error``)

    @property
    def ok(self) -> bool:
        """May this training start?"""
        return not self.error and self.budget is not None and self.budget.ok

    @property
    def cfg(self) -> TrainConfig | None:
        """The config to train (its batch lowered by the budget when needed); None when not ok."""
        return self.budget.cfg if self.ok else None


def plan_training(corpus: str, preset: str, overrides: dict | None = None, text: str | None = None,
                  device="cpu") -> TrainingPlan:
    """The one planning call for a training: corpus, preset, the user's overrides and text ->
    the tokenizer (the corpus's own when it brings one), the validated config and the budget on
    the corpus's vocabulary (an upper bound for the user's text, the real one for poetry) on
    ``device``.

    >>> p = plan_training("poetry", "tiny", {"tokenizer": "bpe", "max_steps": 10})
    >>> p.ok, p.tokenizer, p.tokenizer_fixed, p.cfg.max_steps
    (True, 'char', True, 10)
    >>> bad = plan_training("english", "tiny", {"d_model": 100, "n_head": 3})
    >>> bad.ok, bool(bad.error), bad.cfg
    (False, True, None)
    """
    from .limits import DEFAULT_VOCAB, vocab_bound

    over = dict(overrides or {})
    fixed = corpus in FIXED_TOKENIZER
    tok = FIXED_TOKENIZER[corpus] if fixed else over.get("tokenizer", PRESETS.get(preset, TrainConfig()).tokenizer)
    over["tokenizer"] = tok
    try:
        cfg = make_config(preset, **over)
    except ValueError as e:
        return TrainingPlan(corpus, preset, tok, fixed, str(e), None)
    if corpus == "poetry":
        from .poetry import poetry_tokenizer

        vocab = poetry_tokenizer().vocab_size
    elif corpus == OWN and text:
        vocab = vocab_bound(text, cfg)
    else:
        vocab = DEFAULT_VOCAB
    return TrainingPlan(corpus, preset, tok, fixed, "", check_budget(cfg, vocab, device))


# what a fine-tune changes in the preset it starts from: a short run, a gentler peak (the weights
# are already trained), an evaluation often enough to draw a curve of a couple of minutes
FINETUNE = {"max_steps": 200, "lr": 1e-3, "warmup_steps": 10, "eval_every": 20}


SHAPE = ("n_layer", "n_head", "d_model", "block_size")   # the TrainConfig fields a fine-tune keeps


def model_shape(model_cfg: GPTConfig) -> dict | None:
    """The TrainConfig fields of a GPT's shape, or None when a TrainConfig cannot express it (a
    pretrained family's own norm, MLP or positions: lmviz trains only its own GPT).

    >>> model_shape(GPTConfig(vocab_size=10, block_size=16, n_layer=2, n_head=2, n_kv_head=2, d_model=32))
    {'n_layer': 2, 'n_head': 2, 'd_model': 32, 'block_size': 16}
    >>> model_shape(GPTConfig(vocab_size=10, norm="rmsnorm")) is None
    True
    """
    shape = {name: getattr(model_cfg, name) for name in SHAPE}
    try:
        same = replace(TrainConfig(), **shape).model_config(model_cfg.vocab_size) == model_cfg
    except ValueError:
        return None
    return shape if same else None


def finetune_overrides(model_cfg: GPTConfig, overrides: dict | None = None) -> dict | None:
    """What a fine-tune of a model of ``model_cfg`` changes in a preset: FINETUNE, then the user's
    ``overrides`` (but the shape and the tokenizer, which are the model's), then the model's shape;
    None when lmviz does not train that shape (``model_shape``).

    >>> finetune_overrides(GPTConfig(vocab_size=10, block_size=16, n_layer=1, n_head=2, n_kv_head=2, d_model=16),
    ...                    {"d_model": 64, "max_steps": 30})["d_model"]
    16
    """
    shape = model_shape(model_cfg)
    if shape is None:
        return None
    user = {k: v for k, v in (overrides or {}).items() if k not in SHAPE and k != "tokenizer"}
    return {**FINETUNE, **user, **shape}


def plan_finetune(model_cfg: GPTConfig, preset: str, overrides: dict | None = None, device="cpu") -> TrainingPlan:
    """``plan_training`` for a fine-tune of a model of ``model_cfg`` (its tokenizer, so the
    vocabulary is the model's): the preset's optimisation with FINETUNE and the user's overrides
    on top, the model's shape in place of the preset's, and the budget on the model's vocabulary.

    >>> from lmviz.model import GPTConfig
    >>> p = plan_finetune(GPTConfig(vocab_size=50, block_size=16, n_layer=1, n_head=2, n_kv_head=2, d_model=16), "tiny")
    >>> p.ok, p.tokenizer, p.cfg.d_model, p.cfg.max_steps
    (True, 'model', 16, 200)
    """
    over = finetune_overrides(model_cfg, overrides)
    if over is None:
        return TrainingPlan(OWN, preset, "model", True, "only lmviz's own GPT can be fine-tuned here", None)
    try:
        cfg = make_config(preset, **over)
    except ValueError as e:
        return TrainingPlan(OWN, preset, "model", True, str(e), None)
    return TrainingPlan(OWN, preset, "model", True, "", check_budget(cfg, model_cfg.vocab_size, device))


def corpus_trainer(corpus: str, cfg: TrainConfig, text: str | None = None, *, device=None, cancel=None) -> Trainer:
    """The Trainer of a bundled corpus (see CORPORA), or of ``text`` when ``corpus == "own"``.

    The poetry corpus brings its own vocabulary (``lmviz.poetry.poetry_tokenizer``: one token per
    character, so ``cfg.tokenizer`` is ignored) and a ``val_frac`` whose tail is exactly its
    held-out poems, so the live model is scored on whole poems it never trained on.
    """
    if corpus == "poetry":
        from .poetry import PROMPT, poetry_tokenizer, training_text

        body, vf = training_text()
        return Trainer(body, replace(cfg, val_frac=vf, tokenizer=FIXED_TOKENIZER["poetry"]), device, tokenizer=poetry_tokenizer(),
                       prompt=PROMPT, cancel=cancel)
    body = text if corpus == OWN else corpus_text(corpus)
    return Trainer(body, cfg, device, prompt=default_prompt(body, None if corpus == OWN else corpus), cancel=cancel)


def finetune_trainer(model: GPT, tokenizer, cfg: TrainConfig, text: str, *, device=None, cancel=None) -> Trainer:
    """The Trainer of a fine-tune (``plan_finetune``'s cfg): a copy of ``model`` trained further on
    ``text`` with its own tokenizer, sampled from the text's first word."""
    return Trainer(text, cfg, device, tokenizer=tokenizer, prompt=default_prompt(text), cancel=cancel, start=model)


def make_trainer(corpus: str, cfg: TrainConfig, text: str | None = None, cancel=None, *, start=None) -> Trainer:
    """The training chapter's Trainer, built where the training runs: a fine-tune of ``start`` (a
    bundle: ``.model``, ``.tokenizer``) on ``text`` when given, else ``corpus_trainer``. As
    ``functools.partial(make_trainer, corpus, cfg, text, start=start)`` it is the
    ``make_trainer(cancel)`` of ``lmviz.server.train_job``, and it pickles (a training in its own
    process)."""
    if start is not None:
        return finetune_trainer(start.model, start.tokenizer, cfg, text, cancel=cancel)
    return corpus_trainer(corpus, cfg, text, cancel=cancel)
