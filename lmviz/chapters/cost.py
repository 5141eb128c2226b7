"""What a transformer costs: FLOPs per component, training compute and memory, the
Chinchilla compute-optimal trade-off, and a measured O(n^2) attention timing.

Counting convention: one multiply-add = 2 FLOPs; a matmul [a, b] @ [b, c] is 2abc FLOPs.
Softmax, norms, biases and activations are ignored (they are O(n d), small next to matmuls).
All counts are per sequence of n tokens, per layer, width d, unless a name says otherwise.

Pure Python except :func:`measure_attention_time`, which imports torch when called.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

__all__ = [
    "attention_flops", "projection_flops", "mlp_flops", "LayerFlops", "layer_flops",
    "attention_dominates_from", "mlp_flop_ratio", "decode_step_flops", "training_flops", "MemoryRecipe",
    "MEMORY_RECIPES", "training_memory_bytes", "activation_bytes", "ChinchillaPoint",
    "chinchilla_optimal", "chinchilla_loss", "chinchilla_optimal_fit", "AttnTiming",
    "measure_attention_time", "TimingRounds", "measure_attention_rounds",
]


# -----------------------------------------------------------------------------
# FLOPs of one transformer layer

def attention_flops(n: int, d: int, causal: bool = False) -> int:
    """Q K^T (2 n^2 d) plus weights @ V (2 n^2 d) = 4 n^2 d; O(n^2 d) (n² attention-cost example).

    `causal` counts only the useful lower triangle, n (n + 1) / 2 pairs instead of n^2
    (a dense kernel computes the full square anyway; a tiled one can skip future tiles).

    >>> attention_flops(2048, 64) / attention_flops(1024, 64)  # double n, 4x the work
    4.0
    """
    pairs = n * (n + 1) // 2 if causal else n * n
    return 4 * pairs * d


def projection_flops(n: int, d: int, kv_ratio: float = 1.0) -> int:
    """Q, K, V and output projections: 4 matmuls [n, d] @ [d, d] = 8 n d^2.

    `kv_ratio` = n_kv_heads / n_heads shrinks the K and V projections (GQA/MQA).

    >>> projection_flops(10, 4)
    1280
    """
    return int(round(2 * n * d * d * (2 + 2 * kv_ratio)))


def mlp_flops(n: int, d: int, ratio: float = 4.0) -> int:
    """Two matmuls d -> ratio*d -> d: 2 * 2 n d (ratio d) = 4 ratio n d^2 (16 n d^2 at ratio 4).

    (A gated MLP such as SwiGLU has three matmuls; pass ratio * 1.5 for the same count.)

    >>> mlp_flops(10, 4)
    2560
    """
    return int(round(4 * ratio * n * d * d))


@dataclass(frozen=True)
class LayerFlops:
    n: int             # tokens in the sequence
    d: int             # model width
    attention: int     # scores and weighted sum: 4 n^2 d
    projections: int   # Q, K, V, O: 8 n d^2
    mlp: int           # 4 r n d^2
    total: int         # sum of the three

    @property
    def attention_share(self) -> float:
        """Fraction of the layer's FLOPs spent in the n^2 part."""
        return self.attention / self.total


def layer_flops(n: int, d: int, mlp_ratio: float = 4.0, kv_ratio: float = 1.0,
                causal: bool = False) -> LayerFlops:
    """Per-layer FLOP breakdown for a sequence of n tokens (a forward pass, or prefill).

    >>> f = layer_flops(n=6 * 64, d=64)  # at n = 6d attention equals the rest
    >>> f.attention == f.projections + f.mlp
    True
    """
    a = attention_flops(n, d, causal)
    p = projection_flops(n, d, kv_ratio)
    m = mlp_flops(n, d, mlp_ratio)
    return LayerFlops(n=n, d=d, attention=a, projections=p, mlp=m, total=a + p + m)


def attention_dominates_from(d: int, mlp_ratio: float = 4.0, kv_ratio: float = 1.0) -> float:
    """Sequence length above which attention's 4 n^2 d exceeds projections + MLP.

    4 n^2 d = (4 + 4 k + 4 r) n d^2  <=>  n = (1 + k + r) d, with k = kv_ratio (K and V
    projections shrink with fewer KV heads): 6d for the usual r = 4 and k = 1 (GPT-2 small,
    d = 768: n ≈ 4608 tokens; the toy model here, d = 64: n = 384).

    >>> attention_dominates_from(768), attention_dominates_from(576, 4.0, 1 / 3)
    (4608.0, 3072.0)
    """
    return (1.0 + kv_ratio + mlp_ratio) * d


