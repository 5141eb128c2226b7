"""A small GPT in the spirit of nanoGPT, with two extra ways to run it.

- ``GPT.forward``        the fast path: ``F.scaled_dot_product_attention(is_causal=True)``.
- ``GPT.forward_trace``  the glass path: explicit matmuls, every intermediate kept in a
                         ``ModelTrace`` record (q, k, v, raw scores, scaled, masked, softmax
                         weights, head outputs and the residual stream), so the app can draw
                         attention, logits and the residual stream from real tensors.
- ``GPT.forward_cached`` the inference path: K and V of past tokens come from a ``KVCache``;
                         only the new tokens' q, k, v are computed. Q is never cached.

A test pins all three to the same logits. Positions are learned, sinusoidal or rotary (RoPE);
the norm is LayerNorm or RMSNorm; attention is MHA, GQA or MQA (``n_kv_head`` < ``n_head``).
The MLP is GELU (exact or tanh) or SwiGLU; biases, norm eps, RoPE base and scaling and the tied
head are config fields too, so GPT-2 and Llama/Qwen2 checkpoints map onto the same class
(``lmviz.hf``). The defaults are lmviz's own model, unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

POS_KINDS = ("learned", "sinusoidal", "rope")
NORM_KINDS = ("layernorm", "rmsnorm")
MLP_KINDS = ("gelu", "swiglu")
ACT_KINDS = ("gelu", "gelu_tanh")
ATTN_BIAS_KINDS = ("none", "qkv", "all")
ROPE_SCALING_KINDS = ("linear", "llama3")
NORM_EPS = 1e-5
ROPE_BASE = 10000.0


# -----------------------------------------------------------------------------
# config

@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int              # number of token ids the model reads and predicts
    block_size: int = 64         # longest context seen in training (learned positions stop here)
    n_layer: int = 4             # number of transformer blocks
    n_head: int = 4              # query heads per attention layer
    n_kv_head: int = 4           # key/value heads: == n_head is MHA, fewer is GQA, 1 is MQA
    d_model: int = 128           # width of the residual stream
    pos: str = "learned"         # position scheme: learned | sinusoidal | rope
    norm: str = "layernorm"      # norm before attention/MLP: layernorm | rmsnorm
    dropout: float = 0.0         # dropout in training (0 for a tiny model that we watch)
    mlp_ratio: int = 4           # MLP hidden width = mlp_ratio * d_model (unless d_ff is set)
    d_ff: int = 0                # MLP hidden width when it is no multiple of d_model (0: mlp_ratio * d_model)
    mlp: str = "gelu"            # MLP kind: gelu (fc, act, proj) | swiglu (silu(gate) * up, down: Llama)
    act: str = "gelu"            # the gelu MLP's activation: gelu (exact erf) | gelu_tanh (GPT-2's gelu_new)
    mlp_bias: bool = True        # biases in the MLP's linear layers (GPT-2 and lmviz: yes; Llama: no)
    attn_bias: str = "none"      # biases in attention: none | qkv (Qwen2: q, k, v) | all (GPT-2: and the output)
    norm_eps: float = NORM_EPS   # the eps inside every norm's square root
    rope_theta: float = ROPE_BASE  # RoPE base: pair i turns by p * theta^(-2i/head_dim)
    rope_scaling: tuple = ()     # () | ("linear", factor) | ("llama3", factor, low_freq_factor,
    #                              high_freq_factor, original_max_position_embeddings)
    tie_head: bool = True        # lm_head reuses the token table (False: a separate [V, d] matrix)

    def __post_init__(self):
        if isinstance(self.rope_scaling, list):          # from JSON: a list; kept hashable
            object.__setattr__(self, "rope_scaling", tuple(self.rope_scaling))
        problems = self.validate()
        if problems:
            raise ValueError("invalid GPTConfig: " + "; ".join(problems))

    def validate(self) -> list[str]:
        """Human-readable problems with this config (empty when it is fine).

        >>> GPTConfig(vocab_size=10).validate()
        []
        """
        p = []

        def is_int(x):
            return isinstance(x, int) and not isinstance(x, bool)

        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_kv_head", "d_model", "mlp_ratio"):
            v = getattr(self, name)
            if not is_int(v) or v < 1:
                p.append(f"{name} must be a positive integer, got {v!r}")
        if not is_int(self.d_ff) or self.d_ff < 0:
            p.append(f"d_ff must be a non-negative integer, got {self.d_ff!r}")
        for name, kinds in (("mlp", MLP_KINDS), ("act", ACT_KINDS), ("attn_bias", ATTN_BIAS_KINDS)):
            if getattr(self, name) not in kinds:
                p.append(f"{name} must be one of {', '.join(kinds)}, got {getattr(self, name)!r}")
        for name in ("mlp_bias", "tie_head"):
            if not isinstance(getattr(self, name), bool):
                p.append(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name in ("norm_eps", "rope_theta"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
                p.append(f"{name} must be a positive number, got {v!r}")
        rs = self.rope_scaling
        if rs != () and not (isinstance(rs, tuple) and rs and rs[0] in ROPE_SCALING_KINDS
                             and len(rs) == {"linear": 2, "llama3": 5}[rs[0]]
                             and all(not isinstance(x, bool) and isinstance(x, (int, float)) and 0 < x < float("inf")
                                     for x in rs[1:])):
            p.append(f"rope_scaling must be (), ('linear', factor) or ('llama3', factor, low, high, "
                     f"original_max_position_embeddings), got {rs!r}")
        if p:
            return p
        if self.d_model % self.n_head:
            p.append(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")
        if self.n_head % self.n_kv_head:
            p.append(f"n_kv_head ({self.n_kv_head}) must divide n_head ({self.n_head}); "
                     f"n_kv_head = n_head is plain multi-head attention")
        if self.pos not in POS_KINDS:
            p.append(f"pos must be one of {', '.join(POS_KINDS)}, got {self.pos!r}")
        if self.norm not in NORM_KINDS:
            p.append(f"norm must be one of {', '.join(NORM_KINDS)}, got {self.norm!r}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            p.append(f"dropout must be in [0, 1), got {self.dropout!r}")
        if not p and self.pos in ("rope", "sinusoidal"):
            dim = self.head_dim if self.pos == "rope" else self.d_model
            if dim % 2:
                p.append(f"{self.pos} positions need an even {'head_dim' if self.pos == 'rope' else 'd_model'}, got {dim}")
        return p

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def ff_width(self) -> int:
        """The MLP's hidden width: d_ff when set, else mlp_ratio * d_model."""
        return self.d_ff or self.mlp_ratio * self.d_model

    def to_dict(self) -> dict:
        """Every field (rope_scaling as a list, as JSON has it)."""
        return {k: list(v) if isinstance(v, tuple) else v
                for k in self.__dataclass_fields__ for v in (getattr(self, k),)}

    @classmethod
    def from_dict(cls, d: dict) -> "GPTConfig":
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown GPTConfig fields: {sorted(unknown)}")
        return cls(**d)


