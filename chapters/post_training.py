"""Chapter: after pre-training. A template is just tokens (the chapter's base model, asked in the
form it read and in a question's form; the current model's own chat template), supervised
fine-tuning live with the loss masked to the answer, a preference step (DPO) by hand and live,
and the caveats the notes keep. The computations are lmviz.chapters.post_training's."""
from __future__ import annotations

import math

import streamlit as st

from ui import chat_section, model_words, questions, render, session, urlstate
from ui.chapters import by_slug, registered
from ui.i18n import lang, sentences, t
from viz.beyond import loss_curve_figure, pipeline_figure
from viz.post_training import accuracy_figure, dpo_figure, graded_figure, learned_figure
from viz.theme import true_minus
from viz.tokenization import id_chips_html, visible

render.page_header("pt.title", "pt.intro")

SFT, DPO = "pt-sft", "pt-dpo"          # this session's tasks (ui.session.session_task)
STEP_CHOICES = (100, 200, 300)         # fine-tune steps a lecturer may pick (fewer: faster, fewer answers)
BETA_CHOICES = (0.05, 0.1, 0.2, 0.5)   # β of the hand computation and of the live steps


def _base():
    """The chapter's shipped base model in the page's language (an lmviz.train.Toy)."""
    return session.toy(f"base_{lang()}")


@st.cache_resource(show_spinner=False, max_entries=2)
def _corpus(lang_code: str):
    """The base model's pre-training corpus (built once: 11-45 ms a build, every rerun otherwise)."""
    from lmviz.chapters.post_training import base_corpus

    return base_corpus(lang_code)


@st.cache_resource(show_spinner=False, max_entries=2)
def _split(lang_code: str):
    from lmviz.chapters.post_training import SFTConfig, sft_split

    cfg = SFTConfig()
    return sft_split(lang_code, _corpus(lang_code), cfg.share, cfg.seed)


def _n(x: float) -> str:
    """A log-probability or a shift as the notes write one: −12, 5.885, −47.78 (a true minus)."""
    return true_minus(f"{x:.4g}")


def _quoted(text: str) -> str:
    return render.escape(visible(text))


# ---------------------------------------------------------------- the template is just tokens ----
@st.cache_data(show_spinner=False, max_entries=64)
def _asked(lang_code: str, i: int):
    """The base model's answers to held-out pair ``i`` in the form it read and as a question."""
    from lmviz.chapters.post_training import ask, as_statements

    toy, pair = _base(), _split(lang_code).held[i]
    return ask(toy.model, toy.tokenizer, as_statements((pair,), lang_code)[0], lang_code), \
        ask(toy.model, toy.tokenizer, pair, lang_code)


def _about_base() -> dict:
    from lmviz.chapters.post_training import BaseTrainConfig

    cfg, m = BaseTrainConfig(), _base().model.cfg
    return dict(layers=m.n_layer, heads=m.n_head, d=m.d_model, n=f"{cfg.sentences:,}", steps=f"{cfg.steps:,}",
                example=render.escape(_corpus(lang()).sentences[0]))


def sec_template():
    from lmviz.chapters.post_training import template_lesson, template_positions

    render.md(t("pt.template_md", **_about_base()))
    held = _split(lang()).held
    i = urlstate.selectbox(t("pt.city"), list(range(len(held))), index=0, param="pc", key="pt_city",
                           format_func=lambda k: held[k].city)
    statement, question = _asked(lang(), i)
    tok = _base().tokenizer
    cols = st.columns(2)
    for col, head, said, marked in ((cols[0], t("pt.form_read"), statement, frozenset()),
                                    (cols[1], t("pt.form_question"), question,
                                     template_positions(tok, held[i], lang()))):
        with col:
            render.md(f"**{head}**")
            st.html(id_chips_html(tok, said.prompt_ids, marked_at=marked))
            render.md(t("pt.said", text=_quoted(said.text),
                        verdict=t("pt.right" if said.right else "pt.wrong", answer=_quoted(held[i].answer))))
            render.metric(t("pt.first_p"), f"{said.first_prob:.3f}")
    lesson = template_lesson(statement, question)
    render.md(sentences(t("pt.template_result", city=render.escape(held[i].city), s=len(statement.prompt_ids),
                          q=len(question.prompt_ids)), t(f"pt.lesson.{lesson}")))
    render.md(t("pt.template_real"))
    chat_section.draw()


