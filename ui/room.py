"""The room's activities on the Streamlit side: the generation chapter's "be the language model"
and the attention chapter's "map the heads together".

**Be the language model.**

The lecturer types a sentence and picks how much of it the room sees; the model's most probable
next tokens become the choices (``lmviz.chapters.generation_room``). "Ask the room" opens them as
a class-store question whose id carries the prompt and τ and whose option ids carry each token's
text and the model's probability, so a follower draws exactly the lecturer's choices whatever
model its own session holds. Students pick on their phones (the same "answer once" store
operation as every other question); the lecturer reveals; the projector and every phone then
draw the room's share beside the model's probabilities and the chapter's measures computed from
both. Alone, a student is a room of one. Each revealed prompt of one sentence is kept in the
session, and from two prompts on the room's perplexity on the sentence stands beside the model's.

**Map the heads together.** Every session that shows the same model and sentence shares one
activity id (``lmviz.chapters.attention_heads.activity_id`` of the model's shared name, the same in
every process, and the sentence's tokens). In a class the sentence and the model are the
lecturer's, whatever a follower's language or own model: the lecturer's page publishes them with
its settings (the sentence box's ``?s=`` and the model menu's ``?model=``, ``session.shared_name``), and a
follower's page maps heads of them (``session.bundle_named``) or waits until they arrive; a model
trained in the lecturer's own session cannot be loaded by the room, and the lecturer is told so.
The store deals the heads out (``ClassStore.assign``: one each in a large room, several each in a
small one, every head to two students once the room is twice the heads); each student's page shows
what removing its heads does to the sentence's loss and to the model's next guess, and sends "done"
for them (``ClassStore.report``); the projector fills the layer x head map as the reports arrive
and counts the students whose reports arrived. The effects are computed once per (model, sentence)
for the whole server (``_effects``: n_layer x n_head forward passes however many students ask).
Alone, a student maps every head.

Nothing a student sends is drawn: a student sends an option id or an item number, checked by the
store; token texts come from the lecturer's tokenizer and are drawn as literal text.
"""
from __future__ import annotations

from contextlib import nullcontext
from functools import partial

import streamlit as st

from lmviz.chapters import generation_room as gr
from lmviz.chapters.claims import room_favourite, room_surprise
from lmviz.clean_text import clean_text
from ui import follow, questions, render, session, urlstate
from ui.i18n import listed, literal, sentences, t
from ui.runtime import in_fragment_rerun
from viz.attention import head_map_figure
from viz.generation import room_figure
from viz.tokenization import visible

FROM_ROOM = "train_from_room"   # session key: the room's accepted sentences, for /training to fine-tune on
LOG = "room_log"        # session key: {sentence: {position: (question id, options, counts, actual, p)}}
SOLO = "room_solo"      # session key prefix: a student alone's pick for one question id
ROOM_DRAWN = "tok_room_drawn"   # session key: the ids of the accepted sentences the page last drew


def _label(ch: gr.Choices, opt: str) -> str:
    if opt == gr.OTHER:
        return t("gen.room_other")
    return visible(ch.texts[ch.options.index(opt)]) or "∅"


def answer_slot():
    """Where a follower's answer box goes: above the section's settings (the lecturer's sentence,
    position and temperature, which a follower takes from the lecturer), which
    :func:`settings_box` folds; on a phone they pushed the choices two screens down. None for
    the lecturer and a student alone, whose settings come first."""
    return st.container() if follow.following() else None


def settings_box():
    """The section's settings: folded under a line on a follower's page, as they are."""
    return st.expander(t("gen.room_settings"), expanded=False) if follow.following() else nullcontext()