def mlp_flop_ratio(cfg) -> float:
    """The r of :func:`mlp_flops` for a model's config: its MLP's hidden width over d, times 1.5
    for a gated MLP (SwiGLU: gate, up and down, three matmuls where GELU's MLP has two).
    SmolLM2: 1536 / 576 x 1.5 = 4, the same FLOPs as a GELU MLP 4x as wide.

    >>> from types import SimpleNamespace as N
    >>> mlp_flop_ratio(N(d_model=576, ff_width=1536, mlp="swiglu")), mlp_flop_ratio(N(d_model=64, ff_width=256, mlp="gelu"))
    (4.0, 4.0)
    """
    return cfg.ff_width / cfg.d_model * (1.5 if getattr(cfg, "mlp", "gelu") == "swiglu" else 1.0)


def decode_step_flops(n_cache: int, d: int, mlp_ratio: float = 4.0, kv_ratio: float = 1.0) -> LayerFlops:
    """One decode step with a KV cache, per layer: the new token attends to n_cache keys
    (itself included): attention 4 n_cache d (linear in the cache: decode-speed example), projections and MLP
    for one token only. Compare with layer_flops(n, d) for prefill.

    >>> decode_step_flops(100, 8).attention
    3200
    """
    a = 4 * n_cache * d
    p = projection_flops(1, d, kv_ratio)
    m = mlp_flops(1, d, mlp_ratio)
    return LayerFlops(n=1, d=d, attention=a, projections=p, mlp=m, total=a + p + m)


# -----------------------------------------------------------------------------
# training compute and memory

def training_flops(n_params: float, n_tokens: float) -> float:
    """C ≈ 6 N D (compute-budget example): forward 2 N per token (one multiply-add per weight), backward twice
    the forward (gradients w.r.t. activations and w.r.t. weights). Ignores attention's n^2
    term, fine while n << 6d per the breakdown above (Kaplan et al. 2020, §2.1).

    >>> training_flops(70e9, 1.4e12)  # Chinchilla: 70B parameters, 1.4T tokens
    5.88e+23
    """
    return 6.0 * n_params * n_tokens


@dataclass(frozen=True)
class MemoryRecipe:
    name: str          # short label
    weights: float     # bytes per parameter for the weights used in forward/backward
    master: float      # bytes per parameter for an fp32 master copy (mixed precision)
    grads: float       # bytes per parameter for gradients
    optimizer: float   # bytes per parameter for optimizer state
    source: str        # where the numbers come from

    @property
    def per_param(self) -> float:
        return self.weights + self.master + self.grads + self.optimizer


# Bytes per parameter for model states (activations not included: see activation_bytes).
MEMORY_RECIPES: dict[str, MemoryRecipe] = {r.name: r for r in [
    MemoryRecipe("fp32 + AdamW", 4, 0, 4, 8,
                 "fp32 weights and grads; AdamW keeps m and v in fp32 (Loshchilov & Hutter 2019)"),
    MemoryRecipe("mixed fp16/bf16 + AdamW", 2, 4, 2, 8,
                 "ZeRO paper (Rajbhandari et al. 2020, §3.1): 2 + 2 + 12 = 16 bytes per parameter"),
    MemoryRecipe("mixed, fp32 grads + AdamW", 2, 4, 4, 8,
                 "Hugging Face 'model training anatomy': 6 (fp32 + half weights) + 4 grads + 8 AdamW = 18"),
    MemoryRecipe("mixed + 8-bit AdamW", 2, 4, 4, 2,
                 "8-bit optimizer states (Dettmers et al. 2022): 2 bytes for m and v"),
    MemoryRecipe("pure bf16 + AdamW", 2, 0, 2, 4,
                 "everything in bf16, no master copy (cheaper, less stable)"),
    MemoryRecipe("fp32 + SGD momentum", 4, 0, 4, 4, "one fp32 momentum buffer"),
    MemoryRecipe("inference fp16", 2, 0, 0, 0, "weights only; add the KV cache and activations"),
]}


