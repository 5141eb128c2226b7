"""lmviz.chapters.post_training: the masked SFT loss and the DPO loss, each against a hand
computation written here (not the module's own formula)."""
from __future__ import annotations

import math

import pytest
import torch

from lmviz.chapters.post_training import dpo_by_hand, dpo_loss, masked_loss


def test_the_masked_loss_is_the_mean_over_the_answer_positions_by_hand():
    """Three positions, two of them the answer's: each loss is -ln p(target), written out."""
    probs = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])
    r = masked_loss(torch.log(probs), [0, 1, 2], [False, True, True])
    by_hand = [-math.log(0.5), -math.log(0.6), -math.log(0.5)]
    assert r.losses == pytest.approx(by_hand, abs=1e-6)
    assert r.graded == (False, True, True)
    assert r.masked == pytest.approx((by_hand[1] + by_hand[2]) / 2, abs=1e-6)     # 0.6020
    assert r.unmasked == pytest.approx(sum(by_hand) / 3, abs=1e-6)                 # 0.6324
    assert r.prompt == pytest.approx(by_hand[0], abs=1e-6)                         # ln 2
    # a position not graded may be as wrong as it likes: the masked loss does not move
    worse = torch.log(torch.tensor([[0.01, 0.98, 0.01], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]]))
    assert masked_loss(worse, [0, 1, 2], [False, True, True]).masked == pytest.approx(r.masked, abs=1e-6)
    assert masked_loss(worse, [0, 1, 2], [False, True, True]).unmasked > r.unmasked


def test_the_masked_loss_refuses_what_it_cannot_mean():
    lg = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="graded"):
        masked_loss(lg, [0, 1], [False, False])
    with pytest.raises(ValueError, match="agree"):
        masked_loss(lg, [0, 1, 2], [True, True, True])
    assert math.isnan(masked_loss(lg, [0, 1], [True, True]).prompt)             # nothing ungraded


def test_the_dpo_worked_example_by_hand():
    """β = 0.1; the model gives the chosen answer -12.0 nats (its reference -14.0) and the
    rejected one -15.0 (reference -13.0): it moved the chosen up by 2 and the rejected down by 2,
    so the margin is 0.1 × (2 − (−2)) = 0.4 and the loss −ln σ(0.4) = ln(1 + e^−0.4) = 0.5130."""
    r = dpo_by_hand(chosen=-12.0, rejected=-15.0, ref_chosen=-14.0, ref_rejected=-13.0, beta=0.1)
    assert (r.chosen_shift, r.rejected_shift) == (2.0, -2.0)
    assert r.margin == pytest.approx(0.4, abs=1e-12)
    assert r.prob == pytest.approx(1 / (1 + math.exp(-0.4)), abs=1e-12)           # 0.5987
    assert r.loss == pytest.approx(math.log(1 + math.exp(-0.4)), abs=1e-12)       # 0.5130
    assert round(r.loss, 4) == 0.5130 and round(r.prob, 4) == 0.5987
    # the model equal to its reference: margin 0, loss ln 2 whatever the answers' probabilities
    same = dpo_by_hand(-3.0, -9.0, -3.0, -9.0, beta=0.5)
    assert same.margin == 0.0 and same.loss == pytest.approx(math.log(2), abs=1e-12)
    with pytest.raises(ValueError):
        dpo_by_hand(-1.0, -2.0, -1.0, -2.0, beta=0.0)


def test_the_batch_dpo_loss_against_a_formula_written_here():
    g = torch.Generator().manual_seed(0)
    pc, pr, rc, rr = (-20 * torch.rand(16, generator=g, dtype=torch.float64) for _ in range(4))
    for beta in (0.05, 0.1, 0.5, 2.0):
        loss, margins = dpo_loss(pc, pr, rc, rr, beta)
        mine = [beta * ((a - c) - (b - d)) for a, b, c, d in zip(pc.tolist(), pr.tolist(), rc.tolist(), rr.tolist())]
        assert margins.tolist() == pytest.approx(mine, abs=1e-12)
        assert loss.item() == pytest.approx(sum(math.log(1 + math.exp(-m)) for m in mine) / 16, abs=1e-12)
    # its gradient raises the chosen answer's log-probability and lowers the rejected one's
    pc = pc.clone().requires_grad_(True)
    pr = pr.clone().requires_grad_(True)
    dpo_loss(pc, pr, rc, rr, 0.1)[0].backward()
    assert (pc.grad < 0).all() and (pr.grad > 0).all()


def test_doctests():
    import doctest

    from lmviz.chapters import post_training

    assert doctest.testmod(post_training).failed == 0


# -- SFT on the capital pairs ---------------------------------------------------------------------
def test_sft_rows_grade_the_answer_only():
    from lmviz.capitals import Pair
    from lmviz.chapters.post_training import qa_pairs, sft_rows
    from lmviz.tokenizer import CharTokenizer

    (p,) = qa_pairs("zh", [Pair("巴黎", "法国", True)])
    assert (p.prompt, p.answer) == ("问：巴黎在哪个国家？答：", "法国。")
    tok = CharTokenizer(p.prompt + p.answer)
    x, y = sft_rows(tok, [p], 16)
    ids = tok.encode(p.prompt + p.answer)                 # 12 + 3 characters
    assert x[0, :14].tolist() == ids[:-1] and x.shape == y.shape == (1, 16)
    graded = [i for i, v in enumerate(y[0].tolist()) if v != -1]
    assert graded == [11, 12, 13]                         # after "答：" the model must say 法, 国, 。
    assert [y[0, i].item() for i in graded] == tok.encode("法国。")


