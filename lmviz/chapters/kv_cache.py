"""The KV-cache chapter's computations: the KV-cache walk-through, the edit rule, sizes and speed.

- ``toy_model()``        a tiny word-level GPT over the notes' vocabulary, trained in about a
                         second with a fixed seed, so that after ``<开始> 我 喜欢`` it really
                         predicts 学习 and then 数学 (KV-cache walk-through).
- ``walkthrough()``      prefill + decode with ``KVCache(record=True)``: one ``WalkStep`` per
                         model call (the cache rows it added, the new q, its attention), and the
                         uncached logits beside them (cached-equals-uncached example).
- ``edit_effect()``      edit one early token and measure how every layer's K changes per row:
                         rows before the edit are untouched, rows from it on must be recomputed.
- ``MODEL_SHAPES``, ``attention_variants()``   the memory calculator's presets and the
                         MHA/GQA/MQA saving (KV-cache-size example, decode-speed example).
- ``measure_decode()``   per-step decode time with and without the cache, measured (decode-speed example).

Everything here is torch only and returns records; the page draws them.
"""
from __future__ import annotations

import math

import time
from pathlib import Path
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lmviz import limits
from lmviz.cancel import check_cancel
from lmviz.data import pad_batch
from lmviz.kv_cache import DTYPE_BYTES, KVCache, CacheSnapshot, generate_cached, kv_cache_bytes
from lmviz.model import GPT, GPTConfig
from lmviz.sampling import greedy, next_logits
from lmviz.tokenizer import TOY_ZH, WordTokenizer
from lmviz.train import Toy, fit_toy, load_toy_file

# -----------------------------------------------------------------------------
# the toy model of the KV-cache walk-through

# the notes' six words first (so their ids match the toy embedding table and the teacher-forcing example), then two more subjects for variety
TOY_WORDS = TOY_ZH + ["你", "他"]
# training sentences with how often each appears: after "<开始> 我 喜欢" the most frequent next
# word is 学习 (4 of 5), and after "... 学习" it is 数学 (3 of 4): the notes' continuation
TOY_SENTENCES = (
    ("<开始> 我 喜欢 学习 数学 <结束>", 3),
    ("<开始> 我 喜欢 学习 <结束>", 1),
    ("<开始> 我 喜欢 数学 <结束>", 1),
    ("<开始> 你 喜欢 学习 数学 <结束>", 1),
    ("<开始> 他 喜欢 数学 <结束>", 1),
    ("<开始> 我 学习 数学 <结束>", 1),
)
TOY_PROMPT = "<开始> 我 喜欢"


@dataclass(frozen=True)
class ToyTrainConfig:
    steps: int = 300         # full-batch AdamW steps (about a second on one CPU core)
    lr: float = 1e-2         # constant learning rate
    seed: int = 0            # torch seed: same weights on every machine (training runs on CPU)
    n_layer: int = 2         # two layers, so the page shows one cache per layer
    n_head: int = 2          # two heads of head_dim 8
    d_model: int = 16        # narrow enough that a K row is a readable strip of 16 cells


def toy_tokenizer() -> WordTokenizer:
    """The toy words (the notes' six plus 你, 他).

    >>> toy_tokenizer().encode(TOY_PROMPT)
    [0, 1, 2]
    """
    return WordTokenizer(TOY_WORDS, sep="")


def train_toy(cfg: ToyTrainConfig = ToyTrainConfig()) -> Toy:
    """Train the toy model of the KV-cache walk-through on TOY_SENTENCES (next-word cross-entropy, padding ignored)."""
    tok = toy_tokenizer()
    rows = [tok.encode(s) for s, n in TOY_SENTENCES for _ in range(n)]
    x, y = pad_batch(rows)                                       # [N,T-1] inputs, targets (-1 = padding)
    return fit_toy(tok, x, y, block_size=8, n_layer=cfg.n_layer, n_head=cfg.n_head, d_model=cfg.d_model,
                   steps=cfg.steps, batch=None, lr=cfg.lr, seed=cfg.seed, warmup=0)


