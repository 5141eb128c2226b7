"""Multi-head attention's last two steps, on a real model: concatenate the heads, then project.

Each of the H heads of a layer returns its own output, ``head_out [H, T, d_head]`` (what that
head read from the values it attended to). The layer then

1. **concatenates** the heads along the feature axis: token t's row is
   ``[head_0[t] | head_1[t] | ... | head_{H-1}[t]]``, so ``concat [T, H * d_head] = [T, d_model]``;
2. **projects** with the output matrix W_O (``c_proj``, [d_model, d_model], no bias):
   ``projected = concat @ W_O^T  [T, d_model]``, which is what the block adds to the residual
   stream.

The projection mixes the heads: ``projected = Σ_h head_out[h] @ W_O[:, h*d_head:(h+1)*d_head]^T``,
each head writing through its own slice of W_O (``per_head [H, T, d_model]`` below; a test
checks the sum). A test also checks ``projected`` against the model's own attention sublayer
(the fast ``scaled_dot_product_attention`` path, the model's own modules called in turn).

    >>> from lmviz.model import GPT, GPTConfig
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> mh = multi_head(GPT(GPTConfig(vocab_size=5, n_layer=1, n_head=2, n_kv_head=2, d_model=8)), [1, 2, 3])
    >>> [(s.name, s.shape) for s in mh.shapes]
    [('input', (3, 8)), ('heads', (2, 3, 4)), ('concat', (3, 8)), ('projected', (3, 8))]
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["ShapeStep", "MultiHead", "multi_head", "sublayer_output"]


@dataclass(frozen=True)
class ShapeStep:
    name: str                 # "input" | "heads" | "concat" | "projected" (catalogue key suffix)
    shape: tuple[int, ...]    # the tensor's shape at this step


@dataclass(frozen=True)
class MultiHead:
    layer: int                 # which block (0-based)
    ids: tuple[int, ...]       # the token ids, [T]
    n_head: int                # H, query heads of the layer
    n_kv_head: int             # key/value heads (< H: GQA/MQA; head_out is still per query head)
    d_head: int                # width of one head, d_model // H
    d_model: int               # width of the residual stream
    ln_in: torch.Tensor        # [T, d_model] the normed residual stream the heads read
    weights: torch.Tensor      # [H, T, T] each head's attention weights (query rows, key columns)
    head_out: torch.Tensor     # [H, T, d_head] each head's output, side by side
    concat: torch.Tensor       # [T, d_model] the heads concatenated along features (head-major)
    w_o: torch.Tensor          # [d_model, d_model] the output projection c_proj.weight
    projected: torch.Tensor    # [T, d_model] concat @ w_o.T: what the block adds to the residual
    per_head: torch.Tensor     # [H, T, d_model] each head through its slice of w_o; sums to projected
    shapes: tuple[ShapeStep, ...]  # input -> heads -> concat -> projected

    def head_columns(self, h: int) -> tuple[int, int]:
        """[start, stop) columns of ``concat`` (and of ``w_o``) that belong to head h."""
        return h * self.d_head, (h + 1) * self.d_head


@torch.no_grad()
def multi_head(model, ids, layer: int = 0) -> MultiHead:
    """Heads side by side, concatenated and projected, for one sequence ``ids`` ([T] ints).

    Uses the model's glass path (``forward_trace``) for the per-head outputs, then does the
    concatenation and the projection here, step by step. CPU float32 results. ValueError on an
    empty sequence, a layer out of range, or a sequence longer than learned positions allow.
    """
    cfg = model.cfg
    if not 0 <= layer < cfg.n_layer:
        raise ValueError(f"layer must be between 0 and {cfg.n_layer - 1}, got {layer}")
    idx = torch.as_tensor(list(ids), dtype=torch.long)
    if idx.numel() == 0:
        raise ValueError("need at least one token")
    lt = model.forward_trace(idx).layers[layer]
    H, T, dh = lt.head_out.shape                                    # [H,T,dh]
    concat = lt.head_out.transpose(0, 1).reshape(T, H * dh)         # [T,H*dh] = [T,d]
    w_o = model.blocks[layer].attn.c_proj.weight.detach().float().cpu()  # [d,d] (out, in)
    projected = concat @ w_o.T                                      # [T,d]
    per_head = torch.stack([lt.head_out[h] @ w_o[:, h * dh:(h + 1) * dh].T
                            for h in range(H)])                     # [H,T,d]
    shapes = (ShapeStep("input", tuple(lt.ln1.shape)), ShapeStep("heads", tuple(lt.head_out.shape)),
              ShapeStep("concat", tuple(concat.shape)), ShapeStep("projected", tuple(projected.shape)))
    return MultiHead(layer=layer, ids=tuple(int(i) for i in idx), n_head=H, n_kv_head=cfg.n_kv_head,
                     d_head=dh, d_model=cfg.d_model, ln_in=lt.ln1, weights=lt.weights,
                     head_out=lt.head_out, concat=concat, w_o=w_o, projected=projected,
                     per_head=per_head, shapes=shapes)


@torch.no_grad()
def sublayer_output(model, ids, layer: int = 0) -> torch.Tensor:
    """The attention sublayer's output [T, d_model] as the fast path computes it: the model's own
    modules (embedding, the blocks before ``layer``, then that block's norm and attention with
    ``scaled_dot_product_attention``), the same calls as ``GPT.forward``; the reference
    ``multi_head`` is checked against it. Nothing is attached to the model or switched on it (a
    forward hook here once caught another session's sequence on the shared default model: a
    size-mismatch error under load), so call it on a model in eval mode, as every model a page
    shows is (with dropout 0, the default, the mode changes nothing)."""
    idx = torch.as_tensor([list(ids)], dtype=torch.long, device=model.device)       # [1,T]
    _, _, x = model.embed(idx)                                                       # [1,T,d]
    positions = torch.arange(idx.shape[1], device=idx.device)
    for block in model.blocks[:layer]:
        x = block(x, positions)
    block = model.blocks[layer]
    return block.attn(block.ln_1(x), positions)[0].float().cpu()                     # [T,d]
