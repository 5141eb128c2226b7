"""lmviz.sampling: the notes' worked examples (greedy decoding, softmax, cross-entropy, temperature, top-k/top-p, greedy vs best) and the conventions."""
import doctest
import math

import pytest
import torch

from lmviz import sampling
from lmviz.sampling import (TOY_TABLE, TOY_VOCAB, best_sequence,
                            distributions, generate, greedy_trace, sample_next_token, softmax_t,
                            table_prob_fn, temperature_curves, top_k_filter, top_p_filter)

LOGITS = [2.0, 1.0, -1.0]          # the notes' three candidates (softmax example, temperature example)
PROBS = [0.50, 0.30, 0.15, 0.05]   # the notes' top-k / top-p distribution (top-k/top-p example)


def test_docstring_examples():
    assert doctest.testmod(sampling).failed == 0


def test_w13_softmax_of_2_1_minus1():
    assert [round(p, 3) for p in softmax_t(LOGITS).tolist()] == [0.705, 0.259, 0.035]


def test_w14_cross_entropy_when_answer_is_b():
    loss = -math.log(float(softmax_t(LOGITS)[1]))
    assert round(loss, 2) == 1.35


def _by_hand(z, tau):
    e = [math.exp(zi / tau) for zi in z]
    return [x / sum(e) for x in e]


@pytest.mark.parametrize("tau", [0.5, 1.0, 2.0])
def test_w20_temperature_table_matches_the_formula(tau):
    got = softmax_t(LOGITS, tau).tolist()
    assert got == pytest.approx(_by_hand(LOGITS, tau), abs=1e-12)


def test_w20_table_values_and_shape():
    table = temperature_curves(LOGITS, [0.5, 1.0, 2.0])
    # by hand: τ=0.5 -> exp(4), exp(2), exp(-2); τ=2 -> exp(1), exp(.5), exp(-.5)
    s05 = math.exp(4) + math.exp(2) + math.exp(-2)
    s2 = math.exp(1) + math.exp(0.5) + math.exp(-0.5)
    assert table[0].tolist() == pytest.approx([math.exp(4) / s05, math.exp(2) / s05, math.exp(-2) / s05])
    assert table[2].tolist() == pytest.approx([math.exp(1) / s2, math.exp(0.5) / s2, math.exp(-0.5) / s2])
    assert [round(p, 3) for p in table[0].tolist()] == [0.879, 0.119, 0.002]
    assert [round(p, 3) for p in table[2].tolist()] == [0.547, 0.331, 0.122]
    # lower τ sharpens, higher τ flattens, order never changes for τ > 0
    assert table[0, 0] > table[1, 0] > table[2, 0]
    assert all(torch.argsort(row, descending=True).tolist() == [0, 1, 2] for row in table)


def test_temperature_limits_and_greedy_convention():
    assert softmax_t(LOGITS, 0).tolist() == [1.0, 0.0, 0.0]              # τ = 0: convention
    assert softmax_t(LOGITS, 1e-4).tolist() == pytest.approx([1.0, 0.0, 0.0])  # τ -> 0+
    assert softmax_t(LOGITS, 1e6).tolist() == pytest.approx([1 / 3] * 3, abs=1e-5)  # τ -> ∞
    assert softmax_t([1.0, 3.0, 3.0], 0).tolist() == [0.0, 1.0, 0.0]    # ties: lowest id
    assert not torch.isnan(softmax_t([0.0, 1e4, -1e4], 1e-9)).any()     # no overflow
    assert softmax_t([0.0, float("-inf"), 1.0], 1.0)[1] == 0.0           # masked token
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            softmax_t(LOGITS, bad)
    with pytest.raises(ValueError):
        softmax_t([float("-inf")] * 3, 1.0)


def test_w21_top_k_keeps_two_renormalised():
    f = top_k_filter(PROBS, 2)
    assert f.kept == [0, 1]
    assert f.probs.tolist() == pytest.approx([0.625, 0.375, 0.0, 0.0])