def activity(b, sentence: str, ids: list[int], pos: int, tau: float) -> None:
    """The section's body for this session's role: ``ids`` the sentence's tokens, the room sees
    the first ``pos`` of them and guesses the next."""
    from lmviz.sampling import softmax_t

    prompt_ids, actual = ids[:pos], ids[pos]
    prompt = b.tokenizer.decode(prompt_ids)
    import torch

    with torch.no_grad():
        logits = session.next_logits(b, prompt_ids)
    if not bool(torch.isfinite(logits).all()):
        st.warning(t("gen.nonfinite"))          # a model with NaN or infinite weights
        return
    made = gr.choices(logits, tau, text_of=b.tokenizer.token)
    qid = gr.question_id(prompt, tau)
    ch = gr.from_options(made.options, tau)      # the numbers as the room receives them
    p_actual = float(softmax_t(logits, max(tau, 1e-6))[actual])
    actual_opt = ch.options[ch.token_ids.index(actual)] if actual in ch.token_ids else gr.OTHER
    if follow.following():
        # the prompt is the one the lecturer's question carries, drawn in the answer box (this
        # session's own prompt would say it twice, or another one before the lecturer's arrives)
        v = follow.followed_view()
        q = v.question if v is not None else None
        if q is None or gr.parse_question(q.id) is None:
            st.caption(t("gen.room_wait"))
            return
        _answering(q.id)
        return
    st.markdown(t("gen.room_prompt", prompt=literal(prompt)))
    lect = follow.lecturing()
    if lect:
        _lecturer(lect, qid, ch, sentence, pos, actual_opt, p_actual)
        return
    _solo(qid, ch, sentence, pos, actual_opt, p_actual)


def _solo(qid, ch, sentence, pos, actual_opt, p_actual) -> None:
    key = f"{SOLO}:{qid}"
    done = st.session_state.get(f"{key}:done")
    if done is None:
        labels = {o: _label(ch, o) for o in ch.options}
        pick = st.radio(t("gen.room_pick"), list(ch.options), index=None, key=key,
                        format_func=labels.__getitem__, horizontal=True)
        st.button(t("class.check"), key=f"{key}:check", type="primary", disabled=pick is None,
                  on_click=lambda: st.session_state.__setitem__(f"{key}:done", st.session_state[key]))
        st.caption(t("gen.room_solo"))
        return
    counts = {done: 1}
    _keep(sentence, pos, qid, ch, counts, actual_opt, p_actual)
    results(ch, counts, actual_opt, p_actual, mine=done)
    _sentence(sentence)


def _lecturer(lect, qid, ch, sentence, pos, actual_opt, p_actual) -> None:
    store = follow.store()
    view = store.lecturer_view(lect["code"], lect["secret"])
    open_q = view.question if view.ok else None
    if open_q is not None and open_q.id == qid:
        _lecturer_live(qid, sentence, pos, actual_opt, p_actual)
        return
    st.caption(t("gen.room_choices", choices=listed(literal(_label(ch, o)) for o in ch.options)))
    st.button(t("gen.room_ask"), key=f"room_ask:{qid}", type="primary", icon=":material/campaign:",
              on_click=lambda: (store.open_question(lect["code"], lect["secret"], qid, list(ch.options)),
                                follow.publish_now()))


@st.fragment(run_every=follow.TICK_S)
def _lecturer_live(qid: str, sentence: str, pos: int, actual_opt: str, p_actual: float) -> None:
    lect = follow.lecturing()
    if not lect:
        return
    store = follow.store()
    # one read a tick: the lecturer's view carries the open question with its live counts
    view = store.lecturer_view(lect["code"], lect["secret"])
    q = view.question if view.ok else None
    ch = gr.from_options(q.options, gr.parse_question(qid)[1]) if q is not None and q.id == qid else None
    if ch is None:
        st.caption(t(f"class.reason.{view.reason or 'no_question'}"))
        return
    if not q.revealed:
        st.markdown(t("class.answered_n", n=q.total))
        questions.senders(q.senders)
        st.button(t("class.reveal_all"), key=f"room_reveal:{qid}", type="primary", icon=":material/visibility:",
                  on_click=lambda: store.reveal(lect["code"], lect["secret"], qid))
        return
    _keep(sentence, pos, qid, ch, q.counts, actual_opt, p_actual)
    results(ch, q.counts, actual_opt, p_actual)
    _sentence(sentence)
    st.button(t("class.close_q"), key=f"room_close:{qid}",
              on_click=lambda: store.close_question(lect["code"], lect["secret"]))


