"""Chapter 6 · Logits, loss and gradients: softmax and cross-entropy on [2, 1, -1] (softmax example, cross-entropy example),
perplexity of the live model (perplexity example), the one-parameter model stepped by hand and by autograd (one-parameter-model example),
one SGD step on an embedding entry (one-SGD-step example), and mini-batch gradient noise measured on the live model."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import streamlit as st

from lmviz import limits
from lmviz.chapters.claims import noise_shrink
from ui import model_words, session, render, urlstate
from ui.i18n import lang, t
from viz.loss_and_gradients import (
    nll_curve_figure, softmax_figure, descent_figure, noise_error_figure, noise_scatter_figure,
    line_figure,
)
from viz.tokenization import visible

NAMES = ("A", "B", "C")
PPL_SOURCES = ("english", "poetry", "chinese", "code", "own")
MLE_SOURCES = ("english", "poetry")
MAX_PPL_CHARS = 2000          # scoring 2,000 characters takes well under half a second
NOISE_PARAMS = ("last_q", "last_mlp", "first_q")
NOISE_CORPORA = ("english", "chinese", "code")

render.page_header("loss.title", "loss.intro")


# ---------------------------------------------------------------- shared helpers ---------
def _bundle():
    return session.try_live_bundle("loss.no_model")


_model_key = session.model_key


@st.cache_resource(max_entries=8, show_spinner=False)
def _split(name: str) -> tuple[str, str]:
    """(training text, held-out text) of a corpus, split as the shipped model's training split
    them: whole English paragraphs (lmviz.data.paragraph_split), whole poems (lmviz.poetry);
    the corpora it never trained on (modern Chinese, code) by their last 10%."""
    from lmviz.data import load_corpus, paragraph_split, split

    if name == "english":
        return paragraph_split("english", 0.1, 0)
    if name == "poetry":
        from lmviz.poetry import load_poetry

        c = load_poetry()
        return c.train_text, c.heldout_text
    return split(load_corpus(name), 0.1)


def _heldout(name: str) -> str:
    """The first MAX_PPL_CHARS characters of a corpus's held-out text."""
    return _split(name)[1][:MAX_PPL_CHARS]


@st.cache_resource(max_entries=8, show_spinner=False)
def _train_ids(names: tuple[str, ...], model_key: str, _b):
    """The token ids of the training texts of ``names`` (what a unigram baseline is counted on)."""
    import torch

    ids = []
    for n in names:
        ids += _b.tokenizer.encode_lossy(_split(n)[0][:_unigram_chars(_b)])[0]
    return torch.tensor(ids, dtype=torch.long)


UNIGRAM_CHARS = 300_000     # a pretrained tokenizer (pure-Python BPE) counts this much of each text: 1.5 M
#                             characters of poems took SmolLM2's 3.2 s on the page's first view


def _unigram_chars(b) -> int | None:
    """How much of each training text the unigram baseline counts: all of it with the app's own
    tokenizers, the start of it with a pretrained model's (None: all)."""
    return UNIGRAM_CHARS if b.source == "pretrained" else None


def _unigram(text: str, names: tuple[str, ...], b):
    """Uniform and unigram baselines for ``text`` under the live tokenizer, the unigram counted on
    the training texts of ``names``; None when the text has no known token."""
    from lmviz.baselines import unigram_baseline

    ids, _ = b.tokenizer.encode_lossy(text)
    if not ids:
        return None
    return unigram_baseline(_train_ids(names, _model_key(b), b), ids, b.tokenizer.vocab_size)


def _baseline_names(src: str) -> tuple[str, ...]:
    return ("english", "poetry") if src == "own" else (src,)


def _baselines_caption(r_loss: float, r_ppl: float, base, src: str, b=None) -> None:
    """The uniform and unigram perplexities beside a measured one (the same text, the same tokens)."""
    if base is None:
        return
    counted = " + ".join(t(f"loss.train_of.{n}") for n in _baseline_names(src))
    cut = _unigram_chars(b) if b is not None else None
    if cut is not None and any(len(_split(n)[0]) > cut for n in _baseline_names(src)):
        counted = t("loss.counted_cut", counted=counted, n=f"{cut:,}")
    render.caption(t("loss.ppl_baselines", loss=f"{r_loss:.3f}", ppl=f"{r_ppl:,.2f}", v=f"{base.vocab_size:,}",
                 uniform=f"{base.uniform:.3f}", unigram=f"{base.unigram:.3f}",
                 unigram_ppl=f"{base.unigram_ppl:,.1f}",
                 counted=counted))