TOY_PATH = Path(__file__).resolve().parents[2] / "assets" / "models" / "kv_toy.safetensors"


def load_toy(path: Path = TOY_PATH) -> Toy:
    """The shipped toy model (written by ``python -m lmviz.chapters.kv_cache``, i.e. ``train_toy()``):
    training takes a second on an idle core but much longer on a busy shared server, so the app
    loads these few kilobytes instead. Runs on CPU (the model is tiny)."""
    return load_toy_file(path)


# -----------------------------------------------------------------------------
# the walk-through: prefill then decode, one record per model call

@dataclass
class WalkStep:
    snap: CacheSnapshot        # what this call added to the cache (rows start..end-1 of every layer)
    inputs: list[int]          # token ids fed in (the whole prompt at prefill, one id after)
    predicted: int             # the greedy next token read from the last position's logits
    probs: torch.Tensor        # [V] softmax of those logits
    uncached_max_diff: float   # max |cached - uncached logits| at this step (cached-equals-uncached example: ~1e-6)

    @property
    def is_prefill(self) -> bool:
        return self.snap.step == 0


@dataclass
class Walkthrough:
    prompt: list[int]          # prompt ids
    steps: list[WalkStep]      # steps[0] is the prefill, then one decode step each

    @property
    def generated(self) -> list[int]:
        return [s.predicted for s in self.steps]

    def tokens_at(self, i: int) -> list[int]:
        """Ids whose K and V are in the cache after step i."""
        return (self.prompt + self.generated)[: self.steps[i].snap.end]


@torch.no_grad()
def walkthrough(model: GPT, prompt: list[int], n_new: int) -> Walkthrough:
    """Greedy decoding of n_new tokens with a recording KV cache, checked against no cache.

    Step 0 is the prefill: every prompt row goes into every layer's K and V at once and the last
    position predicts the first new token. Step i > 0 feeds that token (the only new row).
    """
    if not prompt:
        raise ValueError("the prompt must have at least one token")
    if len(prompt) > model.cfg.block_size:
        raise ValueError(f"the prompt ({len(prompt)} tokens) does not fit block_size {model.cfg.block_size}")
    n_new = max(1, min(n_new, model.cfg.block_size - len(prompt) + 1))  # last input fits block_size
    gen = generate_cached(model, prompt, n_new, max_len=model.cfg.block_size, record=True)
    seq, steps = list(prompt), []
    for snap, nxt, logits in zip(gen.cache.snapshots, gen.tokens, gen.step_logits):
        diff = float((next_logits(model, seq) - logits).abs().max())          # no cache: all rows
        steps.append(WalkStep(snap, list(snap.tokens), nxt, F.softmax(logits, -1), diff))
        seq.append(nxt)
    return Walkthrough(list(prompt), steps)


def cache_rows(walk: Walkthrough) -> tuple[torch.Tensor, torch.Tensor]:
    """K, V [L, T, Hkv*dh]: every row the walk wrote into each layer, row t = position t
    (heads side by side), as the page draws them."""
    k = torch.cat([s.snap.k_new for s in walk.steps], dim=2)    # [L,Hkv,T,dh]
    v = torch.cat([s.snap.v_new for s in walk.steps], dim=2)
    L, Hkv, T, dh = k.shape
    return (k.permute(0, 2, 1, 3).reshape(L, T, Hkv * dh), v.permute(0, 2, 1, 3).reshape(L, T, Hkv * dh))


def recompute_plan(n_rows: int, n_new: int, cached: bool) -> list[dict[str, str]]:
    """What one step does for each position's q, k, v: "compute", "reuse" (read from the cache)
    or "skip" (not needed). Without a cache every row's q, k, v is computed again.

    >>> recompute_plan(3, 1, cached=True)[0], recompute_plan(3, 1, cached=True)[2]
    ({'q': 'skip', 'k': 'reuse', 'v': 'reuse'}, {'q': 'compute', 'k': 'compute', 'v': 'compute'})
    >>> recompute_plan(3, 1, cached=False)[0]
    {'q': 'compute', 'k': 'compute', 'v': 'compute'}
    """
    new = {"q": "compute", "k": "compute", "v": "compute"}
    old = {"q": "skip", "k": "reuse", "v": "reuse"} if cached else dict(new)
    return [dict(old) for _ in range(n_rows - n_new)] + [dict(new) for _ in range(n_new)]


