"""Chapter: beyond next-token prediction. Why it learns structure (capital-corpus example, trained live), robot actions
as tokens (robot-actions example, trained live), where knowledge lives: weights, context, retrieval, and how an
instruct model is asked a question: its chat template, the same question with and without it."""
from __future__ import annotations

import numpy as np
import streamlit as st

from lmviz.capitals import NOTES_SENTENCES, country_floor, notes_floor
from lmviz.chapters.beyond_retrieval import BM25, load_documents, best_sentence, choose_condition, context_shift
from lmviz.chapters.about_model import answer_ids, prompt_for
from lmviz.chapters.claims import context_use, robot
from lmviz.chapters.examples import CONDITIONS, default_for, model_languages
from lmviz.tokenizer import fit_context
from ui import chat_section, model_words, session, render, urlstate
from ui.i18n import lang, language_names, t, translate
from viz.beyond import (
    attention_figure, loss_curve_figure, position_loss_figure, summary_figure, bin_probs_figure,
    binning_figure, rollout_figure, token_row_figure, shift_figure, scores_figure, context_figure,
    position_use_figure, pipeline_figure,
)
from viz.tokenization import visible

render.page_header("bey.title", "bey.intro")

STEP_CHOICES = (100, 200, 300, 500)   # optimizer steps a lecturer may pick (fewer: faster, rougher)
START, TARGET = (-0.8, -0.6), (0.7, 0.5)
ANSWER_KEYS = ("q1", "q2", "q3")      # the retrieval presets: bey.<k> (question), bey.<k>_answer


# ---------------------------------------------------------------- background training ----
def _demo(purpose: str, key: tuple, train, cfg):
    """A snapshot function of this session's demo training ``purpose`` at the settings ``key``: one
    task per session and demo, the previous one cancelled when a setting changes, all cancelled
    when the session ends (ui.session.session_task). The same settings give the same (seeded)
    model, so a finished one is shared with every session."""
    def work(ctx):
        return train(cfg, on_step=lambda s, _: ctx.progress(s), cancel=ctx.cancelled)
    return lambda: session.session_task(purpose, key, work, name=f"lmviz-beyond-{purpose}", total=cfg.steps)


def _structure_job(lang_code: str, steps: int):
    from lmviz.chapters.beyond_structure import StructureConfig, train_structure

    return _demo("structure", (lang_code, steps), train_structure, StructureConfig(lang=lang_code, steps=steps))


def _robot_job(n_bins: int, steps: int):
    from lmviz.chapters.beyond_robot import RobotConfig, train_policy

    return _demo("robot", (n_bins, steps), train_policy, RobotConfig(n_bins=n_bins, steps=steps))


def _train_button(label_key: str, flag: str, key: str) -> bool:
    if st.button(t(label_key), key=key, type="primary"):
        st.session_state[flag] = True
    return bool(st.session_state.get(flag))


def _result(snap):
    """The task's result once it is done (None before), with its status line drawn."""
    done = session.task_status(snap, queued_key="bey.train_queued", running_key="bey.training",
                               error_key="bey.train_error")
    return snap.result if done else None


# ---------------------------------------------------------------- structure: the capital corpus ----
@st.cache_resource(show_spinner=False, max_entries=4)
def _prepared(lang_code: str):
    from lmviz.chapters.beyond_structure import StructureConfig, prepare

    return prepare(StructureConfig(lang=lang_code))


@st.cache_resource(show_spinner=False, max_entries=4)
def _untrained(lang_code: str, vocab_size: int, block: int):
    from lmviz.chapters.beyond_structure import StructureConfig, untrained_transformer

    return untrained_transformer(vocab_size, block, StructureConfig(lang=lang_code))