@st.fragment
def _answering(qid: str) -> None:
    """A student's pick and Send rerun this box alone, not the chapter: a room of 100 sending at
    once cost the server 200 runs of the whole chapter (bench/room_ws.py). A new question or the
    reveal reaches the box through the class's move, which reruns the page."""
    v = follow.followed_view()
    q = v.question if v is not None else None
    if q is None or q.id != qid:
        return       # the class moved on: the page's next run draws what it shows now
    parsed = gr.parse_question(q.id)
    ch = gr.from_options(q.options, parsed[1]) if parsed else None
    if ch is None:
        return
    code = follow.follow_code()
    store = follow.store()
    mine = store.my_answer(code, follow.voter(), q.id)
    with st.container(border=True):
        st.caption(t("class.asked"))
        st.markdown(t("gen.room_prompt", prompt=literal(parsed[0])))
        if q.revealed:
            results(ch, q.counts or {}, None, None, mine=mine)
            return
        labels = {o: _label(ch, o) for o in ch.options}
        questions.pick_and_send(code, q.id, f"room_ans:{q.id}", ch.options, labels.__getitem__, t("gen.room_pick"),
                                True, None if mine is None else t("class.sent", answer=literal(_label(ch, mine))))


def _keep(sentence, pos, qid, ch, counts, actual_opt, p_actual) -> None:
    """Remember a revealed prompt of the sentence (its latest counts) for the perplexity."""
    log = st.session_state.setdefault(LOG, {})
    log.setdefault(sentence, {})[pos] = (qid, ch, dict(counts), actual_opt, p_actual)
    while len(log) > 4:                     # a few sentences per session, the oldest dropped
        log.pop(next(iter(log)))


def results(ch: gr.Choices, counts, actual_opt: str | None, p_actual: float | None,
            mine: str | None = None) -> None:
    """The room beside the model, with the measures computed from both."""
    r = gr.compare(ch, counts)
    labels = [_label(ch, o) for o in r.options]
    render.plot(render.figure(room_figure, labels, r.room, r.model,
                              names=(t("gen.room_fig_room"), t("gen.room_fig_model")),
                              y_title=t("gen.fig.prob"), title=t("gen.room_fig_title", n=r.n)),
                key=f"room_fig:{'|'.join(r.options)}", filename="room-vs-model")
    lab = {o: literal(x) for o, x in zip(r.options, labels)}
    if mine is not None and mine in lab:
        st.caption(t("gen.room_mine", tok=lab[mine]))
    if r.n == 0:
        st.info(t("gen.room_none"))
        return
    st.markdown(render.claim(room_favourite(r.room_tops, r.model_top),
                             room=listed(lab[o] for o in r.room_tops), model=lab[r.model_top]))
    floored = [r.options.index(o) for o in r.floored]
    st.markdown(sentences(
        t("gen.room_measures", h_room=f"{r.room_entropy:.2f}", h_model=f"{r.model_entropy:.2f}"),
        render.claim(room_surprise(r.model_on_room, sum(r.room[i] for i in floored), len(floored), gr.FLOOR),
                     toks=listed(lab[o] for o in r.floored)),
        t("gen.room_back", ce_back=f"{r.room_on_model:.2f}")))
    if r.room_finds:
        st.markdown(t("gen.room_finds", toks=listed(lab[o] for o in r.room_finds), pts=round(gr.GAP * 100)))
    if r.model_finds:
        st.markdown(t("gen.room_model_finds", toks=listed(lab[o] for o in r.model_finds), pts=round(gr.GAP * 100)))
    if actual_opt is not None and p_actual is not None:
        share = r.room[r.options.index(actual_opt)]
        st.markdown(t("gen.room_actual", tok=lab[actual_opt], p_model=f"{p_actual:.3f}", p_room=f"{share:.0%}"))
    if r.weak:
        st.caption(t("gen.room_weak", n=r.n, few=gr.FEW_ANSWERS))