# -----------------------------------------------------------------------------
# the edit rule: change token `pos`, see which cache rows change

@dataclass
class EditEffect:
    pos: int                   # the edited position
    old: list[int]             # the original ids
    new: list[int]             # the edited ids
    k_diff: torch.Tensor       # [L,T] max |K_new - K_old| per layer and row (all heads)
    v_diff: torch.Tensor       # [L,T] the same for V

    def changed_rows(self, tol: float = 1e-6) -> list[int]:
        """Rows whose K or V changed in some layer."""
        d = torch.maximum(self.k_diff, self.v_diff).amax(0)
        return [i for i, x in enumerate(d.tolist()) if x > tol]


def invalid_rows(n_rows: int, edit_pos: int) -> range:
    """Cache rows to recompute when token edit_pos changes: edit_pos and everything after it.

    >>> list(invalid_rows(5, 2))
    [2, 3, 4]
    """
    if not 0 <= edit_pos < n_rows:
        raise ValueError(f"edit position {edit_pos} outside 0..{n_rows - 1}")
    return range(edit_pos, n_rows)


@torch.no_grad()
def edit_effect(model: GPT, ids: list[int], pos: int, new_id: int) -> EditEffect:
    """Replace ids[pos] by new_id and measure how each layer's cached K and V rows move.

    In layer 0 only row pos changes (its k, v read only its own token); from layer 1 on every
    row after pos changes too, because its input already mixed in the edited token.
    """
    if not 0 <= pos < len(ids):
        raise ValueError(f"edit position {pos} outside 0..{len(ids) - 1}")
    new = list(ids)
    new[pos] = int(new_id)
    ca, cb = KVCache.for_model(model), KVCache.for_model(model)
    model.forward_cached(torch.tensor([ids], device=model.device), ca)
    model.forward_cached(torch.tensor([new], device=model.device), cb)
    T = len(ids)
    kd = torch.stack([(cb.k[l][0, :, :T] - ca.k[l][0, :, :T]).abs().amax(dim=(0, 2))
                      for l in range(model.cfg.n_layer)]).float().cpu()       # [L,T]
    vd = torch.stack([(cb.v[l][0, :, :T] - ca.v[l][0, :, :T]).abs().amax(dim=(0, 2))
                      for l in range(model.cfg.n_layer)]).float().cpu()       # [L,T]
    return EditEffect(pos, list(ids), new, kd, vd)


# -----------------------------------------------------------------------------
# sizes (KV-cache-size example) and the GQA/MQA saving (decode-speed example)

@dataclass(frozen=True)
class ModelShape:
    n_layer: int       # L, transformer blocks
    n_head: int        # query heads
    n_kv_head: int     # KV heads (== n_head: MHA; fewer: GQA; 1: MQA)
    head_dim: int      # d_h
    n_tokens: int      # a typical context length for the preset
    dtype: str         # storage format of the cache


# published shapes (config.json of each release); "KV-cache-size example" is the lecture notes' example
MODEL_SHAPES: dict[str, ModelShape] = {
    "notes": ModelShape(32, 32, 8, 128, 16384, "FP16"),   # the lecture notes' example
    "Llama-2-7B": ModelShape(32, 32, 32, 128, 4096, "FP16"),
    "Llama-2-70B": ModelShape(80, 64, 8, 128, 4096, "FP16"),
    "Llama-3-8B": ModelShape(32, 32, 8, 128, 8192, "BF16"),
    "Mistral-7B": ModelShape(32, 32, 8, 128, 8192, "BF16"),
}


@dataclass(frozen=True)
class Variant:
    name: str          # "MHA", "GQA" or "MQA"
    n_kv_head: int     # KV heads of this variant
    bytes: int         # cache bytes with that many KV heads
    saving: float      # MHA bytes / these bytes