def sec_structure():
    render.md(t("bey.struct_md"))
    corpus_lang = urlstate.selectbox(t("bey.corpus_lang"), ["en", "zh"], index=0 if lang() == "en" else 1,
                                     param="wl", key="bey_wlang",
                                     format_func=lambda c: {"en": "English", "zh": "中文"}[c])
    corpus, vocab, seqs, bigram = _prepared(corpus_lang)
    pool = list(corpus.sentences[:40]) + list(corpus.heldout_sentences)
    n_train = 40
    i = urlstate.slider(t("bey.sentence"), 0, len(pool) - 1, 0, param="ws", key="bey_sent")
    sentence = pool[i]
    held = i >= n_train
    render.caption(t("bey.sentence_heldout" if held else "bey.sentence_train", s=render.escape(sentence)))
    with render.controls():
        steps = st.select_slider(t("bey.steps"), STEP_CHOICES, value=300, key="bey_wsteps")
    started = _train_button("bey.train_struct", "bey_w_started", "bey_w_train")

    def body(snap):
        from lmviz.chapters.beyond_structure import country_attention, sentence_losses

        res = _result(snap)
        if res is None:
            sl, att = _untrained_view(corpus_lang, sentence)
            st.info(t("bey.struct_untrained"))
        else:
            sl, att = (sentence_losses(sentence, vocab, bigram, res.model),
                       country_attention(sentence, vocab, res.model))
        names = (t("bey.bigram"), t("bey.transformer") if res else t("bey.transformer_untrained"))
        c = sl.country
        render.plot(render.figure(position_loss_figure, sl.tokens[1:], sl.bigram, sl.transformer, c, names=names,
                                         y_label=t("bey.loss_nats"), country_label=t("bey.country"),
                                         title=t("bey.pos_loss_title")),
                    key="bey_posloss", filename="structure-loss")
        m1, m2 = st.columns(2)
        render.metric(t("bey.country_loss", model=names[0]), f"{sl.bigram[c]:.2f}", at=m1)
        render.metric(t("bey.country_loss", model=names[1]), f"{sl.transformer[c]:.2f}", at=m2)
        left, right = st.columns(2)
        with left:
            render.plot(render.figure(attention_figure, att.tokens, att.weights, att.city, row_label=t("bey.layer_head"),
                                         city_label=t("bey.city"), title=t("bey.att_title", token=att.tokens[-1])),
                        key="bey_att", filename="structure-attention")
            render.caption(t("bey.att_caveat"))
        with right:
            if res is not None:
                groups, b, tr = [t("bey.seen_cities")], [res.train_summary.bigram], [res.train_summary.transformer]
                if res.heldout_summary is not None:
                    groups.append(t("bey.heldout_cities"))
                    b.append(res.heldout_summary.bigram)
                    tr.append(res.heldout_summary.transformer)
                render.plot(render.figure(summary_figure, groups, b, tr, names=(t("bey.bigram"), t("bey.transformer")),
                                           y_label=t("bey.loss_nats"), title=t("bey.summary_title")),
                            key="bey_summary", filename="structure-summary")
                s, h = res.train_summary, res.heldout_summary
                render.md(t("bey.summary_md", bt=s.bigram, tt=s.transformer, ba=100 * s.bigram_acc,
                            ta=100 * s.transformer_acc, bh=h.bigram if h else float("nan"),
                            th=h.transformer if h else float("nan"),
                            tah=100 * h.transformer_acc if h else 0.0, n=h.n if h else 0))
                render.plot(render.figure(loss_curve_figure, {t("bey.transformer"): res.losses}, x_label=t("bey.step"),
                                              y_label=t("bey.loss_nats"), title=t("bey.curve_title")),
                            key="bey_wcurve", filename="structure-curve")
            else:
                st.info(t("bey.struct_train_hint"))

    session.poll(_structure_job(corpus_lang, steps) if started else lambda: None, body)
    _corpora_side_by_side(corpus, corpus_lang)