def training_memory_bytes(n_params: float, recipe: str = "mixed fp16/bf16 + AdamW") -> dict[str, float]:
    """Bytes for weights, master copy, gradients and optimizer state, plus their total.

    >>> training_memory_bytes(1e9, "fp32 + AdamW")["total"] / 2**30  # 1B params: ~14.9 GiB
    14.901161193847656
    """
    r = MEMORY_RECIPES[recipe]
    parts = {"weights": r.weights, "master": r.master, "grads": r.grads, "optimizer": r.optimizer}
    out = {k: v * n_params for k, v in parts.items()}
    out["total"] = r.per_param * n_params
    return out


def activation_bytes(seq: int, batch: int, d: int, n_heads: int, n_layers: int) -> int:
    """Activations kept for the backward pass, 16-bit, no recomputation, no parallelism:
    s b h (34 + 5 a s / h) bytes per layer (Korthikanti et al. 2022, 'Reducing Activation
    Recomputation in Large Transformer Models', eq. 1; a = heads, h = width). The 5 a s^2 b
    term is the stored [s, s] attention matrices: FlashAttention removes it.

    >>> activation_bytes(seq=2, batch=1, d=4, n_heads=2, n_layers=1)  # 2*1*4*(34 + 5*2*2/4)
    312
    """
    return int(seq * batch * d * (34 + 5 * n_heads * seq / d) * n_layers)


# -----------------------------------------------------------------------------
# Chinchilla (Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models")

@dataclass(frozen=True)
class ChinchillaPoint:
    compute: float           # training FLOPs C
    n_params: float          # compute-optimal parameter count N
    n_tokens: float          # compute-optimal training tokens D
    tokens_per_param: float  # D / N


def chinchilla_optimal(compute_flops: float, tokens_per_param: float = 20.0) -> ChinchillaPoint:
    """Compute-optimal N and D for a budget C, on the line D = r N with C = 6 N D.

    The paper's approaches 1 and 2 find N_opt ∝ C^0.50 (0.49) and D_opt ∝ C^0.50 (0.51): model
    and data grow together, and its Table 3 works out to about 20 tokens per parameter
    (400M -> 8.0B tokens, 10B -> 205B, 67B -> 1.5T). Solving C = 6 N (r N):
    N = sqrt(C / (6 r)), D = r N. Limits: a rule of thumb fitted to one family of dense
    models, one data mix and training-loss-optimal budgets up to ~1e24 FLOPs; approach 3 of the
    same paper gives smaller models (see chinchilla_optimal_fit); it ignores inference cost,
    which makes longer training of smaller models (LLaMA-style, far beyond 20) attractive.

    >>> p = chinchilla_optimal(5.76e23)  # Gopher's budget: Chinchilla is 70B on 1.4T tokens
    >>> round(p.n_params / 1e9), round(p.n_tokens / 1e12, 2)
    (69, 1.39)
    """
    if compute_flops <= 0 or tokens_per_param <= 0:
        raise ValueError("compute and tokens per parameter must be positive")
    n = math.sqrt(compute_flops / (6.0 * tokens_per_param))
    return ChinchillaPoint(compute=compute_flops, n_params=n, n_tokens=tokens_per_param * n,
                           tokens_per_param=tokens_per_param)


# Approach 3's fitted loss L(N, D) = E + A / N^alpha + B / D^beta (Hoffmann et al. 2022, §3.3)
CHINCHILLA_FIT = dict(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)


def chinchilla_loss(n_params: float, n_tokens: float) -> float:
    """Approach 3's parametric loss fit (nats per token on the paper's MassiveText data).

    >>> round(chinchilla_loss(70e9, 1.4e12), 2)
    1.94
    """
    f = CHINCHILLA_FIT
    return f["E"] + f["A"] / n_params ** f["alpha"] + f["B"] / n_tokens ** f["beta"]


def chinchilla_optimal_fit(compute_flops: float) -> ChinchillaPoint:
    """Minimise chinchilla_loss on the iso-FLOP line D = C / (6N), in closed form:
    N_opt = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)).
    With the paper's rounded constants N_opt ∝ C^0.45: models grow slower than approaches 1-2
    say, and at Gopher's budget the optimum is ~32B rather than ~70B. The three approaches
    disagree by this much: one reason to treat "20 tokens per parameter" as a rule of thumb.

    >>> round(chinchilla_optimal_fit(5.76e23).n_params / 1e9)  # smaller than approaches 1-2
    32
    """
    f = CHINCHILLA_FIT
    g = (f["alpha"] * f["A"] / (f["beta"] * f["B"])) ** (1 / (f["alpha"] + f["beta"]))
    n = g * (compute_flops / 6.0) ** (f["beta"] / (f["alpha"] + f["beta"]))
    d = compute_flops / (6.0 * n)
    return ChinchillaPoint(compute=compute_flops, n_params=n, n_tokens=d, tokens_per_param=d / n)


