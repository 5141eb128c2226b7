"""The "Replay training" section of /training: scrub through a run's snapshots (lmviz.replay).

Where the replay comes from, in this order: the checkpoint uploaded on this page when it is the
model the chapters show (its replay, or a sentence saying it has none); else this session's
training (live: drawn by the run section's poll while it runs); else nothing
(the shipped default model carries no replay: a sentence says so).

Two controls choose the snapshot, and the one used last wins: the step slider, and a stretch
brushed on the loss curve (an Altair interval selection; ``lmviz.replay.pick`` chooses the last
snapshot inside it). While the slider sits on the newest snapshot it follows new ones.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ui import model_words, render, session
from ui.i18n import t

UPLOADED = "train_uploaded_replay"     # session key: (model, Replay | None) of the uploaded checkpoint
STEP_KEY = "train_replay_step"         # the slider
CHART_KEY = "train_replay_loss"        # the loss chart's selection
_SEL = "train_replay_sel"              # the last selection acted on
_LAST = "train_replay_last"            # the newest step the slider saw (to follow new snapshots)
_PREV = "train_replay_prev"            # the newest step before that one (a stale echo of it is no choice)


@dataclass(frozen=True)
class Source:
    kind: str                 # "upload" or "live"
    replay: Any               # lmviz.replay.Replay | None
    tokenizer: Any
    steps: list               # StepMetrics of the live run ([] for an upload)
    active: bool              # True while the training runs (poll)
    state: str = ""           # the job's state ("" for an upload)
    evals: tuple = ()         # the run's evaluations (the live job's; an upload's replay carries the probed ones)
    model: Any = None         # the uploaded model (its induction section's causal check); None for a live run


def _uploaded() -> Source | None:
    """The uploaded checkpoint's source while it is the model the chapters show, else None."""
    up = st.session_state.get(UPLOADED)
    bundle = st.session_state.get("lmviz_session_bundle")
    if up is not None and bundle is not None and bundle.model is up[0]:
        return Source("upload", up[1], bundle.tokenizer, [], False,
                      evals=up[1].evals if up[1] is not None else (), model=up[0])
    return None


def _source() -> Source | None:
    up = _uploaded()
    if up is not None:
        return up
    job = session.training_job()
    if job is None:
        return None
    snap = job.snapshot()
    return Source("live", snap.replay, snap.tokenizer, snap.steps, snap.active, snap.state, tuple(snap.evals))