@st.cache_resource(show_spinner=False, max_entries=4)
def _floors(lang_code: str):
    """(the notes' floor, the generated corpus's floor): the same for every student."""
    corpus = _prepared(lang_code)[0]
    return notes_floor(), country_floor(list(corpus.sentences))


@st.cache_resource(show_spinner=False, max_entries=256)
def _untrained_view(lang_code: str, sentence: str):
    """The untrained transformer's losses and country attention on ``sentence``: a first visit's
    view, computed once per sentence for every student."""
    from lmviz.chapters.beyond_structure import country_attention, sentence_losses

    _, vocab, seqs, bigram = _prepared(lang_code)
    model = _untrained(lang_code, len(vocab), max(len(s) for s in seqs) - 1)
    return sentence_losses(sentence, vocab, bigram, model), country_attention(sentence, vocab, model)


def _corpora_side_by_side(corpus, lang_code: str) -> None:
    """The notes' own three sentences next to the corpus lmviz generates, each with the best loss a
    bigram can reach at the country (lmviz.capitals.country_floor)."""
    nf, gf = _floors(lang_code)
    left, right = st.columns(2)
    with left:
        render.md(t("bey.notes_corpus", n=len(NOTES_SENTENCES)))
        render.code("\n".join(NOTES_SENTENCES), language=None)
        render.caption(t("bey.notes_floor", k=nf.n_countries, big=f"{nf.bigram_nats:.3f}", city=f"{nf.city_nats:.3f}"))
    with right:
        render.md(t("bey.corpus_sample", n=len(corpus.sentences), h=len(corpus.heldout_sentences)))
        render.code("\n".join(corpus.sentences[:8]), language=None)
        render.caption(t("bey.gen_floor", k=gf.n_countries, big=f"{gf.bigram_nats:.3f}", city=f"{gf.city_nats:.3f}"))


# ---------------------------------------------------------------- robot actions as tokens ----
@st.cache_resource(show_spinner=False, max_entries=8)
def _untrained_policy(n_bins: int):
    from lmviz.chapters.beyond_robot import RobotConfig, new_policy

    return new_policy(RobotConfig(n_bins=n_bins))


@st.cache_resource(show_spinner=False, max_entries=64)
def _untrained_rollout(n_bins: int, instr: str):
    """The untrained policy's 20 steps from START to TARGET: the same for every student."""
    from lmviz.chapters.beyond_robot import RobotConfig, rollout

    return rollout(_untrained_policy(n_bins), START, TARGET, instr, RobotConfig(n_bins=n_bins), n_steps=20)