# -----------------------------------------------------------------------------
# measured attention time (n² attention-cost example)

@dataclass(frozen=True)
class AttnTiming:
    n: int                      # sequence length
    t_scores: float             # median seconds for S = Q K^T / sqrt(d)   [n, n]
    t_full: float               # median seconds for softmax(S) V
    ratio_scores: float | None  # t_scores(n) / t_scores(n_prev); None for the first n
    ratio_full: float | None    # the same for full attention
    matrix_bytes: int           # bytes of the [n, n] score matrix in this dtype
    flops: int                  # attention_flops(n, d): 4 n^2 d


def loglog_slope(ns, ts) -> float:
    """Least-squares slope of log t against log n: 2 means t grows as n², 1 as n.

    One doubling of n multiplies t by 2**slope; a fit over several n is steadier than any one
    ratio on a noisy machine.

    >>> round(loglog_slope([128, 256, 512], [1.0, 4.0, 16.0]), 6)
    2.0
    """
    x = [math.log(n) for n in ns]
    y = [math.log(t) for t in ts]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)


def measure_attention_time(ns=(128, 256, 512, 1024, 2048, 4096), d: int = 64, device=None,
                           repeats: int = 5, dtype=None, seed: int = 0) -> list[AttnTiming]:
    """Time the score matrix and full (non-causal, single-head) attention at each n.

    After a warm-up, each of `repeats` samples times enough calls to last ~2 ms; the fastest
    sample is kept (on a shared machine the slow ones measure other processes, not attention).
    CUDA is synchronised. Ratios between consecutive n approach 4 per doubling once n is large
    enough to leave per-call overhead behind.
    """
    import torch

    from lmviz import device as default_device

    dev = torch.device(device) if device is not None else default_device()
    dtype = dtype or torch.float32
    g = torch.Generator(device="cpu").manual_seed(seed)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def timed(fn):
        fn(); sync()                                   # warm-up (allocations, thread pool)
        t0 = time.perf_counter(); fn(); sync()
        one = time.perf_counter() - t0
        inner = max(1, int(2e-3 / max(one, 1e-7)))     # each sample lasts >= ~2 ms: small n is
        ts = []                                        # not lost in timer and per-call noise
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            sync()
            ts.append((time.perf_counter() - t0) / inner)
        return min(ts)                                 # the least disturbed sample

    out, prev = [], None
    for n in ns:
        q, k, v = (torch.randn(n, d, generator=g).to(dev, dtype) for _ in range(3))
        scale = 1.0 / math.sqrt(d)
        with torch.no_grad():
            ts = timed(lambda: (q @ k.T) * scale)
            tf = timed(lambda: torch.softmax((q @ k.T) * scale, -1) @ v)
        rec = AttnTiming(n=n, t_scores=ts, t_full=tf,
                         ratio_scores=ts / prev.t_scores if prev else None,
                         ratio_full=tf / prev.t_full if prev else None,
                         matrix_bytes=n * n * q.element_size(), flops=attention_flops(n, d))
        out.append(rec)
        prev = rec
    return out


@dataclass(frozen=True)
class TimingRounds:
    """The same measurement repeated: ``rounds[r][i]`` is round r at length ``ns[i]``."""
    ns: tuple[int, ...]
    rounds: tuple[tuple[AttnTiming, ...], ...]

    def full_times(self) -> list[list[float]]:
        """Seconds of full attention, one list per round (what :func:`lmviz.chapters.claims.power_law` takes)."""
        return [[r.t_full for r in rnd] for rnd in self.rounds]

    def median(self) -> list[AttnTiming]:
        """Per length, the median over rounds of both timings (ratios from those medians)."""
        out, prev = [], None
        for i, n in enumerate(self.ns):
            ts = sorted(rnd[i].t_scores for rnd in self.rounds)
            tf = sorted(rnd[i].t_full for rnd in self.rounds)
            mid = len(ts) // 2
            t_s = ts[mid] if len(ts) % 2 else (ts[mid - 1] + ts[mid]) / 2
            t_f = tf[mid] if len(tf) % 2 else (tf[mid - 1] + tf[mid]) / 2
            base = self.rounds[0][i]
            rec = AttnTiming(n=n, t_scores=t_s, t_full=t_f,
                             ratio_scores=t_s / prev.t_scores if prev else None,
                             ratio_full=t_f / prev.t_full if prev else None,
                             matrix_bytes=base.matrix_bytes, flops=base.flops)
            out.append(rec)
            prev = rec
        return out

    def spread(self) -> tuple[list[float], list[float]]:
        """Per length, the fastest and the slowest round's full-attention seconds."""
        return ([min(r[i].t_full for r in self.rounds) for i in range(len(self.ns))],
                [max(r[i].t_full for r in self.rounds) for i in range(len(self.ns))])