# ---------------------------------------------------------------- SFT, live ----
def _sft_key():
    """(language, steps) of this session's fine-tune, once asked for in the page's language."""
    key = st.session_state.get("pt_sft_on")
    return key if key is not None and key[0] == lang() else None


def _sft_snapshot():
    key = _sft_key()
    if key is None:
        return None
    from lmviz.chapters.post_training import SFTConfig, fine_tune

    lang_code, steps = key

    def work(ctx):
        return fine_tune(lang_code, SFTConfig(steps=steps), cancel=ctx.cancelled,
                         on_step=lambda s, _: ctx.progress(s))
    return session.session_task(SFT, key, work, name="lmviz-post-sft", total=steps)


def _tuned():
    """This session's finished fine-tune (a post_training.FineTuned), or None."""
    snap = _sft_snapshot()
    return snap.result if snap is not None and snap.state == "done" else None


def _stop_sft() -> None:
    session.task_slots().cancel(SFT)
    st.session_state["pt_sft_on"] = None
    st.session_state["pt_sft_stopped"] = True


@st.cache_data(show_spinner=False, max_entries=4)
def _graded(lang_code: str):
    from lmviz.chapters.post_training import graded_losses

    toy, pair = _base(), _split(lang_code).train[0]
    return pair, graded_losses(toy.model, toy.tokenizer, (pair,), toy.model.cfg.block_size)[0]


def sec_sft():
    from lmviz.chapters.post_training import SFTConfig

    split, cfg = _split(lang()), SFTConfig()
    render.md(t("pt.sft_md", train=len(split.train), held=len(split.held), unseen=len(split.unseen),
                batch=cfg.batch, lr=f"{cfg.lr:g}"))
    b = session.try_live_bundle(None)
    if b is not None:
        render.caption(t("pt.sft_on_base", name=model_words.name(b, start=True)))
    pair, g = _graded(lang())
    tok = _base().tokenizer
    targets = [tok.token(i) for i in (tok.encode(pair.prompt) + tok.encode(pair.answer))[1:]]
    render.plot(render.figure(graded_figure, targets, g.losses, g.graded, names=(t("pt.graded"), t("pt.not_graded")),
                              y_label=t("pt.loss_nats"), title=t("pt.graded_title", q=render.escape(pair.prompt))),
                key="pt_graded", filename="sft-mask")
    m = st.columns(3)
    render.metric(t("pt.masked"), f"{g.masked:.3f}", at=m[0])
    render.metric(t("pt.unmasked"), f"{g.unmasked:.3f}", at=m[1])
    render.metric(t("pt.prompt_loss"), f"{g.prompt:.3f}", at=m[2])
    render.md(t("pt.mask_note", k=sum(g.graded), n=len(g.graded), masked=f"{g.masked:.3f}",
                unmasked=f"{g.unmasked:.3f}"))
    questions.run_questions()
    with render.controls():
        steps = st.select_slider(t("pt.steps"), STEP_CHOICES, value=cfg.steps, key="pt_steps")
    if st.button(t("pt.tune", n=steps), key="pt_tune", type="primary", icon=":material/school:"):
        session.task_slots().cancel(SFT)
        st.session_state["pt_sft_on"] = (lang(), steps)
        st.session_state["pt_sft_stopped"] = False
    session.poll(_sft_snapshot, _sft_view)


def _sft_view(snap) -> None:
    from lmviz.chapters.post_training import answers

    if snap is None:
        questions.set_run_answers({})
        render.caption(t("pt.sft_stopped" if st.session_state.get("pt_sft_stopped") else "pt.sft_none"))
        return
    if snap.active:
        st.button(t("pt.stop"), key="pt_sft_stop", on_click=_stop_sft, icon=":material/stop:")
    if not session.task_status(snap, queued_key="pt.queued", running_key="pt.tuning", error_key="pt.error"):
        return
    ft = snap.result
    questions.set_run_answers(answers(ft.run))
    _sft_result(ft)


