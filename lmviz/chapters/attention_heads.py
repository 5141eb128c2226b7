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

import numpy as np
import torch

__all__ = ["ShapeStep", "MultiHead", "multi_head", "sublayer_output", "forward_without_head", "HeadEffect",
           "head_effects"]


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


# ------------------------------------------------------------------ removing a head -------------
@torch.no_grad()
def forward_without_head(model, idx: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """Logits [B, T, V] of ``model`` on ``idx`` [B, T] with one head removed: head ``head`` of
    block ``layer`` writes nothing (its output is zeroed before the output projection W_O, so
    the other heads and everything after them run as usual). The model's own modules are
    called in turn, as ``GPT.forward`` does; nothing is attached to the shared model."""
    import torch.nn.functional as F

    from lmviz.model import repeat_kv

    _, _, x = model.embed(idx)
    positions = torch.arange(idx.shape[1], device=idx.device)
    for i, block in enumerate(model.blocks):
        if i != layer:
            x = block(x, positions)
            continue
        a = block.attn
        q, k, v = a.qkv(block.ln_1(x), positions)
        rep = a.n_head // a.n_kv_head
        y = F.scaled_dot_product_attention(q, repeat_kv(k, rep), repeat_kv(v, rep), is_causal=True)
        y[:, head] = 0                                                   # [B,H,T,dh]: head removed
        x = x + a.merge(y)
        x = x + block.mlp(block.ln_2(x))
    return model.lm_head(model.ln_f(x))


@dataclass(frozen=True)
class HeadEffect:
    """What removing one head does to the loss on a text and to its last prediction."""
    layer: int                 # the block (0-based)
    head: int                  # the head in it (0-based)
    loss: float                # mean next-token cross-entropy (nats) with the head removed
    base_loss: float           # ... with every head
    top: int                   # the most probable next token after the text, head removed
    base_top: int              # ... with every head
    p_base_top: float          # the probability the model without the head gives base_top
    base_p_top: float          # the probability the whole model gives base_top

    @property
    def delta(self) -> float:
        """How much the loss rises without the head (negative: the text is easier without it)."""
        return self.loss - self.base_loss


@torch.no_grad()
def head_effects(model, ids, cancel=None, progress=None) -> list[HeadEffect]:
    """Every head of every layer removed in turn on one text ``ids`` [T >= 2]; a head's effect is
    the rise of the mean next-token loss on the text and the change of the model's guess after the
    whole text. Ids beyond the model's context are cut from the start.

    The same numbers as ``forward_without_head`` once per head, computed layer by layer: the
    residual stream before a layer does not depend on which of its heads is removed, so it is
    computed once, and the layer's heads go on through the rest of the model as one batch (one
    row per removed head). SmolLM2's 270 heads: 8.7 s on a loaded 2-core machine, where 270
    separate passes took 115-137 s. ``cancel`` is asked and ``progress(done, total)`` told after
    each layer.

    >>> from lmviz.model import GPT, GPTConfig
    >>> torch.manual_seed(0) and None
    >>> m = GPT(GPTConfig(vocab_size=7, block_size=8, n_layer=2, n_head=2, n_kv_head=2, d_model=8)).eval()
    >>> fx = head_effects(m, [1, 2, 3, 4, 5])
    >>> [(e.layer, e.head) for e in fx], len({e.base_loss for e in fx})
    ([(0, 0), (0, 1), (1, 0), (1, 1)], 1)
    >>> x = torch.tensor([[1, 2, 3, 4]])
    >>> lg = forward_without_head(m, x, 1, 0).float()
    >>> loss = float(torch.nn.functional.cross_entropy(lg[0], torch.tensor([2, 3, 4, 5])))
    >>> abs(loss - fx[2].loss) < 1e-5
    True
    """
    import torch.nn.functional as F

    from lmviz.cancel import check_cancel
    from lmviz.model import repeat_kv

    cfg = model.cfg
    ids = list(ids)[-cfg.block_size:]
    if len(ids) < 2:
        raise ValueError("need at least two tokens: one to read and one to predict")
    inp = torch.as_tensor([ids], dtype=torch.long, device=model.device)    # [1,T]
    tgt = inp[:, 1:]
    positions = torch.arange(inp.shape[1], device=inp.device)

    def loss_and_last(logits):
        """logits [B,T,V] -> (the mean loss of predicting each next token of the text [B], the
        guess after the whole text [B,V])."""
        lg = logits.float()
        loss = F.cross_entropy(lg[:, :-1].transpose(1, 2), tgt.expand(lg.shape[0], -1), reduction="none").mean(1)
        return loss.cpu(), torch.softmax(lg[:, -1], -1).cpu()

    base_logits, _ = model(inp)
    base_loss, base_p = loss_and_last(base_logits)
    base_top = int(base_p[0].argmax())
    _, _, h = model.embed(inp)                                              # [1,T,C]: before block 0
    out = []
    for layer, block in enumerate(model.blocks):
        check_cancel(cancel)
        a = block.attn
        q, k, v = a.qkv(block.ln_1(h), positions)
        rep = a.n_head // a.n_kv_head
        y = F.scaled_dot_product_attention(q, repeat_kv(k, rep), repeat_kv(v, rep), is_causal=True)  # [1,H,T,dh]
        y = y.expand(cfg.n_head, -1, -1, -1).clone()                        # row b: head b removed
        y[torch.arange(cfg.n_head), torch.arange(cfg.n_head)] = 0
        z = h + a.merge(y)
        z = z + block.mlp(block.ln_2(z))
        for later in model.blocks[layer + 1:]:
            z = later(z, positions)
        loss, p = loss_and_last(model.lm_head(model.ln_f(z)))
        for head in range(cfg.n_head):
            out.append(HeadEffect(layer, head, float(loss[head]), float(base_loss[0]), int(p[head].argmax()),
                                  base_top, float(p[head, base_top]), float(base_p[0, base_top])))
        h = block(h, positions)                                            # the whole layer: on to the next
        if progress is not None:
            progress(layer + 1, cfg.n_layer)
    return out


# ------------------------------------------------------------------ the room maps the heads -------
ACTIVITY_PREFIX = "heads."      # class-store activity ids of the map (lmviz.server.classroom.assign)
MAX_HEADS_EACH = 16             # heads one student takes at most (the store's max_items_per_student)


def activity_id(model_key: str, ids) -> str:
    """The class-store id of mapping one model's heads on one text: the same for every session
    that shows the same model and text.

    >>> activity_id("default", [1, 2, 3]) == activity_id("default", (1, 2, 3)) != activity_id("x", [1, 2, 3])
    True
    """
    import hashlib

    digest = hashlib.sha256(f"{model_key}|{','.join(map(str, ids))}".encode()).hexdigest()
    return ACTIVITY_PREFIX + digest[:16]


def heads_each(n_heads: int, students: int) -> int:
    """How many heads each student takes so that the room covers them all: every head once a
    room is large enough, several each in a small one (at most MAX_HEADS_EACH).

    >>> heads_each(16, 300), heads_each(16, 5), heads_each(16, 1), heads_each(64, 1)
    (1, 4, 16, 16)
    """
    return max(1, min(MAX_HEADS_EACH, n_heads, -(-n_heads // max(1, students))))


def head_map(effects: list[HeadEffect], n_layer: int, n_head: int, reported=None) -> np.ndarray:
    """The loss rise per head as [n_layer, n_head]; NaN where ``reported`` (flat item ->
    count, item = layer * n_head + head) has no report yet (None: every head).

    >>> fx = [HeadEffect(l, h, 1.0 + l + h / 10, 1.0, 0, 0, 0.5, 0.5) for l in range(2) for h in range(2)]
    >>> head_map(fx, 2, 2, {0: 1, 3: 2}).round(2).tolist()
    [[0.0, nan], [nan, 1.1]]
    """
    out = np.full((n_layer, n_head), np.nan)
    for e in effects:
        if reported is None or reported.get(e.layer * n_head + e.head, 0) > 0:
            out[e.layer, e.head] = e.delta
    return out