def _honesty_note(b, src: str, n_tokens: int) -> None:
    """What kind of held-out text this is for the live model, and the stored whole-split numbers
    of the shipped model (lmviz.baselines.language_report)."""
    if b.source == "pretrained":
        st.info(t("loss.ppl_pretrained_note", name=model_words.name(b, start=True)))
        return
    if b.source != "default":
        st.info(t("loss.ppl_session_note"))
        return
    lang = {"english": "en", "poetry": "zh"}.get(src)
    if lang is None:
        st.info(t("loss.ppl_unseen" if src != "own" else "loss.ppl_own_note"))
        return
    from lmviz.baselines import language_report

    try:
        rep = language_report(b.meta, lang)
    except (ValueError, KeyError):
        return
    st.info(t("loss.ppl_heldout_note", unit=t(f"loss.unit.{src}"), n=f"{n_tokens:,}",
              held=f"{rep.heldout_loss:.3f}", held_ppl=f"{rep.heldout_ppl:,.2f}", train=f"{rep.train_loss:.3f}",
              gap=f"{rep.gap:.3f}", unigram=f"{rep.unigram:.3f}", unigram_ppl=f"{rep.unigram_ppl:,.1f}",
              uniform=f"{rep.uniform:.3f}", uniform_ppl=f"{rep.uniform_ppl:,.0f}"))


def _view_tokens(b) -> int:
    """The tokens a default view scores with the live model (lmviz.limits.view_tokens)."""
    return limits.view_tokens(b.model.num_params(), str(b.model.device))


def _cut_note(b, text: str, scored: int) -> None:
    """One sentence when the view scored only the start of ``text`` (a large model's budget)."""
    total = len(b.tokenizer.encode_lossy(text)[0])
    if scored + 1 < total:
        render.caption(t("loss.view_cut", n=f"{scored:,}", total=f"{total:,}", params=f"{b.model.num_params():,}",
                         s=f"{limits.VIEW_S[limits.device_kind(b.model.device)]:g}"))


@st.cache_data(max_entries=32, show_spinner=False)
def _ppl(text: str, model_key: str, _b):
    from lmviz.chapters.loss_and_gradients import perplexity

    return perplexity(_b.model, _b.tokenizer, text, max_tokens=_view_tokens(_b) + 1)


def _param_name(kind: str, n_layer: int) -> str:
    last = n_layer - 1
    return {"last_q": f"blocks.{last}.attn.c_q.weight", "last_mlp": f"blocks.{last}.mlp.c_fc.weight",
            "first_q": "blocks.0.attn.c_q.weight"}[kind]


def _noise_work(model, tokenizer, corpus: str, param: str):
    import torch

    from lmviz.data import load_corpus, split
    from lmviz.chapters.loss_and_gradients import gradient_noise, noise_plan

    plan = noise_plan(model.num_params(), str(model.device))      # sized to the model
    text = split(load_corpus(corpus), 0.1)[0][:400_000 if plan.full else 100_000]
    ids, _ = tokenizer.encode_lossy(text)
    return gradient_noise(model, torch.tensor(ids, dtype=torch.long), batch_sizes=plan.batch_sizes,
                          draws=plan.draws, ref_batch=plan.ref_batch, block=plan.block, param=param, seed=0)


@st.cache_resource(max_entries=8, show_spinner=False)
def _noise_job(model_key: str, corpus: str, param: str, _b):
    """The task of one measurement, shared by every session asking the same question."""
    return session.start_task(lambda ctx: _noise_work(_b.model, _b.tokenizer, corpus, param),
                              name="lmviz-grad-noise")