def test_w21_top_p_keeps_three_at_0_9_and_two_at_0_8():
    f = top_p_filter(PROBS, 0.9)
    assert f.kept == [0, 1, 2]
    assert f.probs.tolist() == pytest.approx([0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95, 0.0])
    assert top_p_filter(PROBS, 0.8).kept == [0, 1]
    assert top_p_filter(torch.tensor(PROBS, dtype=torch.float32), 0.8).kept == [0, 1]


def test_top_k_edge_cases():
    assert top_k_filter(PROBS, 0).kept == [0, 1, 2, 3]      # 0 = off
    assert top_k_filter(PROBS, None).kept == [0, 1, 2, 3]
    assert top_k_filter(PROBS, 99).kept == [0, 1, 2, 3]     # k >= V keeps all
    assert top_k_filter(PROBS, 1).kept == [0]
    assert top_k_filter([0.4, 0.2, 0.4], 1).kept == [0]     # tie: lower id first
    assert top_k_filter([0.5, 0.0, 0.5], 3).kept == [0, 2]  # zero mass is never "kept"
    for bad in (-1, 1.5):
        with pytest.raises(ValueError):
            top_k_filter(PROBS, bad)


def test_top_p_edge_cases():
    assert top_p_filter(PROBS, 0.0).kept == [0]              # p = 0 keeps one (greedy)
    assert top_p_filter(PROBS, 1.0).kept == [0, 1, 2, 3]     # p = 1 keeps all
    assert top_p_filter(PROBS, None).kept == [0, 1, 2, 3]
    assert top_p_filter(PROBS, 0.5).kept == [0]              # 0.5 reaches 0.5
    assert top_p_filter([0.25] * 4, 0.5).kept == [0, 1]      # ties: lower ids first
    for bad in (-0.1, 1.1, float("nan")):
        with pytest.raises(ValueError):
            top_p_filter(PROBS, bad)


def test_filter_order_is_temperature_then_top_k_then_top_p():
    d = distributions(LOGITS, temperature=2.0, top_k=2, top_p=0.6)
    assert torch.allclose(d.p_temp, softmax_t(LOGITS, 2.0))
    assert torch.allclose(d.p_top_k, top_k_filter(d.p_temp, 2).probs)
    assert torch.allclose(d.p_final, top_p_filter(d.p_top_k, 0.6).probs)
    # at τ=2 top-2 renormalised is [0.622, 0.378]: top-p 0.6 keeps one token. Applying top-p
    # to p_temp first would need two tokens (0.547 < 0.6), so the order matters here.
    assert d.kept == [0]
    assert top_p_filter(d.p_temp, 0.6).kept == [0, 1]
    assert float(d.p_final.sum()) == pytest.approx(1.0)


def test_sample_next_token_record_and_greedy():
    g = torch.Generator().manual_seed(0)
    s = sample_next_token(LOGITS, g, temperature=0)
    assert s.token == 0 and s.prob == 1.0 and 0.0 <= s.u < 1.0
    assert s.prob_raw == pytest.approx(0.7054, abs=1e-4)
    s = sample_next_token([0.0, 0.0, 0.0, 5.0], g, top_k=1)
    assert s.token == 3 and s.dist.kept == [3]


def test_sampling_picks_the_slice_u_lands_in():
    # two equally likely tokens: u < 0.5 picks the first (kept order), u >= 0.5 the second
    g = torch.Generator().manual_seed(123)
    for _ in range(20):
        s = sample_next_token([0.0, 0.0], g)
        assert s.token == (0 if s.u < 0.5 else 1)


def test_sampling_frequencies_follow_the_distribution():
    g = torch.Generator().manual_seed(0)
    counts = [0, 0, 0]
    for _ in range(3000):
        counts[sample_next_token(LOGITS, g).token] += 1
    assert [c / 3000 for c in counts] == pytest.approx([0.705, 0.259, 0.035], abs=0.03)


def _toy_model(ids):
    """A fixed 'model': logits depend on the last id only (V = 5)."""
    return torch.tensor([float((ids[-1] * 7 + j * 3) % 5) for j in range(5)])


