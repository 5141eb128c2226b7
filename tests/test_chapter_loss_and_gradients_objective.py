"""Maximum likelihood and non-convexity (lmviz.chapters.loss_and_gradients_objective)."""
import math

import pytest
import torch

from lmviz.checkpoint import load_default
from lmviz.chapters.autoregression import sequence_log_probs
from lmviz.model import GPT, GPTConfig
from lmviz.chapters.loss_and_gradients_objective import (LINE_CONFIG, LINE_SEEDS, LINE_TEXT_CHARS,
    corpus_likelihood, eval_windows, interpolate, loss_line, nonconvexity, train_endpoints)
from lmviz.tokenizer import CharTokenizer
from lmviz.train import corpus_text

TEXT = "the cat sat on the mat. the dog sat on the log. " * 6


def _tiny(vocab, block=16):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=vocab, block_size=block, n_layer=1, n_head=2, n_kv_head=2, d_model=16))


def test_mean_nll_is_the_models_loss_random_model():
    tok = CharTokenizer(TEXT)
    model = _tiny(tok.vocab_size)
    r = corpus_likelihood(model, tok, TEXT)
    n = len(TEXT) - 1
    assert r.n_tokens == n and r.n_windows == math.ceil(n / 16) and not r.truncated
    assert r.mean_nll == pytest.approx(r.model_loss, abs=1e-5)
    assert r.total_nll == pytest.approx(r.mean_nll * n, rel=1e-12)
    assert r.ppl == pytest.approx(math.exp(r.mean_nll)) and r.bits_per_token == pytest.approx(r.mean_nll / math.log(2))
    # self-supervised: every label is the next input of the same text
    assert r.labels[:-1] == r.inputs[1:] and list(r.inputs) == tok.encode(TEXT)[:len(r.inputs)]
    assert all(0.0 < p < 1.0 for p in r.label_probs)
    assert model.training  # mode restored


def test_mean_nll_is_the_models_loss_default_model_and_chain_rule():
    model, tok, _ = load_default()
    text = corpus_text("english")[:3000]
    r = corpus_likelihood(model, tok, text)
    assert r.mean_nll == pytest.approx(r.model_loss, abs=1e-4)
    assert r.mean_nll < math.log(tok.vocab_size)  # the trained model beats a uniform guess
    # one window: the same number as the chain rule of lessons.sequence_log_probs
    short = text[: model.cfg.block_size]  # T tokens: T-1 labels, one window, as the chain rule
    one = corpus_likelihood(model, tok, short)
    assert one.n_windows == 1
    assert one.total_nll == pytest.approx(-sequence_log_probs(model, tok, short).total_log_prob, rel=1e-4)


def test_likelihood_truncates_drops_unknown_and_refuses_empty():
    tok = CharTokenizer(TEXT)
    model = _tiny(tok.vocab_size)
    r = corpus_likelihood(model, tok, TEXT + "ZZ", max_tokens=40)
    assert r.truncated and r.n_tokens == 40 and r.unknown == ("Z",)
    with pytest.raises(ValueError):
        corpus_likelihood(model, tok, "Q")


def test_interpolate_endpoints_are_exact():
    a, b = _tiny(7), _tiny(7)
    with torch.no_grad():
        for p in b.parameters():
            p.add_(torch.randn_like(p))
    for alpha, ref in ((0.0, a), (1.0, b)):
        m = interpolate(a, b, alpha)
        for (k, v), (_, w) in zip(m.state_dict().items(), ref.state_dict().items()):
            assert torch.equal(v, w), k
    with pytest.raises(ValueError):
        interpolate(a, _tiny(8), 0.5)


@pytest.fixture(scope="module")
def line():
    text = corpus_text("english")[:LINE_TEXT_CHARS]
    a, b = train_endpoints(text, LINE_CONFIG, LINE_SEEDS)
    x, y = eval_windows(a.val_ids, LINE_CONFIG.block_size, 32, seed=0)
    return a, b, x, y


def test_loss_line_has_a_barrier(line):
    a, b, x, y = line
    r = loss_line(a.model, b.model, x, y, seeds=LINE_SEEDS, steps=a.steps_done)
    assert a.steps_done == b.steps_done == LINE_CONFIG.max_steps
    assert r.alphas[0] == -0.25 and r.alphas[-1] == 1.25 and list(r.alphas) == sorted(r.alphas)
    # α = 0 and 1 are the two models themselves, bit for bit
    assert r.losses[r.alphas.index(0.0)] == r.loss_a
    assert r.losses[r.alphas.index(1.0)] == r.loss_b
    # the midpoint is worse than both: the loss is not convex along this line
    assert r.mid_loss > max(r.loss_a, r.loss_b)
    assert r.chord_gap > 0.1 and r.barrier >= r.mid_loss - max(r.loss_a, r.loss_b)
    # both endpoints learned something (uniform would be ln V)
    assert max(r.loss_a, r.loss_b) < math.log(a.tokenizer.vocab_size) - 1.0


