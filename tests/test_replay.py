"""Training replay snapshots (lmviz.replay): schedule, snapshots, bounds, checkpoint round trip."""
import math

import pytest
import torch

from lmviz.model import GPT, GPTConfig
from lmviz.replay import (PREFIX, Probe, Recorder, Snapshot, SnapshotSchedule, SnapshotStore, aligned_embedding,
                          aligned_embeddings, default_probe, pick, procrustes, snapshots_from_tensors, snapshots_to_tensors,
                          strongest_previous_token_head, take_snapshot, token_classes, class_separation)
from lmviz.tokenizer import CharTokenizer
from lmviz.train import Trainer, corpus_text, make_config

PROBE = Probe(sentence="The value of the object is returned.", prompt="The ", layer=1, top_k=5)
STEPS = 80


@pytest.fixture(scope="module")
def run():
    """A tiny model trained STEPS steps on CPU with the Recorder hooked in as the Trainer would be."""
    text = corpus_text("english")[:30_000]
    tr = Trainer(text, make_config("tiny", max_steps=STEPS, d_model=32, block_size=16, batch_size=8), device="cpu")
    rec = Recorder(PROBE, max_steps=STEPS)
    rec.start(tr.model, tr.tokenizer)
    while not tr.done:  # chunks of up to 10 steps that stop on every scheduled step
        n = min(10, rec.steps_to_next(tr.steps_done) or 10)
        for m in tr.step(n):
            rec.after_step(tr.model, tr.tokenizer, m.step, m.loss)
    return tr, rec


def _same(a: Snapshot, b: Snapshot) -> bool:
    scal = ("step", "loss", "layer", "probe_ids", "prompt_ids", "entropy")
    tens = ("attention", "prev_token", "emb_xy", "emb_var", "top_ids", "top_probs")
    return all(getattr(a, f) == getattr(b, f) for f in scal) and all(
        getattr(a, f).dtype == getattr(b, f).dtype and torch.equal(getattr(a, f), getattr(b, f)) for f in tens)


# -- schedule ---------------------------------------------------------------------------------------

def test_schedule_powers_of_two_and_bounded():
    assert SnapshotSchedule(100, per_octave=1).steps == (0, 1, 2, 4, 8, 16, 32, 64, 100)
    for n in (1, 7, 150, 1200, 5000, 10**6):
        for po, mc in ((1, 32), (2, 32), (4, 12), (8, 5)):
            st = SnapshotSchedule(n, po, mc).steps
            assert st[0] == 0 and st[-1] == n and st[1] == 1 and len(st) <= mc
            assert list(st) == sorted(set(st))
            # log-spaced: successive ratios (after step 1) stay within a constant band
            ratios = [b / a for a, b in zip(st[1:], st[2:])]
            assert all(r > 1 for r in ratios)
            if len(ratios) > 3:
                assert max(ratios[1:-1]) / min(ratios[1:-1]) < 2.5
    s = SnapshotSchedule(1200)
    assert s.due(0) and s.due(1024) and s.due(1200) and not s.due(5)
    with pytest.raises(ValueError):
        SnapshotSchedule(-1)


# -- snapshots of a learning model -------------------------------------------------------------------

def test_snapshots_at_scheduled_steps(run):
    tr, rec = run
    steps = [s.step for s in rec.store.snapshots]
    assert steps == list(rec.schedule.steps)
    assert rec.store.snapshots[0].loss is None and rec.store.snapshots[-1].loss is not None
    # each snapshot saw the model at its own step: no two consecutive ones are the same
    snaps = rec.store.snapshots
    assert all(not torch.equal(a.emb_xy, b.emb_xy) for a, b in zip(snaps, snaps[1:]))
    assert rec.steps_to_next(0) == 1 and rec.steps_to_next(5) == 1 and rec.steps_to_next(STEPS) is None
    assert rec.steps_to_next(8) == 11 - 8


