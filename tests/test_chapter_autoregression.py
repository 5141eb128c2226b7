"""The autoregression chapter's worked examples (the chain rule on the toy table and on a live
model, teacher forcing, the causal mask as one pass for every prefix), computed by
lmviz.chapters.autoregression."""
from __future__ import annotations

import math

import pytest
import torch

from lmviz.chapters import autoregression
from lmviz.sampling import TOY_TABLE
from tests.model_util import SMALL_TEXT, small_char_gpt

TEXT = SMALL_TEXT


@pytest.fixture(scope="module")
def small():
    return small_char_gpt()


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