def measure_attention_rounds(ns=(128, 256, 512, 1024, 2048), rounds: int = 5, *, on_round=None,
                             cancel=None, **kw) -> TimingRounds:
    """:func:`measure_attention_time` repeated ``rounds`` times over the same lengths, so that the
    slope comes with a spread (``on_round(done)`` after each round; ``cancel`` as in
    :func:`lmviz.cancel.check_cancel`).

    >>> tr = measure_attention_rounds((16, 32), 2, d=8, device="cpu", repeats=1)
    >>> len(tr.rounds), [r.n for r in tr.median()]
    (2, [16, 32])
    """
    from lmviz.cancel import check_cancel

    out = []
    for i in range(rounds):
        check_cancel(cancel)
        out.append(tuple(measure_attention_time(ns, **kw)))
        if on_round is not None:
            on_round(i + 1)
    return TimingRounds(tuple(int(n) for n in ns), tuple(out))


# -----------------------------------------------------------------------------
# FlashAttention, one tile at a time

@dataclass(frozen=True)
class FlashTiles:
    out: "np.ndarray"        # [n, d_v] attention computed tile by tile (lmviz.attention.tiled_attention)
    dense: "np.ndarray"      # [n, d_v] the same attention with the whole score matrix
    trace: object            # lmviz.attention.TiledTrace: every tile visited, the traced row's updates


@dataclass(frozen=True)
class FlashStep:
    step: int                # 1-based: how many tile visits have happened
    visit: object            # lmviz.attention.TileVisit at this step
    updates: tuple           # the traced row's RowUpdates so far, in order
    row_done: bool           # every tile the traced row needs has been folded in
    so_far: "np.ndarray"     # [d_v] the traced row's output after those updates (zeros before the first)
    gap: float               # max |so_far - dense row|: 0 up to rounding once the row is done
    max_err: float           # max |tiled - dense| over the whole output
    skipped: int             # tiles never computed (wholly in the future under the causal mask)


def flash_tiles(q, k, v, block_q: int, block_k: int, causal: bool, row: int) -> FlashTiles:
    """Tiled and dense attention of q, k, v [n, d] (numpy), with the tiles of query row ``row``
    traced."""
    import numpy as np
    import torch

    from lmviz.attention import dense_attention, tiled_attention

    Q, K, V = (torch.from_numpy(np.asarray(x)) for x in (q, k, v))
    out, tr = tiled_attention(Q, K, V, block_q, block_k, causal=causal, trace=True, trace_row=row)
    return FlashTiles(out.numpy(), dense_attention(Q, K, V, causal=causal).numpy(), tr)


def flash_step(tiles: FlashTiles, step: int) -> FlashStep:
    """Where the tiled computation stands after ``step`` tile visits, seen from the traced row.

    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((6, 4))
    >>> f = flash_tiles(x, x, x, 2, 2, True, row=5)
    >>> s = flash_step(f, len(f.trace.visits))
    >>> s.row_done, s.gap < 1e-12, s.skipped
    (True, True, 3)
    """
    import numpy as np

    tr, row = tiles.trace, tiles.trace.row
    visits = tr.visits

    def mine(vi) -> bool:                       # a computed tile of the traced row's query tile
        return not vi.skipped and vi.q_range[0] <= row < vi.q_range[1]

    done = sum(mine(vi) for vi in visits[:step])
    updates = tuple(tr.row_updates[:done])
    so_far = np.asarray(updates[-1].out) if updates else np.zeros_like(tiles.dense[row])
    return FlashStep(step, visits[step - 1], updates, done == sum(mine(vi) for vi in visits), so_far,
                     float(np.abs(so_far - tiles.dense[row]).max()), float(np.abs(tiles.out - tiles.dense).max()),
                     sum(vi.skipped for vi in visits))