def test_shapes_and_causal_pattern(run):
    tr, rec = run
    cfg = tr.model.cfg
    T = min(len(tr.tokenizer.encode_lossy(PROBE.sentence)[0]), PROBE.max_tokens, cfg.block_size)
    for s in rec.store.snapshots:
        assert s.attention.shape == (cfg.n_head, T, T) and s.prev_token.shape == (cfg.n_layer, cfg.n_head)
        assert s.emb_xy.shape == (cfg.vocab_size, 2) and s.top_ids.shape == (5,)
        # causal: exactly zero above the diagonal, rows sum to one
        assert float(s.attention.triu(1).abs().max()) == 0.0
        assert torch.allclose(s.attention.sum(-1), torch.ones(cfg.n_head, T), atol=1e-5)
        assert list(s.top_probs) == sorted(s.top_probs.tolist(), reverse=True)
        assert 0 < float(s.emb_var.sum()) <= 1.0 + 1e-6
    assert tr.model.training  # take_snapshot restores the mode


def test_distribution_sharpens_as_it_learns(run):
    tr, rec = run
    first, last = rec.store.snapshots[0], rec.store.snapshots[-1]
    V = tr.tokenizer.vocab_size
    assert first.entropy > 0.9 * math.log(V)   # untrained: nearly uniform
    assert last.entropy < first.entropy - 1.0  # trained: much sharper
    assert float(last.top_probs[0]) > 3 * float(first.top_probs[0])


def test_aligned_axes(run):
    _, rec = run
    snaps = rec.store.snapshots
    al = aligned_embeddings(snaps)
    assert torch.equal(al[-1], snaps[-1].emb_xy)
    for s, a in zip(snaps, al):
        # an orthogonal turn: dot products (so distances) between tokens are unchanged
        assert torch.allclose(a @ a.T, s.emb_xy @ s.emb_xy.T, atol=1e-5)
    # the second-to-last snapshot is closer to the last once aligned than before
    raw = (snaps[-2].emb_xy - snaps[-1].emb_xy).norm()
    assert (al[-2] - al[-1]).norm() <= raw + 1e-6
    # one snapshot's alignment (what a replay step draws) is that snapshot's entry of the list
    for i in (0, len(snaps) // 2, -1):
        assert torch.equal(aligned_embedding(snaps[i], snaps[-1]), al[i])


def test_character_classes_pull_apart(run):
    tr, rec = run
    snaps = rec.store.snapshots
    cls = token_classes(tr.tokenizer, snaps[0].emb_xy.shape[0])
    first, last = class_separation(snaps[0].emb_xy, cls), class_separation(snaps[-1].emb_xy, cls)
    assert first < 0.2 and last > first + 0.3
    al = aligned_embeddings(snaps)
    assert class_separation(al[0], cls) == pytest.approx(first, abs=1e-6)  # rotation changes nothing


def test_procrustes_undoes_a_flip_and_turn():
    g = torch.Generator().manual_seed(0)
    Y = torch.randn(50, 2, generator=g)
    c, s = math.cos(1.0), math.sin(1.0)
    Q = torch.tensor([[c, -s], [s, c]]) @ torch.tensor([[1.0, 0.0], [0.0, -1.0]])
    assert torch.allclose(Y @ procrustes(Y, Y @ Q), Y @ Q, atol=1e-5)


def test_one_token_vocabulary_still_gives_two_columns():
    tok = CharTokenizer("aaaa")
    model = GPT(GPTConfig(vocab_size=1, block_size=8, n_layer=1, n_head=1, n_kv_head=1, d_model=4))
    s = take_snapshot(model, tok, Probe("aaa", "a"), 0)
    assert s.emb_xy.shape == (1, 2) and s.emb_var.shape == (2,) and s.entropy == 0.0


def test_token_classes():
    tok = CharTokenizer("aZ 7,学")
    assert token_classes(tok, tok.vocab_size) == ["space", "punct", "digit", "upper", "lower", "cjk"]


# -- bounds ----------------------------------------------------------------------------------------

def _snap(step, n_bytes_rows=1):
    return Snapshot(step=step, loss=1.0, layer=0, probe_ids=(1, 2), attention=torch.zeros(1, 2, 2),
                    prev_token=torch.zeros(1, 1), emb_xy=torch.zeros(n_bytes_rows, 2), emb_var=torch.zeros(2),
                    prompt_ids=(1,), top_ids=torch.zeros(3, dtype=torch.long), top_probs=torch.zeros(3),
                    entropy=0.5)


def test_store_count_bound_keeps_ends_and_log_spacing():
    st = SnapshotStore(max_count=8, max_bytes=10**9)
    for step in range(0, 1001):
        st.add(_snap(step))
        assert len(st) <= 8
    steps = [s.step for s in st.snapshots]
    assert steps[0] == 0 and steps[-1] == 1000 and len(steps) == 8
    gaps = [math.log1p(b) - math.log1p(a) for a, b in zip(steps, steps[1:])]
    # roughly even in log(step), but for the newest pair (the last one kept arrived just before)
    assert max(gaps[:-1]) < 3 * min(gaps[:-1])


def test_store_byte_bound_and_sizes():
    one = _snap(0, 100)
    assert one.nbytes == (4 + 1 + 200 + 2 + 3) * 4 + 3 * 8 + 8 * (4 + 2 + 1)
    st = SnapshotStore(max_count=100, max_bytes=5 * one.nbytes + 10)
    for step in range(50):
        st.add(_snap(step, 100))
        assert st.nbytes <= st.max_bytes
    assert len(st) == 5
    with pytest.raises(ValueError):
        SnapshotStore(max_bytes=one.nbytes).add(one)  # a store must hold at least two


def test_real_snapshot_size_within_default_budget():
    torch.manual_seed(0)
    tok = CharTokenizer(corpus_text("english"))
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=4, n_head=4, n_kv_head=4, d_model=128))
    s = take_snapshot(model, tok, Probe("The value of the object is returned to the caller.", "The "), 0)
    st = SnapshotStore()
    assert st.max_count * s.nbytes <= st.max_bytes  # a full replay of the default model fits
    with pytest.raises(ValueError):
        take_snapshot(model, tok, Probe("☃", "The "), 0)
    with pytest.raises(ValueError):
        take_snapshot(model, tok, Probe("The cat", "The ", layer=4), 0)