def test_gradient_noise_alone_leads_to_different_valleys():
    text = corpus_text("english")[:LINE_TEXT_CHARS]
    r = nonconvexity(text, LINE_CONFIG, LINE_SEEDS, alphas=[0.0, 0.5, 1.0], same_init=True)
    assert r.same_init and r.mid_loss > max(r.loss_a, r.loss_b) and r.loss_a != r.loss_b
    from ui.i18n import translate

    for lang in ("en", "zh"):
        assert f"{r.chord_gap:.3f}" in translate("loss.line_same_init", lang, mid=r.mid_loss, gap=r.chord_gap)


def test_nonconvexity_end_to_end_small():
    from dataclasses import replace
    text = corpus_text("english")[:20_000]
    r = nonconvexity(text, replace(LINE_CONFIG, max_steps=20), alphas=[0.0, 0.5, 1.0])
    assert r.alphas == (0.0, 0.5, 1.0) and r.steps == 20 and r.seeds == LINE_SEEDS


def test_doctests():
    import doctest

    from lmviz.chapters import loss_and_gradients_objective as objective
    assert doctest.testmod(objective).failed == 0


def test_catalogue_strings_format_with_computed_values(line):
    from ui.i18n import translate

    a, b, x, y = line
    r = loss_line(a.model, b.model, x, y, alphas=[0.0, 0.5, 1.0], seeds=LINE_SEEDS, steps=a.steps_done)
    tok = CharTokenizer(TEXT)
    mle = corpus_likelihood(_tiny(tok.vocab_size), tok, TEXT)
    for lang in ("en", "zh"):
        s = translate("loss.line_result", lang, loss_a=r.loss_a, loss_b=r.loss_b, mid=r.mid_loss, gap=r.chord_gap)
        assert f"{r.mid_loss:.3f}" in s
        translate("loss.line_body", lang, seed_a=r.seeds[0], seed_b=r.seeds[1], d=LINE_CONFIG.d_model, steps=r.steps)
        s = translate("loss.mle_numbers", lang, n=mle.n_tokens, windows=mle.n_windows, block=mle.block_size,
                      total=mle.total_nll, mean=mle.mean_nll, loss=mle.model_loss, ppl=mle.ppl)
        assert f"{mle.mean_nll:.4f}" in s


def test_loss_by_position_on_a_tiny_model():
    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.chapters.loss_and_gradients_objective import loss_by_position

    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=1, n_kv_head=1, d_model=8))
    r = loss_by_position(m, torch.arange(100) % 11, n_windows=5)
    assert r.positions == tuple(range(1, 9)) and len(r.losses) == 8 and r.n_windows == 5
    # from used_until on, no point is above the level by more than the tolerance and its own
    # chance scatter; the point before it is (the curve is level from there, not just touching)
    top = [r.plateau + r.tolerance + e for e in r.spread]
    assert 1 <= r.used_until <= 8 and all(v <= c for v, c in zip(r.losses[r.used_until - 1:], top[r.used_until - 1:]))
    assert r.used_until == 1 or r.losses[r.used_until - 2] > top[r.used_until - 2]
    assert len(r.spread) == 8 and all(e > 0 for e in r.spread)
    assert r.plateau == pytest.approx(sum(r.losses[-2:]) / 2)
    with pytest.raises(ValueError):
        loss_by_position(m, torch.arange(5))
    one = loss_by_position(m, torch.arange(10) % 11)           # one window: no scatter to measure
    assert one.n_windows == 1 and one.spread == (0.0,) * 8



def test_the_curve_levels_where_it_stays_level_not_where_it_first_touches():
    """The beyond chapter said "from position 5 on it stays within 0.1 nats" of its level, of a
    curve that went 0.4 nats above it later: it took the first point within the tolerance."""
    from lmviz.chapters.loss_and_gradients_objective import level_from

    dips = [2.5, 2.2, 1.5, 1.3, 1.2, 1.2, 1.6, 1.2, 1.2, 1.2]
    assert level_from(dips, [0.0] * 10, 1.2, 0.1) == 8           # after the rise at position 7
    assert level_from(dips, [0.45] * 10, 1.2, 0.1) == 3          # a scatter that wide hides the rise
    assert level_from([1.0] * 4, [0.0] * 4, 1.2, 0.1) == 1
