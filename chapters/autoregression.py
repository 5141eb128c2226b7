"""Chapter 3 · Autoregression: the chain rule (chain-rule example) on the toy sequence and on the live model,
teacher forcing (teacher-forcing example), why training is parallel and generation is not, and the causal mask (causal-mask example)."""
from __future__ import annotations

import math

import numpy as np
import streamlit as st

from lmviz import limits
from lmviz.tokenizer import fit_context
from lmviz.tokenizer import TOY_EN
from ui import model_words, session, render, urlstate
from ui.chapters import by_slug
from ui.i18n import sentences, t
from ui.i18n import lang
from viz.autoregression import chain_figure, attention_figure, mask_figure

TF_TOKENS = 12             # the live teacher-forcing table: one column per token, kept readable
ATTN_TOKENS = 24           # the live attention map: one row and column per token, kept readable

render.page_header("ar.title", "ar.intro")


# ---------------------------------------------------------------- cached pure work --------
def _bundle():
    return session.try_live_bundle("ar.no_model")


_model_key = session.model_key


@st.cache_data(max_entries=64, show_spinner=False)
def _live_chain(text: str, model_key: str, _b):
    from lmviz.chapters.autoregression import sequence_log_probs

    return sequence_log_probs(_b.model, _b.tokenizer, text)


@st.cache_data(max_entries=32, show_spinner=False)
def _parallel(ids: tuple[int, ...], model_key: str, _b):
    from lmviz.chapters.autoregression import parallel_vs_sequential

    return parallel_vs_sequential(_b.model, list(ids))


@st.cache_data(max_entries=32, show_spinner=False)
def _attention(ids: tuple[int, ...], model_key: str, _b):
    trace = session.trace(_b.model, model_key, ids)
    return [layer.weights.numpy() for layer in trace.layers]      # L x [H,T,T]


def _sentence() -> str:
    """The user's sentence, shared by the live sections (one text box, in the URL as ?s=)."""
    return st.session_state.get("ar_text") or t("ar.live_default")


# ---------------------------------------------------------------- sections ----------------
def sec_chain():
    from lmviz.chapters.autoregression import toy_chain_rule

    render.md(t("ar.chain_md"))
    render.latex(r"P(x_1,\ldots,x_n)=\prod_{t=1}^{n}P(x_t\mid x_{<t}),\qquad "
             r"\log P(x_1,\ldots,x_n)=\sum_{t=1}^{n}\log P(x_t\mid x_{<t})")
    r = toy_chain_rule()
    left, right = st.columns([3, 2])
    with left:
        fig = render.figure(chain_figure, [f.token for f in r.factors], [f.prob for f in r.factors],
                            contexts=[" ".join(f.prefix) for f in r.factors],
                            x_title=t("ar.fig.position"), y_title=t("ar.fig.prob"),
                            title=t("ar.fig.toy_title"))
        render.plot(fig, key="ar_toy_chain", filename="chain-rule-toy")
    with right:
        rows = [{t("ar.col.factor"): f"P({f.token} | {' '.join(f.prefix)})", "P": round(f.prob, 4),
                 "ln P": round(f.log_prob, 4)} for f in r.factors]
        render.table(rows, hide_index=True, width="stretch")
        c1, c2 = st.columns(2)
        render.metric(t("ar.product"), f"{r.joint:.4f}", at=c1)
        render.metric(t("ar.sum_logs"), f"{r.log_joint:.4f}", at=c2)
        render.caption(t("ar.check_exp", v=f"{r.log_joint:.4f}", p=f"{r.joint:.4f}"))
    st.info(t("ar.made_up"))
    render.md(t("ar.note_factorisation"))