# -- checkpoint round trip ---------------------------------------------------------------------------

def test_round_trip_through_tensors_and_safetensors_is_exact(run):
    from safetensors.torch import load, save

    tr, rec = run
    snaps = rec.store.snapshots
    tensors, meta = snapshots_to_tensors(snaps, PROBE)
    assert all(k.startswith(PREFIX) for k in tensors) and set(meta) == {"replay"}
    back, probe = snapshots_from_tensors(tensors, meta)
    assert probe == PROBE and len(back) == len(snaps) and all(_same(a, b) for a, b in zip(snaps, back))
    # inside a safetensors file, beside other tensors and metadata
    data = save({**tensors, "wte.weight": torch.zeros(2, 2)}, metadata={"format": "x", **meta})
    from lmviz.checkpoint import _read_header
    md = _read_header(data)[0]["__metadata__"]
    back2, probe2 = snapshots_from_tensors(load(data), md)
    assert probe2 == PROBE and all(_same(a, b) for a, b in zip(snaps, back2))


def test_from_tensors_rejects_bad_input_and_accepts_none(run):
    _, rec = run
    tensors, meta = snapshots_to_tensors(rec.store.snapshots)
    assert snapshots_from_tensors({}, {}) == ([], None)
    assert snapshots_to_tensors([]) == ({}, {})
    for bad_meta in ({"replay": "{"}, {"replay": '{"format": "other"}'}):
        with pytest.raises(ValueError):
            snapshots_from_tensors(tensors, bad_meta)
    broken = dict(tensors)
    broken[PREFIX + "attention"] = broken[PREFIX + "attention"][:, :, :-1]
    with pytest.raises(ValueError):
        snapshots_from_tensors(broken, meta)
    broken = dict(tensors)
    broken[PREFIX + "step"] = broken[PREFIX + "step"].float()
    with pytest.raises(ValueError):
        snapshots_from_tensors(broken, meta)
    V = run[0].tokenizer.vocab_size
    assert len(snapshots_from_tensors(tensors, meta, vocab_size=V)[0]) == len(rec.store)
    with pytest.raises(ValueError):
        snapshots_from_tensors(tensors, meta, vocab_size=3)
    broken = dict(tensors)
    broken[PREFIX + "step"] = broken[PREFIX + "step"].flip(0)
    with pytest.raises(ValueError):
        snapshots_from_tensors(broken, meta)
    mixed = list(rec.store.snapshots)
    mixed[0] = _snap(0)
    with pytest.raises(ValueError):
        snapshots_to_tensors(mixed)