# ---------------------------------------------------------------- sections ----------------
@st.fragment
def sec_softmax():
    from lmviz.chapters.loss_and_gradients import cross_entropy

    render.md(t("loss.softmax_md"))
    answer = r"\text{" + t("loss.fig.answer") + "}"   # a catalogue word: the formula is read too
    render.latex(r"p_i=\frac{e^{z_i}}{\sum_j e^{z_j}},\qquad L=-\ln p_{" + answer + r"},\qquad "
             r"\frac{\partial L}{\partial z_i}=p_i-[i=" + answer + "]")
    cols = st.columns(4)
    z = []
    for col, name, default in zip(cols, NAMES, (2.0, 1.0, -1.0)):
        with col:
            z.append(urlstate.slider(t("loss.logit", name=name), -5.0, 5.0, default, 0.1,
                                     param=f"z{name.lower()}", key=f"loss_z{name.lower()}"))
    with cols[3]:
        ans = urlstate.selectbox(t("loss.answer"), NAMES, 1, param="ans", key="loss_ans")
    target = NAMES.index(ans)
    ce = cross_entropy(z, target)
    left, right = st.columns([3, 2])
    with left:
        fig = render.figure(softmax_figure, list(NAMES), ce.logits, ce.probs, target,
                            titles=(t("loss.fig.logits"), t("loss.fig.probs")), answer=t("loss.fig.answer"))
        render.plot(fig, key="loss_softmax", filename="softmax")
    with right:
        fig = render.figure(nll_curve_figure, ce.probs[target], x_title=t("loss.fig.p_answer"), y_title=t("loss.fig.nll"),
                            point=f"L = {ce.loss:.2f}")
        render.plot(fig, key="loss_nll", filename="cross-entropy")
    rows = [{"": name, "z": round(zi, 3), "p = softmax(z)": round(p, 4), "∂L/∂z = p − y": round(g, 4)}
            for name, zi, p, g in zip(NAMES, ce.logits, ce.probs, ce.grad)]
    c1, c2 = st.columns([3, 1])
    with c1:
        render.table(rows, hide_index=True, width="stretch")
    render.metric(t("loss.loss_metric", name=ans), f"{ce.loss:.3f}", at=c2)
    ref = cross_entropy([2.0, 1.0, -1.0], 1)
    render.caption(t("loss.notes_check", p=", ".join(f"{p:.3f}" for p in ref.probs), pb=f"{ref.probs[1]:.3f}",
                 loss=f"{ref.loss:.2f}", torch=f"{ce.torch_loss:.4f}"))
    render.md(t("loss.grad_md"))


def sec_ppl():
    render.md(t("loss.ppl_md"))
    render.latex(r"\mathrm{PPL}=\exp\Big(-\frac{1}{n}\sum_{t}\ln P(x_t\mid x_{<t})\Big)")
    b = _bundle()
    if b is None:
        return
    labels = {s: t(f"loss.src.{s}") for s in PPL_SOURCES}   # a dict made now (AppTest formats later)
    src = st.radio(t("loss.ppl_source"), PPL_SOURCES, index=1 if lang() == "zh" else 0,
                   format_func=labels.__getitem__,
                   horizontal=True, key="loss_ppl_src")
    if src == "own":
        text = st.text_area(t("loss.ppl_own"), value=t("loss.ppl_own_default"), max_chars=MAX_PPL_CHARS,
                            key="loss_ppl_text", height=100)
    else:
        try:
            text = _heldout(src)
        except ValueError:
            st.warning(t("loss.no_corpus"))
            return
        with st.expander(t("loss.ppl_show", n=len(text))):
            st.text(text)
    try:
        r = _ppl(text, _model_key(b), b)
    except ValueError:
        st.warning(t("loss.too_short"))
        return
    render.unknown_chars(r.unknown, limit=20)
    base = _unigram(text, _baseline_names(src), b)
    c = st.columns(3)             # the measured numbers, then the two baselines beside the perplexity
    render.metric(t("loss.mean_loss"), f"{r.mean_loss:.3f}", at=c[0])
    render.metric(t("loss.ppl"), f"{r.ppl:.2f}", at=c[1])
    render.metric(t("loss.bpc"), f"{r.bits_per_char:.2f}", at=c[2])
    c = st.columns(3)
    render.metric(t("loss.unigram_ppl"), f"{base.unigram_ppl:.1f}" if base is not None else "–", at=c[1])
    render.metric(t("loss.uniform"), f"{r.vocab_size}", at=c[2])
    render.caption(t("loss.ppl_caption", n=r.n_tokens, loss=f"{r.mean_loss:.3f}", ppl=f"{r.ppl:.2f}", v=f"{r.vocab_size:,}"))
    _cut_note(b, text, r.n_tokens)
    render.caption(model_words.by(b))
    _baselines_caption(r.mean_loss, r.ppl, base, src, b)
    _honesty_note(b, src, r.n_tokens)
    a = model_words.facts(b)
    who = {"name": model_words.name(b, a), "reads": model_words.reads(b, a)}
    if r.n_words * 20 < r.n_chars:   # hardly any spaces (Chinese): "per word" would mean nothing
        ppl_c = math.exp(min(r.mean_loss * r.n_tokens / max(r.n_chars, 1), 700.0))
        st.info(t(f"loss.ppl_caveat_chars.{a.unit}", ppl=f"{r.ppl:.2f}", chars=f"{r.n_chars:,}", n=f"{r.n_tokens:,}",
                  ppl_c=f"{ppl_c:,.2f}", **who))
    else:
        st.info(t("loss.ppl_caveat", words=r.n_words, ppl_w=f"{r.ppl_per_word:,.0f}", ppl=f"{r.ppl:.2f}", **who))