def test_answered_is_greedy_decoding():
    """``answered`` (one teacher-forced pass) says a pair is right exactly when greedy decoding
    after the question writes the answer."""
    from lmviz.chapters import post_training as pt

    toy = pt.load_base("zh")
    split = pt.sft_split("zh", pt.base_corpus("zh"), 0.6, 0)
    pairs = split.held[:12]
    got = pt.answered(toy.model, toy.tokenizer, pairs, pt.BaseTrainConfig().block_size)
    for p, ok in zip(pairs, got):
        ids = toy.tokenizer.encode(p.prompt)
        want = toy.tokenizer.encode(p.answer)
        with torch.no_grad():
            for _ in want:
                ids.append(int(toy.model(torch.tensor([ids]))[0][0, -1].argmax()))
        assert (ids[-len(want):] == want) == ok


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_sft_teaches_the_format_and_the_knowledge_comes_from_pre_training(lang):
    """The shipped base model answers none of the questions (it never read one); fine-tuned on
    60 % of the pairs it read about, with the loss masked to the answers, it answers a share of
    the other 40 % (never fine-tuned on); of the pairs it never read, still none."""
    from lmviz.chapters import post_training as pt
    from lmviz.train import copy_model

    toy = pt.load_base(lang)
    cfg = pt.SFTConfig(seed=0)
    split = pt.sft_split(lang, pt.base_corpus(lang), cfg.share, cfg.seed)
    assert not {p.city for p in split.train} & {p.city for p in split.held}
    block = pt.BaseTrainConfig().block_size
    # the base model knows every held-out pair in the form it read (the corpus's sentence)
    assert all(pt.answered(toy.model, toy.tokenizer, pt.as_statements(split.held, lang), block))
    run = pt.run_sft(copy_model(toy.model), toy.tokenizer, split, block, cfg)
    step0, held0, unseen0 = run.counted[0]
    last, held, unseen = run.counted[-1]
    assert (step0, held0, unseen0) == (0, 0.0, 0.0) and last == cfg.steps
    assert held >= 0.2 and unseen == 0.0       # bench/post_training.py: zh 0.58-0.74, en 0.24-0.32 (3 seeds)
    assert run.losses[-1] < run.losses[0] / 10


def test_dpo_steps_raise_the_margin_and_move_the_model_from_its_reference():
    """The SFT model's own wrong answers rejected, the right ones chosen: before any step the
    model is its reference (margin 0, loss ln 2, KL 0); the margin then rises step by step
    (β times how much more the chosen answer rose than the rejected one, against the reference),
    the KL to the reference is no longer 0, and the questions are answered right."""
    from lmviz.chapters import post_training as pt
    from lmviz.train import copy_model

    toy = pt.load_base("zh")
    split = pt.sft_split("zh", pt.base_corpus("zh"), 0.6, 0)
    sft = copy_model(toy.model)
    pt.run_sft(sft, toy.tokenizer, split, pt.BaseTrainConfig().block_size, pt.SFTConfig(seed=0))
    prefs = pt.mistakes_as_preferences(sft, toy.tokenizer, split.held, 4, "zh")
    assert len(prefs) == 4 and all(p.chosen != p.rejected and p.chosen.endswith("。") for p in prefs)
    rec = pt.run_dpo(copy_model(sft), sft, toy.tokenizer, prefs, beta=0.1, steps=20)
    first, last = rec[0], rec[-1]
    assert (first.step, first.margin, first.kl) == (0, 0.0, 0.0)
    assert first.loss == pytest.approx(math.log(2), abs=1e-6)
    assert [r.step for r in rec] == list(range(21))
    assert last.margin > 1.0 and last.loss < first.loss / 10 and last.kl > 0.0
    assert last.chosen_shift > 0 > last.rejected_shift
    assert last.margin == pytest.approx(0.1 * (last.chosen_shift - last.rejected_shift), abs=1e-9)
    # the same numbers by hand for the first pair: dpo_by_hand on its four log-probabilities
    model = copy_model(sft)
    pt.run_dpo(model, sft, toy.tokenizer, prefs, beta=0.1, steps=5)
    with torch.no_grad():
        four = [pt.answer_logprobs(m, toy.tokenizer, prefs[:1], w).item()
                for m, w in ((model, "chosen"), (model, "rejected"), (sft, "chosen"), (sft, "rejected"))]
    r = pt.dpo_by_hand(*four, beta=0.1)
    assert r.loss == pytest.approx(math.log(1 + math.exp(-r.margin)), abs=1e-9)
    answers = [p.pair("chosen") for p in prefs]
    assert not any(pt.answered(sft, toy.tokenizer, answers, 48))
    assert pt.answered(copy_model(model), toy.tokenizer, answers, 48).count(True) >= 1