# -----------------------------------------------------------------------------
# pure helpers (each one is what the trace path calls, so the pictures use them)

def layer_norm(h: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor | None, eps: float = NORM_EPS) -> torch.Tensor:
    """LayerNorm over the last dim: gamma * (h - mean) / sqrt(var + eps) + beta (biased var).

    >>> h = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    >>> m = torch.nn.LayerNorm(4)
    >>> torch.allclose(layer_norm(h, m.weight, m.bias), m(h))
    True
    """
    mu = h.mean(-1, keepdim=True)
    var = ((h - mu) ** 2).mean(-1, keepdim=True)
    out = (h - mu) / torch.sqrt(var + eps) * gamma
    return out + beta if beta is not None else out


def rms_norm(h: torch.Tensor, gamma: torch.Tensor, eps: float = NORM_EPS) -> torch.Tensor:
    """RMSNorm over the last dim: gamma * h / sqrt(mean(h^2) + eps). No mean removed, no bias.

    >>> rms_norm(torch.tensor([3.0, 4.0]), torch.ones(2), eps=0.0)  # rms = sqrt(12.5)
    tensor([0.8485, 1.1314])
    """
    return h / torch.sqrt((h * h).mean(-1, keepdim=True) + eps) * gamma


def sinusoidal_positions(T: int, d: int, offset: int = 0) -> torch.Tensor:
    """Fixed sin/cos positions of "Attention is all you need": [T, d], rows offset..offset+T-1.

    Even columns 2i hold sin(p / 10000^(2i/d)), odd columns 2i+1 hold cos of the same angle.

    >>> sinusoidal_positions(2, 4)[0]  # position 0: sin 0 = 0, cos 0 = 1
    tensor([0., 1., 0., 1.])
    """
    pos = torch.arange(offset, offset + T, dtype=torch.float32)[:, None]        # [T,1]
    inv = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)  # [d/2]
    ang = pos * inv                                                              # [T,d/2]
    out = torch.zeros(T, d)
    out[:, 0::2] = torch.sin(ang)
    out[:, 1::2] = torch.cos(ang)
    return out