def test_generate_is_reproducible_under_a_seed():
    run = lambda seed: [s.token for s in generate(_toy_model, [1], 12, torch.Generator().manual_seed(seed),
                                                  temperature=1.5)]
    assert run(7) == run(7)
    assert run(7) != run(8)


def test_generate_yields_prefix_and_stops():
    steps = list(generate(_toy_model, [1, 2], 5, torch.Generator().manual_seed(0), temperature=0))
    assert len(steps) == 5
    assert steps[0].prefix == (1, 2)
    assert steps[1].prefix == (1, 2, steps[0].token)
    stop = steps[0].token
    short = list(generate(_toy_model, [1, 2], 5, torch.Generator().manual_seed(0), temperature=0,
                          stop_ids=[stop]))
    assert len(short) == 1
    with pytest.raises(ValueError):
        next(generate(_toy_model, [], 3, torch.Generator()))


def test_same_seed_same_dice_whatever_the_settings():
    a = [s.u for s in generate(_toy_model, [0], 6, torch.Generator().manual_seed(3), temperature=0.5)]
    b = [s.u for s in generate(_toy_model, [0], 6, torch.Generator().manual_seed(3), top_p=0.3)]
    assert a == b


def test_w8_greedy_trace():
    steps = greedy_trace(TOY_TABLE)
    assert [s.token for s in steps] == ["I", "love", "robot", "s", "<EOS>"]
    assert steps[0].prefix == ("<BOS>",)
    assert steps[-1].prefix == ("<BOS>", "I", "love", "robot", "s")
    for s in steps:
        assert sum(s.probs) == pytest.approx(1.0)
        assert s.prob == max(s.probs) and TOY_VOCAB[s.probs.index(s.prob)] == s.token
    assert all(sum(row) == pytest.approx(1.0) for row in TOY_TABLE.values())


def test_w22_greedy_is_not_the_most_probable_sequence():
    r = best_sequence(table_prob_fn(TOY_TABLE), depth=2)
    assert r.exhaustive
    assert r.greedy == ("I", "love") and r.greedy_joint == pytest.approx(0.30)
    assert r.best == ("robot", "s") and r.best_joint == pytest.approx(0.36)
    assert r.greedy_joint < r.best_joint
    # the tree: every child's joint is its parent's joint times its own probability
    for n in r.nodes[1:]:
        assert n.joint == pytest.approx(r.nodes[n.parent].joint * n.prob)
    # the finished leaves of an exhaustive search partition the probability mass
    assert sum(n.joint for n in r.nodes if n.finished) == pytest.approx(1.0)


def test_w22_beam_search_of_width_2_finds_it_and_width_1_is_greedy():
    fn = table_prob_fn(TOY_TABLE)
    assert best_sequence(fn, depth=2, beam_width=2).best == ("robot", "s")
    w1 = best_sequence(fn, depth=2, beam_width=1)
    assert not w1.exhaustive
    assert w1.best in (("I", "love"), ("I", "<EOS>"))   # can never reach "robot s"
    assert w1.best_joint < 0.36


def test_best_sequence_on_a_model_like_prob_fn():
    fn = lambda prefix: softmax_t(_toy_model(list(prefix))).tolist()
    r = best_sequence(fn, start=(1,), depth=3, vocab=list(range(5)), eos=None, branch=2)
    assert len(r.best) == 3 and r.best_joint >= r.greedy_joint - 1e-12


def test_chain_matches_the_public_filters_with_ties():
    g = torch.Generator().manual_seed(1)
    for _ in range(20):
        z = torch.randint(-3, 4, (30,), generator=g).double()   # many exact ties
        d = distributions(z, temperature=0.8, top_k=7, top_p=0.7)
        fk = top_k_filter(softmax_t(z, 0.8), 7)
        fp = top_p_filter(fk.probs, 0.7)
        assert d.kept_k == fk.kept and d.kept == fp.kept
        assert torch.equal(d.p_final, fp.probs)
        # ties inside the ranking are broken by the lower id
        ranked = d.kept_k
        for a, b in zip(ranked, ranked[1:]):
            assert z[a] > z[b] or (z[a] == z[b] and a < b)