def _md_safe(text: str) -> str:
    """Text from a corpus, shown inside a caption: Markdown's special characters escaped."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$])", r"\\\1", text)


def selected_stretch(event) -> tuple[float, float] | None:
    """(lo, hi) of the stretch brushed on the loss chart, from its selection state (None: none)."""
    from viz.replay import SELECTION

    try:
        rng = event["selection"][SELECTION]["step"]
        lo, hi = float(rng[0]), float(rng[1])
    except (KeyError, TypeError, IndexError, ValueError):
        return None
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _choose_step(snaps) -> int:
    """The step to show: a new brushed stretch picks it; else the slider's; the newest when the
    slider sat on the newest (it follows a live run) or holds a step this replay lacks."""
    from lmviz.replay import pick

    steps = [s.step for s in snaps]
    sel = selected_stretch(st.session_state.get(CHART_KEY))
    if sel != st.session_state.get(_SEL):
        st.session_state[_SEL] = sel
        if sel is not None:
            st.session_state[STEP_KEY] = pick(snaps, *sel).step
    from ui.runtime import asked_for_this_fragment

    cur, last = st.session_state.get(STEP_KEY), st.session_state.get(_LAST)
    # a tick that left the browser before it drew the last followed step sends the step before it
    # back: that is not a choice, the slider keeps following. A run asked for this section itself
    # is a student's move (of the slider, the head or the brush): a step back to that step is a
    # choice (bench/live_page.py: the first step back after the newest snapshot came in landed
    # there, was taken for an echo and never shown)
    echo = cur is not None and cur == st.session_state.get(_PREV) and not asked_for_this_fragment()
    if not echo:        # the browser has drawn the followed step, or the student chose one: no late
        st.session_state[_PREV] = None      # echo can come now, and a move back to it is a choice
    if cur not in steps or ((cur == last or echo) and cur != steps[-1]):
        if last is not None and last != steps[-1]:
            st.session_state[_PREV] = last
        st.session_state[STEP_KEY] = steps[-1]
    st.session_state[_LAST] = steps[-1]
    return st.session_state[STEP_KEY]


def missing_key(src: Source) -> str:
    """Why a source has no replay, as a catalogue key: an uploaded file without one, a run that
    has not started its steps yet, a run stopped before its first step, or a run that kept none
    (its probe sentence or prompt had no token its tokenizer knows)."""
    if src.kind == "upload":
        return "train.replay_missing"
    if src.state in ("queued", "preparing", "new") and not src.steps:
        return "train.replay_none"
    if not src.steps:
        return "train.replay_before_steps"
    return "train.replay_off"


def _draw(src: Source | None) -> None:
    if src is None:
        b = session.try_live_bundle()
        st.info(t("train.replay_pretrained", name=model_words.name(b)) if b is not None and b.source == "pretrained"
                else t("train.replay_default"))
        return
    if src.replay is None:
        st.info(t(missing_key(src)))
        return
    snaps = list(src.replay.snapshots)
    if not snaps or src.tokenizer is None:
        st.info(t("train.replay_none"))
        return
    with st.container(key="train_replay_box"):
        _show(src, snaps)


def _show(src: Source, snaps) -> None:
    from lmviz.replay import (aligned_embedding, class_separation, strongest_previous_token_head,
                              token_classes, uniform_previous_token)
    from viz import replay as vr
    from viz.tokenization import visible

    tok = src.tokenizer
    step = _choose_step(snaps)
    i = [s.step for s in snaps].index(step)
    snap, first, last = snaps[i], snaps[0], snaps[-1]

    # the loss curve up to the newest snapshot (where a brush can pick one): its spec is built
    # and validated once per snapshot taken (shared by every session); a step adds only the rule
    st.caption(t("train.replay_select"))
    curve = [m for m in src.steps if m.step <= last.step]
    spec = render.figure(
        vr.loss_selection_chart, np.array([m.step for m in curve], dtype=float),
        np.array([m.loss for m in curve], dtype=float), [s.step for s in snaps], [s.loss for s in snaps],
        x_title=t("train.replay_step"), y_title=t("train.f_loss"), curve_name=t("train.f_train"),
        snap_name=t("train.replay_snap"))
    st.vega_lite_chart(spec=vr.at_step(spec, step), on_select="rerun", selection_mode=vr.SELECTION,
                       key=CHART_KEY, width="stretch")
    st.select_slider(t("train.replay_step"), options=[s.step for s in snaps], key=STEP_KEY)
    loss = t("train.replay_loss_start") if snap.step == 0 else \
        t("train.replay_loss_at", loss="—" if snap.loss is None else f"{snap.loss:.3f}")
    st.caption(t("train.replay_caption", n=len(snaps), step=step) + " " + loss)

    c1, c2, c3 = st.columns(3)
    with c1:  # (a) one head's attention on the probe sentence (layers and heads shown from 1)
        H = snap.attention.shape[0]
        layer = snap.layer
        best = int(last.prev_token[layer].argmax())           # the previous-token head, by the end
        names = {h: t("train.replay_head_best" if h == best else "train.replay_head_opt", h=h + 1) for h in range(H)}
        head = st.selectbox(t("train.head"), range(H), index=best, key="train_replay_head", format_func=names.get)
        head = min(head, H - 1)
        labels = [visible(tok.token(j)) for j in snap.probe_ids]
        fig = render.figure(vr.attention_figure, snap.head(head).numpy(), labels, x_title=t("train.att_key"),
                            y_title=t("train.att_query"), hover=t("train.att_hover"))
        render.plot(fig, key="train_replay_att", filename=f"replay-attention-step{step}")
        sentence = src.replay.probe.sentence if src.replay.probe is not None else tok.decode(list(snap.probe_ids))
        st.caption(t("train.replay_att", head=head + 1, layer=layer + 1, sentence=_md_safe(sentence)))
        T = len(snap.probe_ids)
        L_all, H_all, score_all = strongest_previous_token_head(snap)
        st.caption(t("train.replay_prev_at", head=head + 1, layer=layer + 1, score=float(snap.prev_token[layer, head]),
                     score0=float(first.prev_token[layer, head]), uniform=uniform_previous_token(T)))
        if (L_all, H_all) != (layer, head):
            st.caption(t("train.replay_prev", head=H_all + 1, layer=L_all + 1, score=score_all))
    with c2:  # (b) the token embeddings, on the last snapshot's axes
        P = snap.emb_xy.shape[0]
        xy = aligned_embedding(snap, last)
        classes = token_classes(tok, P)
        names = {c: t(f"train.replay_class_{c}") for c in set(classes)}
        labels = [visible(tok.token(j)) for j in range(P)]
        fig = render.figure(vr.embedding_figure, xy.numpy(), labels, classes, names)
        render.plot(fig, key="train_replay_emb", filename=f"replay-embeddings-step{step}")
        st.caption(t("train.replay_emb", var=float(snap.emb_var.sum())))
        sep, sep0 = class_separation(snap.emb_xy, classes), class_separation(first.emb_xy, classes)
        st.caption(t("train.replay_sep", sep=sep, sep0=sep0))
    with c3:  # (c) the next-token distribution at the prompt
        V = tok.vocab_size
        labels = [visible(tok.token(int(j))) for j in snap.top_ids]
        fig = render.figure(vr.distribution_figure, labels, snap.top_probs.numpy(), y_title=t("train.replay_prob"))
        render.plot(fig, key="train_replay_dist", filename=f"replay-next-token-step{step}")
        prompt = src.replay.probe.prompt if src.replay.probe is not None else tok.decode(list(snap.prompt_ids))
        st.caption(t("train.replay_dist", prompt=_md_safe(visible(prompt)), k=len(labels), entropy=snap.entropy,
                     v=V, max_entropy=math.log(V)))
        st.caption(t("train.replay_top", token=_md_safe(labels[0]), p=float(snap.top_probs[0]),
                     entropy0=first.entropy))
    _induction_at(src, step)


def _induction_at(src: Source, step: int) -> None:
    """(d) the induction head the run formed, at the replay's step (the kept evaluation at or
    before it), when the run probed for one."""
    from lmviz.chapters.induction_run import induction_run, probed
    from ui.induction_section import head_map, lh

    run = induction_run(src.evals)
    i = run.map_at(step) if run is not None else None
    if i is None:
        return
    c1, c2 = st.columns(2)
    with c1:
        head_map(run, probed(src.evals), i, src.tokenizer,
                 t("train.replay_ind", step=run.steps[i], lh=lh(run.head), score=run.score(i)),
                 key="train_replay_ind", filename=f"replay-induction-step{run.steps[i]}")
    with c2:
        render.metric(t("train.replay_ind_score", lh=lh(run.head)), f"{run.score(i):.2f}",
                      delta=f"{run.score(i) - run.score(0):+.2f}", delta_color="off")
        render.metric(t("train.ind_t_icl"), f"{run.icl[i]:+.2f} nat", delta=f"{run.icl[i] - run.icl[0]:+.2f}",
                      delta_color="off")
        st.caption(t("train.replay_ind_note", first=run.steps[0], uniform=run.uniform))


def draw() -> None:
    """The replay, under its own heading; called from the live fragment of /training's run
    section (the page's one poll, see ``ui.session.poll``), so it follows a live run with the
    rest of that section, and shows an uploaded checkpoint's replay once there is no run (with
    its induction record, when the run probed for one: the live run's is drawn above)."""
    src = _uploaded()          # (a live run's section is drawn above, from its job's evaluations)
    if src is not None and src.evals:
        from ui import induction_section

        induction_section.draw(induction_section.Source(src.evals, src.tokenizer, src.model, 0, id(src.model)))
    render.md(f"#### {t('train.replay_title')}")
    st.caption(t("train.replay_intro"))
    _section()


@st.fragment
def _section() -> None:
    """A fragment inside the poll's: the poll's tick draws it with the rest of the live section,
    and a move of the step slider, the head or a brushed stretch reruns this section alone, not
    the live curves, samples and attention map above it (timed on the server while scrubbing,
    2-core machine: the live part was 0.03-0.07 s of each step's run)."""
    _draw(_source())
