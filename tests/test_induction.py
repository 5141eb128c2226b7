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


def test_each_evaluation_of_the_preset_carries_the_probe_and_its_maps(monkeypatch):
    import numpy as np
    from lmviz.induction import PROBE_HALF, maps_every, probe, repeated_tokens

    cfg = make_config("induction", max_steps=4, eval_every=2)
    assert cfg.induction_probe == PROBE_HALF
    tr = corpus_trainer("induction", cfg, device="cpu")
    ev = tr.evaluate()
    p = ev.induction
    assert p.ids == tuple(repeated_tokens(tr.tokenizer.vocab_size, PROBE_HALF, cfg.seed))
    assert len(p.prefix) == 2 and len(p.prefix[0]) == 4 and p.maps.shape == (2, 4, 48, 48)
    # the untrained model: no copying (ICL near 0), every head near even attention (0.028)
    assert abs(p.icl) < 0.2 and p.best[2] < 0.06
    # the stored map is the attention within a byte's rounding, and gives the same scores
    again = probe(tr.model.eval(), p.ids, PROBE_HALF, keep_maps=True)
    w = again.maps.astype(np.float32) / 255
    assert np.allclose(w.sum(-1), 1.0, atol=48 / 255) and np.abs(p.weights(1, 2) - w[1, 2]).max() == 0
    i = np.arange(PROBE_HALF, 2 * PROBE_HALF)
    assert abs(float(w[1, 2][i, i - PROBE_HALF + 1].mean()) - p.prefix[1][2]) < 1 / 255
    # a run whose maps would pass MAPS_MAX_BYTES keeps them at every k-th evaluation only (and the last)
    assert maps_every(2, 4, PROBE_HALF, 41) == 1 and maps_every(12, 16, PROBE_HALF, 21) == 5
    import lmviz.induction

    monkeypatch.setattr(lmviz.induction, "MAPS_MAX_BYTES", 2 * 8 * 48 * 48)      # two evaluations' maps
    tr = corpus_trainer("induction", make_config("induction", max_steps=5, eval_every=1), device="cpu")
    kept = []
    for _ in range(6):
        kept.append(tr.evaluate().induction.maps is not None)
        tr.step(1) if not tr.done else None
    assert kept == [True, False, False, True, False, True]        # every 3rd of 6, and the last
    assert make_config("tiny").induction_probe == 0 and corpus_trainer("induction", make_config(
        "induction", induction_probe=0, max_steps=2), device="cpu").evaluate().induction is None


def test_a_probe_longer_than_half_the_context_is_refused():
    assert make_config("induction").validate() == []
    from dataclasses import replace

    assert "induction_probe (40)" in replace(make_config("induction"), induction_probe=40).validate()[0]
    assert "induction_probe (1)" in replace(make_config("induction"), induction_probe=1).validate()[0]