@st.cache_data(max_entries=16, show_spinner=False)
def _likelihood(text: str, model_key: str, _b):
    from lmviz.chapters.loss_and_gradients_objective import corpus_likelihood

    return corpus_likelihood(_b.model, _b.tokenizer, text, max_tokens=min(2048, _view_tokens(_b)))


def sec_mle():
    render.md(t("loss.mle_body"))
    render.latex(r"L(\theta)=-\frac{1}{N}\sum_{t=1}^{N}\ln p_\theta(x_{t+1}\mid x_{\le t})"
             r"\quad\Longleftrightarrow\quad \max_\theta \prod_t p_\theta(x_{t+1}\mid x_{\le t})")
    b = _bundle()
    if b is None:
        return
    labels = {s: t(f"loss.src.{s}") for s in MLE_SOURCES}
    src = st.radio(t("loss.ppl_source"), MLE_SOURCES, index=1 if lang() == "zh" else 0,
                   format_func=labels.__getitem__, horizontal=True, key="loss_mle_src")
    try:
        text = _heldout(src)
        r = _likelihood(text, _model_key(b), b)
    except ValueError:
        st.warning(t("loss.no_corpus"))
        return
    _cut_note(b, text, r.n_tokens)
    tok = b.tokenizer.token
    rows = [{"t": i + 1, t("loss.mle_input"): visible(tok(x)), t("loss.mle_label"): visible(tok(y)),
             t("loss.mle_prob"): round(p, 4), "−ln p": round(-math.log(max(p, 1e-300)), 3)}
            for i, (x, y, p) in enumerate(zip(r.inputs, r.labels, r.label_probs))]
    render.table(rows, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(rows)))
    render.caption(t("loss.mle_table_caption", n=len(rows)))
    c = st.columns(3)
    render.metric(t("loss.mle_mean"), f"{r.mean_nll:.4f}", at=c[0])
    render.metric(t("loss.mle_model_loss"), f"{r.model_loss:.4f}", at=c[1])
    render.metric(t("loss.mle_ppl"), f"{r.ppl:.2f}", at=c[2])
    render.md(t("loss.mle_numbers", n=r.n_tokens, windows=r.n_windows, block=r.block_size, total=r.total_nll,
                mean=r.mean_nll, loss=r.model_loss, ppl=r.ppl))
    if r.truncated:
        render.caption(t("loss.mle_truncated", n=r.n_tokens))
    # the uniform and unigram baselines are the next section's (perplexity), which compares with
    # them: printed here too, the same paragraph stood twice on the page (same text by default)