def test_doctests():
    import doctest

    from lmviz import replay
    assert doctest.testmod(replay).failed == 0


def test_catalogue_strings_format_with_computed_values(run):
    from ui.i18n import translate

    tr, rec = run
    s = rec.store.snapshots[-1]
    L, H = divmod(int(s.prev_token.argmax()), s.prev_token.shape[1])
    V = tr.tokenizer.vocab_size
    for lang in ("en", "zh"):
        assert str(s.step) in translate("train.replay_caption", lang, n=len(rec.store), step=s.step)
        translate("train.replay_prev", lang, head=H, layer=L, score=float(s.prev_token[L, H]))
        translate("train.replay_emb", lang, var=float(s.emb_var.sum()))
        translate("train.replay_dist", lang, prompt=PROBE.prompt, k=len(s.top_ids), entropy=s.entropy, v=V,
                  max_entropy=math.log(V))
        cls = token_classes(tr.tokenizer, V)
        sep, sep0 = class_separation(s.emb_xy, cls), class_separation(rec.store.snapshots[0].emb_xy, cls)
        assert f"{sep:.0%}" in translate("train.replay_sep", lang, sep=sep, sep0=sep0)
        for c in set(cls):
            assert translate(f"train.replay_class_{c}", lang) != f"train.replay_class_{c}"


def test_pick_for_a_selected_stretch_and_strongest_head(run):
    _, rec = run
    snaps = rec.store.snapshots
    assert pick(snaps, 5, 20).step == 16 and pick(snaps, 20, 5).step == 16
    assert pick(snaps, 17, 21).step == 16 and pick(snaps, 10**6, 10**7).step == STEPS
    assert pick([], 0, 1) is None
    L, H, score = strongest_previous_token_head(snaps[-1])
    assert score == float(snaps[-1].prev_token[L, H]) == float(snaps[-1].prev_token.max())


def test_default_probe_uses_known_held_out_text():
    for name, prompt in (("english", "The "), ("chinese", "我们")):
        text = corpus_text(name)
        p = default_probe(text, prompt)
        assert 12 <= len(p.sentence) <= 32 and p.sentence in text[int(len(text) * 0.9):]
        tok = CharTokenizer(text)
        assert tok.encode_lossy(p.sentence)[1] == []


# -- the hook: every TrainingJob records a replay ------------------------------------------------------