def attention_variants(batch: int, n_layer: int, n_tokens: int, n_head: int, n_kv_head: int,
                       head_dim: int, bytes_per_element: float) -> list[Variant]:
    """Cache size with one KV head per query head (MHA), the given n_kv_head (GQA) and 1 (MQA).

    The GQA saving on the notes' shape: 32 query heads sharing 8 KV heads cache 4x less than MHA.
    >>> [(v.name, v.saving) for v in attention_variants(1, 32, 16384, 32, 8, 128, 2)]
    [('MHA', 1.0), ('GQA', 4.0), ('MQA', 32.0)]
    """
    mha = kv_cache_bytes(batch, n_layer, n_tokens, n_head, head_dim, bytes_per_element)
    out = []
    for name, h in (("MHA", n_head), ("GQA", n_kv_head), ("MQA", 1)):
        b = kv_cache_bytes(batch, n_layer, n_tokens, h, head_dim, bytes_per_element)
        out.append(Variant(name, h, b, mha / b if b else float("inf")))
    return out


@dataclass(frozen=True)
class ModelKV:
    """The KV cache of one model's shape: what one token costs and how its query heads share K and V."""
    n_layer: int              # L, transformer blocks (each keeps its own cache)
    n_head: int               # query heads per layer
    n_kv_head: int            # KV heads per layer (== n_head: MHA; fewer: GQA; 1: MQA)
    head_dim: int             # d_h
    dtype: str                # storage format of the cache ("FP32", "FP16", ...)
    bytes_per_element: float  # s
    per_token: int            # bytes of one token's K and V in every layer: 2 x L x H_kv x d_h x s
    mha_per_token: int        # the same with one KV head per query head
    context: int              # the tokens counted below
    at_context: int           # bytes of a cache of `context` tokens (batch 1)

    @property
    def group(self) -> int:
        """Query heads that read each KV head (1: MHA)."""
        return self.n_head // max(self.n_kv_head, 1)


def model_kv(shape, dtype: str, context: int) -> ModelKV:
    """The cache of ``shape`` (anything with n_layer, n_head, n_kv_head, head_dim: a GPTConfig, a
    ModelShape) in ``dtype`` (a DTYPE_BYTES name), per token and for ``context`` tokens.

    SmolLM2-135M's shape in FP32, as lmviz holds it on the CPU: 30 x 3 x 64 x 2 x 4 bytes a token.
    >>> k = model_kv(ModelShape(30, 9, 3, 64, 2048, "FP32"), "FP32", 2048)
    >>> k.per_token, k.group, k.mha_per_token // k.per_token
    (46080, 3, 3)
    >>> model_kv(MODEL_SHAPES["notes"], "FP16", 16384).at_context == 2 * 2**30   # the notes' 2 GiB
    True
    """
    s = DTYPE_BYTES[dtype]
    L, H, Hkv, dh = int(shape.n_layer), int(shape.n_head), int(shape.n_kv_head), int(shape.head_dim)
    return ModelKV(L, H, Hkv, dh, dtype, s, kv_cache_bytes(1, L, 1, Hkv, dh, s), kv_cache_bytes(1, L, 1, H, dh, s),
                   int(context), kv_cache_bytes(1, L, int(context), Hkv, dh, s))


def dtype_name(torch_dtype) -> str:
    """The DTYPE_BYTES name of a torch dtype (what a model's KVCache.for_model stores).

    >>> dtype_name(torch.float32), dtype_name(torch.bfloat16)
    ('FP32', 'BF16')
    """
    return {torch.float32: "FP32", torch.float16: "FP16", torch.bfloat16: "BF16"}[torch_dtype]


# -----------------------------------------------------------------------------
# measured speed (decode-speed example)