def sec_robot():
    from lmviz.chapters.beyond_robot import (INSTRUCTIONS, RobotConfig, decode_bins, round_trip, rollout,
        token_label)

    render.md(t("bey.robot_md"))
    st.info(t("bey.robot_obs", n=len(INSTRUCTIONS), bins=RobotConfig().n_obs_bins))
    n_bins = urlstate.slider(t("bey.n_bins"), 3, 31, 11, 2, param="nb", key="bey_bins")
    cfg = RobotConfig(n_bins=n_bins)
    v = np.linspace(-cfg.max_step, cfg.max_step, 801)
    rt = round_trip(v, cfg)
    edges = np.linspace(-cfg.max_step, cfg.max_step, n_bins + 1)
    left, right = st.columns([3, 2])
    with left:
        render.plot(render.figure(binning_figure, v, rt.decoded, edges, x_label=t("bey.action_cont"), y_label=t("bey.action_dec"),
                                   err_label=t("bey.q_error"), names=(t("bey.exact"), t("bey.decoded")),
                                   title=t("bey.binning_title", n=n_bins)),
                    key="bey_binning", filename="robot-binning")
    with right:
        render.metric(t("bey.bin_width"), f"{cfg.bin_width:.4f}")
        render.metric(t("bey.max_error"), f"{np.abs(rt.error).max():.4f}", help=t("bey.half_bin", h=rt.half_bin))
        render.md(t("bey.binning_md"))
    instr_names = {k: t(f"bey.instr_{k}") for k in INSTRUCTIONS}
    instr = st.radio(t("bey.instruction"), INSTRUCTIONS, format_func=instr_names.get, horizontal=True,
                     key="bey_instr")
    with render.controls():
        steps = st.select_slider(t("bey.steps"), STEP_CHOICES, value=300, key="bey_rsteps")
    started = _train_button("bey.train_robot", "bey_r_started", "bey_r_train")

    def body(snap):
        res = _result(snap)
        trained = res[0] if res is not None else None
        name = t("bey.trained") if trained is not None else t("bey.untrained")
        offset = np.subtract(TARGET, START)
        r_model = rollout(trained, START, TARGET, instr, cfg, n_steps=20) if trained is not None else \
            _untrained_rollout(n_bins, instr)
        sp = r_model.steps[0]
        groups = [token_label(i, cfg)[0] for i in sp.tokens]
        centres_o = decode_bins(np.arange(cfg.n_obs_bins), -cfg.obs_range, cfg.obs_range, cfg.n_obs_bins)
        centres_a = decode_bins(np.arange(n_bins), -cfg.max_step, cfg.max_step, n_bins)
        labels = []
        for tok, g in zip(sp.tokens, groups):
            k = token_label(tok, cfg)[1]
            val = instr_names[INSTRUCTIONS[k]] if g == "instr" else \
                f"{(centres_o if g in ('ox', 'oy') else centres_a)[k]:+.2f}"
            labels.append(f"#{tok}<br>{val}")
        gnames = {g: t(f"bey.group_{g}") for g in ("instr", "ox", "oy", "ax", "ay")}
        render.plot(render.figure(token_row_figure, labels, groups, group_names=gnames, predicted_from=3,
                                     title=t("bey.tokens_title", model=name)),
                    key="bey_tokens", filename="robot-tokens")
        render.caption(t("bey.tokens_caption", dx=offset[0], dy=offset[1]))
        ex = (sp.expert_tokens[3] - cfg.offset("ax"), sp.expert_tokens[4] - cfg.offset("ay"))
        render.plot(render.figure(bin_probs_figure, centres_a, sp.px, sp.py, ex,
                                     titles=(t("bey.px_title"), t("bey.py_title")),
                                     x_label=t("bey.bin_centre"), y_label=t("bey.prob")),
                    key="bey_probs", filename="robot-probs")
        render.caption(t("bey.probs_caption", model=name))
        paths = {t("bey.untrained"): _untrained_rollout(n_bins, instr).positions}
        if trained is not None:
            paths[t("bey.trained")] = r_model.positions
        render.plot(render.figure(rollout_figure, paths, START, TARGET, start_label=t("bey.start"), target_label=t("bey.target"),
                                   title=t("bey.rollout_title")),
                    key="bey_rollout", filename="robot-rollout")

        render.md(render.claim(robot(float(np.linalg.norm(offset)), r_model.final_distance), model=name))

    session.poll(_robot_job(n_bins, steps) if started else lambda: None, body)


# ---------------------------------------------------------------- knowledge ----
def _bundle():
    return session.try_live_bundle(None)


@st.cache_resource(show_spinner=False)
def _docs():
    docs = load_documents()
    return docs, BM25([d.text for d in docs])


@st.cache_data(show_spinner=False, max_entries=64)
def _context_shift(ctx_ids: tuple[int, ...], prompt_ids: tuple[int, ...], model_key: str, _model):
    """lmviz.chapters.beyond_retrieval.context_shift, cached per ``model_key`` and ids."""
    return context_shift(_model, ctx_ids, prompt_ids)


@st.cache_data(show_spinner=False, max_entries=16)
def _condition(in_lang: str, model_key: str, _model, _tok):
    """lmviz.chapters.beyond_retrieval.choose_condition of the language's examples, once per model."""
    return choose_condition(_model, _tok, CONDITIONS[in_lang])


