"""Predict-then-reveal questions on the Streamlit side, for each role: a student alone (pick,
Check or Skip), the lecturer (ask the room, show the answer, the projector's counts) and a student
following a class (the room's open question in an answer box above the chapter, the reveal).

``ui.render.run_sections`` draws each chapter's questions (``lmviz.chapters.questions``) just
before the section they are asked before (``Question.section``), and leaves that section out of
the page (not drawn at all, so its numbers are not in the browser) until :func:`revealed`: in a
class when the lecturer reveals (the revealed ids are published with the lecturer's settings as
``ui.follow.REVEALED``), alone when the student answers or skips. Until the reveal the
lecturer's screen (the projector) shows how many answered, not how they answered, unless the
lecturer turns the distribution on. A question a live run answers (``by_run``) is drawn beside
the run (:func:`run_questions`), which passes its answer (:func:`set_run_answers`).

Who this session is (lecturing, following, alone), the class store and the voter's id are
``ui.follow``'s. Nothing a student sends is drawn as HTML: a student sends only option ids,
checked by the store.
"""
from __future__ import annotations

import streamlit as st

from lmviz.chapters import questions as qs
from ui import handout
from ui.follow import (REVEALED, TICK_S, follow_state, client_address, current_slug, followed_view,
                       following, lecturing, publish_now, sid, store, voter)
from ui.i18n import literal, t

SKIPPED = "skip"             # a student alone who skipped a question (no answer given)


def room_question() -> None:
    """A follower's box for the room's open question, above the chapter (``ui.render.page_header``)."""
    v = followed_view()
    if v is not None and v.question is not None and qs.by_id(v.question.id) is not None:
        _answering(v.question.id)


def _label(q: qs.Question, opt: qs.Option) -> str:
    """An option as Markdown: catalogue words, or a computed label as literal text."""
    return t(opt.label_key) if opt.label_key else literal(opt.label)


def _prompt(q: qs.Question) -> None:
    s = q.solve()
    text = f"**{t('class.predict')}** · " + t(q.prompt_key, **s.prompt_args)
    st.markdown(text)
    handout.remember("md", f"q:{q.id}", text)


RUN_ANSWER = "class_run_answer:"   # + question id: the option a live run's data support (ui page sets it)


def run_questions() -> None:
    """This chapter's questions that a live run answers, drawn where the page runs it."""
    for q in qs.for_chapter(current_slug()):
        if q.by_run:
            question_block(q)


def set_run_answers(answers: dict) -> None:
    """The page's live run answered these of its chapter's ``by_run`` questions (question id ->
    option id; absent: not yet): kept for the reveal (a lecturer, a student alone). Called from
    the live section's fragment: when an answer changes, the whole page runs again once, so that
    the question's box, drawn by the page, shows it."""
    changed = False
    for q in qs.for_chapter(current_slug()):
        if q.by_run and st.session_state.get(RUN_ANSWER + q.id) != answers.get(q.id):
            st.session_state[RUN_ANSWER + q.id] = answers.get(q.id)
            changed = True
    if changed:
        st.rerun(scope="app")


def correct(q: qs.Question) -> str | None:
    """The right option of ``q``: its own, or for a question a live run answers, the run's (a
    follower's from the lecturer's reveal); None while the run has not answered."""
    if not q.by_run:
        return q.solve().correct
    if following():
        v = followed_view()
        return v.question.answer if v is not None and v.question is not None and v.question.id == q.id else None
    return st.session_state.get(RUN_ANSWER + q.id)


def _reveal(q: qs.Question, mine: str | None, counts=None) -> None:
    s = q.solve()
    right_id = correct(q)
    if right_id is None:          # a run answers it, and has not yet
        if mine is not None:
            st.info(t("class.run_pending_mine", answer=_label(q, next(o for o in s.options if o.id == mine))),
                    icon=":material/hourglass_top:")
        else:
            st.info(t("class.run_pending"), icon=":material/hourglass_top:")
        if counts is not None:
            _histogram(q, counts, None)
        return
    right = next(o for o in s.options if o.id == right_id)
    if mine is not None:
        if mine == right_id:
            st.success(t("class.right", answer=_label(q, right)), icon=":material/check_circle:")
        else:
            st.error(t("class.wrong", answer=_label(q, right)), icon=":material/cancel:")
    else:
        st.success(t("class.answer_is", answer=_label(q, right)), icon=":material/check_circle:")
    # the hand-out states the answer, not this reader's verdict on it
    handout.remember("md", f"q:{q.id}:answer", t("class.answer_is", answer=_label(q, right)))
    if counts is not None:
        _histogram(q, counts, right_id)
    text = t(q.explain_key, **s.explain_args)
    st.markdown(text)
    handout.remember("md", f"q:{q.id}:explain", text)