@st.fragment
def sec_onestep():
    from lmviz.chapters.loss_and_gradients import (one_param_autograd, one_param_contraction,
        one_param_descent, one_param_step)

    render.md(t("loss.one_md"))
    c1, c2 = st.columns(2)
    with c1:
        lr = urlstate.slider(t("loss.lr"), 0.01, 0.7, 0.1, 0.01, param="lr", key="loss_lr")
    with c2:
        steps = urlstate.slider(t("loss.steps"), 1, 20, 5, 1, param="steps", key="loss_steps")
    hand, auto = one_param_step(1.0, 2.0, 6.0, lr), one_param_autograd(1.0, 2.0, 6.0, lr)
    path = one_param_descent(1.0, 2.0, 6.0, lr, steps)
    left, right = st.columns([3, 2])
    with left:
        ws = [path[0].w] + [s.w_new for s in path]
        losses = [path[0].loss] + [s.loss_new for s in path]
        fig = render.figure(descent_figure, ws, losses, 2.0, 6.0, x_title="w", y_title="L(w) = (2w − 6)² / 2",
                            step_name=t("loss.fig.steps"), curve_name=t("loss.fig.curve"))
        render.plot(fig, key="loss_descent", filename="one-parameter-descent")
    with right:
        fields = [("ŷ = w·x", "y_hat"), ("L", "loss"), ("dL/dw", "grad"), ("w′ = w − η·dL/dw", "w_new"),
                  ("ŷ′", "y_hat_new"), ("L′", "loss_new")]
        rows = [{"": label, t("loss.by_hand"): f"{getattr(hand, f):.4g}",
                 t("loss.by_autograd"): f"{getattr(auto, f):.4g}"} for label, f in fields]
        render.table(rows, hide_index=True, width="stretch")
        c = one_param_contraction(2.0, 6.0, lr)
        ok = abs(c.factor) < 1
        (st.success if ok else st.warning)(t("loss.converges" if ok else "loss.diverges", f=f"{c.factor:+.2f}",
                                             lr=f"{lr:g}", best=f"{c.best:g}", c=f"{c.curvature:g}", n=steps,
                                             w=f"{ws[-1]:.4g}", d=f"{abs(ws[-1] - c.best):.2g}"))
    n = one_param_step(1.0, 2.0, 6.0, 0.1)
    render.caption(t("loss.one_caption", L=f"{n.loss:g}", g=f"{n.grad:g}", w=f"{n.w_new:.4g}", y=f"{n.y_hat_new:.4g}",
                 L2=f"{n.loss_new:.4g}"))


def sec_sgd():
    from lmviz.chapters.loss_and_gradients import sgd_step

    render.md(t("loss.sgd_md"))
    s = sgd_step(0.80, 0.30, 0.10)
    render.latex(rf"E_{{\text{{robot}},1}} \leftarrow {s.param:.2f} - {s.lr:.2f}\times{s.grad:.2f} = {s.new:.2f}")
    render.caption(t("loss.sgd_caption", v=f"{s.new_torch:.2f}"))


def sec_noise():
    from lmviz.chapters.loss_and_gradients import NOISE_PLANS, noise_plan

    b = _bundle()
    plan = noise_plan(b.model.num_params(), str(b.model.device)) if b is not None else None
    sizes = plan.batch_sizes if plan is not None else NOISE_PLANS[0][0]
    render.md(t("loss.noise_md", sizes=t("common.list_sep").join(map(str, sizes[:-1])) + t("common.and") + str(sizes[-1])))
    if b is None:
        return
    c1, c2 = st.columns(2)
    corpus_labels = {s: t(f"loss.corpus.{s}") for s in NOISE_CORPORA}
    param_labels = {s: t(f"loss.param.{s}") for s in NOISE_PARAMS}
    corpus = c1.selectbox(t("loss.noise_corpus"), NOISE_CORPORA, format_func=corpus_labels.__getitem__,
                          key="loss_noise_corpus")
    kind = c2.selectbox(t("loss.noise_param"), NOISE_PARAMS, format_func=param_labels.__getitem__,
                        key="loss_noise_param")
    param = _param_name(kind, b.model.cfg.n_layer)
    request = (_model_key(b), corpus, param)
    if not plan.full:                         # a large model: a smaller measurement, said before the press
        full = NOISE_PLANS[0]
        render.caption(t("loss.noise_cut", params=f"{b.model.num_params():,}", draws=plan.draws, ref=plan.ref_batch,
                         block=plan.block, top=max(plan.batch_sizes), s=f"{plan.seconds:.0f}",
                         fdraws=full[1], fref=full[2], fblock=full[3], ftop=max(full[0])))
    if st.button(t("loss.noise_run", s=f"{max(1.0, plan.seconds):.0f}"), key="loss_noise_go", icon=":material/play_arrow:"):
        st.session_state["loss_noise_req"] = request
    if st.session_state.get("loss_noise_req") != request:
        render.caption(t("loss.noise_hint"))
        return
    job = _noise_job(*request, b)

    def draw(snap):
        if snap.active:
            st.info(t("loss.noise_wait"), icon=":material/hourglass_top:")
        elif snap.state != "done":   # a failed measurement is shown, never raised
            st.error(t("loss.noise_failed"))
        else:
            _draw_noise(snap.result)

    session.poll(job.snapshot, draw)