def sec_live():
    render.md(t("ar.live_md"))
    urlstate.text(t("ar.live_label"), t("ar.live_default"), param="s", key="ar_text", max_chars=200)
    text = _sentence()
    b = _bundle()
    if b is None:
        return
    try:
        r = _live_chain(text, _model_key(b), b)
    except ValueError:
        st.warning(t("ar.too_short"))
        return
    render.unknown_chars(r.unknown, limit=20)
    render.context_cut(r.context)
    fig = render.figure(chain_figure, r.tokens[1:], r.probs, contexts=["".join(r.tokens[: i + 1]) for i in range(len(r.probs))],
                        best=r.best, hover_best=t("ar.fig.best"), x_title=t("ar.fig.position"),
                        y_title=t("ar.fig.prob"), title=t("ar.fig.live_title"))
    render.plot(fig, key="ar_live_chain", filename="chain-rule-live")
    c1, c2, c3 = st.columns(3)
    render.metric(t("ar.total_logp"), f"{r.total_log_prob:.2f}", at=c1)
    render.metric(t("ar.mean_loss"), f"{r.mean_loss:.3f}", at=c2)
    render.metric(t("ar.n_factors"), len(r.probs), at=c3)
    a = model_words.facts(b)
    render.caption(t(f"ar.first_given.{a.unit}", tok=render.escape(r.tokens[0]), name=model_words.name(b, a),
                     reads=model_words.reads(b, a), chars=len(text), n=len(r.tokens), f=len(r.probs)))
    render.caption(model_words.by(b, a))
    render.md(_baselines_text(b, r.mean_loss, text))


@st.cache_data(show_spinner=False, max_entries=64)
def _where_seen(text: str, corpus: str) -> str:
    from lmviz.chapters.autoregression import where_seen

    return where_seen(text, corpus)


def _baselines_text(b, mean_loss: float, text: str) -> str:
    """The sentence's mean loss beside the uniform guess and, for the default model, its held-out
    loss and the unigram baseline on held-out text of this language (from the model's metadata)."""
    from lmviz.baselines import language_report, uniform_baseline

    V = b.tokenizer.vocab_size
    u = uniform_baseline(V)
    out = t("ar.base_uniform", loss=f"{mean_loss:.3f}", ppl=f"{math.exp(min(mean_loss, 50)):,.1f}", v=f"{V:,}",
            uniform=f"{u:.3f}", uppl=f"{math.exp(u):,.0f}")
    if b.source == "default":
        try:
            rep = language_report(b.meta, lang())
        except ValueError:
            return out
        out += (" " if lang() == "en" else "") + t(
            "ar.base_default", held=f"{rep.heldout_loss:.3f}", hppl=f"{rep.heldout_ppl:,.1f}",
            uni=f"{rep.unigram:.3f}", unippl=f"{rep.unigram_ppl:,.1f}")
        out += (" " if lang() == "en" else "") + t(f"ar.seen_{_where_seen(text, rep.corpus)}")
    return out


def sec_teacher():
    from lmviz.chapters.autoregression import teacher_forcing, toy_teacher_forcing

    render.md(t("ar.tf_md"))
    cols = st.columns(2)
    for col, code in zip(cols, ("en", "zh")):
        tf = toy_teacher_forcing(code)
        with col:
            render.md(f"**{t('ar.tf_pairs', n=len(tf.pairs))}**")
            rows = [{"t": i + 1, t("ar.col.input"): " ".join(p.context), t("ar.col.label"): p.target}
                    for i, p in enumerate(tf.pairs)]
            render.table(rows, hide_index=True, width="stretch")
            shift = {t("ar.col.input"): tf.inputs, t("ar.col.label"): tf.labels}
            render.table([{"": k, **{str(i + 1): v for i, v in enumerate(vals)}} for k, vals in shift.items()],
                         hide_index=True, width="stretch")
    b = _bundle()
    if b is not None:
        ids, _ = b.tokenizer.encode_lossy(_sentence())
        toks = [b.tokenizer.token(i) for i in ids[:TF_TOKENS]]
        if len(toks) >= 2:
            tf = teacher_forcing(toks)
            # the cut is said only where something was cut (a sentence of 12 tokens is shown whole)
            render.md(t("ar.tf_live" if len(toks) < len(ids) else "ar.tf_live_all", n=len(tf.pairs), k=len(toks),
                        total=len(ids)))
            render.table([{"": t("ar.col.input"), **{str(i + 1): repr(v)[1:-1] for i, v in enumerate(tf.inputs)}},
                          {"": t("ar.col.label"), **{str(i + 1): repr(v)[1:-1] for i, v in enumerate(tf.labels)}}],
                         hide_index=True, width="stretch")
    render.caption(t("ar.tf_note"))


