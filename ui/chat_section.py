"""The chat-template section, drawn by /beyond (how an instruct model is asked) and /post-training
(the template is just tokens): the current model's own template (its records' ``chat_template``)
applied to a question, shown token by token, and its greedy answer with and without it
(``lmviz.chapters.beyond_chat``). One section, two chapters: the strings are /beyond's (``bey.chat_*``)."""
from __future__ import annotations

import streamlit as st

from lmviz.chapters.examples import CHAT_QUESTION, default_for, model_languages
from ui import model_words, render, session, urlstate
from ui.i18n import lang, language_names, listed, t
from viz.tokenization import id_chips_html, visible

CHAT_MAX_CHARS = 120     # the question's length (the answer is bounded by beyond_chat.MAX_NEW_TOKENS)
CHAT_INLINE_S = 0.5      # tried on the page first; slower (a real model on a CPU) runs as a task


def _chat_status(snap) -> None:
    session.task_status(snap, queued_key="bey.chat_queued", running_key="bey.chat_running",
                        error_key="bey.chat_error")


def draw():
    """The section: the current model's chat template applied to a question, token by token, and
    its greedy answer with and without it."""
    from lmviz.chapters.beyond_chat import MAX_NEW_TOKENS, TemplateRefused, both_answers, stop_ids, templated

    render.md(t("bey.chat_md", n=MAX_NEW_TOKENS))
    b = session.try_live_bundle(None)
    if b is None:
        st.info(t("bey.no_model"))
        return
    name, tok = model_words.name(b), b.tokenizer
    name_first = model_words.name(b, start=True)          # at the start of a sentence
    template = b.meta.get("chat_template") or ""
    if not template or not hasattr(tok, "special"):
        render.md(t("bey.chat_none", name=name_first))
        return
    in_lang, default = default_for(CHAT_QUESTION, lang(), b.meta)
    question = urlstate.text(t("bey.chat_question"), default, param="cq", key=f"bey_chat_q:{in_lang}",
                             max_chars=CHAT_MAX_CHARS)
    known = model_languages(b.meta)
    if known is not None and lang() not in known:
        render.caption(t("bey.chat_lang_note", name=name_first, langs=language_names(known)))
    if not question.strip():
        st.warning(t("bey.empty_stem"))
        return
    names = {i: c for c, i in tok.special.items()}
    special = lambda k: names.get(b.meta.get(k)) if b.meta.get(k) is not None else None  # noqa: E731
    try:
        text = templated(template, question, bos=special("bos_token_id") or "", eos=special("eos_token_id") or "")
    except TemplateRefused as e:
        st.warning(t("bey.chat_refused", name=name_first, why=t(e.key, **e.params)))
        return
    chat_ids, plain_ids = tok.encode(text), tok.encode(question)
    marked = frozenset(i for i in chat_ids if i in names)
    render.md(t("bey.chat_tokens", name=name, n=len(chat_ids), q=len(plain_ids), k=len(marked),
                specials=listed(f"`{names[i]}`" for i in sorted(marked))))
    st.html(id_chips_html(tok, chat_ids, marked=marked, bytes_word=t("bey.chat_bytes")))
    stops = stop_ids(b.meta, tok.special)
    key = (session.model_key(b), question)

    def work(ctx):
        return both_answers(b.model, plain_ids, chat_ids, stops, MAX_NEW_TOKENS, cancel=ctx.cancelled,
                            progress=ctx.progress)

    snapshot = lambda: session.session_task("chat", key, work, name="lmviz-beyond-chat",  # noqa: E731
                                            total=2 * MAX_NEW_TOKENS, inline_s=CHAT_INLINE_S)
    snap = snapshot()
    if snap.state != "done":
        session.poll(snapshot, _chat_status)           # reruns the page when the answers are in
        return
    plain, chat = snap.result
    cols = st.columns(2)
    for col, head, a in ((cols[0], t("bey.chat_without"), plain), (cols[1], t("bey.chat_with"), chat)):
        with col:
            render.md(f"**{head}**")
            st.html(id_chips_html(tok, a.answer_ids, marked=marked, bytes_word=t("bey.chat_bytes")))
            render.metric(t("bey.chat_first_p"), f"{a.first_prob:.3f}")
    render.md(chat_sentence(tok, name, plain, chat, stops, MAX_NEW_TOKENS))


def chat_sentence(tok, name: str, plain, chat, stops, max_new: int) -> str:
    """The sentence under the two answers, from the answers themselves."""
    def said(a) -> str:
        body = [i for i in a.answer_ids if i not in stops]
        words = render.escape(tok.decode(body).strip())
        if not words:
            return t("bey.chat_said_nothing", stop=render.escape(tok.token(a.answer_ids[-1])) if a.answer_ids else "")
        end = t("bey.chat_end_stop", stop=render.escape(tok.token(a.answer_ids[-1]))) if a.stopped \
            else t("bey.chat_end_cut", n=max_new)
        return t("bey.chat_said", words=words, end=end)

    first = lambda a: render.escape(visible(tok.token(a.answer_ids[0]))) if a.answer_ids else "∅"  # noqa: E731
    return t("bey.chat_result", name=name, plain=said(plain), chat=said(chat), f0=first(plain), f1=first(chat),
             p0=f"{plain.first_prob:.3f}", p1=f"{chat.first_prob:.3f}")