@st.cache_data(show_spinner=False)
def _reader_accuracy(n: int = 100):
    """How often the reader toy answers right with the right passage, another pair's, or none."""
    from lmviz.chapters.beyond_reader import answer_accuracy

    toy = session.toy("reader")
    return answer_accuracy(toy.model, toy.tokenizer, n), n


def _shift(model, tok, model_key: str, prompt: str, context: str, answer: str, names: tuple[str, str],
           key: str, title: str, leave_out: tuple[int, ...] = ()) -> None:
    """The next-token distribution after ``prompt`` alone and after ``context + prompt`` (the
    context cut at its end to fit the window, the cut measured), and what it does to the
    probability of the answer's first token (ContextShift.claim: lmviz.chapters.claims.answer_shift).
    ``leave_out``: token ids the chart does not show (the reader toy's names of the other
    language), their share said beside it."""
    block = model.cfg.block_size
    prompt_fit = fit_context(tok, prompt, block, keep="end")
    prompt_ids = prompt_fit.ids
    ctx_ids, unknown = tok.encode_lossy(context)
    sh = _context_shift(tuple(ctx_ids), tuple(prompt_ids), model_key, model)
    p0, p1, cut = sh.p_before, sh.p_after, sh.cut
    ans = answer_ids(tok, prompt, answer)        # as the model writes it after the prompt: " Paris"
    out = list(leave_out)
    q0, q1 = p0.copy(), p1.copy()
    q0[out], q1[out] = -1.0, -1.0                       # never among the top
    top = set(np.argsort(-q0)[:6]) | set(np.argsort(-q1)[:6]) | ({ans[0]} if ans else set())
    top = sorted(top, key=lambda i: -p1[i])
    shown = [visible(tok.token(i)) for i in top]      # labels of the shown tokens only (49,152 took 0.1 s)
    render.plot(render.figure(shift_figure, shown, p0[top], p1[top], names=names, y_label=t("bey.prob"), title=title),
                key=key, filename=key)
    if out:
        render.caption(t("bey.other_names", n=len(out), p0=float(p0[out].sum()), p1=float(p1[out].sum())))
    c1, c2, c3 = st.columns(3)
    render.metric(t("bey.kl"), f"{sh.kl:.3f}", at=c1)
    render.metric(t("bey.ctx_read"), f"{sh.read}", at=c2)
    render.metric(t("bey.ctx_cut"), f"{cut}", at=c3)
    if cut:
        render.caption(t("bey.ctx_cut_note", cut=cut, block=block))
    render.unknown_chars(unknown)            # words of the context the model cannot read
    render.context_cut(prompt_fit)           # the question itself longer than the window
    if not ans:
        st.info(t("bey.no_answer"))
        return
    tok_label = render.escape(visible(tok.token(ans[0])))
    render.md(render.claim(sh.claim(ans[0]), tok=tok_label))


def _other_names(tok) -> tuple[int, ...]:
    from lmviz.chapters.beyond_reader import other_language_names    # (it imports the Trainer)

    return tuple(other_language_names(tok, lang()))


def _live_or_note():
    b = _bundle()
    if b is None:
        st.info(t("bey.no_model"))
    return b