def _sentence(sentence: str) -> None:
    steps = st.session_state.get(LOG, {}).get(sentence, {})
    if len(steps) < 2:
        st.caption(t("gen.room_more"))
        return
    score = gr.sentence_score([(gr.compare(ch, counts), actual, p)
                               for _, (_, ch, counts, actual, p) in sorted(steps.items())])
    key = "gen.room_ppl_room" if score.room_perplexity < score.model_perplexity else "gen.room_ppl_model"
    st.markdown(t(key, n=len(steps), room=f"{score.room_perplexity:.2f}", model=f"{score.model_perplexity:.2f}"))
    if score.weak:
        st.caption(t("gen.room_ppl_weak", few=gr.FEW_ANSWERS))


# ------------------------------------------------------------------ map the heads together --------
@st.cache_resource(max_entries=32, show_spinner=False)
def _effects_task(_model, model_key: str, ids: tuple[int, ...]):
    """Every head removed in turn on one sentence (lmviz.chapters.attention_heads.head_effects):
    one background task per (model, sentence) for the server, which every session of a room
    waits on (a pretrained model's 270 heads take seconds: never on a script thread)."""
    from lmviz.chapters.attention_heads import head_effects

    return session.start_task(lambda ctx: head_effects(_model, ids, cancel=ctx.cancelled, progress=ctx.progress),
                              name="lmviz-heads-map", total=_model.cfg.n_layer)


INLINE_WAIT_S = 1.0      # a small model's map is ready within this: drawn in the same run, no poll


def _effects(b, ids: tuple[int, ...], *, wait: bool = True):
    """The heads' effects on ``ids`` once computed, else None with the task's progress drawn (and,
    with ``wait``, a poll that reruns the page when they are ready)."""
    task = _effects_task(b.model, session.model_key(b), ids)
    if wait:
        task.join(INLINE_WAIT_S)
    snap = task.snapshot()
    if snap.state == "done":
        return snap.result
    status = partial(session.task_status, queued_key="att.hm_queued", running_key="att.hm_computing",
                     error_key="att.hm_error", total=b.model.cfg.n_layer * b.model.cfg.n_head)
    if wait:
        session.poll(task.snapshot, status, every=1.0)
    else:
        status(snap)
    return None


def _lh(e) -> str:
    return t("common.layer_head", layer=e.layer + 1, head=e.head + 1)


def _tok(b, i: int) -> str:
    return literal(visible(b.tokenizer.token(i)) or "∅")


def _effect_md(b, e) -> str:
    key = "att.hm_same" if e.top == e.base_top else "att.hm_changed"
    return sentences(t("att.hm_effect", lh=_lh(e), base=f"{e.base_loss:.3f}", loss=f"{e.loss:.3f}",
                       delta=f"{e.delta:+.3f}"),
                     t(key, top=_tok(b, e.base_top), new=_tok(b, e.top), p_base=f"{e.base_p_top:.3f}",
                       p=f"{e.p_base_top:.3f}"))


def _map(b, fx, reported, title: str) -> None:
    from lmviz.chapters.attention_heads import head_map

    cfg = b.model.cfg
    grid = head_map(fx, cfg.n_layer, cfg.n_head, reported)
    render.plot(render.figure(head_map_figure, grid, [t("common.layer_n", n=i + 1) for i in range(cfg.n_layer)],
                              [t("common.head_n", n=h + 1) for h in range(cfg.n_head)], title=title,
                              colorbar_title=t("att.hm_bar"), text_missing="·"),
                key="att_heads_map", filename="heads-map")
    shown = [e for e in fx if reported is None or reported.get(e.layer * cfg.n_head + e.head, 0) > 0]
    if not shown:
        st.info(t("att.hm_none"))
        return
    worst = max(shown, key=lambda e: e.delta)
    changed = [e for e in shown if e.top != e.base_top]
    spread = max(e.delta for e in shown) - min(e.delta for e in shown)
    render.md(t("att.hm_most", lh=_lh(worst), delta=f"{worst.delta:+.3f}", n=len(shown)))
    render.md(t("att.hm_changes", n=len(changed), total=len(shown),
                  heads=listed(_lh(e) for e in changed[:6])) if changed else t("att.hm_no_change", total=len(shown)))
    if spread < 0.01:
        render.caption(t("att.hm_flat", spread=f"{spread:.3f}"))