def rope_inv_freq(dh: int, base: float = ROPE_BASE, scaling: tuple = (), dtype: torch.dtype = torch.float32,
                  device=None) -> torch.Tensor:
    """The RoPE frequencies [dh/2]: base^(-2i/dh), then the config's scaling (the ONE copy).

    ``("linear", f)`` divides every frequency by f (positions read f times slower); ``("llama3",
    f, low, high, n0)`` is Llama 3.1's: wavelengths longer than n0/low are divided by f, shorter
    than n0/high kept, and those between blended smoothly.

    >>> rope_inv_freq(4, base=100.0), rope_inv_freq(4, base=100.0, scaling=("linear", 2.0))
    (tensor([1.0000, 0.1000]), tensor([0.5000, 0.0500]))
    """
    inv = 1.0 / (base ** (torch.arange(0, dh, 2, dtype=dtype, device=device) / dh))  # [dh/2]
    if not scaling:
        return inv
    if scaling[0] == "linear":
        return inv / scaling[1]
    factor, low, high, n0 = scaling[1:]
    low_wavelen, high_wavelen = n0 / low, n0 / high
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (n0 / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope_angles(positions: torch.Tensor, dh: int, base: float = ROPE_BASE,
                dtype: torch.dtype = torch.float32, scaling: tuple = ()) -> torch.Tensor:
    """The RoPE angles [T, dh/2]: pair i turns by p * base^(-2i/dh) at position p.

    ``dtype`` is the precision the angles are computed in (float64 for the exact embedding demo);
    ``scaling`` a config's rope_scaling (see :func:`rope_inv_freq`).

    >>> rope_angles(torch.tensor([0, 2]), 4, base=100.0)
    tensor([[0.0000, 0.0000],
            [2.0000, 0.2000]])
    """
    inv = rope_inv_freq(dh, base, scaling, dtype, positions.device)              # [dh/2]
    return positions.to(dtype)[:, None] * inv                                   # [T,dh/2]


def rope_cache(T: int, dh: int, offset: int = 0, base: float = ROPE_BASE) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the RoPE angles for positions offset..offset+T-1: each [T, dh/2].

    Pair i of a head vector turns by angle p * base^(-2i/dh) at position p.

    >>> cos, sin = rope_cache(3, 4)
    >>> cos.shape, float(cos[0, 0]), float(sin[0, 0])
    (torch.Size([3, 2]), 1.0, 0.0)
    """
    ang = rope_angles(torch.arange(offset, offset + T), dh, base)               # [T,dh/2]
    return ang.cos(), ang.sin()


def rope_rotate(x: torch.Tensor, positions: torch.Tensor | int, base: float = ROPE_BASE,
                angle_dtype: torch.dtype = torch.float32, scaling: tuple = ()) -> torch.Tensor:
    """Rotate each pair (x[i], x[i+dh/2]) of x [..., T, dh] by its position's angle.

    ``positions`` is a tensor [T] of absolute positions, or an int offset (positions offset..).
    ``angle_dtype``, ``scaling``: the precision of the angles and the config's rope_scaling
    (see :func:`rope_angles`).
    Rotations keep lengths, and q.k after rotation depends only on the position difference.

    >>> x = torch.tensor([[1.0, 0.0]])                    # one vector, dh = 2, at position 0
    >>> torch.equal(rope_rotate(x, 0), x)                 # angle 0: unchanged
    True
    """
    T, dh = x.shape[-2], x.shape[-1]
    if isinstance(positions, int):
        positions = torch.arange(positions, positions + T)
    ang = rope_angles(positions.to(x.device), dh, base, angle_dtype, scaling)  # [T,dh/2]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def causal_mask(T: int, device=None) -> torch.Tensor:
    """bool [T, T]: True where query row i may look at key column j (j <= i).

    >>> causal_mask(3).int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    """
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, H_kv, T, dh] -> [B, H_kv * n_rep, T, dh]: each kv head serves n_rep query heads (GQA)."""
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


# -----------------------------------------------------------------------------
# modules

class Norm(nn.Module):
    """LayerNorm (weight + bias) or RMSNorm (weight only), with the config's eps."""

    def __init__(self, d: int, kind: str, eps: float = NORM_EPS):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if kind == "layernorm" else None

    def forward(self, x):
        if self.kind == "layernorm":
            return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        return rms_norm(x, self.weight, self.eps)


class CausalSelfAttention(nn.Module):

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.n_head, self.n_kv_head, self.dh = cfg.n_head, cfg.n_kv_head, cfg.head_dim
        qkv_bias, out_bias = cfg.attn_bias != "none", cfg.attn_bias == "all"
        self.c_q = nn.Linear(cfg.d_model, cfg.n_head * cfg.head_dim, bias=qkv_bias)
        self.c_k = nn.Linear(cfg.d_model, cfg.n_kv_head * cfg.head_dim, bias=qkv_bias)
        self.c_v = nn.Linear(cfg.d_model, cfg.n_kv_head * cfg.head_dim, bias=qkv_bias)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model, bias=out_bias)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def qkv(self, x: torch.Tensor, positions: torch.Tensor):
        """x [B,T,d] -> q [B,H,T,dh], k, v [B,Hkv,T,dh] (RoPE applied to q, k when used)."""
        B, T, _ = x.shape
        q = self.c_q(x).view(B, T, self.n_head, self.dh).transpose(1, 2)
        k = self.c_k(x).view(B, T, self.n_kv_head, self.dh).transpose(1, 2)
        v = self.c_v(x).view(B, T, self.n_kv_head, self.dh).transpose(1, 2)
        if self.cfg.pos == "rope":
            q, k = self.rope(q, positions), self.rope(k, positions)
        return q, k, v

    def rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """RoPE with this config's base and scaling."""
        return rope_rotate(x, positions, self.cfg.rope_theta, scaling=self.cfg.rope_scaling)

    def merge(self, y: torch.Tensor) -> torch.Tensor:
        """head outputs y [B,H,T,dh] -> concatenated and projected [B,T,d]."""
        B, H, T, dh = y.shape
        return self.resid_drop(self.c_proj(y.transpose(1, 2).reshape(B, T, H * dh)))

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x, positions)
        rep = self.n_head // self.n_kv_head
        k, v = repeat_kv(k, rep), repeat_kv(v, rep)
        drop = self.cfg.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)  # [B,H,T,dh]
        return self.merge(y)


