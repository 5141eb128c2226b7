"""Shared by the model tests: a tiny GPT built from a fixed seed."""
from __future__ import annotations


def tiny_gpt(vocab_size: int, block_size: int, **kw):
    """A 2-layer, 4-head, d_model=32 GPT in eval mode, seeded with 0; `kw` overrides any config field."""
    import torch

    from lmviz.model import GPT, GPTConfig

    base = dict(vocab_size=vocab_size, block_size=block_size, n_layer=2, n_head=4, n_kv_head=4, d_model=32)
    base.update(kw)
    torch.manual_seed(0)
    return GPT(GPTConfig(**base)).eval()
