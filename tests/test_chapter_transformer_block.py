"""The Transformer block chapter's worked examples (LayerNorm and RMSNorm against their formulas
and torch, one token's contextual vectors in different sentences), computed by
lmviz.chapters.transformer_block."""
from __future__ import annotations

import math

import torch

from lmviz.chapters import transformer_block as block
from lmviz.model import GPT, GPTConfig, layer_norm, rms_norm


def test_w19_norms_match_their_formulas_and_torch():
    h = [2.0, -1.0, 0.5, 3.5]
    s = block.norm_steps(h)
    assert s.mean == 1.25 and math.isclose(s.var, (0.75**2 + 2.25**2 + 0.75**2 + 2.25**2) / 4)
    assert math.isclose(s.mean_sq, (4 + 1 + 0.25 + 12.25) / 4)
    g, b = torch.ones(4), torch.zeros(4)
    t = torch.tensor(h)
    assert torch.allclose(s.layernorm.float(), torch.nn.functional.layer_norm(t, (4,), g, b, 1e-5), atol=1e-6)
    assert torch.allclose(s.layernorm.float(), layer_norm(t, g, b), atol=1e-6)
    assert torch.allclose(s.rmsnorm.float(), rms_norm(t, g), atol=1e-6)
    assert abs(float(s.layernorm.mean())) < 1e-9          # LayerNorm removes the mean
    assert abs(float(s.rmsnorm.mean())) > 0.1              # RMSNorm does not
    assert math.isclose(float((s.rmsnorm ** 2).mean()), 1.0, rel_tol=1e-4)


def test_find_word():
    assert block.find_word([1, 2, 3], [2, 3]) == 2
    assert block.find_word([1, 2, 3], [4]) is None
    assert block.find_word([1, 2, 3], []) is None


def test_w29_same_token_different_contexts():
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=12, block_size=16, n_layer=2, n_head=2, n_kv_head=2, d_model=16)).eval()
    a = m.forward_trace(torch.tensor([1, 2, 3, 7]))
    b = m.forward_trace(torch.tensor([9, 4, 5, 7]))     # token 7 at the same position, other context
    c = block.contextual_cosine(a, b, 3, 3)
    assert c.stages == ["token", "input", "block 1", "block 2", "final"]
    assert math.isclose(c.cosine[0], 1.0, rel_tol=1e-6)  # same input embedding
    assert math.isclose(c.cosine[1], 1.0, rel_tol=1e-6)  # same position too
    assert c.cosine[-1] < 0.9999                         # contexts differ after attention