def _heads_subject(default_text: str, param: str, max_chars: int):
    """(model, its id, sentence) the heads are mapped on, or None having said why. In a class
    they are the lecturer's, published with the lecturer's settings (the sentence box's ``param``
    and the model menu's ``?model=``, ``session.shared_name``), whatever the follower's language
    or own model: every follower must compute the same activity id, or the room splits into
    classes of one. Alone or lecturing, this session's model and the sentence of its box."""
    from lmviz.hf import MODEL_PARAM

    if follow.following():
        v = follow.followed_view()
        settings = v.settings if v is not None else {}
        text, name = settings.get(param), settings.get(MODEL_PARAM)
        if not text or not name or len(text) > max_chars:
            st.caption(t("att.hm_wait"))
            return None
        b = session.bundle_named(name)
        if b is None:
            st.warning(t("att.hm_no_model"))
            return None
        return b, name, text
    b = session.try_live_bundle("att.no_model")
    if b is None:
        return None
    raw = st.query_params.get(param)       # the box's value as the URL (and so the class) holds it
    text = raw if raw and len(raw) <= max_chars else (st.session_state.get("att_text") or default_text)
    urlstate.to_url(param, text)
    name = session.shared_name(b)
    if follow.lecturing() and name is None:
        st.warning(t("att.hm_own_model"))   # the menu publishes no ?model= for it (session.model_menu)
        return None
    return b, name or session.model_key(b), text


def heads_section(default_text: str, *, param: str, max_chars: int) -> None:
    """The attention chapter's "map the heads together": the sentence, then the activity for this
    session's role."""
    from lmviz.chapters.embedding import encode_for_model

    got = _heads_subject(default_text, param, max_chars)
    if got is None:
        return
    b, name, text = got
    enc = encode_for_model(b.tokenizer, text, b.model.cfg.block_size)
    render.md(t("att.hm_sentence", text=literal(b.tokenizer.decode(enc.ids))))
    heads_activity(b, name, list(enc.ids))


def heads_activity(b, name: str, ids: list[int]) -> None:
    """The activity on ``ids`` of model ``b`` (``name``: its shared name) for this session's role."""
    cfg = b.model.cfg
    n = cfg.n_layer * cfg.n_head
    if len(ids) < 2:
        st.info(t("att.hm_short"))
        return
    from lmviz.chapters.attention_heads import activity_id, heads_each

    fx = _effects(b, tuple(ids))
    if fx is None:
        return
    act = activity_id(name, ids)
    if follow.following():
        code = follow.follow_code()
        v = follow.followed_view()
        store = follow.store()
        got = store.assign(code, follow.voter(), act, n,
                           heads_each(n, v.followers if v is not None else 1))
        if not got.ok:
            st.warning(t(f"class.reason.{got.reason}"))
            return
        render.md(t("att.hm_yours", n=len(got.items)))
        for i in got.items:
            render.md("- " + _effect_md(b, fx[i]))
        key = f"att_hm_sent:{act}"
        if st.session_state.get(key):
            st.success(t("att.hm_sent"), icon=":material/check_circle:")
            return

        def send():
            for i in got.items:
                r = store.report(code, follow.voter(), act, i, address=follow.client_address())
                if not r.ok and r.reason != "already_answered":
                    st.session_state[f"{key}:why"] = r.reason
                    return
            st.session_state[key] = True

        st.button(t("att.hm_send"), key=f"{key}:btn", type="primary", on_click=send)
        why = st.session_state.pop(f"{key}:why", None)
        if why:
            st.warning(t(f"class.reason.{why}"))
        return
    lect = follow.lecturing()
    if lect:
        _heads_lecturer(act, tuple(ids))
        return
    labels = {i: _lh(e) for i, e in enumerate(fx)}
    pick = st.selectbox(t("att.hm_pick"), list(labels), format_func=labels.__getitem__, key="att_hm_pick")
    render.md(_effect_md(b, fx[pick]))
    render.caption(t("att.hm_solo"))
    _map(b, fx, None, t("att.hm_title_all", n=n))


