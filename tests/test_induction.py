"""lmviz.induction and the preset that learns from it: every window one whole sequence, a span and
its copy after a random gap inside it (issue 57; bench/induction.py --train measures the formation)."""
import torch

from lmviz.induction import ALPHABET, MAX_GAP, PROMPT, SEQ, SPAN, induction_text
from lmviz.limits import check_budget
from lmviz.train import CORPORA, corpus_text, corpus_trainer, default_prompt, make_config


def _has_copy(seq: str) -> bool:
    """The sequence's first SPAN symbols come again after a gap of 0 .. MAX_GAP."""
    return any(seq[SPAN + g:2 * SPAN + g] == seq[:SPAN] for g in range(MAX_GAP + 1))


def test_the_corpus_is_sequences_with_a_span_copied_after_a_gap_that_varies():
    text = corpus_text("induction")
    assert len(text) % SEQ == 0 and set(text) <= set(ALPHABET)
    seqs = [text[i:i + SEQ] for i in range(0, len(text), SEQ)]
    assert all(_has_copy(s) for s in seqs)
    gaps = {next(g for g in range(MAX_GAP + 1) if s[SPAN + g:2 * SPAN + g] == s[:SPAN]) for s in seqs[:300]}
    assert min(gaps) == 0 and max(gaps) == MAX_GAP and len(gaps) == MAX_GAP + 1    # no fixed distance
    assert induction_text(5, seed=3) == induction_text(5, seed=3) != induction_text(5, seed=4)
    assert default_prompt(text, "induction") == PROMPT == CORPORA["induction"][1]
    assert PROMPT[-4:] == PROMPT[:4] and len(PROMPT) == SPAN + 10


def test_the_preset_reads_one_whole_sequence_per_window_in_training_and_validation():
    cfg = make_config("induction", max_steps=2)
    assert cfg.aligned and cfg.block_size + 1 == SEQ and cfg.n_layer == 2
    assert check_budget(cfg, len(ALPHABET), "cpu").ok
    tr = corpus_trainer("induction", cfg, device="cpu")
    assert len(tr.train_ids) % SEQ == 0                      # the split falls between two sequences
    tok = tr.tokenizer
    for data in (tr.train_ids, tr.val_ids):
        x, y = tr._batch(data, torch.Generator().manual_seed(0))
        rows = [tok.decode(xr.tolist() + yr[-1:].tolist()) for xr, yr in zip(x, y)]
        assert all(len(r) == SEQ and _has_copy(r) for r in rows)
    tr.step(2)


def test_windows_anywhere_stay_the_default():
    """Any other preset reads any stretch of its text (a window may start mid-word)."""
    assert not make_config("tiny").aligned
    tr = corpus_trainer("toy", make_config("tiny", max_steps=1, block_size=8, batch_size=64), device="cpu")
    x, _ = tr._batch(tr.train_ids, torch.Generator().manual_seed(0))
    starts = {int(torch.nonzero(tr.train_ids.unfold(0, 8, 1).eq(r).all(1))[0]) for r in x}
    assert any(s % 9 for s in starts)