def _draw_noise(r):
    left, right = st.columns(2)
    with left:
        fig = render.figure(noise_scatter_figure, r.rows, r.ref_norm, x_title=t("loss.fig.along"), y_title=t("loss.fig.across"),
                            ref_name=t("loss.fig.ref", n=r.ref_batch), batch_name=t("loss.fig.batch"))
        render.plot(fig, key="loss_noise_scatter", filename="gradient-noise")
    with right:
        fig = render.figure(noise_error_figure, r.rows, x_title=t("loss.fig.batch_size"), y_title=t("loss.fig.rel_err"),
                            measured=t("loss.fig.measured"), guide=t("loss.fig.guide"))
        render.plot(fig, key="loss_noise_err", filename="gradient-noise-error")
    rows = [{t("loss.fig.batch_size"): row.batch_size,
             t("loss.col.cos"): round(float(np.mean(row.cosines)), 3),
             t("loss.col.err"): round(float(np.mean(row.rel_errors)), 3)} for row in r.rows]
    render.table(rows, hide_index=True, width="stretch")
    render.caption(t("loss.noise_caption", param=r.param, shape=" × ".join(map(str, r.shape)), n=r.ref_batch,
                 block=r.block, loss=f"{r.ref_loss:.3f}", draws=len(r.rows[0].cosines)))
    render.md(render.claim(noise_shrink([row.batch_size for row in r.rows],
                                        [float(np.mean(row.rel_errors)) for row in r.rows])))


# ---------------------------------------------------------------- non-convexity ----------
def _line_work(same_init: bool, ctx):
    from lmviz.data import load_corpus
    from lmviz.chapters.loss_and_gradients_objective import LINE_TEXT_CHARS, nonconvexity

    text = load_corpus("english")[:LINE_TEXT_CHARS]
    return nonconvexity(text, same_init=same_init, stop=SimpleNamespace(is_set=ctx.cancelled))


@st.cache_resource(max_entries=2, show_spinner=False)
def _line_job(same_init: bool):
    """The one measurement per setting, shared by every session (the result does not depend on
    the live model: it trains its own two small ones)."""
    return session.start_task(lambda ctx: _line_work(same_init, ctx), name="lmviz-loss-line")


def sec_line():
    from lmviz.chapters.loss_and_gradients_objective import LINE_CONFIG, LINE_SEEDS

    render.md(t("loss.line_body", seed_a=LINE_SEEDS[0], seed_b=LINE_SEEDS[1], d=LINE_CONFIG.d_model,
                steps=LINE_CONFIG.max_steps))
    same = st.toggle(t("loss.line_same_init_toggle"), key="loss_line_same")
    if st.button(t("loss.line_run"), key="loss_line_go", icon=":material/play_arrow:"):
        st.session_state["loss_line_req"] = bool(same)
    if st.session_state.get("loss_line_req") != bool(same):
        render.caption(t("loss.line_hint"))
        render.md(t("loss.line_noise"))
        return
    job = _line_job(bool(same))

    def draw(snap):
        if snap is None or snap.active:
            st.info(t("loss.line_running"), icon=":material/hourglass_top:")
        elif snap.state != "done":
            st.error(t("loss.line_failed"))
        else:
            _draw_line(snap.result)

    session.poll(job.snapshot, draw)
    render.md(t("loss.line_noise"))


def _draw_line(r):
    fig = render.figure(line_figure, r.alphas, r.losses, r.loss_a, r.loss_b, x_title=t("loss.line_x"), y_title=t("loss.line_y"),
                        curve_name=t("loss.line_curve"), chord_name=t("loss.line_chord"),
                        ends=(t("loss.line_end", name="A"), t("loss.line_end", name="B")))
    render.plot(fig, key="loss_line_fig", filename="loss-along-a-line")
    key = "loss.line_same_init" if r.same_init else "loss.line_result"
    if r.chord_gap > 0:
        render.md(t(key, loss_a=r.loss_a, loss_b=r.loss_b, mid=r.mid_loss, gap=r.chord_gap))
    else:
        render.md(t("loss.line_convex_here", mid=f"{r.mid_loss:.3f}", gap=f"{-r.chord_gap:.3f}"))
    render.caption(t("loss.line_caption", barrier=f"{r.barrier:.3f}", steps=r.steps, n=len(r.alphas)))


render.run_sections([
    ("loss.sec_softmax", sec_softmax),
    ("loss.mle_title", sec_mle),
    ("loss.sec_ppl", sec_ppl),
    ("loss.sec_onestep", sec_onestep),
    ("loss.sec_sgd", sec_sgd),
    ("loss.sec_noise", sec_noise),
    ("loss.line_title", sec_line),
])