def _histogram(q: qs.Question, counts, correct: str | None) -> None:
    total = sum(counts.values())
    st.caption(t("class.answers", n=total))
    for o in q.solve().options:
        n = int(counts.get(o.id, 0))
        mark = " ✓" if o.id == correct else ""
        st.progress(n / total if total else 0.0, text=f"{_label(q, o)}{mark} — {n}")


def revealed(q: qs.Question) -> bool:
    """Whether the section that answers ``q`` may be drawn for this session: following a class,
    once the lecturer revealed it; lecturing, once this lecturer revealed it; alone (or exploring
    away from the class), once this student answered or skipped it."""
    if following():
        v = followed_view()
        if v is None:
            return False
        if v.question is not None and v.question.id == q.id and v.question.revealed:
            return True
        return q.id in v.settings.get(REVEALED, "").split(",")
    lect = lecturing()
    if lect:
        return q.id in lect.get("revealed", ())
    return st.session_state.get(f"class_solo:{q.id}:done") is not None


def _mark_revealed(qid: str) -> None:
    lect = lecturing()
    if lect:
        lect.setdefault("revealed", set()).add(qid)
        publish_now()


def hidden_note() -> None:
    """What stands in for a section whose question has not been revealed yet."""
    st.caption(t("class.hidden_follow" if following() else
                 "class.hidden_lect" if lecturing() else "class.hidden_solo"))


def question_block(q: qs.Question) -> None:
    """One predict-then-reveal question, drawn for this session's role."""
    if following():
        v = followed_view()
        if v is not None and v.question is not None and v.question.id == q.id:
            return   # the room's open question is drawn once, above the page
    with st.container(border=True):
        _prompt(q)
        lect = lecturing()
        if lect:
            _lecturer_question(q, lect)
        elif following():
            if revealed(q):
                _reveal(q, store().my_answer(follow_state()["code"], sid(), q.id))
            else:
                st.caption(t("class.wait_ask"))
        else:
            _solo_question(q)


def _solo_done(key: str, value: str) -> None:
    st.session_state[f"{key}:done"] = value


def _solo_question(q: qs.Question) -> None:
    s = q.solve()
    key = f"class_solo:{q.id}"
    done = st.session_state.get(f"{key}:done")
    if done:   # the reveal names the answer given (a greyed-out radio would be unreadable)
        _reveal(q, None if done == SKIPPED else done)
        return
    ids = [o.id for o in s.options]
    by = {o.id: o for o in s.options}
    pick = st.radio(t("class.your_pick"), ids, index=None, key=key,
                    format_func=lambda i: _label(q, by[i]), horizontal=len(ids) <= 4)
    left, right, _ = st.columns([2, 2, 3])
    left.button(t("class.check"), key=f"{key}:check", disabled=pick is None, type="primary",
                on_click=lambda: _solo_done(key, st.session_state[key]))
    right.button(t("class.skip"), key=f"{key}:skip", on_click=_solo_done, args=(key, SKIPPED))


def _lecturer_question(q: qs.Question, lect: dict) -> None:
    view = store().lecturer_view(lect["code"], lect["secret"])
    open_q = view.question if view.ok else None
    s = q.solve()
    if open_q is not None and open_q.id == q.id:
        _lecturer_live(q.id)
        return
    for o in s.options:
        st.markdown(f"- {_label(q, o)}")
    if q.id in lect.get("revealed", ()):
        _reveal(q, None)
        return
    answer = correct(q)          # None: a live run answers it and has not yet
    left, right, _ = st.columns([2, 2, 3])
    left.button(t("class.ask"), key=f"class_ask:{q.id}", type="primary", icon=":material/campaign:",
                on_click=lambda: (store().open_question(lect["code"], lect["secret"], q.id,
                                                        list(q.option_ids())), publish_now()))
    right.button(t("class.show_answer"), key=f"class_show:{q.id}", icon=":material/visibility:",
                 on_click=_mark_revealed, args=(q.id,), disabled=answer is None)
    if answer is None:
        st.caption(t("class.run_pending"))


def senders(k: int) -> None:
    """Under a count the room sent (answers, reports, sentences): how many client addresses it
    came from (the store's ``senders``; none known, nothing said). Each address has a share of
    the count, so a count one address filled shows as such on the projector."""
    if k:
        st.caption(t("class.senders", k=k))