def activation(cfg: GPTConfig):
    """The gelu MLP's activation of ``cfg`` (exact GELU, or GPT-2's tanh approximation)."""
    return (lambda x: F.gelu(x, approximate="tanh")) if cfg.act == "gelu_tanh" else F.gelu


class MLP(nn.Module):
    """gelu: c_proj(act(c_fc(x))). swiglu: c_proj(silu(c_gate(x)) * c_fc(x)) (Llama's gate/up/down)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        d, f, bias = cfg.d_model, cfg.ff_width, cfg.mlp_bias
        self.swiglu = cfg.mlp == "swiglu"
        self.act = activation(cfg)
        if self.swiglu:
            self.c_gate = nn.Linear(d, f, bias=bias)
        self.c_fc = nn.Linear(d, f, bias=bias)
        self.c_proj = nn.Linear(f, d, bias=bias)
        self.drop = nn.Dropout(cfg.dropout)

    def hidden(self, x):
        """The MLP's hidden activations [..., ff_width] (what the trace keeps as mlp_hidden)."""
        if self.swiglu:
            return F.silu(self.c_gate(x)) * self.c_fc(x)
        return self.act(self.c_fc(x))

    def forward(self, x):
        return self.drop(self.c_proj(self.hidden(x)))


class Block(nn.Module):

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = Norm(cfg.d_model, cfg.norm, cfg.norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = Norm(cfg.d_model, cfg.norm, cfg.norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, positions):
        x = x + self.attn(self.ln_1(x), positions)
        x = x + self.mlp(self.ln_2(x))
        return x


# -----------------------------------------------------------------------------
# trace records

@dataclass
class LayerTrace:
    """Everything one block computed for one sequence (T tokens). CPU float32, detached."""
    n_kv_head: int          # kv heads of this layer (k, v below are repeated to H for GQA)
    resid_in: torch.Tensor  # [T,d] the residual stream entering the block
    ln1: torch.Tensor       # [T,d] norm before attention
    q: torch.Tensor         # [H,T,dh] queries (after RoPE when used)
    k: torch.Tensor         # [H,T,dh] keys, kv heads repeated to H
    v: torch.Tensor         # [H,T,dh] values, kv heads repeated to H
    scores: torch.Tensor    # [H,T,T] raw q.k^T, query rows, key columns
    scaled: torch.Tensor    # [H,T,T] scores / sqrt(dh)
    masked: torch.Tensor    # [H,T,T] scaled with the future set to -inf
    weights: torch.Tensor   # [H,T,T] softmax of masked: rows sum to 1, zeros above diagonal
    head_out: torch.Tensor  # [H,T,dh] weights @ v per head
    attn_out: torch.Tensor  # [T,d] heads concatenated and projected (c_proj)
    resid_mid: torch.Tensor  # [T,d] resid_in + attn_out
    ln2: torch.Tensor       # [T,d] norm before the MLP
    mlp_hidden: torch.Tensor  # [T,ff_width] after GELU (swiglu: silu(gate) * up)
    mlp_out: torch.Tensor   # [T,d] the MLP's output
    resid_out: torch.Tensor  # [T,d] resid_mid + mlp_out, the next block's resid_in


@dataclass
class ModelTrace:
    """One explicit forward pass over a single sequence. CPU float32, detached."""
    idx: torch.Tensor              # [T] the token ids
    tok_emb: torch.Tensor          # [T,d] token embedding rows
    pos_emb: torch.Tensor | None   # [T,d] position vectors added to them (None for RoPE)
    x0: torch.Tensor               # [T,d] input to the first block
    layers: list[LayerTrace]       # one per block
    hidden: torch.Tensor           # [T,d] after the final norm
    logits: torch.Tensor           # [T,V] next-token scores at every position
    config: GPTConfig | None = None

    @property
    def probs(self) -> torch.Tensor:
        """[T,V] softmax of the logits."""
        return F.softmax(self.logits, dim=-1)


def _cpu(x: torch.Tensor) -> torch.Tensor:
    return x.detach().float().cpu()


def _matmul(h: torch.Tensor, lin: nn.Linear) -> torch.Tensor:
    """h @ W^T (+ b): a linear layer written out, as the trace shows it."""
    out = h @ lin.weight.T
    return out if lin.bias is None else out + lin.bias


# -----------------------------------------------------------------------------
# the model

def init_weights(model: nn.Module, generator: torch.Generator | None = None) -> None:
    """The one weight init (nanoGPT's): N(0, 0.02) matrices and embeddings, residual projections
    scaled by 1/sqrt(2 n_layer), zero biases, unit norm gains; drawn from ``generator`` (None:
    torch's global generator). A GPT calls it when built; a training re-draws with its own seed."""
    std_proj = 0.02 / math.sqrt(2 * model.cfg.n_layer)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                std = std_proj if name.endswith("c_proj.weight") else 0.02
                p.copy_(torch.randn(p.shape, generator=generator) * std)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.fill_(1.0)


class GPT(nn.Module):

    def __init__(self, cfg: GPTConfig, init: bool = True):
        """``init=False``: leave the parameters as their layers made them (see ``meta_gpt``)."""
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.block_size, cfg.d_model) if cfg.pos == "learned" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = Norm(cfg.d_model, cfg.norm, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_head:
            self.lm_head.weight = self.wte.weight  # weight tying (nanoGPT): one table reads and writes tokens
        if init:
            init_weights(self)

    def num_params(self, non_embedding: bool = False) -> int:
        """Parameter count (a tied token table counted once); optionally without embeddings
        (the token table, learned positions and an untied head)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.wte.weight.numel()
            if self.wpe is not None:
                n -= self.wpe.weight.numel()
            if not self.cfg.tie_head:
                n -= self.lm_head.weight.numel()
        return n

    @property
    def device(self) -> torch.device:
        return self.wte.weight.device

    def _check_positions(self, end: int):
        if self.cfg.pos == "learned" and end > self.cfg.block_size:
            raise ValueError(f"sequence reaches position {end - 1} but learned positions stop at "
                             f"{self.cfg.block_size - 1} (block_size={self.cfg.block_size})")

    def embed(self, idx: torch.Tensor, start: int = 0):
        """idx [B,T] -> (tok_emb [B,T,d], pos_emb [T,d] | None, x0 [B,T,d]); positions start.."""
        T = idx.shape[1]
        self._check_positions(start + T)
        tok = self.wte(idx)
        if self.cfg.pos == "learned":
            pos = self.wpe(torch.arange(start, start + T, device=idx.device))
        elif self.cfg.pos == "sinusoidal":
            pos = sinusoidal_positions(T, self.cfg.d_model, offset=start).to(tok.device, tok.dtype)
        else:
            pos = None
        x = tok if pos is None else tok + pos
        return tok, pos, self.drop(x)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """idx [B,T] long -> (logits [B,T,V], mean cross-entropy over targets != -1 | None)."""
        if idx.dim() != 2:
            raise ValueError(f"idx must be [B,T], got shape {tuple(idx.shape)}")
        B, T = idx.shape
        _, _, x = self.embed(idx)
        positions = torch.arange(T, device=idx.device)
        for block in self.blocks:
            x = block(x, positions)
        logits = self.lm_head(self.ln_f(x))                  # [B,T,V]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def forward_trace(self, idx: torch.Tensor) -> ModelTrace:
        """The same forward pass written out with explicit matmuls, every step kept.

        idx [T] or [1,T] -> ModelTrace. Runs in eval mode (no dropout) and restores the mode.
        """
        if idx.dim() == 2:
            if idx.shape[0] != 1:
                raise ValueError(f"forward_trace takes one sequence, got batch {idx.shape[0]}")
            idx = idx[0]
        if idx.dim() != 1 or idx.numel() == 0:
            raise ValueError(f"idx must be a non-empty [T] or [1,T] tensor, got {tuple(idx.shape)}")
        was_training = self.training
        self.eval()
        try:
            return self._trace(idx.to(self.device))
        finally:
            self.train(was_training)

    def _norm(self, m: Norm, h):
        return layer_norm(h, m.weight, m.bias, m.eps) if m.kind == "layernorm" else rms_norm(h, m.weight, m.eps)

    def _trace(self, idx: torch.Tensor) -> ModelTrace:
        cfg = self.cfg
        T, H, Hkv, dh = idx.shape[0], cfg.n_head, cfg.n_kv_head, cfg.head_dim
        tok, pos, x = self.embed(idx[None])
        x = x[0]                                             # [T,d]
        positions = torch.arange(T, device=idx.device)
        allowed = causal_mask(T, device=idx.device)          # [T,T]
        layers = []
        for blk in self.blocks:
            a = blk.attn
            resid_in = x
            h = self._norm(blk.ln_1, x)                      # [T,d]
            q = _matmul(h, a.c_q).view(T, H, dh).transpose(0, 1)         # [H,T,dh]
            k = _matmul(h, a.c_k).view(T, Hkv, dh).transpose(0, 1)       # [Hkv,T,dh]
            v = _matmul(h, a.c_v).view(T, Hkv, dh).transpose(0, 1)       # [Hkv,T,dh]
            if cfg.pos == "rope":
                q, k = a.rope(q, positions), a.rope(k, positions)
            k = k.repeat_interleave(H // Hkv, dim=0)         # [H,T,dh]
            v = v.repeat_interleave(H // Hkv, dim=0)         # [H,T,dh]
            scores = q @ k.transpose(-1, -2)                 # [H,T,T]
            scaled = scores / math.sqrt(dh)
            masked = scaled.masked_fill(~allowed, float("-inf"))
            weights = torch.softmax(masked, dim=-1)          # exact zeros where -inf
            head_out = weights @ v                           # [H,T,dh]
            attn_out = _matmul(head_out.transpose(0, 1).reshape(T, H * dh), a.c_proj)  # [T,d]
            x = x + attn_out
            resid_mid = x
            h2 = self._norm(blk.ln_2, x)
            m = blk.mlp
            if m.swiglu:
                hid = F.silu(_matmul(h2, m.c_gate)) * _matmul(h2, m.c_fc)  # [T,ff]
            else:
                hid = m.act(_matmul(h2, m.c_fc))             # [T,ff]
            mlp_out = _matmul(hid, m.c_proj)                 # [T,d]
            x = x + mlp_out
            layers.append(LayerTrace(
                n_kv_head=Hkv, resid_in=_cpu(resid_in), ln1=_cpu(h), q=_cpu(q), k=_cpu(k), v=_cpu(v),
                scores=_cpu(scores), scaled=_cpu(scaled), masked=_cpu(masked), weights=_cpu(weights),
                head_out=_cpu(head_out), attn_out=_cpu(attn_out), resid_mid=_cpu(resid_mid),
                ln2=_cpu(h2), mlp_hidden=_cpu(hid), mlp_out=_cpu(mlp_out), resid_out=_cpu(x)))
        hidden = self._norm(self.ln_f, x)
        logits = hidden @ self.lm_head.weight.T              # [T,V] (the token table when tied)
        return ModelTrace(
            idx=idx.detach().cpu(), tok_emb=_cpu(tok[0]), pos_emb=None if pos is None else _cpu(pos),
            x0=_cpu(layers[0].resid_in) if layers else _cpu(x), layers=layers,
            hidden=_cpu(hidden), logits=_cpu(logits), config=cfg)

    @torch.no_grad()
    def forward_cached(self, idx: torch.Tensor, cache) -> torch.Tensor:
        """Run only the new tokens idx [B,T_new] against a KVCache; returns logits [B,T_new,V].

        Each layer computes q, k, v for the new tokens, writes k, v into the cache at rows
        cache.length .. cache.length+T_new-1, and attends over all cached rows (causal inside
        the new chunk). Works for prefill (T_new = prompt length) and decode (T_new = 1).
        Positions are offset by cache.length. Q is never cached: it is used once and dropped.
        """
        if idx.dim() == 1:
            idx = idx[None]
        B, T = idx.shape
        cfg = self.cfg
        start = cache.length
        if B != cache.batch:
            raise ValueError(f"batch {B} does not match the cache's batch {cache.batch}")
        if start + T > cache.max_len:
            raise ValueError(f"cache holds {cache.max_len} positions; {start} used, {T} more do not fit")
        _, _, x = self.embed(idx, start=start)
        positions = torch.arange(start, start + T, device=idx.device)
        end = start + T
        # query i (absolute position start+i) may see keys 0..start+i
        allowed = torch.ones(T, end, dtype=torch.bool, device=idx.device).tril(diagonal=start)  # [T,end]
        rep = cfg.n_head // cfg.n_kv_head
        rec_q, rec_w, rec_k, rec_v = [], [], [], []
        for i, blk in enumerate(self.blocks):
            a = blk.attn
            q, k, v = a.qkv(blk.ln_1(x), positions)          # q [B,H,T,dh], k,v [B,Hkv,T,dh]
            K, V = cache.append(i, k, v)                     # [B,Hkv,end,dh]
            K, V = repeat_kv(K, rep), repeat_kv(V, rep)      # [B,H,end,dh]
            if cache.record:
                att = (q @ K.transpose(-1, -2)) / math.sqrt(cfg.head_dim)  # [B,H,T,end]
                w = torch.softmax(att.masked_fill(~allowed, float("-inf")), dim=-1)
                y = w @ V
                rec_q.append(_cpu(q[0])); rec_w.append(_cpu(w[0]))
                rec_k.append(_cpu(k[0])); rec_v.append(_cpu(v[0]))
            elif T == 1:
                y = F.scaled_dot_product_attention(q, K, V)  # one query sees the whole cache
            else:
                y = F.scaled_dot_product_attention(q, K, V, attn_mask=allowed)
            x = x + a.merge(y)
            x = x + blk.mlp(blk.ln_2(x))
        cache.advance(T)
        if cache.record:
            cache.snapshot(idx[0].tolist(), start, torch.stack(rec_q), torch.stack(rec_w),
                           torch.stack(rec_k), torch.stack(rec_v))
        return self.lm_head(self.ln_f(x))


class _NoFills(torch.overrides.TorchFunctionMode):
    """Random fills return their tensor untouched (the mode is per thread, like torch.device)."""

    FILLS = frozenset({torch.nn.init.normal_, torch.nn.init.uniform_, torch.nn.init.kaiming_uniform_,
                       torch.Tensor.normal_, torch.Tensor.uniform_})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.FILLS:
            return args[0] if args else kwargs["tensor"]    # torch.nn.init passes it by name
        return func(*args, **(kwargs or {}))


def meta_gpt(cfg: GPTConfig) -> GPT:
    """The structure of a GPT with ``cfg`` on the ``meta`` device: every parameter's name and
    shape, no storage and no values (a checkpoint's tensors are assigned into it, or only its
    shapes are read). Nothing is computed on the meta device: the first meta computation of a
    process imports torch's reference kernels, 0.8 s of a 2-core server's cold start."""
    with torch.device("meta"), _NoFills():
        return GPT(cfg, init=False)