def sec_knowledge():
    render.md(t("bey.know_md"))
    names = {s: t(f"bey.reader.{s}") for s in session.TOY_OR_LIVE}   # resolved now, not in the lambda
    chosen = session.toy_or_live("reader", t("bey.reader_source"), names, key="bey_k_src",
                                 missing_key="bey.reader_missing", live=_live_or_note)
    if chosen is None:
        return
    src, model, tok, model_key, _ = chosen
    docs, bm = _docs()
    presets = [t(f"bey.{k}") for k in ANSWER_KEYS]
    query = urlstate.selectbox(t("bey.question"), presets, param="q", key="bey_q")
    scores = bm.scores(query)
    order = [i for i in np.argsort(-scores)[:6] if scores[i] > 0]     # a passage with no word in common is not retrieved
    best = int(np.argmax(scores))
    if scores[best] <= 0:
        st.warning(t("bey.no_hit"))
        return

    passage = best_sentence(docs[best].text, query)
    left, right = st.columns([2, 3])
    with left:
        render.plot(render.figure(scores_figure, [docs[i].title for i in order], scores[order], 0, x_label=t("bey.bm25"),
                                  title=t("bey.ret_title")), key="bey_scores", filename="retrieval-scores")
    with right:
        render.md(t("bey.passage", name=render.escape(docs[best].title)))
        render.code(passage, language=None)
        answer = t(f"bey.{ANSWER_KEYS[presets.index(query)]}_answer")
        render.caption(t("bey.answer_is", answer=render.escape(answer)))
        _shift(model, tok, model_key, prompt_for(tok, query), passage + " ", answer,
               (t("bey.without_ctx"), t("bey.with_ctx")), "bey_shift", t(f"bey.shift_title.{src}"),
               leave_out=_other_names(tok) if src == "toy" else ())
        if src == "live":
            render.caption(model_words.by(chosen[4]))
    if src == "toy":
        acc, n = _reader_accuracy()
        a = {k: f"{v:.0%}" for k, v in acc[lang()].items()}
        render.caption(t("bey.reader_note", layers=model.cfg.n_layer, heads=model.cfg.n_head, vocab=tok.vocab_size,
                     n=n, about=a["about"], other=a["other"], none=a["none"]))
    render.md(t("bey.know_caveat"))


def sec_window():
    render.md(t("bey.window_md"))
    render.md(t("bey.note_summary"))
    b = _bundle()
    if b is not None:
        cfg = b.model.cfg
        L, hkv, dh, block = cfg.n_layer, cfg.n_kv_head, cfg.head_dim, cfg.block_size
    else:
        L, hkv, dh, block = 4, 4, 32, 256
    n = np.array([2 ** k for k in range(4, 18)], dtype=np.float64)
    kv = 2 * L * n * hkv * dh * 4                       # K and V, every layer, fp32 bytes
    entries = L * hkv * n * n                           # attention scores per full forward
    render.plot(render.figure(context_figure, n, kv, entries, block, x_label=t("bey.ctx_len"),
                               names=(t("bey.kv_bytes"), t("bey.score_entries")),
                               limit_label=t("bey.trained_limit", n=block), title=t("bey.window_title"), lang=lang()),
                key="bey_window", filename="context-window")
    render.caption(t("bey.window_caption", L=L, h=hkv, dh=dh))
    if b is not None:
        _window_use(b)


@st.cache_data(show_spinner=False, max_entries=8)
def _position_loss(lang_code: str, model_key: str, _b):
    from lmviz.chapters.loss_and_gradients_objective import loss_by_position

    if lang_code == "zh":
        from lmviz.poetry import load_poetry

        text = load_poetry().heldout_text
    else:
        from lmviz.data import paragraph_split

        text = paragraph_split("english", 0.1, 0)[1]
    return loss_by_position(_b.model, _b.tokenizer.encode_lossy(text)[0])