def _sft_result(ft) -> None:
    from lmviz.chapters.post_training import learned, prompt_loss_moved

    run, split = ft.run, ft.split
    steps = [c[0] for c in run.counted]
    render.plot(render.figure(loss_curve_figure, {t("pt.masked"): list(run.losses)}, x_label=t("pt.step"),
                              y_label=t("pt.loss_nats"), title=t("pt.loss_title")), key="pt_loss", filename="sft-loss")
    render.plot(render.figure(accuracy_figure, steps, [c[1] for c in run.counted], [c[2] for c in run.counted],
                              names=(t("pt.held", n=len(split.held)), t("pt.unseen", n=len(split.unseen))),
                              x_label=t("pt.step"), y_label=t("pt.accuracy"), title=t("pt.acc_title")),
                key="pt_acc", filename="sft-accuracy")
    first, last = run.counted[0], run.counted[-1]
    u1 = round(last[2] * len(split.unseen))
    render.md(sentences(t("pt.sft_result", steps=last[0], held=len(split.held), a0=round(first[1] * len(split.held)),
                          a1=round(last[1] * len(split.held)), p0=f"{100 * first[1]:.0f}", p1=f"{100 * last[1]:.0f}"),
                        t("pt.unseen.some" if u1 else "pt.unseen.none", u1=u1, unseen=len(split.unseen))))
    render.caption(t("pt.sft_weak", n=len(split.held), pp=f"{100 / len(split.held):.1f}"))
    lr = learned(run)
    render.plot(render.figure(learned_figure, [split.held[i].city for i in lr.order], steps,
                              [[row[i] for row in run.held_right] for i in lr.order],
                              names=(t("pt.cell_right"), t("pt.cell_wrong")), x_label=t("pt.step"),
                              title=t("pt.learned_title", n=len(split.held))), key="pt_learned", filename="sft-replay")
    render.md(sentences(t("pt.learned_note", n=len(split.held), never=lr.never),
                        t("pt.learned.lost" if lr.lost else "pt.learned.kept", lost=lr.lost)))
    render.md(sentences(t("pt.sides", n=len(split.train), p0=f"{run.before.prompt:.2f}", p1=f"{run.after.prompt:.2f}",
                          a0=f"{run.before.answer:.2f}", a1=f"{run.after.answer:.3f}"),
                        t(f"pt.sides.{prompt_loss_moved(run)}")))
    ok = lambda s: ("✓ " if s.right else "✗ ") + visible(s.text)  # noqa: E731
    render.table([{t("pt.col_q"): p.prompt, t("pt.col_right"): p.answer, t("pt.col_base"): ok(a),
                   t("pt.col_tuned"): ok(b), t("pt.col_kind"): t("pt.kind_held" if k < len(split.held) else "pt.kind_unseen")}
                  for k, (p, a, b) in enumerate(ft.said)], hide_index=True, key="pt_answers")


# ---------------------------------------------------------------- the preference step ----
def _dpo_key(beta: float):
    key = _sft_key()
    return None if key is None or st.session_state.get("pt_dpo_on") != (key, beta) else (key, beta)


