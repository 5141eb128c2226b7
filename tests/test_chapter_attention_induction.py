"""lmviz.chapters.attention_induction (issue 57): the scores on hand-made attention patterns, the halves'
losses on synthetic numbers, the probe, and the scan on the shipped model (no induction head: a
4-layer character model of poems) and on SmolLM2 (a head that copies, and removing it costs the
second half more than removing its layer's control head)."""
from __future__ import annotations

import pytest
import torch

from lmviz.chapters.attention_induction import (HALF_MIN, halves_loss, prefix_matching, previous_token, probe_half,
                                      repeated_tokens, scan, uniform_prefix)
from lmviz.model import GPT, GPTConfig


def _pattern(half: int, target) -> torch.Tensor:
    """[1, T, T] one head whose row i puts all its weight on key target(i) (a key it may see)."""
    T = 2 * half
    w = torch.zeros(1, T, T)
    for i in range(T):
        w[0, i, target(i)] = 1.0
    return w


def test_a_perfect_induction_head_scores_one_and_a_previous_token_head_zero():
    half = 6
    induction = _pattern(half, lambda i: i - half + 1 if i >= half else 0)
    previous = _pattern(half, lambda i: max(0, i - 1))
    assert float(prefix_matching(induction, half)[0]) == 1.0
    assert float(prefix_matching(previous, half)[0]) == 0.0
    assert float(previous_token(previous)[0]) == 1.0
    assert float(previous_token(induction)[0]) < 0.5


def test_a_head_that_attends_evenly_scores_the_uniform_baseline():
    half = 16
    T = 2 * half
    even = torch.tril(torch.ones(T, T))
    even = (even / even.sum(dim=1, keepdim=True))[None]
    assert float(prefix_matching(even, half)[0]) == pytest.approx(uniform_prefix(half), rel=1e-6)
    assert 1 / (2 * half) < uniform_prefix(half) < 1 / half


def test_the_halves_leave_out_the_token_where_the_repeat_starts():
    nll = torch.tensor([5.0, 5.0, 5.0, 100.0, 0.5, 0.5, 0.5])     # position 3 predicts the repeat's start
    assert halves_loss(nll, 4) == (5.0, 0.5)


def test_the_probe_is_a_run_of_distinct_tokens_repeated_without_special_tokens():
    ids = repeated_tokens(40, 10, seed=3, exclude=[0, 1, 2])
    assert ids[:10] == ids[10:] and len(set(ids[:10])) == 10 and not {0, 1, 2} & set(ids)
    assert ids == repeated_tokens(40, 10, seed=3, exclude=[0, 1, 2])
    assert ids != repeated_tokens(40, 10, seed=4, exclude=[0, 1, 2])
    with pytest.raises(ValueError):
        repeated_tokens(8, 10)


def test_the_probe_is_sized_to_the_model_and_its_context():
    assert probe_half(1_000, 16) == 8                        # the context first
    assert probe_half(1_000, 4096) == 64                      # a tiny model: the longest probe
    assert HALF_MIN <= probe_half(10**10, 4096) <= 64          # a huge one: the shortest


def test_a_scan_of_a_small_random_model_is_a_consistent_record():
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=30, block_size=32, n_layer=2, n_head=3, n_kv_head=3, d_model=24)).eval()
    ids = repeated_tokens(30, 8, seed=0)
    s = scan(m, ids, 8)
    assert len(s.prefix) == 2 and len(s.prefix[0]) == 3 and len(s.nll) == 15
    assert s.icl == pytest.approx(s.second_loss - s.first_loss)
    scores = [v for _, _, v in s.top]
    assert scores == sorted(scores, reverse=True) and scores[0] == max(max(r) for r in s.prefix)
    layer = s.top[0][0]
    assert s.control[0] == layer and s.control[2] == min(s.prefix[layer])
    assert s.best_previous[2] == max(max(r) for r in s.previous)
    assert s.top_weights.shape == (16, 16) and torch.allclose(s.top_weights.sum(dim=1), torch.ones(16), atol=1e-5)
    with pytest.raises(ValueError):
        scan(m, ids[:-1] + [ids[0]], 8)                        # not a repeat
    with pytest.raises(ValueError):
        scan(m, repeated_tokens(30, 20, seed=0), 20)           # longer than the context


def test_the_shipped_model_has_no_induction_head():
    """The shipped 4-layer model of Tang poems (one character a token) never saw a repeated run:
    its best prefix matcher is near the even-attention baseline and the repeat does not help."""
    from lmviz.checkpoint import load_default

    m, tok, _ = load_default()
    half = probe_half(m.num_params(), m.cfg.block_size)
    s = scan(m, repeated_tokens(tok.vocab_size, half, seed=0), half)
    assert s.top[0][2] < 3 * s.uniform
    assert s.icl > -0.5


def test_smollm2_copies_with_a_head_whose_removal_costs_the_repeat():
    """A real model: one head attends to the token after the earlier copy most of the time, the
    second half is predicted (more than 10 nats better than the first), and removing that head
    raises the second half's loss far more than removing the lowest prefix matcher of its layer."""
    from tests.model_util import smollm2

    m, tok = smollm2()
    half = probe_half(m.num_params(), m.cfg.block_size)
    s = scan(m, repeated_tokens(tok.vocab_size, half, seed=0, exclude=tok.special.values()), half)
    assert s.top[0][2] > 0.5 and s.top[0][2] > 20 * s.uniform
    assert s.icl < -10
    assert s.top_rise > 1.0 and abs(s.control_rise) < 0.2
