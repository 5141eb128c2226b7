"""The loss chapter's worked examples (one SGD step on one embedding entry, softmax and
cross-entropy, perplexity, the one-parameter model by hand and by autograd, its learning rates,
gradient noise against batch size), computed by lmviz.chapters.loss_and_gradients."""
from __future__ import annotations

import math

import pytest
import torch

from lmviz.chapters import loss_and_gradients as loss_chapter
from lmviz.model import GPT, GPTConfig
from tests.model_util import SMALL_TEXT, small_char_gpt

TEXT = SMALL_TEXT


@pytest.fixture(scope="module")
def small():
    return small_char_gpt()


# one-SGD-step example -------------------------------------------------------------------------------------
def test_w7_sgd_on_one_embedding_entry():
    s = loss_chapter.sgd_step(0.80, 0.30, 0.10)
    assert s.new == pytest.approx(0.77) and s.new_torch == pytest.approx(0.77)


# softmax example / cross-entropy example -------------------------------------------------------------------------------
def test_w13_w14_softmax_and_cross_entropy():
    ce = loss_chapter.cross_entropy([2, 1, -1], target=1)
    assert [round(p, 3) for p in ce.probs] == [0.705, 0.259, 0.035]
    assert round(ce.loss, 2) == 1.35 and ce.loss == pytest.approx(-math.log(ce.probs[1]))
    assert ce.torch_loss == pytest.approx(ce.loss)
    assert ce.grad[1] < 0 < ce.grad[0] and sum(ce.grad) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        loss_chapter.cross_entropy([1, 2], 5)


# perplexity example ------------------------------------------------------------------------------------
def test_w15_perplexity_is_exp_mean_loss(small):
    model, tok = small
    r = loss_chapter.perplexity(model, tok, TEXT)
    assert r.n_tokens == len(TEXT) - 1
    assert r.ppl == pytest.approx(math.exp(r.mean_loss))
    ids = torch.tensor(tok.encode(TEXT))
    losses = []
    for s in range(0, len(ids) - 1, 16):    # the same windows, scored by model.forward's loss
        c = ids[s:s + 17][None]
        _, loss = model(c[:, :-1], c[:, 1:])
        losses += [loss.item()] * (c.shape[1] - 1)
    assert r.ppl == pytest.approx(loss_chapter.perplexity_from_losses(losses), rel=1e-5)
    # the same probability counted per word gives a much larger number (the tokenizer caveat)
    assert r.ppl_per_word > r.ppl


def test_w15_uniform_model_has_perplexity_vocab_size(small):
    _, tok = small
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_kv_head=2, d_model=32)
    m = GPT(cfg).eval()
    with torch.no_grad():
        m.wte.weight.zero_()        # tied head: every logit is 0, every next token 1/V
    r = loss_chapter.perplexity(m, tok, TEXT)
    assert r.ppl == pytest.approx(tok.vocab_size, rel=1e-5)


# one-parameter-model example ------------------------------------------------------------------------------------
def test_w16_one_parameter_model_by_hand_and_by_autograd():
    for s in (loss_chapter.one_param_step(1.0, 2.0, 6.0, 0.1), loss_chapter.one_param_autograd(1.0, 2.0, 6.0, 0.1)):
        assert s.y_hat == pytest.approx(2.0) and s.loss == pytest.approx(8.0)
        assert s.grad == pytest.approx(-8.0) and s.w_new == pytest.approx(1.8)
        assert s.y_hat_new == pytest.approx(3.6) and s.loss_new == pytest.approx(2.88)


def test_one_param_descent_converges_below_half_and_diverges_above():
    good = loss_chapter.one_param_descent(lr=0.1, steps=20)
    assert good[-1].loss_new < 1e-6 and all(a.loss_new < a.loss for a in good)
    bad = loss_chapter.one_param_descent(lr=0.6, steps=20)
    assert bad[-1].loss_new > bad[0].loss


# mini-batch noise -----------------------------------------------------------------------
def test_gradient_noise_shrinks_with_batch_size(small):
    model, tok = small
    data = torch.tensor(tok.encode(TEXT))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    r = loss_chapter.gradient_noise(model, data, batch_sizes=(1, 16), draws=4, ref_batch=64, block=16, seed=1)
    assert r.param == "blocks.1.attn.c_q.weight" and r.shape == (32, 32)
    mean = {row.batch_size: sum(row.rel_errors) / len(row.rel_errors) for row in r.rows}
    cos = {row.batch_size: sum(row.cosines) / len(row.cosines) for row in r.rows}
    assert mean[16] < mean[1] and cos[16] > cos[1]
    assert all(-1 <= c <= 1 for row in r.rows for c in row.cosines)
    # projection onto the reference direction: the along-axis coordinate is g.u
    assert all(len(row.coords) == 4 for row in r.rows)
    # the model was not touched: no .grad written, no weight changed
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