@st.fragment(run_every=follow.TICK_S)
def _heads_lecturer(act: str, ids: tuple[int, ...]) -> None:
    lect = follow.lecturing()
    b = session.try_live_bundle()
    if not lect or b is None:
        return
    fx = _effects(b, ids, wait=False)
    if fx is None:
        return
    n = b.model.cfg.n_layer * b.model.cfg.n_head
    if st.session_state.get(f"att_hm_all:{act}"):
        _map(b, fx, None, t("att.hm_title_all", n=n))
        return
    tl = follow.store().tally(lect["code"], lect["secret"], act)
    if not tl.ok:
        st.caption(t(f"class.reason.{tl.reason}"))
        return
    render.md(t("att.hm_room", k=len(tl.counts), n=n, r=tl.reported, s=tl.students))
    questions.senders(tl.senders)
    _map(b, fx, dict(tl.counts), t("att.hm_title_room", k=len(tl.counts), n=n))
    st.button(t("att.hm_fill"), key=f"att_hm_fill:{act}",
              on_click=lambda: st.session_state.__setitem__(f"att_hm_all:{act}", True))


# ------------------------------------------------------------------ the room's sentences ---------
def room_corpus() -> str | None:
    """The tokenization chapter's corpus "the room's sentences", for this session's role: a
    follower sends one sentence (and sees only its own); the lecturer moderates the queue and
    gets the accepted sentences as the corpus (one per line); alone, a student types a few
    sentences, one per line (a room of one). None while there is nothing to learn from."""
    from lmviz.chapters.tokenization import ROOM_ACTIVITY

    store = follow.store()
    if follow.following():
        code = follow.follow_code()
        mine = store.my_submission(code, follow.voter(), ROOM_ACTIVITY)
        if mine is not None:
            st.markdown(t("tok.room_yours", text=literal(mine.text)))
            st.caption(t(f"tok.room_state_{mine.state}"))
            return None
        st.text_input(t("tok.room_your_sentence"), key="tok_room_sentence",
                      max_chars=store.limits.max_sentence_chars, placeholder=t("tok.room_placeholder"))

        def send():
            r = store.submit(code, follow.voter(), ROOM_ACTIVITY, st.session_state.get("tok_room_sentence", ""),
                             address=follow.client_address())
            if not r.ok:
                st.session_state["tok_room_why"] = r.reason

        st.button(t("tok.room_send"), key="tok_room_send", type="primary", on_click=send)
        why = st.session_state.pop("tok_room_why", None)
        if why:
            st.warning(t(f"class.reason.{why}"))
        st.caption(t("tok.room_follow_note"))
        return None
    lect = follow.lecturing()
    if lect:
        _moderation(lect)
        q = store.queue(lect["code"], lect["secret"], ROOM_ACTIVITY)
        accepted = _accepted(q)
        st.session_state[ROOM_DRAWN] = tuple(i.id for i in accepted)   # what _moderation compares
        accepted = [i.text for i in accepted]
        if not accepted:
            st.info(t("tok.room_none_yet"))
            return None
        st.caption(t("tok.room_corpus", n=len(accepted), chars=sum(len(s) for s in accepted)))
        corpus = "\n".join(accepted)
        short = _finetune_shortfall(corpus)
        if short is not None:          # what the training page would refuse: said before the press
            render.caption(t("tok.room_short", n=short[0], need=short[1]))
        if st.button(t("tok.room_train"), key="tok_room_train", icon=":material/model_training:",
                     help=t("tok.room_train_help"), disabled=short is not None):
            # the one training loop, slot and budget: the training chapter with this as "my own text",
            # fine-tuning the model the chapters show
            # (handed over in a key of its own, which the training page turns into its widgets'
            # values before it draws them: the widgets' own keys, set here, did not reach it)
            st.session_state[FROM_ROOM] = corpus
            st.switch_page("chapters/training.py")
        return corpus
    st.caption(t("tok.room_solo"))
    text = st.text_area(t("tok.room_solo_label"), value=t("tok.room_solo_default"), height=120,
                        max_chars=20 * store.limits.max_sentence_chars, key="tok_room_solo")
    lines = [clean_text(x, store.limits.max_sentence_chars) for x in text.splitlines()]
    kept = [x for x in lines if x]
    return "\n".join(kept) or None


