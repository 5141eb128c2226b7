"""Live training: a real GPT trained in a background thread while the page watches it learn."""
from __future__ import annotations

import logging
import math
from dataclasses import replace
from functools import partial

import numpy as np
import streamlit as st

import lmviz
from lmviz import limits
from lmviz.chapters.claims import baseline, pace
from lmviz.chapters.examples import DEFAULT_SETUP
from lmviz.numfmt import duration, short
from lmviz.tokenizer import CharTokenizer
from ui import follow, questions, session, render, urlstate
from ui import induction_section, model_words, replay_section
from ui.i18n import device, lang, literal, said, sentences, t
from viz.training import attention_figure, entropy, loss_figure, ppl_lr_figure

MAX_OWN_CHARS = 200_000          # text area: longer pasted text is cut here, with a message
# the hyper-parameters a user may change, with the form's step; their ranges are
# lmviz.limits.CONFIG_BOUNDS, the one table TrainConfig.validate checks
KNOBS = (("max_steps", 50), ("lr", 1e-4), ("batch_size", 1), ("block_size", 8), ("n_layer", 1),
         ("d_model", 16), ("n_head", 1), ("eval_every", 5), ("seed", 1))


def _bounds(name: str):
    """(kind, low, high) of a config field, from the one table (a follower's steps: at most
    lmviz.train.FOLLOWER_MAX_STEPS)."""
    from lmviz.train import FOLLOWER_MAX_STEPS

    lo, hi = limits.CONFIG_BOUNDS[name]
    if name == "max_steps" and follow.following():
        hi = min(hi, FOLLOWER_MAX_STEPS)
    return (float if isinstance(lo, float) else int), lo, hi

render.page_header("train.title", "train.intro")
_attached = session.attach_run()            # a reload finds its training again through ?run=
if _attached == "attached":
    st.success(t("train.run_attached"), icon=":material/link:")
elif _attached == "gone":
    st.info(t("train.run_gone"), icon=":material/link_off:")


# ------------------------------------------------------------------ setup ------------------
def _cut_own_text() -> None:
    """on_change of the text area: text longer than MAX_OWN_CHARS is cut there, and the page
    says so (the widget itself has no max_chars: a browser drops a too-long paste silently)."""
    text = st.session_state.get("train_own_text") or ""
    if len(text) > MAX_OWN_CHARS:
        st.session_state["train_own_text"] = text[:MAX_OWN_CHARS]
        st.session_state["train_own_text_cut"] = len(text)
    else:
        st.session_state.pop("train_own_text_cut", None)


def _own_text() -> str | None:
    """The user's own corpus from the text area or an uploaded .txt (None and a message if bad)."""
    from lmviz.train import MAX_TEXT_CHARS

    up = st.file_uploader(t("train.upload_txt", mb=limits.TEXT_UPLOAD_MB), type=["txt"], key="train_upload_txt",
                          max_upload_size=limits.TEXT_UPLOAD_MB)
    if up is not None:
        text = render.upload_text(up, limits.TEXT_UPLOAD_MB * 2**20, {"too_big": t("train.err_upload_size", mb=limits.TEXT_UPLOAD_MB),
                                                         "utf8": t("train.err_utf8")}, nul_ok=True)
        if text is None:
            return None
        if len(text) > MAX_TEXT_CHARS:
            st.warning(t("train.text_cut", n=len(text), limit=MAX_TEXT_CHARS))
            text = text[:MAX_TEXT_CHARS]
        return text
    text = st.text_area(t("train.own_text", n=MAX_OWN_CHARS), key="train_own_text", height=140,
                        placeholder=t("train.own_placeholder"), on_change=_cut_own_text)
    if len(text or "") > MAX_OWN_CHARS:       # a value that came without on_change: cut here too
        st.session_state["train_own_text_cut"] = len(text)
        text = text[:MAX_OWN_CHARS]
    cut = st.session_state.get("train_own_text_cut")
    if cut:
        st.warning(t("train.text_cut", n=cut, limit=MAX_OWN_CHARS))
    return text or None


