"""Attention as plain functions: the dense formula, FlashAttention's tiled version, and the
memory-traffic model that explains why tiling is faster on a GPU although it does the same
arithmetic.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V

- :func:`dense_attention` builds the [n_q, n_k] score matrix (the textbook way).
- :func:`tiled_attention` is FlashAttention's algorithm in plain torch: queries and keys are
  cut into tiles; each query tile keeps a running row max m, a running sum l of exp(s - m) and
  an unnormalised output acc; every key tile updates them with the "online softmax" rescaling
  (Milakov & Gimelshein 2018; Dao et al. 2022). The [n, n] matrix is never built: the largest
  score block alive is [block_q, block_k]. The loop order (query tiles outside, key tiles
  inside) is FlashAttention-2's (Dao 2023). The result is exact (to float rounding), and the
  arithmetic is still O(n^2 d): what shrinks is memory traffic, not work.
- :func:`traffic_bytes_dense` / :func:`traffic_bytes_tiled` count bytes moved between slow
  memory (GPU HBM) and fast on-chip memory (SRAM), after the FlashAttention paper's IO
  analysis (Dao et al. 2022, Theorem 2): standard attention Θ(N d + N^2), tiled Θ(N^2 d^2 / M)
  for an on-chip memory of M elements.

Shapes: q [..., n_q, d], k [..., n_k, d], v [..., n_k, d_v]; any leading (batch, head) dims.
Causal masks align the *last* query with the *last* key (query i sits at absolute position
n_k - n_q + i), which is what a decode step with a KV cache needs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

__all__ = [
    "weighted_sum", "dense_attention", "tiled_attention", "TileVisit", "RowUpdate", "TiledTrace",
    "tile_size", "traffic_bytes_dense", "traffic_bytes_tiled", "VarianceRow",
    "score_variance_experiment",
]


def weighted_sum(weights, values) -> torch.Tensor:
    """Attention's last step for one query: Σ_i w_i v_i; weights [n], values [n, d_v] -> [d_v].

    >>> weighted_sum([0.2, 0.3, 0.5], [[1, 0], [0, 2], [2, 2]]).tolist()
    [1.2, 1.6]
    """
    w = torch.as_tensor(weights, dtype=torch.float64)
    v = torch.as_tensor(values, dtype=torch.float64)
    return (w[:, None] * v).sum(0).round(decimals=12)


def _causal_mask(n_q: int, n_k: int, device=None) -> torch.Tensor:
    """[n_q, n_k] bool, True where query i may read key j (j <= n_k - n_q + i)."""
    qpos = torch.arange(n_q, device=device)[:, None] + (n_k - n_q)
    return torch.arange(n_k, device=device)[None, :] <= qpos


def dense_attention(q, k, v, causal: bool = True, scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * scale + mask) v, materialising the [..., n_q, n_k] matrix; -> [..., n_q, d_v].

    >>> q = k = torch.eye(2); v = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> dense_attention(q, k, v, causal=True)[0].tolist()  # row 0 can only read key 0
    [1.0, 0.0]
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ k.transpose(-2, -1)) * scale                            # [..., n_q, n_k]
    if causal:
        s = s.masked_fill(~_causal_mask(q.shape[-2], k.shape[-2], q.device), float("-inf"))
    return torch.softmax(s, dim=-1) @ v                              # [..., n_q, d_v]


@dataclass(frozen=True)
class TileVisit:
    qi: int                  # query tile index
    kj: int                  # key tile index
    q_range: tuple[int, int]  # [start, stop) query rows
    k_range: tuple[int, int]  # [start, stop) key columns
    skipped: bool            # causal: every key in the tile is in every query's future
    partial: bool            # causal: the tile straddles the diagonal (masked inside)


@dataclass(frozen=True)
class RowUpdate:
    kj: int                  # key tile just folded into the traced row
    k_range: tuple[int, int]  # its columns
    tile_max: float          # max score of the row inside this tile (-inf if fully masked)
    m: float                 # running max after the tile
    l: float                 # running sum of exp(s - m) after the tile
    rescale: float           # exp(m_old - m_new): factor applied to the old l and acc
    out: list[float]         # acc / l: the row's output if we stopped here [d_v]


@dataclass
class TiledTrace:
    block_q: int                                          # query tile height
    block_k: int                                          # key tile width
    row: int                                              # traced query row (batch element 0)
    visits: list[TileVisit] = field(default_factory=list)  # every tile, in visit order
    row_updates: list[RowUpdate] = field(default_factory=list)  # the traced row, tile by tile
    max_block_elems: int = 0                              # largest score block alive (elements)


def tiled_attention(q, k, v, block_q: int = 64, block_k: int = 64, causal: bool = True,
                    scale: float | None = None, trace: bool = False, trace_row: int = 0):
    """FlashAttention's online-softmax attention, tile by tile; equal to dense_attention.

    Returns the output [..., n_q, d_v], or (output, TiledTrace) when `trace` is True. The trace
    records every tile in visit order (causal tiles in the future are recorded as skipped and
    never computed) and, for query row `trace_row` of the first batch element, the running
    max m, sum l and output after each key tile.

    >>> q, k, v = torch.randn(3, 10, 4, generator=torch.Generator().manual_seed(0)).unbind(0)
    >>> torch.allclose(tiled_attention(q, k, v, 4, 3), dense_attention(q, k, v), atol=1e-6)
    True
    """
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be >= 1")
    *lead, n_q, d = q.shape
    n_k, d_v = k.shape[-2], v.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    qf = q.reshape(-1, n_q, d)                                     # [B, n_q, d]
    kf = k.reshape(-1, n_k, d)                                     # [B, n_k, d]
    vf = v.reshape(-1, n_k, d_v)                                   # [B, n_k, d_v]
    out = torch.empty(qf.shape[0], n_q, d_v, dtype=v.dtype, device=v.device)
    tr = TiledTrace(block_q=block_q, block_k=block_k, row=trace_row) if trace else None
    offset = n_k - n_q                                             # absolute position of query 0
    for qi, q0 in enumerate(range(0, n_q, block_q)):
        q1 = min(q0 + block_q, n_q)
        qt = qf[:, q0:q1] * scale                                  # [B, bq, d]
        m = torch.full(qt.shape[:2], float("-inf"), dtype=q.dtype, device=q.device)  # [B, bq]
        l = torch.zeros_like(m)                                    # [B, bq]
        acc = torch.zeros(qt.shape[0], q1 - q0, d_v, dtype=v.dtype, device=v.device)  # [B, bq, d_v]
        for kj, k0 in enumerate(range(0, n_k, block_k)):
            k1 = min(k0 + block_k, n_k)
            skipped = causal and k0 > offset + q1 - 1              # whole tile in the future
            partial = causal and not skipped and k1 - 1 > offset + q0
            if tr is not None:
                tr.visits.append(TileVisit(qi, kj, (q0, q1), (k0, k1), skipped, partial))
            if skipped:
                continue
            s = qt @ kf[:, k0:k1].transpose(-2, -1)                # [B, bq, bk]: the only scores alive
            if partial:
                qpos = torch.arange(q0, q1, device=q.device)[:, None] + offset
                s = s.masked_fill(torch.arange(k0, k1, device=q.device)[None, :] > qpos, float("-inf"))
            tile_max = s.amax(-1)                                  # [B, bq]
            m_new = torch.maximum(m, tile_max)                     # [B, bq]
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # all-masked rows
            p = torch.exp(s - m_safe[..., None])                   # [B, bq, bk]
            alpha = torch.exp(m - m_safe)                          # [B, bq] rescales the old sums
            l = alpha * l + p.sum(-1)
            acc = alpha[..., None] * acc + p @ vf[:, k0:k1]        # [B, bq, d_v]
            m = m_new
            if tr is not None:
                tr.max_block_elems = max(tr.max_block_elems, s.shape[-2] * s.shape[-1])
                if q0 <= trace_row < q1:
                    r = trace_row - q0
                    tr.row_updates.append(RowUpdate(
                        kj=kj, k_range=(k0, k1), tile_max=float(tile_max[0, r]), m=float(m[0, r]),
                        l=float(l[0, r]), rescale=float(alpha[0, r]),
                        out=(acc[0, r] / l[0, r]).tolist()))
        out[:, q0:q1] = acc / l[..., None]
    out = out.reshape(*lead, n_q, d_v)
    return (out, tr) if trace else out


# -----------------------------------------------------------------------------
# memory traffic (IO) model

def tile_size(d: int, sram_bytes: int, bytes_per: int = 2) -> int:
    """Largest square tile B (block_q = block_k = B) whose working set fits on chip.

    On-chip per step: a Q tile, a K tile, a V tile and the output accumulator (4 B d elements)
    plus the B x B score tile: 4 B d + B^2 <= M, with M = sram_bytes / bytes_per elements.

    >>> tile_size(d=2, sram_bytes=80, bytes_per=4)  # M = 20: B=2 uses 16 + 4 = 20
    2
    """
    m = sram_bytes // bytes_per
    b = int((-4 * d + math.sqrt(16 * d * d + 4 * m)) / 2)  # root of B^2 + 4 d B - M = 0
    while b > 0 and 4 * b * d + b * b > m:
        b -= 1
    while 4 * (b + 1) * d + (b + 1) ** 2 <= m:
        b += 1
    if b < 1:
        raise ValueError(f"on-chip memory of {sram_bytes} bytes cannot hold even a 1-row tile at d={d}")
    return b


def traffic_bytes_dense(n: int, d: int, bytes_per: int = 2) -> int:
    """Bytes moved to/from slow memory by standard attention (one head), FlashAttention paper
    Algorithm 0: read Q, K (2nd) and write S (n^2); read S, write P = softmax(S) (2 n^2);
    read P and V (n^2 + nd) and write O (nd). Total (4 n d + 4 n^2) elements: Θ(N d + N^2).

    >>> traffic_bytes_dense(n=4, d=2, bytes_per=4)  # (4*4*2 + 4*16) * 4
    384
    """
    return (4 * n * d + 4 * n * n) * bytes_per


def traffic_bytes_tiled(n: int, d: int, sram_bytes: int, bytes_per: int = 2,
                        causal: bool = False) -> int:
    """Bytes moved by tiled attention in :func:`tiled_attention`'s loop order (one head).

    With tiles of B = tile_size(d, sram_bytes) rows, each of the T = ceil(n/B) query tiles is
    read once and its output written once (2 n d), and each query tile streams every K and V
    tile it needs past the chip (2 n d per query tile; causal: only tiles up to the diagonal).
    Scores never leave the chip. With B ≈ M / (4d) this is ≈ 8 n^2 d^2 / M: the paper's
    Θ(N^2 d^2 / M). (Softmax statistics m, l stay on chip in this loop order.)

    >>> traffic_bytes_tiled(n=4, d=2, sram_bytes=80, bytes_per=4)  # B=2, T=2: (8 + 8 + 2*16) * 4
    192
    """
    b = min(tile_size(d, sram_bytes, bytes_per), n)
    t = math.ceil(n / b)
    kv_reads = 0
    for i in range(t):
        tiles = (i + 1) if causal else t                  # key tiles visited by query tile i
        kv_reads += 2 * d * min(tiles * b, n)             # K and V rows streamed in
    return (2 * n * d + kv_reads) * bytes_per


# -----------------------------------------------------------------------------
# why divide by sqrt(d_k)

@dataclass(frozen=True)
class VarianceRow:
    d_k: int                   # query/key dimension
    var_raw: float             # sample variance of q·k with q, k ~ N(0, I): ≈ d_k
    var_scaled: float          # sample variance of q·k / sqrt(d_k): ≈ 1
    max_weight_raw: float      # mean over rows of the largest softmax weight, unscaled scores
    max_weight_scaled: float   # the same with scores divided by sqrt(d_k)


def score_variance_experiment(d_ks=(4, 16, 64, 256), n_samples: int = 4000, seed: int = 0,
                              n_keys: int = 16) -> list[VarianceRow]:
    """Sample q, k with i.i.d. N(0, 1) entries; measure Var(q·k) and softmax saturation.

    Var(q·k) = Σ Var(q_i k_i) = d_k, so raw scores spread like sqrt(d_k) and softmax over
    `n_keys` keys piles nearly all weight on one key; dividing by sqrt(d_k) keeps variance 1.

    >>> r = score_variance_experiment([64], n_samples=2000)[0]
    >>> 0.9 * 64 < r.var_raw < 1.1 * 64, r.max_weight_raw > r.max_weight_scaled
    (True, True)
    """
    g = torch.Generator().manual_seed(seed)
    rows = []
    for d_k in d_ks:
        # float32: a third of float64's time (0.08 vs 0.24 s for the page's 5 sizes), and sums of
        # at most a few thousand products keep ~6 significant digits, far below sampling noise
        q = torch.randn(n_samples, 1, d_k, generator=g)                            # [S, 1, d_k]
        k = torch.randn(n_samples, n_keys, d_k, generator=g)                       # [S, n_keys, d_k]
        s = (q * k).sum(-1)                                                        # [S, n_keys]
        scaled = s / math.sqrt(d_k)
        rows.append(VarianceRow(
            d_k=int(d_k), var_raw=float(s.var()), var_scaled=float(scaled.var()),
            max_weight_raw=float(torch.softmax(s, -1).amax(-1).mean()),
            max_weight_scaled=float(torch.softmax(scaled, -1).amax(-1).mean())))
    return rows