def test_training_job_records_a_bounded_replay_at_each_scheduled_step():
    """A real tiny run through the TrainingJob (the page's path): one snapshot per scheduled step,
    each taken with the model at its own step (equal, bit for bit, to a plain loop that snapshots
    after every single step), bounded, and the replay travels through a checkpoint exactly."""
    from lmviz.checkpoint import load_checkpoint_with_replay, save_checkpoint
    from lmviz.replay import DEFAULT_MAX_BYTES, DEFAULT_MAX_COUNT, Replay
    from lmviz.server.train_job import TrainingJob

    text = corpus_text("english")[:30_000]
    cfg = make_config("tiny", max_steps=70, d_model=32, block_size=16, batch_size=8, eval_every=25)
    job = TrainingJob(lambda cancel: Trainer(text, cfg, device="cpu", prompt="The ", cancel=cancel), chunk=7)
    job.start()
    assert job.join(120)
    snap = job.snapshot()
    assert snap.state == "done", snap.error
    rp = snap.replay
    assert isinstance(rp, Replay) and rp.probe.prompt == "The " and rp.probe.sentence in text[int(len(text) * 0.9):]
    steps = [s.step for s in rp.snapshots]
    assert steps == list(SnapshotSchedule(70).steps) == [0, 1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 70]
    assert len(rp) <= DEFAULT_MAX_COUNT and sum(s.nbytes for s in rp.snapshots) <= DEFAULT_MAX_BYTES
    losses = {m.step: m.loss for m in snap.steps}
    assert all(s.loss == losses[s.step] for s in rp.snapshots[1:])
    # the reference: a plain loop, one step at a time, snapshotting on the same steps
    tr = Trainer(text, cfg, device="cpu", prompt="The ")
    ref = Recorder(rp.probe, max_steps=70)
    ref.start(tr.model, tr.tokenizer)
    while not tr.done:
        for m in tr.step(1):
            ref.after_step(tr.model, tr.tokenizer, m.step, m.loss)
    assert all(_same(a, b) for a, b in zip(rp.snapshots, ref.store.snapshots))
    # the download: the replay up to the published weights' step, read back exactly
    blob = save_checkpoint(snap.model, snap.tokenizer, {"steps": snap.step}, replay=rp.upto(snap.step))
    _, _, _, back = load_checkpoint_with_replay(blob)
    assert back.probe == rp.probe and all(_same(a, b) for a, b in zip(rp.snapshots, back.snapshots))


def test_uniform_previous_token_baseline():
    from lmviz.replay import uniform_previous_token

    w = torch.tril(torch.ones(6, 6))
    w = w / w.sum(-1, keepdim=True)               # every query spreads evenly over its past
    assert uniform_previous_token(6) == pytest.approx(float(torch.diagonal(w, -1).mean()))


def test_replay_figures(run):
    """The figures draw what they are given: one trace per token class on equal, fixed axes; bars
    on a fixed 0..1 axis; the loss chart's brush is an x interval named as the page reads it."""
    from viz.replay import SELECTION, at_step, distribution_figure, embedding_figure, loss_selection_chart

    tr, rec = run
    snaps = rec.store.snapshots
    xy = aligned_embeddings(snaps)[3].numpy()
    cls = token_classes(tr.tokenizer, xy.shape[0])
    fig = embedding_figure(xy, [tr.tokenizer.token(i) for i in range(xy.shape[0])], cls, {c: c.upper() for c in cls})
    assert sorted(tr_.name for tr_ in fig.data) == sorted({c.upper() for c in cls})
    assert sum(len(tr_.x) for tr_ in fig.data) == xy.shape[0]
    r = fig.layout.xaxis.range
    assert tuple(fig.layout.yaxis.range) == tuple(r) and -r[0] == r[1] >= abs(xy).max()
    bars = distribution_figure(["a", "b"], snaps[-1].top_probs[:2].numpy())
    assert tuple(bars.layout.yaxis.range) == (0, 1.08) and list(bars.data[0].y) == snaps[-1].top_probs[:2].tolist()
    spec = loss_selection_chart([1, 2, 3], [4.0, 3.5, 3.0], [s.step for s in snaps], [s.loss for s in snaps],
                                x_title="step", y_title="loss", curve_name="c", snap_name="s")
    params = [p for layer in spec["layer"] for p in layer.get("params", [])] + spec.get("params", [])
    assert any(p["name"] == SELECTION and p["select"]["type"] == "interval" and p["select"]["encodings"] == ["x"]
               for p in params)
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "symlog"
    # the step shown is a rule on the same step axis, added to a copy: the shared spec is not changed
    shown = at_step(spec, 8)
    assert shown["layer"][:-1] == spec["layer"] and len(spec["layer"]) == 2
    assert shown["layer"][-1]["mark"]["type"] == "rule"
    assert shown["layer"][-1]["data"] == {"values": [{"step": 8.0}]}
    assert shown["layer"][-1]["encoding"]["x"] == {"field": "step", "type": "quantitative"}
    import altair as alt
    alt.LayerChart.from_dict(shown)       # Vega-Lite's schema accepts the spec with the rule