@dataclass
class DecodeTiming:
    cache_len: list[int]       # context length when each step ran (prompt + tokens so far)
    cached_ms: list[float]     # per-step time with the cache (one token through the model)
    uncached_ms: list[float]   # per-step time without it (the whole context rerun)
    total_cached_s: float      # sum of cached_ms (prefill excluded), in seconds
    total_uncached_s: float    # sum of uncached_ms, in seconds
    device: str                # where it ran
    tokens: list[int] = ()     # the greedy tokens the cached run decoded (prefill's first, then each step's)
    uncached_tokens: list[int] = ()  # the arg-max the uncached run read at each of the same steps
    asked: int = 0             # tokens asked for (more than len(tokens) when a deadline cut the run short)

    @property
    def same_tokens(self) -> bool:
        """True when both runs chose the same token at every step (cached-equals-uncached example)."""
        return list(self.tokens) == list(self.uncached_tokens)

    @property
    def speedup(self) -> float:
        return self.total_uncached_s / max(self.total_cached_s, 1e-12)


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def measure_decode(model: GPT, prompt: list[int], n_new: int, device_name: str = "CPU", cancel=None,
                   on_step=None, deadline_s: float | None = None) -> DecodeTiming:
    """Generate n_new tokens greedily twice, step by step, with and without a KV cache, timing
    every step (the two runs alternate step by step, so both see the same machine load). The
    uncached run reads its arg-max at every step too (``uncached_tokens``): the same tokens.
    ``cancel`` is asked before each step (lmviz.cancel); ``on_step(done)`` after each.
    ``deadline_s``: once the timed steps have taken that long (a server busier than its estimate),
    stop after at least WARMUP_STEPS + 8 of them (8 steps fitted); ``asked`` keeps n_new."""
    if len(prompt) + n_new > model.cfg.block_size and model.cfg.pos == "learned":
        raise ValueError(f"prompt + new tokens ({len(prompt) + n_new}) exceed block_size {model.cfg.block_size}")
    dev = model.device
    cache = KVCache.for_model(model, max_len=len(prompt) + n_new)
    logits = model.forward_cached(torch.tensor([prompt], device=dev), cache)[0, -1]  # prefill, untimed
    seq = list(prompt) + [greedy(logits)]
    first = greedy(model(torch.tensor([prompt], device=dev))[0][0, -1])              # its uncached twin
    lens, c_ms, u_ms, u_tok = [], [], [], [first]
    start = time.perf_counter()
    for i in range(n_new - 1):
        check_cancel(cancel)
        if deadline_s is not None and i >= WARMUP_STEPS + 8 and time.perf_counter() - start > deadline_s:
            break
        x = torch.tensor([[seq[-1]]], device=dev)
        _sync(dev); t0 = time.perf_counter()
        logits = model.forward_cached(x, cache)[0, -1]
        nxt = greedy(logits); _sync(dev); t1 = time.perf_counter()
        full, _ = model(torch.tensor([seq], device=dev))              # the whole context, uncropped
        u_tok.append(greedy(full[0, -1])); _sync(dev); t2 = time.perf_counter()
        lens.append(len(seq))
        c_ms.append((t1 - t0) * 1e3)
        u_ms.append((t2 - t1) * 1e3)
        seq.append(nxt)
        if on_step is not None:
            on_step(i + 1)
    return DecodeTiming(lens, c_ms, u_ms, sum(c_ms) / 1e3, sum(u_ms) / 1e3, device_name,
                        seq[len(prompt):], u_tok, n_new)


# The speed measurement needs a context long enough for the cache to matter; the shipped model's
# 64 tokens are not (per-step overhead swamps everything). lmviz's choice, the notes give none: a
# 4-layer, 128-wide model with a 512-token context and random weights (timing does not depend on
# what the weights are), used whenever the live model's context is shorter than SPEED_MIN_CONTEXT.
SPEED_CONFIG = GPTConfig(vocab_size=256, block_size=512, n_layer=4, n_head=4, n_kv_head=4, d_model=128)
SPEED_MIN_CONTEXT = 256
SPEED_PROMPT = 8          # prompt tokens before the timed decode steps
WARMUP_STEPS = 8          # the first timed steps, dropped from the fit (allocator and caches warming up)


def speed_model(seed: int = 0) -> GPT:
    """A random-weight GPT of SPEED_CONFIG, eval mode, on CPU (built in well under a second)."""
    torch.manual_seed(seed)
    return GPT(SPEED_CONFIG).eval()