def _number(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def _knob_problems(values: dict) -> list[str]:
    """Sentences for every value outside the form's range, and a width the heads do not divide
    (the widgets have no min/max: a browser would keep an out-of-range number silently)."""
    out = []
    for name, _ in KNOBS:
        kind, lo, hi = _bounds(name)
        v = values.get(name)
        if v is not None and not lo <= v <= hi:
            out.append(t("train.err_range", name=t(f"train.k_{name}"), lo=_number(kind(lo)), hi=_number(kind(hi)),
                         value=_number(kind(v))))
    if not out and values["d_model"] % values["n_head"]:
        out.append(t("train.err_divisible", d=values["d_model"], h=values["n_head"]))
    return out


def _finetune_choice():
    """Corpus "my own text": a new model, or the live one fine-tuned on it (the room's sentences
    arrive with the fine-tune on). The live bundle when the user chose the fine-tune and it can
    be done (lmviz's own GPT: a pretrained family is not trained here), else None."""
    from lmviz.train import model_shape

    b = session.try_live_bundle()
    can = b is not None and b.source != "pretrained" and model_shape(b.model.cfg) is not None
    on = st.toggle(t("train.ft_toggle"), key="train_finetune", disabled=not can, help=t("train.ft_help"))
    if not can:
        render.caption(t("train.ft_cannot"))
        return None
    return b if on else None


def sec_setup() -> None:
    from lmviz.train import (CORPORA as BUNDLED, FIXED_TOKENIZER, OWN, PRESETS as CFGS, SHAPE, TOKENIZERS,
                             finetune_overrides, plan_finetune, plan_training)

    CORPORA, PRESETS = (*BUNDLED, OWN), tuple(CFGS)
    _, _, BPE_MERGES_MAX = _bounds("bpe_merges")
    b = session.try_live_bundle()
    if b is not None and b.source == "pretrained":     # this chapter trains a small model of its own
        st.info(t("train.own_model", name=model_words.name(b), params=f"{model_words.facts(b).params:,}"))

    d_corpus, d_preset = DEFAULT_SETUP.get(lang(), DEFAULT_SETUP["en"])
    from ui.room import FROM_ROOM

    room = st.session_state.pop(FROM_ROOM, None)
    if room is not None:      # "train on the room": its sentences, fine-tuning the model shown
        st.session_state.update(train_corpus=OWN, train_own_text=room, train_finetune=True)
    c1, c2, c3 = st.columns(3)
    with c1:
        corpus = urlstate.selectbox(t("train.corpus"), CORPORA, CORPORA.index(d_corpus), param="corpus",
                                    key="train_corpus", format_func={c: t(f"train.corpus_{c}") for c in CORPORA}.get)
    with c2:
        preset = urlstate.selectbox(t("train.preset"), PRESETS, PRESETS.index(d_preset), param="preset",
                                    key="train_preset", format_func={p: t(f"train.preset_{p}") for p in PRESETS}.get)
    text = _own_text() if corpus == OWN else None
    start = _finetune_choice() if corpus == OWN else None    # the live model, to fine-tune
    kept = SHAPE if start is not None else ()                 # the knobs a fine-tune keeps as the model's
    fixed = corpus in FIXED_TOKENIZER or start is not None   # poetry, a fine-tune: their own vocabulary
    with c3:
        tok = urlstate.selectbox(t("train.tokenizer"), TOKENIZERS, 0, param="tok", key="train_tok",
                                 format_func={k: t(f"train.tok_{k}") for k in TOKENIZERS}.get, disabled=fixed)
    if start is not None:                     # the preset's optimisation, the model's shape
        base = replace(CFGS[preset], **finetune_overrides(start.model.cfg))
        render.caption(t("train.ft_note", params=start.model.num_params(), vocab=start.tokenizer.vocab_size,
                     **base.to_dict()))
        tok, suffix = TOKENIZERS[0], "_ft"
    else:
        base, suffix = CFGS[preset], ""
        render.caption(t(f"train.preset_{preset}_note", **base.to_dict()))
    if corpus in FIXED_TOKENIZER:
        from lmviz.poetry import vocab_facts

        tok = FIXED_TOKENIZER[corpus]
        render.caption(t("train.vocab_reason", **vocab_facts()))
    values = {}
    if follow.following():
        from lmviz.train import FOLLOWER_MAX_STEPS

        render.caption(t("train.follower_steps", n=FOLLOWER_MAX_STEPS))
    with st.expander(t("train.custom")):
        cols = st.columns(3)
        for i, (name, step) in enumerate(KNOBS):
            kind, lo, hi = _bounds(name)
            with cols[i % 3]:
                values[name] = st.number_input(
                    t(f"train.k_{name}"), value=kind(getattr(base, name)), step=kind(step),
                    format="%.5f" if kind is float else "%d", key=f"train_{name}_{preset}{suffix}",
                    disabled=name in kept,
                    help=t("train.k_ft_shape") if name in kept else
                    t("train.k_range", lo=_number(kind(lo)), hi=_number(kind(hi))))
        if tok == "bpe":
            values["bpe_merges"] = st.number_input(t("train.k_bpe_merges"), value=base.bpe_merges, step=50,
                                                   key=f"train_bpe_merges_{preset}",
                                                   help=t("train.k_range", lo=0, hi=_number(BPE_MERGES_MAX)))
    problems = _knob_problems(values)
    if tok == "bpe" and not 0 <= values["bpe_merges"] <= BPE_MERGES_MAX:
        problems.append(t("train.err_range", name=t("train.k_bpe_merges"), lo=0, hi=_number(BPE_MERGES_MAX),
                          value=_number(values["bpe_merges"])))
    if problems:                              # out-of-range numbers: said, and Start stays disabled
        st.error("\n\n".join(problems))
        st.session_state["train_setup"] = None
        return
    values["tokenizer"] = tok
    if corpus == OWN and not text:
        st.info(t("train.need_text"))
        st.session_state["train_setup"] = None
        return

    # the one planning call (lmviz.train.plan_training): config, tokenizer and budget; the
    # trainer is built from its cfg
    chosen = {k: v for k, v in values.items() if v is not None}
    plan = (plan_finetune(start.model.cfg, preset, chosen, lmviz.device().type) if start is not None else
            plan_training(corpus, preset, chosen, text, lmviz.device().type))
    if plan.error:
        st.error(t("train.err_config", msg=plan.error))
        st.session_state["train_setup"] = None
        return
    sentences = [t(r.key, **r.params) for r in plan.budget.reasons]
    if not plan.ok:                           # too large for this server: refused, with the reasons
        st.error("\n\n".join([t("train.budget_refused")] + sentences))
        st.session_state["train_setup"] = None
        return
    if start is not None:                     # a fine-tune's text in the model's tokens, before Start
        from lmviz.train import finetune_shortfall

        few = finetune_shortfall(text, start.tokenizer, plan.cfg.block_size)
        if few is not None:
            st.warning(t("train.err_short_text", n=few[0], need=few[1], block=plan.cfg.block_size))
            st.session_state["train_setup"] = None
            return
    if sentences:                             # only the batch was too large: lowered, and said so
        st.warning("\n\n".join(sentences))
    est = plan.budget.estimate                # what the run states its measured pace beside
    render.caption(t("train.plan_time", device=device(est.device),
                     step_s=short(est.step_s, lang()), steps=plan.cfg.max_steps,
                     total=duration(est.step_s * plan.cfg.max_steps, lang()),
                     gflops=limits.TRAIN_FLOPS[est.device] / 1e9))
    st.session_state["train_setup"] = (corpus, preset, plan.cfg, text, start, est.step_s)


# ------------------------------------------------------------------ controls ---------------
def _make_trainer(corpus: str, cfg, text: str | None, start=None):
    """What builds the Trainer where the training runs (the corpus loaded and encoded there; a
    fine-tune of ``start``, a Bundle, when given): it pickles, for a training in its own process."""
    from lmviz.train import make_trainer

    return partial(make_trainer, corpus, cfg, text, start=start)


def _start(n_layer: int | None = None) -> None:
    """Start the run section 1 set up (``n_layer``: with that many layers instead, the
    one-layer control of an induction run; the estimate's step time scaled to them)."""
    setup = st.session_state.get("train_setup")
    if setup is None:
        return
    corpus, preset, cfg, text, start, est_step_s = setup
    kind = "finetune" if start is not None else corpus
    label = f"{kind}/{preset}"
    if n_layer is not None:
        est_step_s, cfg = est_step_s * n_layer / cfg.n_layer, replace(cfg, n_layer=n_layer)
        label += f"/{n_layer}"
    # a class's lecturer (the fine-tune on the room's sentences included) waits ahead of students' runs
    session.start_training(_make_trainer(corpus, cfg, text, start), label=label,
                           meta={"corpus": corpus, "preset": preset, "est_step_s": est_step_s,
                                 "lecturer": follow.lecturing() is not None})


def _reset() -> None:
    session.reset_training()


def sec_run() -> None:
    job = session.training_job()
    active = job is not None and job.active
    slot = session.training_slot()
    if slot.refused == "full":                # every place for a training holds a live one
        st.error(t("train.run_full", n=session.MAX_RUNS))
    if job is not None and render.presenting():
        render.caption(t("train.run_link_hidden"))
    setup = st.session_state.get("train_setup")
    if setup is not None and setup[2].induction_probe:     # the room predicts, the run answers
        questions.run_questions()
    cols = st.columns(5)
    ready = setup is not None
    if not ready and not active:      # presenter mode opened on this section: section 1 not drawn yet
        render.caption(t("train.setup_first"))
    cols[0].button(t("train.start"), key="train_start", type="primary", on_click=_start,
                   disabled=active or not ready, icon=":material/play_arrow:")
    cols[1].button(t("train.pause"), key="train_pause", on_click=lambda: job.pause(),
                   disabled=not active or job.paused, icon=":material/pause:")
    cols[2].button(t("train.resume"), key="train_resume", on_click=lambda: job.resume(),
                   disabled=not active or not job.paused, icon=":material/resume:")
    cols[3].button(t("train.stop"), key="train_stop", on_click=lambda: job.cancel(),
                   disabled=not active, icon=":material/stop:")
    cols[4].button(t("train.reset"), key="train_reset", on_click=_reset,
                   disabled=job is None, icon=":material/restart_alt:")
    live()


def _live_body(snap) -> None:
    if snap is None:
        st.info(t("train.idle", n=session.max_trainings()))
        return
    if not _status(snap):
        return
    session.publish_trained_model(snap, meta={"label": session.training_slot().label})
    if not snap.steps and not snap.evals:
        _details(snap)
        return
    base = snap.info.get("baselines")         # lmviz.baselines.Baselines of this run's split
    # the parts that change at an evaluation (the perplexity panel, the attention map, the
    # samples), held together while the run runs: each change redraws charts in every browser
    evals, attention, samples = session.hold(
        "train_hold", id(session.training_job()), (len(snap.evals), len(snap.samples)),
        (snap.evals, snap.attention, snap.samples), running=snap.state == "running")
    _curves(snap, base, evals)
    # the numbers under the curves: after Start the loss chart is what the first screen shows
    # (at 1440x900 these lines pushed it below the fold)
    _details(snap)
    setup = st.session_state.get("train_setup")
    job = session.training_job()
    induction_section.draw(induction_section.Source(
        evals, snap.tokenizer, snap.model, snap.model_version, id(job), earlier=session.training_slot().earlier,
        control=_start if setup is not None and setup[2].induction_probe else None,
        control_disabled=job is not None and job.active))
    c1, c2 = st.columns([1, 1])
    with c1:
        _samples(samples, _corpus())
    with c2:
        _attention(attention, evals[-1].step if evals else 0)
    _download(snap)


def _corpus() -> str | None:
    job = session.training_job()
    return job.meta.get("corpus") if job is not None else None


def _snapshot():
    job = session.training_job()
    return job.snapshot() if job is not None else None


# Seconds between the live section's redraws while a run is active. Each redraw sends the
# growing loss curve and the replay's longer slider, and the browser draws them again:
# bench/live_page.py measured Chromium's main thread 44-56 % busy at 1 s (33 % at 2 s) on the 2-core machine.
LIVE_EVERY_S = 2.0
# While it is paused there is no timer: nothing moves then but a press (here or in another tab
# of the run), and the job's watch pushes that (``_watch``). A tick of a timer that came with a
# replay step made the step wait for the tick's run: 0.6 s (bench/live_page.py, at 6 s a tick).


def _live_every() -> float | None:
    job = session.training_job()
    return None if job is not None and job.paused else LIVE_EVERY_S


def _watch(key: str, wake) -> None:
    job = session.training_job()
    if job is not None:
        job.watch(key, wake)


def live() -> None:
    """Poll the job every ``LIVE_EVERY_S`` while it runs; while it is paused, no timer, and each
    of its moves (a resume or a stop from another tab of the run, its end) is pushed
    (``lmviz.server.tasks.Task.watch``); draw once when it is not active. The replay is drawn in
    the same fragment: the page has one poll (see ``ui.session.poll``)."""
    session.poll(_snapshot, _live_and_replay, every=_live_every, watch=_watch)


def _live_and_replay(snap) -> None:
    _live_body(snap)
    replay_section.draw()


def _status(snap) -> bool:
    """The run's state line and pace; False while there is nothing more to draw (queued,
    preparing)."""
    if snap.state == "queued" and snap.step:         # stood aside for the class's lecturer (lmviz.server.tasks)
        st.warning(t("train.yielded", step=snap.step, n=snap.queue_position))
        return True
    if snap.state == "queued":
        st.warning(t("train.queued", n=snap.queue_position, cap=session.max_trainings()))
        return False
    if snap.state == "preparing":
        st.info(t("train.preparing"))
        return False
    if snap.state == "error":     # what it drew before it failed still follows
        st.error(t("train.error", msg=render.escape(said(snap.error or "?"))))
        return True
    frac = snap.step / snap.max_steps if snap.max_steps else 0.0
    # the time left only while it runs and can be estimated ("about — s left" beside "done" was noise)
    going = snap.eta_s is not None and snap.state == "running"
    st.progress(min(1.0, frac), text=t("train.progress" if going else "train.progress_still", step=snap.step,
                                       total=snap.max_steps, tps=f"{snap.tokens_per_s:,.0f}",
                                       eta=f"{snap.eta_s:.0f}" if going else "", state=t(f"train.state_{snap.state}")))
    _pace(snap)
    return True


def _details(snap) -> None:
    """What the run is (size, vocabulary, device), its numbers now, and the model the other
    chapters show."""
    if snap.model is not None:
        render.caption(t("train.published", step=snap.evals[-1].step if snap.evals else 0))
    info = snap.info
    if info:
        where = device(info["device"]) + (t("train.own_process") if info.get("backend") == "process" else "")
        render.caption(t("train.info", params=f"{info['params']:,}", vocab=info["vocab_size"],
                     tokens=f"{info['train_tokens']:,}", device=where))
        if info.get("unknown"):
            render.caption(t("train.ft_unknown", n=info["n_unknown"], chars=literal(" ".join(info["unknown"]))))
    m = st.columns(4)
    ev = snap.evals[-1] if snap.evals else None
    render.metric(t("train.m_train"), f"{snap.steps[-1].loss:.3f}" if snap.steps else "—", at=m[0])
    render.metric(t("train.m_val"), f"{ev.val_loss:.3f}" if ev else "—",
                  delta=f"{ev.val_loss - snap.evals[0].val_loss:+.3f}" if ev and len(snap.evals) > 1 else None,
                  delta_color="inverse", at=m[1])
    render.metric(t("train.m_ppl"), f"{ev.val_ppl:,.1f}" if ev else "—", at=m[2])
    render.metric(t("train.m_tps"), f"{snap.tokens_per_s:,.0f}", at=m[3])
    base = info.get("baselines") if info else None
    if ev is not None and base is not None:     # a perplexity is never shown without its baselines
        render.caption(t("train.ppl_beside", ppl=ev.val_ppl, uniform_ppl=base.uniform_ppl,
                     unigram_ppl=base.unigram_ppl))


def _pace(snap) -> None:
    """This run's measured pace beside the budget's estimate made before the start
    (lmviz.chapters.claims.pace): the steps' own time against the estimate, and the time left
    at the pace of running, evaluations included."""
    job = session.training_job()
    est = job.meta.get("est_step_s") if job is not None else None
    recent = snap.steps[-20:]
    busy_s = sum(m.dt_ms for m in recent) / 1e3
    if snap.state != "running" or not est or not recent or busy_s <= 0:
        return
    c = pace(len(recent) / busy_s, 1.0 / est, snap.steps_per_s, snap.pace_s, snap.max_steps - snap.step)
    render.caption(render.claim(c, eta=duration(c.values["eta_s"], lang())))


def _baseline_lines(base, snap, ppl: bool = False) -> list:
    """The labelled uniform and unigram lines of the loss (or perplexity) chart."""
    if base is None:
        return []

    unigram_key = "train.f_unigram" if isinstance(snap.tokenizer, CharTokenizer) else "train.f_unigram_tok"
    if ppl:
        # the narrow perplexity panel: a short label (the loss chart beside it says which unigram)
        return [(base.uniform_ppl, t("train.f_uniform_ppl", v=base.vocab_size)),
                (base.unigram_ppl, t("train.f_unigram_ppl", x=base.unigram_ppl))]
    return [(base.uniform, t("train.f_uniform", v=base.vocab_size)), (base.unigram, t(unigram_key, x=base.unigram))]


def _curves(snap, base, evals) -> None:
    """The loss curve (every tick) beside the perplexity and learning-rate panel up to the
    evaluations ``evals`` (the held ones while the run runs)."""
    steps = [m.step for m in snap.steps]
    c1, c2 = st.columns([3, 2])
    with c1:
        fig = loss_figure(steps, [m.loss for m in snap.steps], [e.step for e in snap.evals],
                          [e.val_loss for e in snap.evals], names=(t("train.f_train"), t("train.f_val")),
                          x_title=t("train.f_step"), y_title=t("train.f_loss"), lines=_baseline_lines(base, snap))
        render.plot(fig, key="train_loss", filename="training-loss")
    with c2:
        # both panels up to the last evaluation shown: the chart then changes only at an
        # evaluation, and a changed chart is drawn again (twice) in every browser
        upto = evals[-1].step if evals else 0
        lr_steps = [m for m in snap.steps if m.step <= upto]
        # (shared: between two evaluations every tick asks for the same figure)
        fig = render.figure(ppl_lr_figure, [e.step for e in evals], [e.val_ppl for e in evals],
                            [m.step for m in lr_steps], [m.lr for m in lr_steps],
                            titles=(t("train.f_ppl"), t("train.f_lr")),
                            x_title=t("train.f_step"), lines=_baseline_lines(base, snap, ppl=True))
        render.plot(fig, key="train_ppl_lr", filename="training-ppl-lr")
    if base is not None and snap.evals:
        ev = snap.evals[-1]
        verdict = "below" if ev.val_loss < base.unigram else "between" if ev.val_loss < base.uniform else "above"
        render.caption(t("train.baselines_note", uniform=base.uniform, unigram=base.unigram, vocab=base.vocab_size,
                     verdict=t(f"train.bl_{verdict}", step=ev.step, val=ev.val_loss)))
        crossing = _crossing(snap, base)
        render.caption(render.claim(crossing, took=duration(crossing.values.get("secs", math.nan), lang())))
    render.caption(t("train.curves_note"))


def _crossing(snap, base):
    """When this run first went below the frequency guess (lmviz.chapters.claims.baseline): its step and
    the seconds of training up to it (the steps' own wall times, pauses and evaluations left out)."""
    done = dict(zip([m.step for m in snap.steps], np.cumsum([m.dt_ms for m in snap.steps]) / 1e3))
    evals = [e for e in snap.evals if e.step > 0]
    return baseline([e.step for e in evals], [float(done.get(e.step, 0.0)) for e in evals],
                    [e.val_loss for e in evals], base.unigram)


def _samples(samples, corpus: str | None) -> None:
    render.md(f"**{t('train.samples')}**")
    render.caption(t("train.samples_note"))
    if corpus == "poetry" and samples:
        _form(samples)
    for s in reversed(samples[-6:]):
        render.caption(t("train.sample_at", step=s.step))
        render.code(s.prompt + s.text, language=None, wrap_lines=True)


def _form(samples) -> None:
    """The form metric of the newest sample (prompt included: it begins the first line)."""
    from lmviz.poetry import form_share

    now, first = samples[-1], samples[0]
    f, f0 = form_share(now.prompt + now.text), form_share(first.prompt + first.text)
    render.metric(t("train.m_form"), f"{f.share:.0%}" if f.n_lines else "—")
    # the first sample's share only where it had lines to count ("0% of 0 lines" said nothing)
    then = (t("train.form_then", step0=first.step, share0=f0.share, n_lines0=f0.n_lines) if f0.n_lines
            else t("train.form_then_none", step0=first.step))
    if f.n_lines:
        now_said = t("train.form_now", step=now.step, n_form=f.n_form, n_lines=f.n_lines, share=f.share)
        render.caption(now_said if first is now else sentences(now_said, then))
    else:
        render.caption(t("train.form_none", step=now.step))
    render.caption(t("train.form_note"))


def _attention(attention, step: int) -> None:
    """The newest model's attention on the prompt (labels, w [L,H,T,T]), from the evaluation at ``step``."""
    render.md(f"**{t('train.att')}**")
    if attention is None:
        return
    labels, w = attention                            # w [L,H,T,T]
    L, H = w.shape[0], w.shape[1]
    c1, c2 = st.columns(2)
    layers = [t("common.layer_n", n=i + 1) for i in range(L)]          # counted from 1, as said aloud
    heads = [t("common.head_n", n=i + 1) for i in range(H)]
    layer = layers.index(c1.selectbox(t("train.layer"), layers, index=L - 1,
                                      key=f"train_att_layer_{lang()}_{L}") or layers[-1])
    head = heads.index(c2.selectbox(t("train.head"), heads, key=f"train_att_head_{lang()}_{H}") or heads[0])
    fig = render.figure(attention_figure, w[layer, head], labels, x_title=t("train.att_key"),
                        y_title=t("train.att_query"), hover=t("train.att_hover"))
    render.plot(fig, key="train_att", filename=f"training-attention-L{layer + 1}-H{head + 1}")
    h = float(entropy(w[layer, head]))
    render.caption(t("train.att_note", h=f"{h:.2f}", step=step))


def _download(snap) -> None:
    if snap.model is None:
        return
    model, tok, step = snap.model, snap.tokenizer, snap.evals[-1].step if snap.evals else 0
    # read here, in the script's thread: the callable runs later in the server's, where the
    # session's state (the training slot) cannot be read (the download failed with a
    # MediaFileStorageError until tests/test_browser_room_induction.py pressed it)
    label = session.training_slot().label

    def blob() -> bytes:
        from lmviz.checkpoint import save_checkpoint
        from lmviz.replay import Replay

        return save_checkpoint(model, tok, {"steps": step, "label": label},
                               replay=(snap.replay or Replay(())).upto(step, snap.evals))

    st.download_button(t("train.download", step=step), data=blob, file_name=f"lmviz-step{step}.safetensors",
                       mime="application/octet-stream", key="train_download", on_click="ignore",
                       icon=":material/download:")


# ------------------------------------------------------------------ checkpoint upload ------
def sec_upload() -> None:
    render.md(t("train.upload_intro"))
    up = st.file_uploader(t("ckpt.upload_label", mb=limits.MAX_UPLOAD_MB), type=["safetensors"],
                          key="train_upload_ckpt", max_upload_size=limits.MAX_UPLOAD_MB)
    if up is None:
        return
    if render.upload_too_big(up, limits.MAX_CHECKPOINT_BYTES,
                             t("ckpt.err_too_large", mb=up.size / 2**20, limit_mb=limits.MAX_UPLOAD_MB)):
        return
    key = (up.name, up.size, up.file_id if hasattr(up, "file_id") else None)
    if st.session_state.get("train_loaded_ckpt") == key:
        st.success(t("train.upload_ok", params=f"{session.live_bundle().model.num_params():,}",
                     sec=render.section_number("train.sec_run")))
        return
    from lmviz.checkpoint import CheckpointError, load_checkpoint_with_replay

    try:
        model, tok, meta, replay = load_checkpoint_with_replay(up.getvalue())
    except CheckpointError as e:              # one sentence, in the reader's language
        st.error(t("train.err_ckpt", msg=t(e.key, **e.params)))
        return
    except Exception:  # noqa: BLE001 - any other failure: a sentence in the page's language, never

        logging.getLogger(__name__).exception("checkpoint upload failed")
        st.error(t("train.err_ckpt", msg=t("ckpt.err_unexpected")))
        return
    job = session.training_job()
    if job is not None and job.snapshot().active:
        st.warning(t("train.upload_busy"))
        return
    session.set_session_bundle(session.Bundle(model, tok, meta, "session"))
    st.session_state["train_loaded_ckpt"] = key
    st.session_state["train_uploaded_replay"] = (model, replay)   # ui.replay_section shows it
    st.rerun()             # the run section above draws the uploaded model's replay (and this says ok)


render.run_sections([("train.sec_setup", sec_setup), ("train.sec_run", sec_run),
                     ("train.sec_upload", sec_upload)])
