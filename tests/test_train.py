"""The trainer and the background job: learning, determinism, checkpoints, presets, control."""
from __future__ import annotations

import math
import threading
import time

import pytest
import torch

from lmviz.checkpoint import load_checkpoint
from lmviz.bpe import TrainedBPE
from lmviz.server.tasks import Cancelled
from lmviz.train import PRESETS, TrainConfig, Trainer, corpus_text, lr_at, make_config
from lmviz.server.train_job import TrainingJob

torch.set_num_threads(1)
TEXT = ("the cat sat on the mat. the dog sat on the log. " * 40)
SMALL = dict(n_layer=1, n_head=2, d_model=16, block_size=8, batch_size=4, eval_every=5, eval_iters=1,
             sample_len=8, warmup_steps=2)


def small(**kw) -> TrainConfig:
    return make_config("tiny", **{**SMALL, **kw})


def wait_for(pred, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


# -- learning ------------------------------------------------------------------------------------

def test_overfits_one_batch():
    tr = Trainer(TEXT, small(max_steps=150, lr=1e-2, grad_clip=0.0, warmup_steps=0, min_lr_frac=1.0),
                 device="cpu")
    x, y = tr._batch(tr.train_ids, torch.Generator().manual_seed(0))
    tr._batch = lambda data, g: (x, y)            # the same batch every step
    first = tr.step(1)[0].loss
    last = tr.step(149)[-1].loss
    assert first > 2.0                            # ~ln(vocab) at init
    assert last < 0.05 * first                    # memorised


def test_loss_falls_and_validation_follows():
    tr = Trainer(TEXT, small(max_steps=120, lr=1e-2), device="cpu")
    e0 = tr.evaluate()
    assert e0.val_loss == pytest.approx(math.log(tr.tokenizer.vocab_size), abs=0.3)  # uniform at init
    ms = tr.step(120)
    e1 = tr.evaluate()
    assert e1.val_loss < e0.val_loss - 1.0
    assert e1.val_ppl == pytest.approx(math.exp(e1.val_loss))
    assert all(m.tokens_per_s > 0 and m.grad_norm > 0 for m in ms)
    assert [m.step for m in ms] == list(range(1, 121))
    assert tr.done and tr.step(5) == []           # never past max_steps


def test_same_seed_same_curve_other_seed_other_curve():
    curve = lambda seed: [m.loss for m in Trainer(TEXT, small(max_steps=20, seed=seed), device="cpu").step(20)]
    a, b, c = curve(3), curve(3), curve(4)
    assert a == b
    assert a != c


def test_learning_rate_schedule_and_clipping():
    cfg = small(max_steps=40, warmup_steps=10, lr=1e-2, min_lr_frac=0.1)
    lrs = [lr_at(s, cfg) for s in range(41)]
    assert lrs[0] == pytest.approx(1e-3) and lrs[9] == pytest.approx(1e-2)
    assert lrs[40] == pytest.approx(1e-3)
    assert all(a >= b - 1e-12 for a, b in zip(lrs[9:], lrs[10:]))   # non-increasing after warm-up
    tr = Trainer(TEXT, small(max_steps=3, grad_clip=1e-3), device="cpu")
    ms = tr.step(3)
    assert [m.lr for m in ms] == pytest.approx([lr_at(s, tr.cfg) for s in range(3)])
    assert ms[0].grad_norm > 1e-3                 # reported before clipping


def test_sample_and_attention_shapes():
    tr = Trainer(TEXT, small(max_steps=1), device="cpu", prompt="the c")
    s = tr.sample(n=10)
    assert s.prompt == "the c" and len(s.text) == 10
    assert tr.sample(n=10) == s                   # seeded: changes only when the model does
    labels, w = tr.attention()
    assert labels == list("the c")
    assert w.shape == (1, 2, 5, 5)
    assert torch.allclose(w.sum(-1), torch.ones(1, 2, 5))
    assert torch.all(w.triu(1) == 0)              # causal


# -- tokenizers and checkpoints --------------------------------------------------------------------

@pytest.mark.parametrize("tok", ["char", "bpe"])
def test_checkpoint_round_trip_reproduces_logits(tok):
    tr = Trainer(TEXT, small(max_steps=5, tokenizer=tok, bpe_merges=20), device="cpu")
    tr.step(5)
    blob = tr.checkpoint_bytes(corpus="cats")
    model, tok2, meta = load_checkpoint(blob)
    assert meta["steps"] == 5 and meta["corpus"] == "cats" and meta["trainer"]["tokenizer"] == tok
    assert tok2.to_dict() == tr.tokenizer.to_dict()
    idx = torch.tensor([tr.tokenizer.encode("the dog")])
    tr.model.eval()
    with torch.no_grad():
        assert torch.equal(model(idx)[0], tr.model(idx)[0])
    assert b"pickle" not in blob[:200]


def test_bpe_tokenizer_compresses_and_round_trips():
    bpe = TrainedBPE.train(TEXT, 30)
    assert bpe.vocab_size == 1 + len(set(TEXT)) + len(bpe.bpe.merge_ids)   # <unk> + alphabet + merges
    assert 5 <= len(bpe.bpe.merge_ids) <= 30
    assert len(bpe.encode(TEXT)) < 0.6 * len(TEXT)
    assert bpe.decode(bpe.encode("the dog sat")) == "the dog sat"
    again = TrainedBPE.from_dict(bpe.to_dict())
    assert again.encode(TEXT) == bpe.encode(TEXT)
    assert bpe.encode_lossy("the zebra")[1] == ["z", "b", "r"]
    with pytest.raises(ValueError):
        TrainedBPE.from_dict({"type": "bpe", "level": "char", "alphabet": ["a"], "merges": [[0, 9]]})


def test_bundled_corpora_give_text():
    assert corpus_text("toy").startswith("<BOS>")
    assert "Paris" in corpus_text("capital_en") or "Tokyo" in corpus_text("capital_en")
    with pytest.raises(ValueError, match="unknown corpus"):
        corpus_text("../etc/passwd")


# -- presets and validation -----------------------------------------------------------------------

def test_presets_are_valid_and_ordered_by_size():
    for cfg in PRESETS.values():
        assert cfg.validate() == []
    size = lambda c: c.n_layer * c.d_model ** 2
    assert size(PRESETS["tiny"]) < size(PRESETS["default"]) < size(PRESETS["bigger"])
    d = PRESETS["default"]
    assert (d.n_layer, d.d_model, d.block_size, d.batch_size) == (4, 128, 64, 12)  # nanoGPT-sized


@pytest.mark.parametrize("kw, msg", [
    (dict(d_model=100, n_head=3), "divisible by n_head"),
    (dict(lr=5.0), "lr must be between"),
    (dict(batch_size=0), "batch_size must be between 1"),
    (dict(max_steps=2.5), "max_steps must be a whole number"),
    (dict(tokenizer="word"), "tokenizer must be one of"),
    (dict(lr=float("nan")), "lr must be a number"),
])
def test_bad_custom_values_get_clear_messages(kw, msg):
    with pytest.raises(ValueError, match=msg):
        make_config("tiny", **kw)


def test_unknown_preset_or_field_and_short_text_are_refused():
    with pytest.raises(ValueError, match="unknown preset"):
        make_config("huge")
    with pytest.raises(ValueError, match="unknown setting"):
        make_config("tiny", layers=3)
    with pytest.raises(ValueError, match="Add more text, or lower the context length") as e:
        Trainer("abc", small(), device="cpu")
    # said in the page's language (a SaidError): its numbers are the text's and the config's
    assert e.value.key == "train.err_short_text"
    assert e.value.params == {"n": 3, "block": small().block_size, "need": 2 * (small().block_size + 1)}
    with pytest.raises(ValueError, match="empty"):
        Trainer("   ", small(), device="cpu")


# -- the background job ---------------------------------------------------------------------------

def test_job_runs_to_the_end_and_publishes_models():
    seen = []
    job = TrainingJob(lambda: Trainer(TEXT, small(max_steps=20), device="cpu"), threading.BoundedSemaphore(1),
                      on_eval=seen.append)
    job.start()
    assert job.join(30)
    s = job.snapshot()
    assert s.state == "done" and s.step == 20 and not s.active
    assert [e.step for e in s.evals] == [0, 5, 10, 15, 20]
    assert [x.step for x in s.samples] == [0, 5, 10, 15, 20]
    assert s.model_version == 5 and not s.model.training
    assert job.trainer is None                    # the finished run let its optimizer state go
    tr = seen[-1]
    idx = torch.tensor([tr.tokenizer.encode("the cat")])
    tr.model.eval()
    with torch.no_grad():                         # the published copy is the final model
        assert torch.equal(s.model(idx)[0], tr.model(idx)[0])
    assert s.model is not tr.model
    labels, w = s.attention
    assert w.shape[0] == 1 and len(labels) == w.shape[-1]


def test_the_job_measures_its_pace_with_its_evaluations_and_the_time_left_follows_that_pace():
    """The page's pace and time left come from the job's running time, evaluations included
    (lmviz.server.train_job.pace); before, the time left counted the steps alone."""
    job = TrainingJob(lambda: Trainer(TEXT, small(max_steps=60, eval_every=5), device="cpu"),
                      threading.BoundedSemaphore(1))
    job.start()
    assert job.join(60)
    s = job.snapshot()
    assert s.steps_per_s > 0 and s.pace_s > 0
    busy = sum(m.dt_ms for m in s.steps) / 1e3          # the steps' own time, no evaluation in it
    assert s.pace_s >= busy and s.steps_per_s <= s.step / busy     # a short run: one window
    assert s.eta_s == 0.0                                # done: nothing left at any pace


def test_a_students_run_stands_aside_for_the_lecturers_and_goes_on_where_it_stopped():
    """Issue 55 item 4: a student's training (priority 1) holding the server's one slot gives it
    to a class's lecturer's run that asks for it, reads "queued" with its steps kept (the page
    says it stood aside), and goes on from that step to its end once the lecturer's is done."""
    sem = threading.BoundedSemaphore(1)
    student = TrainingJob(lambda: Trainer(TEXT, small(max_steps=400, eval_every=100), device="cpu"), sem, chunk=2)
    student.start()
    assert wait_for(lambda: student.snapshot().step >= 4)
    lecturer = TrainingJob(lambda: Trainer(TEXT, small(max_steps=20), device="cpu"), sem, meta={"lecturer": True})
    lecturer.start()
    assert wait_for(lambda: student.snapshot().state == "queued", 30)
    aside = student.snapshot()
    assert aside.step >= 4 and aside.queue_position == 1 and aside.steps      # its steps so far, kept
    assert lecturer.join(60) and lecturer.snapshot().state == "done"
    assert student.join(120)
    s = student.snapshot()
    assert s.state == "done" and s.step == 400
    assert [m.step for m in s.steps] == list(range(1, 401))                    # each step once, in order
    assert [e.step for e in s.evals] == [0, 100, 200, 300, 400]


def test_job_pause_resume_stop():
    gate = threading.Event()
    job = TrainingJob(lambda: Trainer(TEXT, small(max_steps=100000, eval_every=1000), device="cpu"),
                      chunk=1, on_eval=lambda tr: gate.set())
    job.start()
    assert wait_for(lambda: job.snapshot().step >= 3)
    job.pause()
    assert wait_for(lambda: job.worker_state == "paused")
    n = job.snapshot().step
    time.sleep(0.3)
    assert job.snapshot().step == n              # no steps while paused
    job.resume()
    assert wait_for(lambda: job.snapshot().step > n)
    job.cancel()
    assert job.join(20)
    assert job.state == "stopped"
    with pytest.raises(RuntimeError):
        job.start()


def test_a_stopped_job_reads_stopped_at_once_and_publishes_nothing_more():
    """Stop is visible before the worker reaches its next look at the flag (a busy machine can
    delay a nice-19 worker): the state reads "stopped" at once and the steps taken meanwhile are
    not published."""
    in_step, release = threading.Event(), threading.Event()

    def make():
        tr = Trainer(TEXT, small(max_steps=100000, eval_every=1000), device="cpu")
        step = tr.step

        def slow_step(n=1):
            out = step(n)
            if tr.steps_done >= 3:
                in_step.set()
                release.wait(10)                 # the worker is busy inside a chunk
            return out
        tr.step = slow_step
        return tr

    sem = threading.BoundedSemaphore(1)
    job = TrainingJob(make, sem, chunk=1).start()
    assert in_step.wait(60)
    n = job.snapshot().step
    job.cancel()
    assert job.state == "stopped" and not job.snapshot().active    # at once, the worker still busy
    release.set()
    assert job.join(20)
    assert job.snapshot().step == n and job.state == "stopped"     # the step in flight was dropped
    assert sem.acquire(timeout=1)                                  # and the slot is free


def test_semaphore_queues_in_order_and_frees_slots():
    sem = threading.BoundedSemaphore(1)
    mk = lambda: (lambda: Trainer(TEXT, small(max_steps=100000, eval_every=1000), device="cpu"))
    a, b, c = TrainingJob(mk(), sem), TrainingJob(mk(), sem), TrainingJob(mk(), sem)
    a.start()
    assert wait_for(lambda: a.state == "running")
    b.start(); c.start()
    assert wait_for(lambda: (b.queue_position(), c.queue_position()) == (1, 2))
    assert b.snapshot().state == "queued" and b.snapshot().queue_position == 1
    c.cancel()                                    # leaving the queue
    assert c.join(10) and c.state == "stopped" and c.snapshot().step == 0
    a.cancel()
    assert a.join(20)
    assert wait_for(lambda: b.state == "running")  # the freed slot goes to the next in line
    assert b.queue_position() == 0
    b.cancel()
    assert b.join(20)
    assert sem.acquire(blocking=False)            # every slot was given back
    sem.release()


def test_job_reports_errors_without_raising():
    sem = threading.BoundedSemaphore(1)
    job = TrainingJob(lambda: Trainer("abc", small(), device="cpu"), sem).start()
    assert job.join(10)
    s = job.snapshot()
    assert s.state == "error" and "context length" in s.error
    assert sem.acquire(blocking=False)            # slot released after the error


# -- cancel inside the long phases -----------------------------------------------------------------

BIG = " ".join(f"w{i * 7919 % 5003}x{i % 97}" for i in range(60_000))    # many distinct chunks


def test_trainer_asks_cancel_during_preparation_evaluation_and_sampling():
    calls = []
    with pytest.raises(Cancelled):                # stopped inside the BPE training (3rd question)
        Trainer(BIG, small(tokenizer="bpe", bpe_merges=2000), device="cpu",
                cancel=lambda: calls.append(1) or len(calls) >= 3)
    tr = Trainer(TEXT, small(eval_iters=3, sample_len=20), device="cpu")
    asked = []
    tr.cancel = lambda: asked.append(1) or False
    tr.evaluate()
    assert len(asked) >= 6                        # every evaluation batch
    asked.clear()
    tr.sample()
    assert len(asked) >= 20                       # every sampled token
    tr.cancel = lambda: True
    with pytest.raises(Cancelled):
        tr.evaluate()
    with pytest.raises(Cancelled):
        tr.sample()


def test_stop_during_preparation_frees_the_slot():
    sem = threading.BoundedSemaphore(1)
    preparing = threading.Event()

    def make(cancel):
        def asked():
            preparing.set()
            return cancel()
        return Trainer(BIG * 3, small(tokenizer="bpe", bpe_merges=5000), device="cpu", cancel=asked)

    job = TrainingJob(make, sem).start()
    assert preparing.wait(20) and job.state == "preparing"
    job.cancel()
    assert job.join(5)                            # the BPE training noticed the stop
    assert job.state == "stopped" and job.trainer is None
    assert sem.acquire(blocking=False)            # the slot was given back
    sem.release()


def test_the_trainer_refuses_an_over_budget_config_before_allocating():
    from lmviz import limits

    cfg = make_config("bigger", n_layer=12, d_model=1024, n_head=16, block_size=512)
    check = limits.check_budget(cfg, len(set(TEXT)))          # a character per token
    assert not check.ok
    with pytest.raises(ValueError) as e:
        Trainer(TEXT * 40, cfg, device="cpu")
    assert str(e.value) == " ".join(r.english() for r in check.reasons)
    big_batch = make_config("default", batch_size=512, block_size=512)
    with pytest.raises(ValueError, match="batch size was lowered"):
        Trainer(TEXT * 40, big_batch, device="cpu")


# -- a fine-tune (the room's sentences, the training chapter's "start from the current model") ----

def test_a_finetune_starts_from_the_model_and_leaves_it_alone():
    from lmviz.train import finetune_trainer, plan_finetune

    base = Trainer(TEXT, small(max_steps=60, lr=1e-2), device="cpu")
    base.step(60)
    start = base.model.eval()
    before = {k: v.clone() for k, v in start.state_dict().items()}
    plan = plan_finetune(start.cfg, "tiny", {"max_steps": 30, "d_model": 64, "eval_iters": 1})
    assert plan.ok and plan.tokenizer == "model"
    assert (plan.cfg.d_model, plan.cfg.block_size, plan.cfg.max_steps) == (16, 8, 30)   # the model's shape wins
    new_text = "the cat sat on the log. " * 30
    ft = finetune_trainer(start, base.tokenizer, plan.cfg, new_text, device="cpu")
    assert ft.finetune and ft.unknown == []
    # step 0: the copy is the model, weight for weight, and so scores the new text as it does
    assert all(torch.equal(ft.model.state_dict()[k], v) for k, v in before.items())
    fresh = Trainer(new_text, plan.cfg, device="cpu", tokenizer=base.tokenizer)
    e0 = ft.evaluate()
    assert e0.val_loss < fresh.evaluate().val_loss - 0.5       # trained weights beat random ones
    ft.step(30)
    assert ft.evaluate().val_loss < e0.val_loss                 # and it goes on learning the new text
    assert all(torch.equal(start.state_dict()[k], v) for k, v in before.items())   # the start is untouched


def test_a_finetune_leaves_out_characters_outside_the_vocabulary():
    from lmviz.train import finetune_trainer, plan_finetune

    base = Trainer(TEXT, small(max_steps=1), device="cpu")
    plan = plan_finetune(base.model.cfg, "tiny", {"max_steps": 2})
    ft = finetune_trainer(base.model, base.tokenizer, plan.cfg, "the cat sat, 猫坐着。 " * 30, device="cpu")
    assert ft.unknown == [",", "猫", "坐", "着", "。"]
    assert len(ft.train_ids) + len(ft.val_ids) == len("the cat sat  " * 30)


def test_plan_finetune_refuses_a_shape_lmviz_does_not_train():
    from lmviz.model import GPTConfig
    from lmviz.train import model_shape, plan_finetune

    llama = GPTConfig(vocab_size=40, block_size=16, n_layer=1, n_head=2, n_kv_head=2, d_model=16,
                      norm="rmsnorm", mlp="swiglu", pos="rope")
    assert model_shape(llama) is None
    p = plan_finetune(llama, "tiny")
    assert not p.ok and p.cfg is None and "own GPT" in p.error
    with pytest.raises(ValueError, match="shape"):
        base = Trainer(TEXT, small(max_steps=1), device="cpu")
        Trainer(TEXT, small(d_model=32), device="cpu", tokenizer=base.tokenizer, start=base.model)


def test_a_finetune_text_too_short_is_found_before_start():
    """The room's few sentences, or a short own text: the page says so before the press, with the
    count in the fine-tuned model's own tokens and the trainer's own bound."""
    from lmviz.tokenizer import CharTokenizer
    from lmviz.train import finetune_shortfall, tokens_needed

    tok = CharTokenizer("abc ")
    assert finetune_shortfall("abc " * 3, tok, 8) == (12, tokens_needed(8)) == (12, 18)
    assert finetune_shortfall("abc " * 5, tok, 8) is None
    # characters outside the vocabulary give no token: a long text of them is still too short
    assert finetune_shortfall("ab" + "猫" * 5000, tok, 8) == (2, 18)
    with pytest.raises(ValueError) as e:      # what the trainer refuses is exactly what was found
        Trainer("abc " * 4, small(block_size=8), device="cpu", tokenizer=tok)
    assert e.value.params["need"] == 18 and e.value.params["n"] == 16
