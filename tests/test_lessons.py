"""Pins the worked examples from the chain rule to one SGD step and from softmax to the one-parameter model (lmviz/chapters/autoregression.py, loss.py) and checks the live-model
lessons on a small random GPT (fast, CPU)."""
from __future__ import annotations

import math

import pytest
import torch

from lmviz.chapters import autoregression
from lmviz.chapters import loss_and_gradients as loss_chapter
from lmviz.model import GPT, GPTConfig
from lmviz.sampling import TOY_TABLE
from lmviz.tokenizer import CharTokenizer

TEXT = "the cat sat on the mat. the dog sat on the log. " * 8


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    tok = CharTokenizer(TEXT)
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=2, n_head=2, n_kv_head=2,
                    d_model=32, pos="learned", norm="layernorm")
    return GPT(cfg).eval(), tok


# chain-rule example -------------------------------------------------------------------------------------
def test_w4_toy_sequence_is_five_conditional_factors():
    r = autoregression.toy_chain_rule()
    assert len(r.factors) == 5
    assert [f.token for f in r.factors] == ["I", "love", "robot", "s", "<EOS>"]
    assert r.factors[0].prefix == ("<BOS>",) and r.factors[-1].prefix == ("<BOS>", "I", "love", "robot", "s")
    # the factors are read from the made-up teaching table, and the product equals exp(sum of logs)
    assert r.factors[1].prob == TOY_TABLE[("<BOS>", "I")][2]
    assert r.joint == pytest.approx(0.50 * 0.60 * 0.65 * 0.55 * 0.80)
    assert r.log_joint == pytest.approx(sum(math.log(f.prob) for f in r.factors))
    assert math.exp(r.log_joint) == pytest.approx(r.joint)


def test_chain_rule_rejects_a_prefix_the_table_lacks():
    with pytest.raises(ValueError, match="no row"):
        autoregression.chain_rule(["<BOS>", "robot", "s", "I"])


def test_w4_live_chain_rule_matches_the_models_loss(small):
    model, tok = small
    r = autoregression.sequence_log_probs(model, tok, "the cat sat")
    assert len(r.probs) == len(r.tokens) - 1 == 10
    ids = torch.tensor(tok.encode("the cat sat"))[None]
    _, loss = model(ids[:, :-1], ids[:, 1:])
    assert r.mean_loss == pytest.approx(loss.item(), rel=1e-5)
    assert r.total_log_prob == pytest.approx(sum(math.log(p) for p in r.probs), rel=1e-5)
    assert all(b >= p - 1e-7 for b, p in zip(r.best_probs, r.probs))


def test_live_chain_rule_drops_unknown_and_cuts_to_block(small):
    model, tok = small
    r = autoregression.sequence_log_probs(model, tok, "the cat ZZ sat on the mat on the log")
    assert r.unknown == ["Z"] and r.truncated and len(r.tokens) == 16
    with pytest.raises(ValueError):
        autoregression.sequence_log_probs(model, tok, "Q")


# teacher-forcing example -------------------------------------------------------------------------------------
def test_w5_teacher_forcing_pairs():
    en, zh = autoregression.toy_teacher_forcing("en"), autoregression.toy_teacher_forcing("zh")
    assert en.inputs == ["<BOS>", "I", "love", "robot", "s"]
    assert en.labels == ["I", "love", "robot", "s", "<EOS>"]
    assert len(en.pairs) == 5 and en.pairs[3].context == ("<BOS>", "I", "love", "robot")
    assert zh.inputs == ["<开始>", "我", "喜欢", "学习"] and zh.labels == ["我", "喜欢", "学习", "<结束>"]
    assert len(zh.pairs) == 4 and zh.pairs[-1].target == "<结束>"


# causal-mask example -------------------------------------------------------------------------------------
def test_w6_causal_mask_gives_lower_triangular_weights():
    d = autoregression.causal_mask_demo(autoregression.toy_scores(5))
    w = d.weights
    assert torch.equal(w.triu(1), torch.zeros(5, 5))              # future weights are exactly 0
    assert torch.isinf(d.masked.triu(1)[0, 1]) and d.masked[0, 1] < 0
    assert torch.allclose(w.sum(-1), torch.ones(5, dtype=w.dtype))
    assert (w.tril() > 0).sum() == 15                              # the past and present all get weight
    assert w[0, 0] == 1.0                                          # the first token can only read itself


def test_w6_one_masked_pass_equals_prefix_passes(small):
    model, tok = small
    c = autoregression.parallel_vs_sequential(model, tok.encode("the dog sat on"))
    assert c.max_diff < 1e-4        # parallel training sees what sequential generation sees
    assert c.future_diff == 0.0     # changing the last token changes no earlier position
    assert c.last_diff > 0          # ... but it does change the last position


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
