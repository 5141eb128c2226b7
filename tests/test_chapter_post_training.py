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


@pytest.mark.parametrize("lang", ["en"])          # Chinese: test_a_live_fine_tune_and_dpo_on_its_mistakes
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


def test_graded_losses_read_each_position_and_grade_the_answers():
    """``graded_losses`` on one pair: every position's -log p of the next character, read here
    from one forward pass of the whole row; graded exactly on the answer's characters."""
    from lmviz.chapters import post_training as pt

    toy = pt.load_base("zh")
    pair = pt.sft_split("zh", pt.base_corpus("zh"), 0.6, 0).train[0]
    (r,) = pt.graded_losses(toy.model, toy.tokenizer, (pair,), 48)
    ids = toy.tokenizer.encode(pair.prompt + pair.answer)
    with torch.no_grad():
        logp = torch.log_softmax(toy.model(torch.tensor([ids[:-1]]))[0][0].float(), -1)
    by_hand = [-logp[i, ids[i + 1]].item() for i in range(len(ids) - 1)]
    assert r.losses == pytest.approx(by_hand, abs=1e-4)
    k = len(toy.tokenizer.encode(pair.answer))
    assert r.graded == tuple([False] * (len(ids) - 1 - k) + [True] * k)
    s = pt.sides(toy.model, toy.tokenizer, (pair,), 48)
    assert (s.prompt, s.answer) == pytest.approx((r.prompt, r.masked))


def test_the_base_model_knows_the_fact_in_its_form_and_not_as_a_question():
    from lmviz.chapters import post_training as pt

    toy = pt.load_base("zh")
    pair = pt.sft_split("zh", pt.base_corpus("zh"), 0.6, 0).held[0]
    read = pt.ask(toy.model, toy.tokenizer, pt.as_statements((pair,), "zh")[0], "zh")
    asked = pt.ask(toy.model, toy.tokenizer, pair, "zh")
    assert read.right and read.text == pair.answer and 0 < read.first_prob <= 1
    assert not asked.right and asked.text != pair.answer
    assert asked.prompt_ids == tuple(toy.tokenizer.encode(pair.prompt))


def test_a_live_fine_tune_and_dpo_on_its_mistakes():
    """``fine_tune`` then ``prefer`` (what the page runs): the SFT model's own wrong answers
    rejected, the right ones chosen. Before any step the model is its reference (margin 0, loss
    ln 2, KL 0); the margin then rises (β times how much more the chosen answer rose than the
    rejected one, against the reference), the KL is no longer 0, and the first pair's numbers by
    hand agree with a formula written here."""
    from lmviz.chapters import post_training as pt
    from lmviz.chapters.questions import by_id

    ft = pt.fine_tune("zh")
    run = ft.run
    # the format is taught, the knowledge came from pre-training (as in the English test above)
    assert run.counted[0][1:] == (0.0, 0.0) and run.counted[-1][1] >= 0.2 and run.counted[-1][2] == 0.0
    # the question's positions are never graded: their loss moves far less than the answer's
    assert run.after.answer < run.before.answer / 100
    moved = pt.prompt_loss_moved(run)
    assert pt.answers(run) == {"pt_prompt_loss": moved}
    assert moved in by_id("pt_prompt_loss").option_ids()
    # the replay: which held-out questions were right at each count, summing to the counts
    k = len(ft.split.held)
    assert [round(sum(r)) for r in run.held_right] == [round(c[1] * k) for c in run.counted]
    lr = pt.learned(run)
    assert sorted(lr.order) == list(range(k)) and lr.never == sum(not any(col) for col in zip(*run.held_right))
    toy = pt.load_base("zh")
    assert all(pt.answered(toy.model, toy.tokenizer, pt.as_statements(ft.split.held, "zh"), 48))
    rows = ft.said
    assert [p for p, _, _ in rows] == list(ft.split.held + ft.split.unseen)
    assert not any(a.right for _, a, _ in rows)                  # the base model answers no question
    assert not any(b.right for _, _, b in rows[k:])              # nor does SFT, about a city never read
    assert sum(b.right for _, _, b in rows[:k]) == round(run.counted[-1][1] * k)   # greedy = answered
    cfg = pt.DPOConfig()
    res = pt.prefer(ft, cfg)
    prefs, rec = res.prefs, res.steps
    assert len(prefs) == cfg.pairs and all(p.chosen != p.rejected and p.chosen.endswith("。") for p in prefs)
    # the reference says what was rejected
    assert pt.ask(ft.model, toy.tokenizer, prefs[0].pair("chosen"), "zh").text == prefs[0].rejected
    first, last = rec[0], rec[-1]
    assert (first.step, first.margin, first.kl) == (0, 0.0, 0.0)
    assert first.loss == pytest.approx(math.log(2), abs=1e-6)
    assert [r.step for r in rec] == list(range(cfg.steps + 1))
    assert last.margin > 1.0 and last.loss < first.loss / 10 and last.kl > 0.0
    assert last.margin == pytest.approx(cfg.beta * (last.chosen_shift - last.rejected_shift), abs=1e-9)
    assert pt.dpo_how(last) in {"up", "down", "fell"}
    r = res.first
    margin = cfg.beta * ((r.chosen - r.ref_chosen) - (r.rejected - r.ref_rejected))
    assert r.margin == pytest.approx(margin, abs=1e-9)
    assert r.loss == pytest.approx(math.log(1 + math.exp(-margin)), abs=1e-9)
    answers = [p.pair("chosen") for p in prefs]
    assert not any(pt.answered(ft.model, toy.tokenizer, answers, 48))