def _window_use(b) -> None:
    """Holding a long context is not using it: the live model's loss at each position of its window."""
    try:
        r = _position_loss(lang(), session.model_key(b), b)
    except ValueError:
        return
    corpus = t("bey.heldout_poems" if lang() == "zh" else "bey.heldout_english")
    claim = context_use(r.used_until, r.plateau, r.tolerance, r.spread)
    used_label = {"not_level": t("bey.pos_not_level", n=len(r.positions)),      # the chart's label says
                  "level_noisy": t("bey.pos_used_noisy", n=r.used_until)}.get(  # no more than the sentence
        claim.statement, t("bey.pos_used", n=r.used_until))
    render.plot(render.figure(position_use_figure, r.positions, r.losses, r.used_until, r.plateau, x_label=t("bey.pos_read"),
                              y_label=t("bey.loss_nats"), curve_name=t("bey.pos_curve"),
                              plateau_name=t("bey.pos_plateau"), used_label=used_label,
                              title=t("bey.pos_title", corpus=corpus), spread=r.spread, tolerance=r.tolerance,
                              band_name=t("bey.pos_band", tol=f"{r.tolerance:g}")),
                key="bey_use", filename="context-use")
    level = render.claim(claim, T=len(r.positions), n=r.n_windows)
    render.md(t("bey.window_use", corpus=corpus, T=len(r.positions), n=r.n_windows, first=f"{r.losses[0]:.3f}",
                level=level))
    if b.source == "session":
        render.caption(t("bey.window_use_session"))
    elif b.source == "pretrained":
        render.caption(t("bey.window_use_pretrained", name=model_words.name(b)))


def sec_objective():
    render.md(t("bey.objective_md"))
    b = _bundle()
    if b is not None:
        a = model_words.facts(b)
        render.md(t("bey.scale_note", name=model_words.name(b, a), params=f"{a.params:,}"))


def sec_post():
    b = _bundle()
    if b is not None:
        a = model_words.facts(b)
        render.md(t("bey.post_model.instruct" if a.instruct else "bey.post_model.base", name=model_words.name(b, a)))
    render.md(t("bey.post_md"))
    stages = [(t(f"bey.stage{i}"), t(f"bey.stage{i}_body")) for i in range(1, 4)]
    render.plot(render.figure(pipeline_figure, stages, title=t("bey.post_title")), key="bey_post", filename="post-training")
    render.md(t("bey.note_post_order"))


def sec_prompt():
    render.md(t("bey.prompt_md"))
    render.md(t("bey.note_prompt_knowledge"))
    b = _bundle()
    if b is None:
        st.info(t("bey.no_model"))
        return
    # the defaults in a language the model's records say it learned (SmolLM2: English on a Chinese page)
    in_lang = default_for({"en": "", "zh": ""}, lang(), b.meta)[0]
    examples = CONDITIONS[in_lang]
    chosen = _condition(in_lang, session.model_key(b), b.model, b.tokenizer).index
    q0, p0, a0 = examples[chosen]
    stem = urlstate.text(t("bey.stem"), prompt_for(b.tokenizer, q0), param="ps", key="bey_stem", max_chars=80)
    prefix = urlstate.text(t("bey.prefix"), p0, param="pp", key="bey_prefix", max_chars=300, area=True)
    answer = urlstate.text(t("bey.answer"), a0, param="pa", key="bey_answer", max_chars=40)
    if chosen and (stem, prefix, answer) == (prompt_for(b.tokenizer, q0), p0, a0):
        render.caption(t("bey.prompt_chosen", first=render.escape(examples[0][0].strip())))
    if in_lang != lang():
        render.caption(t("bey.prompt_lang_note", name=model_words.name(b, start=True),
                         langs=language_names(model_languages(b.meta))))
    if not stem.strip():
        st.warning(t("bey.empty_stem"))
        return
    _shift(b.model, b.tokenizer, session.model_key(b), stem, prefix, answer,
           (t("bey.stem_only"), t("bey.with_prefix")), "bey_prompt", t("bey.prompt_title"))
    render.caption(model_words.by(b))


render.run_sections([
    ("bey.sec_struct", sec_structure),
    ("bey.sec_robot", sec_robot),
    ("bey.sec_know", sec_knowledge),
    ("bey.sec_window", sec_window),
    ("bey.sec_objective", sec_objective),
    ("bey.sec_post", sec_post),
    ("bey.sec_chat", chat_section.draw),
    ("bey.sec_prompt", sec_prompt),
])