def sec_dpo():
    from lmviz.chapters.post_training import DPO_EXAMPLE, dpo_by_hand

    render.md(t("pt.dpo_md"))
    render.latex(r"\mathcal{L}_{\mathrm{DPO}} = -\log\sigma\Big(\beta\big[(\log\pi(y_w\mid x) - \log\pi_{\mathrm{ref}}(y_w\mid x))"
                 r" - (\log\pi(y_l\mid x) - \log\pi_{\mathrm{ref}}(y_l\mid x))\big]\Big)")
    beta = urlstate.selectbox(t("pt.beta"), list(BETA_CHOICES), index=BETA_CHOICES.index(DPO_EXAMPLE["beta"]),
                              param="pb", key="pt_beta", format_func=lambda b: f"{b:g}")
    r = dpo_by_hand(**{**DPO_EXAMPLE, "beta": beta})
    render.md(_by_hand(r, "pt.by_hand"))
    tuned = _tuned()
    if tuned is None:
        st.info(t("pt.dpo_needs_sft", sec=render.section_number("pt.sec_sft")))
    else:
        if st.button(t("pt.prefer"), key="pt_prefer", type="primary", icon=":material/thumbs_up_down:"):
            st.session_state["pt_dpo_on"] = (_sft_key(), beta)

        def snapshot():
            key = _dpo_key(beta)
            if key is None:
                return None
            from lmviz.chapters.post_training import DPOConfig, prefer

            return session.session_task(DPO, key, lambda ctx: prefer(tuned, DPOConfig(beta=beta), cancel=ctx.cancelled),
                                        name="lmviz-post-dpo", inline_s=1.0)
        session.poll(snapshot, _dpo_view)
    render.md(t("pt.rl_md"))
    for k in ("rlhf", "rlvr"):
        stages = [(t(f"pt.{k}{i}"), t(f"pt.{k}{i}_body")) for i in range(1, 4)]
        render.plot(render.figure(pipeline_figure, stages, title=t(f"pt.{k}_title")), key=f"pt_{k}", filename=k)
    render.caption(t("pt.rl_not_run"))


def _by_hand(r, key: str) -> str:
    return t(key, beta=f"{r.beta:g}", c=_n(r.chosen), r=_n(r.rejected), rc=_n(r.ref_chosen), rr=_n(r.ref_rejected),
             dw=_n(r.chosen_shift), dl=_n(r.rejected_shift), m=_n(r.margin), p=f"{r.prob:.4f}", loss=f"{r.loss:.4f}",
             ln2=f"{math.log(2):.4f}")


def _dpo_view(snap) -> None:
    from lmviz.chapters.post_training import dpo_how
    if snap is None:
        render.caption(t("pt.dpo_none"))
        return
    if not session.task_status(snap, queued_key="pt.queued", running_key="pt.preferring", error_key="pt.error"):
        return
    res = snap.result
    s = res.steps
    render.table([{t("pt.col_q"): p.prompt, t("pt.col_chosen"): p.chosen, t("pt.col_rejected"): visible(p.rejected)}
                  for p in res.prefs], hide_index=True, key="pt_prefs")
    render.plot(render.figure(dpo_figure, [x.step for x in s], [x.margin for x in s], [x.kl for x in s],
                              [x.chosen_shift for x in s], [x.rejected_shift for x in s],
                              names=(t("pt.margin"), t("pt.kl"), t("pt.chosen_shift"), t("pt.rejected_shift")),
                              x_label=t("pt.step"), y_labels=(t("pt.margin_axis"), t("pt.shift_axis")),
                              title=t("pt.dpo_title", n=len(res.prefs))), key="pt_dpo", filename="dpo-steps")
    render.md(sentences(t("pt.dpo_result", steps=s[-1].step, n=len(res.prefs), m=_n(s[-1].margin),
                          loss0=f"{s[0].loss:.3f}", loss1=f"{s[-1].loss:.3f}", dw=_n(s[-1].chosen_shift),
                          dl=_n(s[-1].rejected_shift), kl=f"{s[-1].kl:.2f}"), t(f"pt.dpo_how.{dpo_how(s[-1])}")))
    render.md(sentences(t("pt.dpo_first", q=render.escape(res.prefs[0].prompt), before=_quoted(res.prefs[0].rejected),
                          after=_quoted(res.now_first)), _by_hand(res.first, "pt.by_hand_real")))


# ---------------------------------------------------------------- caveats ----
def sec_caveats():
    render.md(t("pt.caveats_md", sec=render.section_number("pt.sec_sft")))
    if any(c.slug == "beyond" for c in registered()):
        st.page_link(by_slug("beyond").file, label=t("pt.link_beyond"), icon=":material/explore:")


render.run_sections([
    ("pt.sec_template", sec_template),
    ("pt.sec_sft", sec_sft),
    ("pt.sec_dpo", sec_dpo),
    ("pt.sec_caveats", sec_caveats),
])