@dataclass(frozen=True)
class SpeedPlan:
    """How many decode steps one press of "measure" times on a model, and what that leaves out."""
    n_prompt: int          # prompt tokens before the timed steps
    n_new: int             # tokens decoded each way (the timed steps are n_new - 1)
    wanted: int            # tokens that would fill the context (the measurement without a budget)
    est_s: float           # estimated seconds of this measurement, both runs
    est_wanted_s: float    # estimated seconds of `wanted`
    budget_s: float        # lmviz.limits.MEASURE_S of this device kind

    @property
    def cut(self) -> bool:
        return self.n_new < self.wanted


def _step_s(cfg: GPTConfig, weight_bytes: int, n_context: int, cached: bool, kind: str) -> float:
    """Estimated seconds of one decode step: its FLOPs or its read of every weight, whichever is
    slower, plus each layer's fixed cost (lmviz.limits)."""
    return (max(step_flops(cfg, n_context, cached) / limits.DECODE_FLOPS[kind],
                weight_bytes / limits.WEIGHT_READ_BYTES_S[kind]) + cfg.n_layer * limits.LAYER_CALL_S[kind])


def measure_seconds(cfg: GPTConfig, weight_bytes: int, n_prompt: int, n_new: int, kind: str = "cpu") -> float:
    """Estimated seconds of measure_decode(n_prompt, n_new): the prefill, then n_new - 1 steps each way."""
    total = 2 * _step_s(cfg, weight_bytes, n_prompt, False, kind)         # prefill + its uncached twin
    for n in range(n_prompt + 1, n_prompt + n_new):
        total += _step_s(cfg, weight_bytes, n, True, kind) + _step_s(cfg, weight_bytes, n, False, kind)
    return total


def plan_speed(cfg: GPTConfig, weight_bytes: int, n_prompt: int, wanted: int, device="cpu",
               budget_s: float | None = None) -> SpeedPlan:
    """The most decode steps (at most ``wanted``, at least WARMUP_STEPS + 4 so a line can be fitted)
    whose estimated time fits the budget (lmviz.limits.MEASURE_S); ``weight_bytes``: the model's
    weights as stored (every one is read at each step).

    >>> small = plan_speed(SPEED_CONFIG, 4 * 900_000, SPEED_PROMPT, 504, budget_s=1e9)
    >>> small.n_new, small.cut
    (504, False)
    >>> plan_speed(SPEED_CONFIG, 4 * 900_000, SPEED_PROMPT, 504, budget_s=0.0).n_new == WARMUP_STEPS + 4
    True
    """
    kind = limits.device_kind(device)
    budget = limits.MEASURE_S[kind] if budget_s is None else float(budget_s)
    floor = min(wanted, WARMUP_STEPS + 4)
    lo, hi = floor, wanted                    # the estimate grows with n_new: bisect for the largest that fits
    if measure_seconds(cfg, weight_bytes, n_prompt, hi, kind) <= budget:
        lo = hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure_seconds(cfg, weight_bytes, n_prompt, mid, kind) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return SpeedPlan(n_prompt, lo, wanted, measure_seconds(cfg, weight_bytes, n_prompt, lo, kind),
                     measure_seconds(cfg, weight_bytes, n_prompt, wanted, kind), budget)


def step_flops(cfg: GPTConfig, n_context: int, cached: bool) -> int:
    """FLOPs of one greedy decode step at a context of n_context tokens (matmuls only; one
    multiply-add = 2 FLOPs). Cached: one token through every layer, attending to n_context keys,
    and the LM head once. Uncached: the whole context through every layer and the LM head at
    every position (the model computes all of them).

    >>> c = GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=1, n_kv_head=1, d_model=4)
    >>> step_flops(c, 8, cached=True) - step_flops(c, 4, cached=True)      # 4 * (8 - 4) * d
    64
    """
    from lmviz.chapters.cost import decode_step_flops, layer_flops

    d, r, kv = cfg.d_model, cfg.mlp_ratio, cfg.n_kv_head / cfg.n_head
    head = 2 * d * cfg.vocab_size
    if cached:
        return cfg.n_layer * decode_step_flops(n_context, d, r, kv).total + head
    return cfg.n_layer * layer_flops(n_context, d, r, kv).total + n_context * head


