"""What one server gives one user: the bounds on checkpoints, uploads and trainings, in one place.

Two kinds of limits live here, and they are chosen to agree with each other:

- **Model and file bounds** (``MAX_LAYERS`` ... ``MAX_CHECKPOINT_BYTES``): any checkpoint is
  checked against them before a single weight is allocated (``lmviz.checkpoint``). They are
  wide enough for everything lmviz itself trains, so a user can always re-upload a download:
  the largest model the training budget accepts (``MAX_PARAMS``) stored as fp32 plus the
  largest header fits ``MAX_CHECKPOINT_BYTES``, which is also the server's upload limit
  (``.streamlit/config.toml`` ``server.maxUploadSize``, and nginx's ``client_max_body_size``
  in ``deploy/``, which adds the request's framing: tests keep them equal).
- **The training budget** (``estimate`` and ``check_budget``): memory (weights, gradients,
  AdamW state, activations, logits) and the time of one optimizer step, estimated from a
  ``TrainConfig`` before anything is built. A configuration that does not fit is refused, or
  its batch is lowered until it fits, with sentences (catalogue keys, computed numbers in the
  placeholders) that say why.

    >>> from lmviz.train import PRESETS
    >>> check_budget(PRESETS["default"], vocab_size=1062).ok
    True

Pure functions of their arguments: no torch allocation (parameter shapes come from the model
class built on the ``meta`` device, ``model.meta_gpt``), no streamlit.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

from lmviz.numfmt import fill

# -----------------------------------------------------------------------------
# training config bounds: the ONE table (inclusive). TrainConfig.validate checks it, the training
# page offers exactly these ranges, and the model bounds below take their maxima from it.

CONFIG_BOUNDS: dict[str, tuple[int, int] | tuple[float, float]] = {
    "n_layer": (1, 12), "n_head": (1, 16), "d_model": (8, 1024), "block_size": (4, 1024),
    "batch_size": (1, 512), "max_steps": (1, 1_000_000), "warmup_steps": (0, 1_000_000),
    "bpe_merges": (0, 5000), "eval_every": (1, 1_000_000), "eval_iters": (1, 100),
    "sample_len": (0, 1000), "seed": (0, 2**31 - 1), "induction_probe": (0, 512),
    "lr": (1e-6, 1.0), "min_lr_frac": (0.0, 1.0), "weight_decay": (0.0, 1.0),
    "grad_clip": (0.0, 100.0), "beta2": (0.5, 0.9999), "val_frac": (0.01, 0.5),
}

# -----------------------------------------------------------------------------
# model bounds (a checkpoint outside them is refused before anything is allocated)

MAX_LAYERS = CONFIG_BOUNDS["n_layer"][1]      # transformer blocks (12)
MAX_HEADS = CONFIG_BOUNDS["n_head"][1]        # query heads per block (16)
MAX_WIDTH = CONFIG_BOUNDS["d_model"][1]       # d_model (1024)
MAX_CONTEXT = CONFIG_BOUNDS["block_size"][1]  # block_size, learned positions (1024)
MAX_VOCAB = 50_000         # tokens: every distinct character of a 2M-character text fits (CJK ~21k)
MAX_MLP_RATIO = 8          # MLP hidden width / d_model: lmviz uses 4; 8 leaves room, no more
MAX_TOKEN_CHARS = 1_000    # longest BPE token string a checkpoint's merges may build
MAX_PARAMS = 15_000_000    # parameters (tied table once): 3x the "bigger" preset (~5.5M), and
#                            15M fp32 weights (57 MiB) + MAX_HEADER_BYTES fit MAX_CHECKPOINT_BYTES

# -----------------------------------------------------------------------------
# file bounds

MAX_UPLOAD_MB = 64                         # the server's upload limit, in MB of 2**20 bytes (as
#                                            Streamlit counts): == server.maxUploadSize
TEXT_UPLOAD_MB = 2                         # a corpus of one's own to train on (.txt)
TOKENIZER_UPLOAD_BYTES = 64 * 1024         # a text to tokenize on the tokenization page (.txt):
#                                            its BPE is trained in the page's own run
MAX_CHECKPOINT_BYTES = MAX_UPLOAD_MB * 2**20  # largest checkpoint file read at all
UPLOAD_FRAMING_MB = 1                      # an upload's request body: the file plus its multipart
#                                            framing (Streamlit's own streaming cap allows 1 MB)
MAX_REQUEST_MB = MAX_UPLOAD_MB + UPLOAD_FRAMING_MB  # a proxy's body limit (nginx
#                                            client_max_body_size, deploy/site_conf.py), never less
MAX_HEADER_BYTES = 2 * 2**20               # safetensors JSON header: a 50k-character vocabulary
#                                            as JSON inside JSON is ~0.5 MB; tensors ~0.1 KB each
WEIGHT_DTYPES = {"F32": 4, "F16": 2}       # what save_checkpoint writes (full or half precision)

# -----------------------------------------------------------------------------
# training budget

GiB = 2**30
MAX_TRAIN_BYTES = {"cpu": 2 * GiB,         # a 2-core lecture server has ~8-23 GB for ~20
                   "cuda": 8 * GiB}        # sessions and 2 trainings; 8 GiB fits any 16 GB GPU
MAX_STEP_S = {"cpu": 5.0,                  # one optimizer step cannot be interrupted: a Stop may
              "cuda": 2.0}                 # wait this long ("bigger" is ~3.2 s estimated, 1.5 s
#                                            measured on an idle core; every preset must fit)
TRAIN_FLOPS = {"cpu": 40e9,                # sustained training FLOP/s: bench/budget.py measured
               "cuda": 10e12}              # 55-97 GFLOP/s on one idle thread here; a busy shared
#                                            core halves it. 10 TFLOP/s: a small GPU at low MFU
ACT_FLOATS_PER_TOKEN = 34                  # saved activations per token, layer and unit of width
#                                            (~17 tensors of width d, or 4d counted as 4, kept
#                                            for backward, x2 for allocator slack; bench/budget.py)
ATTN_FLOATS_PER_SCORE = 1                  # attention kept per head and T^2 score (CPU's fused
#                                            attention keeps none; 1 covers an unfused kernel)
OVERHEAD_BYTES = 96 * 2**20                # token ids of the text, tokenizer, evaluation batches
LOGIT_FLOATS_PER_TOKEN = 4                 # logits, log-softmax, its gradient, a bf16/fp32 copy
STATE_FLOATS_PER_PARAM = 4 + 2             # weights, gradients, AdamW's two moments (4) + a CPU
#                                            display copy and a download blob the app keeps (2)
DEFAULT_VOCAB = 4_096                      # vocabulary assumed when the caller does not know it
#                                            (bundled corpora <= 1,062 characters, BPE <= 3,000)


# -----------------------------------------------------------------------------
# parameter shapes (shared with lmviz.checkpoint)

def model_problems(cfg) -> list[tuple[str, dict]]:
    """(catalogue key, placeholders) for every bound a GPTConfig breaks (empty when within).

    >>> from lmviz.model import GPTConfig
    >>> model_problems(GPTConfig(vocab_size=10))
    []
    """
    out = []
    for name, value, hi in (("n_layer", cfg.n_layer, MAX_LAYERS), ("n_head", cfg.n_head, MAX_HEADS),
                            ("d_model", cfg.d_model, MAX_WIDTH), ("block_size", cfg.block_size, MAX_CONTEXT),
                            ("vocab_size", cfg.vocab_size, MAX_VOCAB), ("mlp_ratio", cfg.mlp_ratio, MAX_MLP_RATIO)):
        if value > hi:
            out.append(("ckpt.err_bound", {"name": name, "value": value, "limit": hi}))
    if not out:
        n = param_count(cfg)
        if n > MAX_PARAMS:
            out.append(("ckpt.err_params", {"params": n, "limit": MAX_PARAMS}))
    return out


@functools.lru_cache(maxsize=64)
def param_shapes(cfg) -> dict[str, tuple[int, ...]]:
    """name -> shape of every tensor a checkpoint of ``cfg`` stores (the tied lm_head once, as
    ``wte.weight``). Built from the model class on the ``meta`` device: no memory is allocated.
    Call it only on a config within the bounds (``model_problems(cfg) == []`` up to the count).
    """
    from .model import meta_gpt

    model = meta_gpt(cfg)
    return {k: tuple(v.shape) for k, v in model.state_dict().items() if k != "lm_head.weight"}


def param_count(cfg) -> int:
    """Parameters of a GPT with ``cfg`` (the tied token table counted once).

    >>> from lmviz.model import GPTConfig
    >>> param_count(GPTConfig(vocab_size=10, block_size=4, n_layer=1, n_head=1, n_kv_head=1, d_model=2))
    98
    """
    return sum(math.prod(s) for s in param_shapes(cfg).values())


# -----------------------------------------------------------------------------
# the training budget

@dataclass(frozen=True)
class Estimate:
    """What one training run of a TrainConfig costs (estimated, before anything is built)."""
    params: int              # model parameters (tied token table once)
    state_bytes: int         # weights, gradients, AdamW moments, the app's copies, overhead
    activation_bytes: int    # what the forward pass keeps for backward, all batch elements
    total_bytes: int         # state + activations: the training's peak memory
    per_element_bytes: int   # activations of one batch element (the part the batch multiplies)
    step_flops: float        # FLOPs of one optimizer step (forward + backward)
    step_s: float            # estimated seconds per step on this device kind
    device: str              # "cpu" or "cuda"


@dataclass(frozen=True)
class Reason:
    """One sentence of a budget decision: a catalogue key and its computed placeholders."""
    key: str
    params: dict = field(default_factory=dict)

    def english(self) -> str:
        return english(self.key, self.params)


@dataclass(frozen=True)
class BudgetCheck:
    ok: bool                     # may this training start (with ``cfg``)?
    reasons: tuple[Reason, ...]  # why it was refused or changed (empty: unchanged and fine)
    cfg: object                  # the TrainConfig to run: the input, or with a lowered batch
    estimate: Estimate           # the estimate of ``cfg``


def device_kind(device) -> str:
    """The kind of a torch device (or its name) the budgets are kept for: "cuda" or "cpu"."""
    return "cuda" if str(device).startswith("cuda") else "cpu"


def estimate(cfg, vocab_size: int | None = None, device="cpu") -> Estimate:
    """Memory and step time of training ``cfg`` (a TrainConfig) on a vocabulary of vocab_size.

    Memory: STATE_FLOATS_PER_PARAM fp32 numbers per parameter, plus per batch element and layer
    ACT_FLOATS_PER_TOKEN * T * d activations and ATTN_FLOATS_PER_SCORE * heads * T^2 attention
    scores, plus LOGIT_FLOATS_PER_TOKEN * T * V for the logits. Time: 6 * params * tokens
    (forward + backward matmuls) + 12 * layers * T * d per token for attention, at TRAIN_FLOPS.

    >>> from lmviz.train import TrainConfig
    >>> e = estimate(TrainConfig(), vocab_size=100)
    >>> e.params, round(e.total_bytes / 2**20), round(e.step_s, 2)
    (812288, 170, 0.1)
    """
    kind = device_kind(device)
    V = DEFAULT_VOCAB if vocab_size is None else int(vocab_size)
    gcfg = cfg.model_config(V)
    n = param_count(gcfg)
    T, d, L, H, B = cfg.block_size, cfg.d_model, cfg.n_layer, cfg.n_head, cfg.batch_size
    per_elem = 4 * (L * (ACT_FLOATS_PER_TOKEN * T * d + ATTN_FLOATS_PER_SCORE * H * T * T)
                    + LOGIT_FLOATS_PER_TOKEN * T * V)
    state = 4 * STATE_FLOATS_PER_PARAM * n
    flops = B * T * (6.0 * n + 12.0 * L * T * d)
    return Estimate(params=n, state_bytes=state + OVERHEAD_BYTES, activation_bytes=B * per_elem,
                    total_bytes=state + OVERHEAD_BYTES + B * per_elem, per_element_bytes=per_elem, step_flops=flops,
                    step_s=flops / TRAIN_FLOPS[kind], device=kind)


def _gib(x: float) -> float:
    return round(x / GiB, 2)


def check_budget(cfg, vocab_size: int | None = None, device="cpu") -> BudgetCheck:
    """May ``cfg`` train here? Refuses a model too large to train or to re-upload; lowers the
    batch (with a sentence) when only the batch makes memory or step time too large.

    >>> from lmviz.train import TrainConfig
    >>> r = check_budget(TrainConfig(n_layer=12, d_model=1024, n_head=16, block_size=512, batch_size=256))
    >>> r.ok, [x.key for x in r.reasons]
    (False, ['budget.params', 'budget.memory', 'budget.step_time'])

    ``cfg`` must pass ``cfg.validate()`` (ValueError otherwise, as ``make_config`` raises).
    """
    problems = cfg.validate()
    if problems:
        raise ValueError("; ".join(problems))
    kind = device_kind(device)
    mem_limit, time_limit = MAX_TRAIN_BYTES[kind], MAX_STEP_S[kind]
    est = estimate(cfg, vocab_size, kind)
    one = estimate(replace(cfg, batch_size=1), vocab_size, kind)
    # what the checkpoint loader would refuse, so that every download can be loaded again
    reasons = [Reason("budget.bound", p) for key, p in model_problems(cfg.model_config(
        DEFAULT_VOCAB if vocab_size is None else int(vocab_size))) if key == "ckpt.err_bound"]
    if est.params > MAX_PARAMS:
        reasons.append(Reason("budget.params", {"params": est.params, "limit": MAX_PARAMS}))
    if one.total_bytes > mem_limit:
        reasons.append(Reason("budget.memory", {"need_gib": _gib(one.total_bytes), "limit_gib": _gib(mem_limit)}))
    if one.step_s > time_limit:
        reasons.append(Reason("budget.step_time", {"seconds": round(one.step_s, 1), "limit": time_limit}))
    if reasons:
        return BudgetCheck(False, tuple(reasons), cfg, est)
    if est.total_bytes <= mem_limit and est.step_s <= time_limit:
        return BudgetCheck(True, (), cfg, est)
    # only the batch is too large: the largest batch that fits both limits
    by_mem = (mem_limit - one.state_bytes) // one.per_element_bytes
    by_time = int(time_limit / one.step_s)
    batch = max(1, min(cfg.batch_size, by_mem, by_time))
    new = replace(cfg, batch_size=batch)
    new_est = estimate(new, vocab_size, kind)
    why = ("budget.batch_memory", {"need_gib": _gib(est.total_bytes), "limit_gib": _gib(mem_limit)}) \
        if est.total_bytes > mem_limit else ("budget.batch_time", {"seconds": round(est.step_s, 1), "limit": time_limit})
    reasons.append(Reason(why[0], {"old": cfg.batch_size, "new": batch, **why[1]}))
    return BudgetCheck(True, tuple(reasons), new, new_est)


def vocab_bound(text: str, cfg) -> int:
    """An upper bound of the vocabulary ``cfg`` builds on ``text`` (without building it):
    every distinct character (+1 for BPE's unknown token), plus the BPE merges.

    >>> from lmviz.train import TrainConfig
    >>> vocab_bound("abcab", TrainConfig()), vocab_bound("abcab", TrainConfig(tokenizer="bpe", bpe_merges=10))
    (3, 14)
    """
    n = len(set(text))
    return n + 1 + cfg.bpe_merges if cfg.tokenizer == "bpe" else n


# -----------------------------------------------------------------------------
# pretrained checkpoints (lmviz.hf): bounds on config.json, then a memory and time budget

MAX_PRETRAINED_LAYERS = 256        # config.json bounds, before any arithmetic (Llama 3.1 405B: 126)
MAX_PRETRAINED_WIDTH = 32_768      # d_model (405B: 16,384)
MAX_PRETRAINED_HEADS = 512         # query heads (405B: 128)
MAX_PRETRAINED_VOCAB = 1_000_000   # tokens (Gemma: 256,000)
MAX_MODEL_SHARE = 0.5              # the pretrained models loaded in this process, all of them
#                                    together (one copy of each, shared by every session:
#                                    lmviz.hf_shared), may take this share of the machine's memory
#                                    (the GPU's own on cuda): the rest is the server's and the sessions'
DRAW_TOKENS = 256                  # longest prompt a chapter draws on a pretrained model
BUDGET_TOKENS = 128                # the prompt the time budget assumes (one chapter's forward pass)


def pretrained_budget(params: int, bytes_per_weight: int, largest: int, n_layer: int, kv_width: int,
                      context: int, vocab: int, device, total_bytes: int, loaded_bytes: int = 0,
                      loaded_count: int = 0) -> list[Reason]:
    """Why a pretrained model may not load here (empty: it fits), before a weight is read.

    Memory: the weights (``bytes_per_weight`` each: 4 on the CPU, where bf16/fp16 are upcast),
    the largest tensor twice more while it is read and converted, a KV cache of ``context``
    positions, DRAW_TOKENS rows of logits three times (logits, probabilities, a copy), and
    OVERHEAD_BYTES; with the ``loaded_bytes`` of the ``loaded_count`` pretrained models already
    loaded in this process, at most MAX_MODEL_SHARE of ``total_bytes``. Time: a forward pass over
    BUDGET_TOKENS tokens (2 FLOPs per parameter and token) at TRAIN_FLOPS within MAX_STEP_S.

    >>> [r.key for r in pretrained_budget(7_000_000_000, 4, 500_000_000, 32, 1024, 2048, 32000, "cpu", 24 * GiB)]
    ['hf.budget_memory', 'hf.budget_time']
    >>> pretrained_budget(124_000_000, 4, 38_000_000, 12, 768, 1024, 50257, "cpu", 24 * GiB)
    []
    >>> [r.key for r in pretrained_budget(124_000_000, 4, 38_000_000, 12, 768, 1024, 50257, "cpu", 24 * GiB,
    ...                                   loaded_bytes=11 * GiB, loaded_count=3)]
    ['hf.budget_loaded']
    """
    kind = device_kind(device)
    need = (params * bytes_per_weight + 2 * 4 * largest + 2 * n_layer * context * kv_width * bytes_per_weight
            + 3 * 4 * DRAW_TOKENS * vocab + OVERHEAD_BYTES)
    limit = MAX_MODEL_SHARE * total_bytes
    out = []
    where = "GPU" if kind == "cuda" else "CPU"
    if need > limit:
        out.append(Reason("hf.budget_memory", {
            "need_gib": _gib(need), "limit_gib": _gib(limit), "total_gib": _gib(total_bytes),
            "share": round(100 * MAX_MODEL_SHARE), "params_b": round(params / 1e9, 2), "bytes": bytes_per_weight,
            "where": where}))
    elif need + loaded_bytes > limit:          # it fits alone, not beside the models already loaded
        out.append(Reason("hf.budget_loaded", {
            "need_gib": _gib(need), "loaded_gib": _gib(loaded_bytes), "count": loaded_count,
            "limit_gib": _gib(limit), "total_gib": _gib(total_bytes), "share": round(100 * MAX_MODEL_SHARE),
            "where": where}))
    seconds = 2.0 * params * BUDGET_TOKENS / TRAIN_FLOPS[kind]
    if seconds > MAX_STEP_S[kind]:
        out.append(Reason("hf.budget_time", {"seconds": round(seconds, 1), "tokens": BUDGET_TOKENS,
                                             "limit": MAX_STEP_S[kind], "params_b": round(params / 1e9, 2)}))
    return out



# -----------------------------------------------------------------------------
# on-demand measurements on the current model (lmviz.chapters.kv_cache.plan_speed): sized from the
# model's own numbers so that one press finishes within MEASURE_S on this device kind

MEASURE_S = {"cpu": 5.0,                   # seconds one measurement may take, estimated before it
             "cuda": 3.0}                  # starts (a lecture's pause, not a coffee break)
DECODE_FLOPS = TRAIN_FLOPS                 # a forward pass's matmuls run at the training rate
WEIGHT_READ_BYTES_S = {"cpu": 8e9,         # a one-token step reads every weight once: memory-bound.
                       "cuda": 1e12}       # SmolLM2 (540 MB of fp32) took 58 ms a cached step on a
#                                            busy 2-core server here (9.3 GB/s); an H100 reads ~3 TB/s
LAYER_CALL_S = {"cpu": 3e-4,               # fixed cost of one layer in one forward call (Python,
                "cuda": 1e-4}              # kernel launches): the 4-layer timing model's cached step
#                                            took 1.8 ms at 500 tokens, far above its FLOPs

VIEW_S = {"cpu": 1.0, "cuda": 0.3}        # seconds of matmuls a chapter's default view may spend scoring text


def view_tokens(params: int, device: str = "cpu") -> int:
    """How many tokens a chapter's default view scores with a model of ``params`` parameters
    (one forward pass, ~2 FLOPs per parameter and token) within VIEW_S on ``device``: the
    shipped model scores whole texts, a pretrained one the start of them (the page says so).

    >>> view_tokens(1_310_000), view_tokens(134_515_008)
    (15267, 148)
    """
    kind = device_kind(device)
    return max(32, int(VIEW_S[kind] * DECODE_FLOPS[kind] / (2 * max(1, params))))


def prefix_tokens(params: int, device: str = "cpu", most: int = 32) -> int:
    """The longest sentence (at most ``most`` tokens, at least 2) whose every prefix a chapter can
    pass through a model of ``params`` parameters one at a time, plus two whole passes, within
    the view budget (:func:`view_tokens`): n prefixes cost n(n+1)/2 tokens, so the shipped model
    checks 32 tokens and SmolLM2 the first 14 (a 32-token Chinese line took 2.9 s with it).

    >>> prefix_tokens(1_310_000), prefix_tokens(134_515_008)
    (32, 14)
    """
    budget = view_tokens(params, device)
    n = most
    while n > 2 and n * (n + 1) // 2 + 2 * n > budget:
        n -= 1
    return n


# -----------------------------------------------------------------------------
# English sentences for logs, tests and str(error): the catalogue is the one source of text

@functools.lru_cache(maxsize=1)
def _english_catalogue() -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "assets" / "i18n" / "en.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def english(key: str, params: dict) -> str:
    """The English sentence of ``key`` formatted with ``params`` (key and params if missing)."""
    text = _english_catalogue().get(key)
    if text is None:
        return f"{key} {params}"
    try:
        return fill(text, params)
    except (KeyError, IndexError, ValueError):
        return f"{text} {params}"


class SaidError(Exception):
    """An error a page says in its own language: ``key`` is a catalogue key, ``params`` its
    placeholders (numbers and plain names); ``str(err)`` is the English sentence
    (``lmviz.checkpoint.CheckpointError``, ``lmviz.server.train_ray.ClusterError``)."""

    def __init__(self, key: str, **params):
        self.key, self.params = key, params
        super().__init__(english(key, params))