def sec_parallel():
    render.md(t("ar.par_md"))
    b = _bundle()
    if b is None:
        return
    # every prefix is a forward pass of its own: as many tokens as the model's view budget allows
    cap = min(limits.prefix_tokens(b.model.num_params(), str(b.model.device)), b.model.cfg.block_size)
    ids = tuple(fit_context(b.tokenizer, _sentence(), cap).ids)
    if len(ids) < 2:
        st.warning(t("ar.too_short"))
        return
    c = _parallel(ids, _model_key(b), b)
    c1, c2, c3 = st.columns(3)
    render.metric(t("ar.par_passes"), t("ar.par_passes_v", one=1, n=c.n), at=c1)
    render.metric(t("ar.par_diff"), f"{c.max_diff:.1e}", at=c2)
    render.metric(t("ar.par_future"), f"{c.future_diff:.1e}", help=t("ar.par_future_help"), at=c3)
    render.caption(t("ar.par_caption", n=c.n, last=f"{c.last_diff:.2f}"))
    total = len(b.tokenizer.encode_lossy(_sentence())[0])
    render.caption(t("ar.par_cut" if c.n < total else "ar.par_all", n=c.n, total=total,
                     cap=cap))
    render.md(t("ar.gen_md"))


def sec_mask():
    from lmviz.chapters.autoregression import causal_mask_demo, toy_scores

    render.md(t("ar.mask_md"))
    T = urlstate.slider(t("ar.mask_T"), 2, 6, 5, 1, param="T", key="ar_mask_T")
    d = causal_mask_demo(toy_scores(6)[:T, :T])
    fig = render.figure(mask_figure, d.scores.numpy(), d.masked.numpy(), d.weights.numpy(), TOY_EN[:T],
                        titles=(t("ar.fig.scores"), t("ar.fig.masked"), t("ar.fig.weights")),
                        x_title=t("ar.fig.key"), y_title=t("ar.fig.query"))
    render.plot(fig, key="ar_mask", filename="causal-mask")
    above = float(np.triu(d.weights.numpy(), 1).sum())
    render.caption(sentences(t("ar.mask_caption", above=f"{above:g}"), t("ar.scores_made_up")))

    b = _bundle()
    if b is None:
        return
    fit = fit_context(b.tokenizer, _sentence(), min(ATTN_TOKENS, b.model.cfg.block_size))
    ids, total = tuple(fit.ids), fit.total
    if len(ids) >= 2:
        weights = _attention(ids, _model_key(b), b)
        c1, c2 = st.columns(2)
        # layers and heads are counted from 1 on the page (the lists hold 0-based indices)
        layer = c1.selectbox(t("ar.layer"), range(len(weights)), key="ar_layer", format_func=lambda i: str(i + 1))
        head = c2.selectbox(t("ar.head"), range(weights[layer].shape[0]), key="ar_head",
                            format_func=lambda i: str(i + 1))
        w = weights[layer][head]
        fig = render.figure(attention_figure, w, [b.tokenizer.token(i) for i in ids], x_title=t("ar.fig.key"),
                            y_title=t("ar.fig.query"),
                            title=t("ar.fig.live_attn", layer=layer + 1, head=head + 1, name=model_words.name(b)))
        render.plot(fig, key="ar_live_attn", filename="causal-attention-live")
        render.caption(t("ar.live_attn_caption", above=f"{float(np.triu(w, 1).sum()):g}"))
        render.caption(t("ar.attn_cut" if len(ids) < total else "ar.attn_all", k=len(ids), total=total))
    att = by_slug("attention")
    if att.exists:
        st.page_link(att.file, label=t("ar.to_attention"), icon=":material/arrow_forward:")
    else:
        render.caption(t("ar.to_attention"))


render.run_sections([
    ("ar.sec_chain", sec_chain),
    ("ar.sec_live", sec_live),
    ("ar.sec_teacher", sec_teacher),
    ("ar.sec_parallel", sec_parallel),
    ("ar.sec_mask", sec_mask),
])