@dataclass(frozen=True)
class Growth:
    lens: list[int]         # context lengths of the steps kept (warm-up dropped)
    ms: list[float]         # their times
    dropped: int            # warm-up steps left out of the fit
    slope_ms: float         # least-squares growth, ms per token of context
    stderr_ms: float        # standard error of that slope
    change_ms: float        # slope x the measured span of context: the fitted change end to end
    noise_ms: float         # spread of the steps around the fitted line (residual std)
    median_ms: float        # a typical step
    intercept_ms: float     # the fitted line's value at context 0: time = intercept + slope * context

    @property
    def measurable(self) -> bool:
        """True when the fitted growth is positive and clear of the noise: the slope is more than
        two standard errors, and the change end to end exceeds the step-to-step spread."""
        return self.slope_ms > 2 * self.stderr_ms and self.change_ms > self.noise_ms

    @property
    def verdict(self) -> str:
        """What the page may say: "clear" (:attr:`measurable`), "noise" (the fitted change end to
        end is within the steps' scatter) or "unsure" (larger than the scatter, but its slope is
        not two standard errors clear of 0: the sentence may not call the change small).

        >>> g = lambda slope, se, change, noise: Growth([], [], 0, slope, se, change, noise, 1.0, 0.0)
        >>> g(0.01, 0.001, 5.0, 1.0).verdict, g(0.01, 0.001, 0.5, 1.0).verdict, g(0.003, 0.002, 45.4, 30.2).verdict
        ('clear', 'noise', 'unsure')
        """
        if self.measurable:
            return "clear"
        return "noise" if abs(self.change_ms) <= self.noise_ms else "unsure"


def growth(lens: list[int], ms: list[float], warmup: int = WARMUP_STEPS) -> Growth:
    """Fit time = a + b * context to the steps after ``warmup``, with the slope's standard error.

    >>> g = growth(list(range(20)), [5.0] * 4 + [1.0 + 0.5 * i for i in range(4, 20)], warmup=4)
    >>> round(g.slope_ms, 6), g.measurable
    (0.5, True)
    """
    xs, ys = list(lens[warmup:]), list(ms[warmup:])
    if len(xs) < 3:
        xs, ys, warmup = list(lens), list(ms), 0
    n = len(xs)
    b = slope(xs, ys)
    mx, my = sum(xs) / n, sum(ys) / n
    resid = [y - (my + b * (x - mx)) for x, y in zip(xs, ys)]
    sxx = sum((x - mx) ** 2 for x in xs)
    dof = max(1, n - 2)
    s2 = sum(r * r for r in resid) / dof
    se = math.sqrt(s2 / sxx) if sxx else float("inf")
    srt = sorted(ys)
    return Growth(xs, ys, warmup, b, se, b * (max(xs) - min(xs)), math.sqrt(s2), srt[n // 2], my - b * mx)


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs.

    >>> slope([1, 2, 3], [2, 4, 6])
    2.0
    """
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0


if __name__ == "__main__":  # rebuild the shipped toy weights
    from lmviz.checkpoint import save_checkpoint

    tm = train_toy()
    TOY_PATH.parent.mkdir(parents=True, exist_ok=True)
    meta = {"what": "KV-cache chapter toy model, lmviz.chapters.kv_cache.train_toy()", "losses": tm.losses[::10] + tm.losses[-1:]}
    TOY_PATH.write_bytes(save_checkpoint(tm.model, tm.tokenizer, meta))
    w = walkthrough(tm.model, tm.tokenizer.encode(TOY_PROMPT), 3)
    print(f"wrote {TOY_PATH} ({TOY_PATH.stat().st_size} bytes); final loss {tm.losses[-1]:.3f}; "
          f"{TOY_PROMPT} -> {tm.tokenizer.decode(w.generated)}")
