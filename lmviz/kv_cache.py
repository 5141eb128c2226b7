"""The KV cache: keep every past token's keys and values so decoding computes only the new one.

In a causal model, token t's k and v never change once computed (later tokens cannot affect
them), so recomputing them at every decode step is wasted work. The cache stores them per
layer; each step computes q, k, v for the new token only, appends k, v, and attends over the
cache. Q is never cached: a query is only needed at the step that asks it.

Size (KV-cache-size example): 2 (K and V) x batch x layers x tokens x kv_heads x head_dim x bytes per element.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .cancel import check_cancel
from .sampling import greedy, next_logits

# bytes per element of common storage formats (FP4 packs two numbers in a byte)
DTYPE_BYTES = {"FP32": 4, "FP16": 2, "BF16": 2, "INT8": 1, "FP4": 0.5}


def kv_cache_bytes(batch: int, n_layers: int, n_tokens: int, n_kv_heads: int, head_dim: int,
                   bytes_per_element: float) -> int:
    """Bytes a KV cache needs: 2 x B x L x n x H_kv x d_h x s (the 2 is K and V).

    The notes' KV-cache size example, a 32-layer model with 8 kv heads of 128 dims, 16k tokens in FP16 = 2 GiB:
    >>> kv_cache_bytes(1, 32, 16384, 8, 128, 2)
    2147483648
    """
    return int(round(2 * batch * n_layers * n_tokens * n_kv_heads * head_dim * bytes_per_element))


def max_tokens_for_budget(budget_bytes: float, batch: int, n_layers: int, n_kv_heads: int, head_dim: int,
                          bytes_per_element: float) -> int:
    """Most tokens whose KV cache fits in budget_bytes (rounded down).

    >>> max_tokens_for_budget(2**31, 1, 32, 8, 128, 2)
    16384
    """
    per_token = 2 * batch * n_layers * n_kv_heads * head_dim * bytes_per_element
    if per_token <= 0:
        raise ValueError("every size must be positive")
    return int(math.floor(budget_bytes / per_token))


@dataclass
class CacheSnapshot:
    """What one forward_cached call did to the cache (batch row 0). CPU float32."""
    step: int                 # 0 for the first call (prefill), then 1, 2, ... (decode)
    tokens: list[int]         # the new token ids fed in this step
    start: int                # cache length before the step: new rows are start..end-1
    end: int                  # cache length after the step
    q: torch.Tensor           # [L,H,n_new,dh] the new tokens' queries (used once, never stored)
    weights: torch.Tensor     # [L,H,n_new,end] their attention over every cached row
    k_new: torch.Tensor       # [L,Hkv,n_new,dh] keys appended to each layer
    v_new: torch.Tensor       # [L,Hkv,n_new,dh] values appended to each layer

    @property
    def rows_added(self) -> range:
        """Cache rows written in this step, the same for every layer."""
        return range(self.start, self.end)


class KVCache:
    """Per-layer K and V buffers, preallocated to max_len: k, v [B, n_kv_head, max_len, dh].

    Preallocated (as nanochat does) so a decode step writes one row in place instead of
    concatenating and reallocating a growing tensor every token; only rows < length are valid.
    """

    def __init__(self, n_layer: int, batch: int, n_kv_head: int, max_len: int, head_dim: int,
                 dtype=torch.float32, device="cpu", record: bool = False):
        if min(n_layer, batch, n_kv_head, max_len, head_dim) < 1:
            raise ValueError("KVCache sizes must all be positive")
        self.n_layer, self.batch, self.n_kv_head = n_layer, batch, n_kv_head
        self.max_len, self.head_dim = max_len, head_dim
        shape = (batch, n_kv_head, max_len, head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layer)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layer)]
        self.length = 0                      # number of valid rows (positions) in every layer
        self.record = record                 # keep a CacheSnapshot per forward_cached call
        self.snapshots: list[CacheSnapshot] = []

    @classmethod
    def for_model(cls, model, batch: int = 1, max_len: int | None = None, record: bool = False) -> "KVCache":
        """An empty cache shaped for model (max_len defaults to its block_size)."""
        cfg = model.cfg
        p = model.wte.weight
        return cls(cfg.n_layer, batch, cfg.n_kv_head, max_len or cfg.block_size, cfg.head_dim,
                   dtype=p.dtype, device=p.device, record=record)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Write k, v [B,Hkv,T,dh] at rows length..length+T-1 of layer; return that layer's
        valid keys and values [B,Hkv,length+T,dh]. The length advances only in advance(), once
        every layer has written (all layers share the same positions)."""
        T = k.shape[2]
        end = self.length + T
        if end > self.max_len:
            raise ValueError(f"KV cache full: {self.length} + {T} > {self.max_len}")
        self.k[layer][:, :, self.length:end] = k
        self.v[layer][:, :, self.length:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    def advance(self, n: int):
        self.length += n

    def snapshot(self, tokens, start, q, weights, k_new, v_new):
        self.snapshots.append(CacheSnapshot(len(self.snapshots), list(tokens), start, self.length,
                                            q, weights, k_new, v_new))

    def reset(self):
        """Forget everything (a new prompt). The buffers stay allocated."""
        self.length = 0
        self.snapshots.clear()

    def truncate(self, n: int):
        """Keep rows < n, drop the rest: the invalidation rule when token n is edited.

        Rows before n were computed from tokens 0..row only, so they are still right; every
        row from n on saw the old token n and must be recomputed.
        """
        if n < 0:
            raise ValueError("truncate needs n >= 0")
        self.length = min(self.length, n)
        self.snapshots = [s for s in self.snapshots if s.end <= self.length]

    def nbytes(self) -> int:
        """Bytes held by the preallocated buffers (all layers, K and V)."""
        return sum(t.numel() * t.element_size() for t in self.k + self.v)

    def used_nbytes(self) -> int:
        """Bytes of the valid rows only (what the KV-cache size formula counts for ``length`` tokens)."""
        return kv_cache_bytes(self.batch, self.n_layer, self.length, self.n_kv_head, self.head_dim,
                              self.k[0].element_size())


# -----------------------------------------------------------------------------
# greedy generation, with and without the cache (cached-equals-uncached example: same tokens, same logits)

@dataclass
class Generation:
    prompt: list[int]                  # the prompt ids
    tokens: list[int]                  # the n_new generated ids
    step_logits: torch.Tensor          # [n_new,V] logits that chose each generated token (CPU fp32)
    cache: KVCache | None = None       # the cache after generation (cached path only)

    @property
    def all_tokens(self) -> list[int]:
        return self.prompt + self.tokens


def _prompt_ids(idx) -> list[int]:
    ids = idx.reshape(-1).tolist() if isinstance(idx, torch.Tensor) else list(idx)
    if not ids:
        raise ValueError("the prompt must have at least one token")
    return [int(i) for i in ids]


@torch.no_grad()
def generate_cached(model, idx, n_new: int, max_len: int | None = None, record: bool = False,
                    cancel=None) -> Generation:
    """Greedy decoding with a KV cache: one prefill over the prompt, then one token per step.

    Raises ValueError when prompt + n_new does not fit the cache (block_size by default).
    ``cancel`` (lmviz.cancel) is asked before every model call.
    """
    prompt = _prompt_ids(idx)
    need = len(prompt) + max(n_new - 1, 0)
    max_len = max_len or max(model.cfg.block_size, need)
    if need > max_len:
        raise ValueError(f"prompt ({len(prompt)}) + {n_new} new tokens do not fit {max_len} cache rows")
    model.eval()
    cache = KVCache.for_model(model, batch=1, max_len=max_len, record=record)
    dev = model.device
    out, logits_steps = [], []
    x = torch.tensor([prompt], dtype=torch.long, device=dev)
    for _ in range(n_new):
        check_cancel(cancel)
        logits = model.forward_cached(x, cache)[0, -1]          # [V]
        nxt = greedy(logits)
        logits_steps.append(logits.float().cpu())
        out.append(nxt)
        x = torch.tensor([[nxt]], dtype=torch.long, device=dev)
    V = model.cfg.vocab_size
    return Generation(prompt, out, torch.stack(logits_steps) if out else torch.zeros(0, V), cache)


@torch.no_grad()
def generate_uncached(model, idx, n_new: int) -> Generation:
    """Greedy decoding that reruns the whole sequence every step (the slow, obvious way).

    Context longer than block_size is cropped to the last block_size tokens (nanoGPT).
    """
    prompt = _prompt_ids(idx)
    model.eval()
    seq, out, logits_steps = list(prompt), [], []
    for _ in range(n_new):
        logits = next_logits(model, seq)                        # [V], context cropped to block_size
        out.append(greedy(logits))
        logits_steps.append(logits)
        seq.append(out[-1])
    V = model.cfg.vocab_size
    return Generation(prompt, out, torch.stack(logits_steps) if out else torch.zeros(0, V))