@st.fragment(run_every=TICK_S)
def _lecturer_live(qid: str) -> None:
    lect = lecturing()
    q = qs.by_id(qid)
    if not lect or q is None:
        return
    h = store().histogram(lect["code"], lect["secret"], qid)
    if not h.ok:
        st.caption(t(f"class.reason.{h.reason}"))
        return
    if h.revealed:
        if qid not in lect.get("revealed", ()):
            # revealed (by the button below): the whole page reruns to draw the answering section
            _mark_revealed(qid)
            st.rerun(scope="app")
        _reveal(q, None, h.counts)
        st.button(t("class.close_q"), key=f"class_close:{qid}",
                  on_click=lambda: store().close_question(lect["code"], lect["secret"]))
        return
    # the projector shows how many answered; how they answered only when the lecturer wants
    st.markdown(t("class.answered_n", n=h.total))
    senders(h.senders)
    if st.toggle(t("class.show_dist"), key=f"class_dist:{qid}", help=t("class.show_dist_help")):
        _histogram(q, h.counts, None)
    answer = correct(q) if q.by_run else None        # a live run's answer goes to the room with the reveal
    if q.by_run and answer is None:
        st.caption(t("class.run_pending"))
    st.button(t("class.reveal_all"), key=f"class_reveal:{qid}", type="primary",
              icon=":material/visibility:", disabled=q.by_run and answer is None,
              on_click=lambda: store().reveal(lect["code"], lect["secret"], qid, answer=answer))


def send_answer(code: str, qid: str, key: str) -> None:
    """Send the pick held in ``st.session_state[key]`` as this voter's answer to ``qid``; a
    refusal other than "already answered" is kept in ``{key}:why`` for the page to say."""
    pick = st.session_state.get(key)
    if pick is None:
        return
    r = store().answer(code, voter(), qid, pick, address=client_address())
    if not r.ok and r.reason != "already_answered":
        st.session_state[f"{key}:why"] = r.reason


def pick_and_send(code: str, qid: str, key: str, options, label, pick_label: str, horizontal: bool,
                  sent: str | None) -> None:
    """The last part of a student's answer box: the pick and Send, or, once an answer is stored,
    ``sent`` (the sentence that says what was sent). Both are drawn into one slot (``st.empty``),
    so after Send the sentence *replaces* the pick and the button in the browser. Drawn as
    siblings, the button's removal after the box's fragment run relied on the browser clearing
    the run's stale elements, and in some CI runs a phone kept its Send button next to "Your
    answer: ..." (the answer stored, every script thread idle). ``label``: an option's words."""
    slot = st.empty()
    if sent is not None:
        slot.info(sent, icon=":material/hourglass_top:")
        return
    with slot.container():
        pick = st.radio(pick_label, list(options), index=None, key=key, format_func=label, horizontal=horizontal)
        st.button(t("class.send"), key=f"{key}:send", type="primary", disabled=pick is None,
                  on_click=send_answer, args=(code, qid, key))
        why = st.session_state.pop(f"{key}:why", None)
        if why:
            st.warning(t(f"class.reason.{why}"))


@st.fragment
def _answering(qid: str) -> None:
    """The room's open question for a student: a pick and Send rerun this box alone, not the
    chapter (a room answering at once cost the server a run of the whole chapter per tap). A new
    question or the reveal reaches it through the class's move, which reruns the page."""
    v = followed_view()
    q = qs.by_id(qid)
    f = follow_state()
    if q is None or f is None or v is None or v.question is None or v.question.id != qid:
        return       # the class moved on: the page's next run draws what it shows now
    code = f["code"]
    s = q.solve()
    by = {o.id: o for o in s.options}
    mine = store().my_answer(code, voter(), q.id)
    if v.question.revealed:
        # folded to its verdict: pinned open above the chapter, the answered question pushed the
        # section the lecturer now shows below the fold (a phone saw none of it)
        right_id = correct(q)
        right = next((o for o in s.options if o.id == right_id), None)
        if right is None:                   # revealed without an answer: nothing to fold to
            _prompt(q)
            _reveal(q, mine, v.question.counts)
            return
        verdict = ("class.right" if mine == right_id else "class.answer_is" if mine is None
                   else "class.wrong")
        with st.expander(t(verdict, answer=_label(q, right)), expanded=False,
                         icon=":material/check_circle:" if mine == right_id else None):
            _prompt(q)
            _reveal(q, mine, v.question.counts)
        return
    with st.container(border=True):
        st.caption(t("class.asked"))
        _prompt(q)
        ids = [o.id for o in s.options]
        pick_and_send(code, q.id, f"class_ans:{q.id}", ids, lambda i: _label(q, by[i]), t("class.your_pick"),
                      len(ids) <= 4, None if mine is None else t("class.sent", answer=_label(q, by[mine])))


def questions_for(section_key: str, first: bool) -> list[qs.Question]:
    """The questions asked just before section ``section_key`` (their ``section``; one without a
    section before the first)."""
    out = []
    for q in qs.for_chapter(current_slug()):
        if q.by_run:              # the page asks it beside the run that answers it
            continue
        if q.section == section_key or (first and not q.section):
            out.append(q)
    return out