def _finetune_shortfall(corpus: str) -> tuple[int, int] | None:
    """(tokens, the fewest needed) when the room's sentences are too few to fine-tune the model
    the chapters show (lmviz.train.finetune_shortfall), else None (enough, or a model that is not
    fine-tuned here: the training page says so)."""
    from lmviz.train import finetune_overrides, finetune_shortfall

    b = session.try_live_bundle()
    if b is None or finetune_overrides(b.model.cfg) is None:
        return None
    return finetune_shortfall(corpus, b.tokenizer, b.model.cfg.block_size)


@st.fragment(run_every=follow.TICK_S)
def _moderation(lect: dict) -> None:
    """The lecturer's queue: each sentence sent, accepted or dropped with one press (nothing a
    student wrote is shown to the room before it is accepted: this panel is the lecturer's, and
    it shows the pending sentences as literal text)."""
    from lmviz.chapters.tokenization import ROOM_ACTIVITY

    store = follow.store()
    q = store.queue(lect["code"], lect["secret"], ROOM_ACTIVITY)
    if not q.ok:
        st.caption(t(f"class.reason.{q.reason}"))
        return
    if in_fragment_rerun() and tuple(i.id for i in _accepted(q)) != st.session_state.get(ROOM_DRAWN):
        # the corpus, its merges and the fine-tune button are drawn by the whole page, which a
        # press here (or a tick) does not rerun: without this the queue read "3 accepted" above
        # "no sentence accepted yet" until the lecturer touched something outside this panel
        st.rerun(scope="app")
    pending = [i for i in q.items if i.state == "pending"]
    counts = {s: sum(i.state == s for i in q.items) for s in ("pending", "accepted", "dropped")}
    st.markdown(t("tok.room_queue", **counts))
    questions.senders(q.senders)
    hide = st.toggle(t("tok.room_hide"), value=True, key="tok_room_hide", help=t("tok.room_hide_help"))
    for i in pending[:12]:
        c1, c2, c3 = st.columns([6, 1, 1], vertical_alignment="center")
        c1.markdown(t("tok.room_hidden") if hide else literal(i.text))
        c2.button(t("tok.room_accept"), key=f"tok_room_ok:{i.id}", type="primary",
                  on_click=store.moderate, args=(lect["code"], lect["secret"], ROOM_ACTIVITY, i.id, True))
        c3.button(t("tok.room_drop"), key=f"tok_room_no:{i.id}",
                  on_click=store.moderate, args=(lect["code"], lect["secret"], ROOM_ACTIVITY, i.id, False))
    if len(pending) > 12:
        st.caption(t("tok.room_more", n=len(pending) - 12))


def _accepted(q) -> list:
    """The accepted sentences of a moderation queue (none when the queue could not be read)."""
    return [i for i in q.items if i.state == "accepted"] if q.ok else []


def room_costs(tok, corpus: str) -> None:
    """How many tokens each language of the room's sentences costs under the learned BPE."""
    from lmviz.chapters.tokenization import language_costs

    rows = language_costs(tok, corpus.splitlines())
    if not rows:
        return
    st.dataframe([{t("tok.room_col_lang"): t(f"tok.room_lang_{r.language}"), t("tok.room_col_n"): r.sentences,
                   t("tok.room_col_chars"): r.chars, t("tok.room_col_tokens"): r.tokens,
                   t("tok.room_col_cpt"): round(r.chars_per_token, 2)} for r in rows],
                 hide_index=True, width="stretch")
    if len(rows) == 2:
        zh, en = rows
        a, b = zh.chars_per_token, en.chars_per_token
        same = abs(a - b) <= 0.1 * max(a, b)          # within 10 %: the merges cost both alike
        st.markdown(t("tok.room_costs_same" if same else "tok.room_costs_both", zh=f"{a:.2f}", en=f"{b:.2f}"))
