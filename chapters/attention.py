"""Chapter 4 · Attention: QKᵀ → ÷√d_k → + mask → softmax → ×V on the live model, step by step,
for a chosen layer and head; all heads of a layer; why attention (a pronoun and its referent);
multi-head concatenation and output projection checked against the model; the notes' weighted sum (weighted-sum example), the √d_k
experiment (√d_k-scaling example) and the causal mask (causal-mask example)."""
from __future__ import annotations

import re

import streamlit as st

from lmviz.chapters.claims import induction, pronoun
from ui import model_words, session, render, urlstate
from ui.i18n import lang, t
from viz.attention import (
    pronoun_grid_figure, pronoun_row_figure, multi_head_figure, heads_figure, heatmap, weighted_sum_figure,
    saturation_figure, variance_figure, softmax_pair_figure, gqa_figure,
)

render.page_header("att.title", "att.intro")

MAX_CHARS = 200            # sentence box; the model reads at most block_size tokens of it
STAGES = ("scores", "scaled", "masked", "weights", "out")
DEFAULT_TEXT = {"en": "The capital of France is Paris.", "zh": "床前明月光，疑是地上霜。"}
# (sentence, referent, pronoun): the notes' example and an English one of the same shape
PRONOUN = {"en": ("I gave the book to Anna because she needs it.", "Anna", "she"),
           "zh": ("把书交给小李，因为他需要参考", "小李", "他")}
# the control: the same sentence with a word "he"/"she" cannot refer to in the referent's place (an
# object: a name of either gender is no control, since the position that writes the pronoun must
# look at whichever name is there to choose between he and she)
CONTROL = {"en": "the cup", "zh": "杯子"}


# ---------------------------------------------------------------- cached pure work --------



@st.cache_data(show_spinner=False)
def _pronoun_toy_accuracy(m: int = 100):
    """How often the pronoun toy writes the right pronoun on ``m`` fresh sentences per language."""
    from lmviz.chapters.attention_pronoun import pronoun_accuracy

    toy = session.toy("pronoun")
    return pronoun_accuracy(toy.model, toy.tokenizer, m), m


@st.cache_data(show_spinner=False)
def _variance(d_ks: tuple[int, ...]):
    from lmviz.attention import score_variance_experiment

    return score_variance_experiment(d_ks, n_samples=500)   # 500 x 16 keys = 8,000 scores per d_k


def _bundle():
    return session.try_live_bundle("att.no_model")


def live_input():
    """The sentence box, encoded for the live model (None when there is nothing to show)."""
    from lmviz.chapters.embedding import encode_for_model

    b = _bundle()
    if b is None:
        return None
    text = urlstate.text(t("att.sentence"), DEFAULT_TEXT[lang()], param="s", key="att_text",
                         max_chars=MAX_CHARS)
    enc = encode_for_model(b.tokenizer, text, b.model.cfg.block_size)
    render.unknown_chars(enc.unknown)
    render.context_cut(enc.context)
    if not enc.ids:
        st.warning(t("att.empty"))
        return None
    return b, enc


@st.cache_resource(max_entries=32, show_spinner=False)
def _multi_head(_model, model_key: str, ids: tuple[int, ...], layer: int):
    """Heads, concatenation and projection of one layer, and the largest difference from the
    model's own attention sublayer (0-based layer)."""
    from lmviz.chapters.attention_heads import multi_head, sublayer_output

    mh = multi_head(_model, ids, layer)
    err = float((mh.projected - sublayer_output(_model, ids, layer)).abs().max())
    return mh, err


def _md(text: str) -> str:
    """User text safe inside Markdown: Markdown punctuation (and so any HTML) backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])", r"\\\1", text)


# ---------------------------------------------------------------- sections ----------------
def sec_why():
    from lmviz.chapters.attention_pronoun import pronoun_case, pronoun_words
    from lmviz.chapters.embedding import encode_for_model

    render.md(t("att.why_text"))
    names = {s: t(f"att.why_src.{s}") for s in session.TOY_OR_LIVE}   # resolved now, not in the lambda
    chosen = session.toy_or_live("pronoun", t("att.why_source"), names, key="att_p_src",
                                 missing_key="att.why_toy_missing", live=_bundle)
    if chosen is None:
        return
    src, model, tok, key, b = chosen
    ds, dr, dp = PRONOUN[lang()]
    c1, c2, c3, c4 = st.columns([4, 1, 1, 1])
    with c1:
        text = urlstate.text(t("att.sentence"), ds, param="ps", key="att_p_text", max_chars=MAX_CHARS)
    with c2:
        ref = urlstate.text(t("att.why_ref"), dr, param="pr", key="att_p_ref", max_chars=20)
    with c3:
        pron = urlstate.text(t("att.why_pron"), dp, param="pp", key="att_p_pron", max_chars=20)
    with c4:
        ctrl = urlstate.text(t("att.why_ctrl"), CONTROL[lang()], param="pc", key="att_p_ctrl", max_chars=20,
                             help=t("att.why_ctrl_help"))
    n = model.cfg.block_size
    enc = encode_for_model(tok, text, n)
    render.unknown_chars(enc.unknown)
    render.context_cut(enc.context)
    # the words as they stand in the sentence (" Anna" for a byte-level tokenizer, "Anna" alone for a character one)
    ref_ids, pron_ids, ctrl_ids = pronoun_words(tok, enc.ids, ref, pron, ctrl)
    case = pronoun_case(lambda ids: session.trace(model, key, ids), enc.ids, ref_ids, pron_ids, ctrl_ids, n)
    if case is None:
        st.warning(t("att.why_missing", ref=_md(ref), pron=_md(pron)))
        return
    p, q, mg = case.attention, case.query_pos, case.margin
    qtok = render.escape(enc.tokens[q])
    L, H = p.share.shape
    label = lambda lh: t("common.layer_head", layer=lh[0] + 1, head=lh[1] + 1)  # noqa: E731
    lh = label(p.best)
    shown = mg.best if mg is not None else p.best                  # the head drawn on the right: the test's
    grid_title = (t("att.why_grid_margin", ref=render.escape(ref), ctrl=render.escape(ctrl)) if mg is not None
                  else t("att.why_grid", ref=render.escape(ref)))
    grid = render.figure(pronoun_grid_figure, mg.margin if mg is not None else p.share, shown,
                         layer_labels=[t("common.layer_n", n=i + 1) for i in range(L)],
                         # more than 4 columns in a narrow chart: numbers under the axis's name
                         head_labels=[t("common.head_n", n=i + 1) if H <= 4 else str(i + 1) for i in range(H)],
                         x_title=t("att.head") if H > 4 else "", title=grid_title, margin=mg is not None)
    row = render.figure(pronoun_row_figure, mg.row if mg is not None else p.row, enc.tokens, p.ref_span,
                        title=t("att.why_row", lh=label(shown), qtok=qtok, pron=render.escape(pron)),
                        y_title=t("att.weight"), height=grid.layout.height)     # level with the grid beside it
    c1, c2 = st.columns([2, 3])          # side by side on a screen; stacked, each full width, on a phone
    with c1:
        render.plot(grid, key="att_why", filename="attention-pronoun-heads")
    with c2:
        render.plot(row, key="att_why_row", filename="attention-pronoun-row")
    f = lambda x: f"{x:.2f}"  # noqa: E731
    msg = t("att.why_result", pron=_md(pron), q=q + 1, qtok=_md(enc.tokens[q]), p=f(case.p_pronoun),
            ref=_md(ref), lh=lh, best=f(p.best_share), n=L * H, mean=f(p.mean), k=q + 1, unif=f(p.uniform))
    render.md(msg)
    control = case.control
    if control is None:
        st.warning(t("att.why_ctrl_missing", ctrl=_md(ctrl), ref=_md(ref)))
    else:
        from lmviz.chapters import attention as A

        best_l, best_h = mg.best
        render.md(t(f"att.why_margin.{mg.verdict}", n=mg.n_heads, ref=_md(ref), ctrl=_md(ctrl), pron=_md(pron),
                    lh=label(mg.best), share=f(float(mg.referent[best_l, best_h])),
                    control=f(float(mg.control[best_l, best_h])), margin=f(mg.best_margin),
                    hi=f(A.MARGIN_EVIDENCE), lo=f(A.MARGIN_WEAK), null_n=A.NULL_SENTENCES,
                    null_hi=A.NULL_AT_EVIDENCE, null_lo=A.NULL_AT_WEAK, null_below=A.NULL_SENTENCES - A.NULL_AT_WEAK,
                    null_model=A.NULL_MODEL, null_heads=A.NULL_HEADS))
        if mg.n_heads != A.NULL_HEADS:
            render.caption(t("att.why_margin_heads", n=mg.n_heads, null_model=A.NULL_MODEL, null_heads=A.NULL_HEADS,
                             lo=f(A.MARGIN_WEAK), hi=f(A.MARGIN_EVIDENCE),
                             stricter=t("att.why_margin_stricter" if mg.n_heads < A.NULL_HEADS
                                        else "att.why_margin_looser")))
        c = pronoun(control.referent, control.control, control.recency, control.uniform)
        render.md(render.claim(c, ref=_md(ref), ctrl=_md(ctrl), pron=_md(pron), lh=label(mg.best), dist=control.distance))
    if src == "toy":
        from lmviz.chapters.attention_pronoun import ToyTrainConfig

        acc, m = _pronoun_toy_accuracy()
        cfg = model.cfg
        render.caption(t("att.why_toy_note", layers=cfg.n_layer, heads=cfg.n_head, vocab=cfg.vocab_size,
                     n=2 * ToyTrainConfig().sentences, m=m, acc_en=f"{acc['en']:.0%}", acc_zh=f"{acc['zh']:.0%}"))
    elif b.source == "default":
        render.caption(t("att.why_model"))


def sec_multi_head():
    from lmviz.chapters.embedding import encode_for_model

    b = _bundle()
    if b is None:
        return
    cfg = b.model.cfg
    render.md(t("att.mh_text", sec=render.section_number("att.sec_live")))
    text = st.session_state.get("att_text") or DEFAULT_TEXT[lang()]
    enc = encode_for_model(b.tokenizer, text, cfg.block_size)
    if not enc.ids:
        st.warning(t("att.empty"))
        return
    c1, c2 = st.columns([1, 1])
    with c1:
        # a one-layer model has nothing to choose (a slider from 1 to 1 is an error in Streamlit)
        layer = urlstate.slider(t("att.layer"), 1, cfg.n_layer, 1, param="mL", key="att_mh_layer") \
            if cfg.n_layer > 1 else 1
    mh, err = _multi_head(b.model, session.model_key(b), tuple(enc.ids), layer - 1)
    T, H, dh, d = len(enc.ids), mh.n_head, mh.d_head, mh.d_model
    with c2:
        render.code("\n↓\n".join(t("att.mh_shape", name=t(f"att.mh_step_{s.name}"),
                                    shape=" × ".join(map(str, s.shape))) for s in mh.shapes), language=None)
    fig = render.figure(multi_head_figure, mh, enc.tokens,
                        # more than 6 heads in a third of the width: their numbers alone
                        head_titles=[t("common.head_n", n=h + 1) if H <= 6 else str(h + 1) for h in range(H)],
                        heads_title=f"{t('att.mh_step_heads')} [{H}×{T}×{dh}]",
                        concat_title=f"{t('att.mh_step_concat')} [{T}×{d}]",
                        proj_title=f"{t('att.mh_step_projected')} [{T}×{d}]")
    render.plot(fig, key="att_mh", filename=f"multi-head-L{layer}")
    render.md(t("att.mh_caption", layer=layer, t=T, h=H, dh=dh, d=d, dh_last=dh - 1))
    render.md(t("att.mh_mix", h=H, dh=dh))
    if err < 1e-3:
        render.caption(t("att.mh_check", err=err))
    else:
        st.warning(t("att.mh_check_bad", err=err))
    _kv_heads(b)


def _kv_heads(b):
    """How the model's query heads read keys and values, from its config: GQA or MQA drawn, MHA said."""
    cfg = b.model.cfg
    h, kv = cfg.n_head, cfg.n_kv_head
    own = str(b.meta.get("name", "")) if b.source == "pretrained" else ""    # a pretrained model's own name
    if kv == h:
        render.md(t("att.gqa_mha", name_lower=_md(own) if own else t("att.gqa_this_model_lower"), h=h))
        return
    fig = render.figure(gqa_figure, h, kv, query_labels=[t("att.gqa_q_n", n=i + 1) for i in range(h)],
                        kv_labels=[t("att.gqa_kv_n", n=i + 1) for i in range(kv)],
                        query_title=t("att.gqa_q_row"), kv_title=t("att.gqa_kv_row"),
                        title=t("att.gqa_fig_title", name=render.escape(own) if own else t("att.gqa_this_model"),
                                h=h, kv=kv))
    render.plot(fig, key="att_gqa", filename="grouped-query-attention")
    render.md(t("att.gqa_mqa" if kv == 1 else "att.gqa_gqa", name=_md(own) if own else t("att.gqa_this_model"),
                layers=cfg.n_layer, h=h, kv=kv, g=h // kv, ratio=h // kv))



def sec_live():
    render.md(t("att.live_intro"))
    got = live_input()
    if got is None:
        return
    b, enc = got
    cfg = b.model.cfg
    _stepper(b, enc.ids, enc.tokens, cfg.n_layer, cfg.n_head, cfg.head_dim)


@st.fragment
def _stepper(b, ids, tokens, n_layer, n_head, dh):
    c1, c2, c3 = st.columns([1, 1, 2])
    with c1:
        layer = urlstate.slider(t("att.layer"), 1, n_layer, 1, param="L", key="att_layer") if n_layer > 1 else 1
    with c2:
        head = urlstate.slider(t("att.head"), 1, n_head, 1, param="h", key="att_head") if n_head > 1 else 1
    with c3:
        names = {s: t(f"att.stage.{s}") for s in STAGES}   # translated now, not at format time
        stage = urlstate.selectbox(t("att.stage"), STAGES, param="st", key="att_stage",
                                   format_func=names.__getitem__)
    tr = session.trace(b.model, session.model_key(b), tuple(ids))
    L = tr.layers[layer - 1]
    h = head - 1
    mat = {"scores": L.scores, "scaled": L.scaled, "masked": L.masked, "weights": L.weights,
           "out": L.head_out}[stage][h]
    T = len(ids)
    render.md(t(f"att.explain.{stage}", dh=dh, sq=f"{dh ** 0.5:.2f}", T=T,
                sec=render.section_number("att.sec_scale")))
    left, right = st.columns([3, 2])
    with left:
        is_out = stage == "out"
        fig = render.figure(heatmap, mat, x_labels=None if is_out else tokens, y_labels=tokens,
                            title=t("att.fig.stage", stage=t(f"att.stage.{stage}"), layer=layer, head=head),
                            x_title=t("att.fig.dim") if is_out else t("att.fig.key"), y_title=t("att.fig.query"),
                            diverging=stage in ("scores", "scaled", "out"),
                            zmin=0.0 if stage == "weights" else None, zmax=1.0 if stage == "weights" else None)
        render.plot(fig, key="att_stage_fig", filename=f"attention-{stage}-L{layer}-h{head}")
    with right:
        rows = L.weights[h].sum(-1)
        above = float(L.weights[h].triu(1).abs().max()) if T > 1 else 0.0
        s_std, sc_std = float(L.scores[h].std()) if T > 1 else 0.0, float(L.scaled[h].std()) if T > 1 else 0.0
        render.metric(t("att.m.shape"), f"[{T}, {T}]" if stage != "out" else f"[{T}, {dh}]")
        render.metric(t("att.m.rowsum"), f"{float(rows.min()):.4f} … {float(rows.max()):.4f}")
        render.metric(t("att.m.above"), "0" if above == 0 else f"{above:.1e}")   # the mask's exact 0, not "0.0e+00"
        render.metric(t("att.m.std"), f"{s_std:.2f} → {sc_std:.2f}")
        last = L.weights[h][-1]
        top = last.argmax().item()
        render.caption(t("att.last_row", tok=render.escape(tokens[-1]), top=render.escape(tokens[top]),
                     w=f"{float(last[top]):.2f}"))
    render.md("#### " + t("att.heads_title", layer=layer))
    fig = render.figure(heads_figure, L.weights, tokens, [t("att.head_n", h=i + 1) for i in range(n_head)],
                        x_title=t("att.fig.key"), y_title=t("att.fig.query"), highlight=h)
    render.plot(fig, key="att_heads_fig", filename=f"attention-heads-L{layer}")
    render.caption(t("att.caveat"))


# The figures below depend only on the language (and d_k): built once, shared read-only.
@st.cache_resource(max_entries=8, show_spinner=False)
def _w17_fig(code: str):
    from lmviz.chapters.attention import weighted_sum_terms

    ws = weighted_sum_terms([0.2, 0.3, 0.5], [[1, 0], [0, 2], [2, 2]])
    return render.figure(weighted_sum_figure, ws, ["v1", "v2", "v3"], t("att.w17_out"), title=t("att.w17_fig"))


@st.cache_resource(max_entries=8, show_spinner=False)
def _scale_figs(code: str):
    rows = _variance((4, 16, 64, 256, 1024))
    return (render.figure(variance_figure, rows, x_title="d_k", y_title=t("att.var_y"),
                          names=(t("att.raw"), t("att.scaled_name"), "y = d_k"), title=t("att.var_title")),
            render.figure(saturation_figure, rows, x_title="d_k", y_title=t("att.sat_y"),
                          names=(t("att.raw"), t("att.scaled_name")), title=t("att.sat_title")))


@st.cache_resource(max_entries=16, show_spinner=False)
def _one_query_fig(code: str, d_k: int):
    from lmviz.chapters.attention import softmax_example

    p = softmax_example(d_k)
    return render.figure(softmax_pair_figure, p.raw, p.scaled, x_title=t("att.key_n"), y_title=t("att.weight"),
                         names=(t("att.raw"), t("att.scaled_name")), title=t("att.one_query", dk=d_k))


@st.cache_resource(max_entries=8, show_spinner=False)
def _mask_figs(code: str):
    from lmviz.chapters.attention import causal_demo
    from lmviz.chapters.embedding import toy_embedding

    e = toy_embedding()
    d = causal_demo(e.E[:5])
    toks = e.tokens[:5]
    return (render.figure(heatmap, d.masked, x_labels=toks, y_labels=toks, title=t("att.mask_scores"),
                          x_title=t("att.fig.key"), y_title=t("att.fig.query"), diverging=True),
            render.figure(heatmap, d.weights, x_labels=toks, y_labels=toks, title=t("att.mask_weights"),
                          x_title=t("att.fig.key"), y_title=t("att.fig.query"), zmin=0.0, zmax=1.0))


def sec_w17():
    from lmviz.chapters.attention import weighted_sum_terms

    ws = weighted_sum_terms([0.2, 0.3, 0.5], [[1, 0], [0, 2], [2, 2]])
    terms = "\n       + ".join(f"{float(w):g} × {v.tolist()}" for w, v in zip(ws.weights, ws.values.int()))
    out = [round(float(x), 6) for x in ws.output]
    c1, c2 = st.columns([2, 3])
    with c1:
        render.md(t("att.w17_text"))
        render.code(f"output = {terms}\n       = {out}", language=None)
        render.md(t("att.w17_after"))
    with c2:
        render.plot(_w17_fig(lang()), key="att_w17", filename="attention-weighted-sum")


def sec_scale():
    render.md(t("att.scale_text"))
    rows = _variance((4, 16, 64, 256, 1024))
    fig_var, fig_sat = _scale_figs(lang())
    c1, c2 = st.columns(2)
    with c1:
        render.plot(fig_var, key="att_var", filename="attention-variance")
    with c2:
        render.plot(fig_sat, key="att_sat", filename="attention-saturation")
    render.table([{"d_k": r.d_k, t("att.col.var_raw"): round(r.var_raw, 1),
                   t("att.col.var_scaled"): round(r.var_scaled, 3),
                   t("att.col.max_raw"): round(r.max_weight_raw, 3),
                   t("att.col.max_scaled"): round(r.max_weight_scaled, 3)} for r in rows],
                 hide_index=True, width="stretch")
    _one_query()


@st.fragment
def _one_query():
    d_k = st.select_slider(t("att.dk_pick"), options=[4, 16, 64, 256, 1024], value=256, key="att_dk")
    render.plot(_one_query_fig(lang(), d_k), key="att_one", filename="attention-one-query")


def sec_mask():
    from lmviz.chapters.attention import causal_demo
    from lmviz.chapters.embedding import toy_embedding
    from lmviz.model import causal_mask

    render.md(t("att.mask_text"))
    d = causal_demo(toy_embedding().E[:5])
    fig_s, fig_w = _mask_figs(lang())
    c1, c2 = st.columns(2)
    with c1:
        render.plot(fig_s, key="att_mask_s", filename="causal-mask-scores")
    with c2:
        render.plot(fig_w, key="att_mask_w", filename="causal-mask-weights")
    n = d.weights.shape[0]
    future = ~causal_mask(n)
    zeros = int((d.weights[future] == 0).sum())          # future cells whose weight is exactly 0
    render.caption(t("att.mask_caption", n=n, zeros=zeros, future=int(future.sum())))


def sec_softmaxes():
    render.md(t("att.two_softmax"))


def sec_heads_map():
    """Map the heads together: every head removed in turn on the sentence (ui.room; in a class,
    the lecturer's sentence and model)."""
    from ui import room

    render.md(t("att.hm_intro"))
    room.heads_section(DEFAULT_TEXT[lang()], param="s", max_chars=MAX_CHARS)


@st.cache_data(max_entries=16, show_spinner=False)
def _induction(ids: tuple[int, ...], half: int, model_key: str, _model):
    from lmviz.chapters.attention_induction import scan

    return scan(_model, ids, half)


def sec_induction():
    """Induction heads (issue 57): every head of the current model probed on a repeated random run
    (lmviz.chapters.attention_induction), the best one's attention, and the causal check."""
    from lmviz.chapters.attention_induction import probe_half, repeated_tokens

    b = _bundle()
    if b is None:
        return
    cfg = b.model.cfg
    half = probe_half(b.model.num_params(), cfg.block_size, str(b.model.device))
    render.md(t("att.ind_md", half=half))
    seed = urlstate.slider(t("att.ind_seed"), 1, 9, 1, param="iS", key="att_ind_seed")
    special = getattr(b.tokenizer, "special", {}) or {}
    ids = repeated_tokens(b.tokenizer.vocab_size, half, seed, exclude=special.values())
    s = _induction(tuple(ids), half, session.model_key(b), b.model)
    lh = lambda layer, head: t("common.layer_head", layer=layer + 1, head=head + 1)  # noqa: E731
    (bl, bh, _), (cl, ch, _) = s.top[0], s.control
    name = model_words.name(b)
    render.plot(render.figure(heatmap, s.prefix, x_labels=[str(h + 1) for h in range(cfg.n_head)],
                              y_labels=[str(layer + 1) for layer in range(cfg.n_layer)],
                              title=t("att.ind_map_title", name=name), x_title=t("att.head"),
                              y_title=t("att.layer"), zmin=0.0, zmax=1.0, colorbar_title=t("att.ind_bar")),
                key="att_ind_map", filename="induction-heads")
    render.caption(t("att.ind_map_caption", uniform=f"{s.uniform:.3f}"))
    c = st.columns(3)
    render.metric(t("att.ind_first"), f"{s.first_loss:.2f} nat", at=c[0])
    render.metric(t("att.ind_second"), f"{s.second_loss:.2f} nat", at=c[1])
    render.metric(t("att.ind_icl"), f"{s.icl:+.2f} nat", at=c[2])
    claim = induction(s.top[0][2], s.uniform, s.icl, s.top_rise, s.control_rise)
    render.md(render.claim(claim, lh=lh(bl, bh), clh=lh(cl, ch)))
    render.plot(render.figure(heatmap, s.top_weights, x_labels=[str(i + 1) for i in range(2 * half)],
                              y_labels=[str(i + 1) for i in range(2 * half)], zmin=0.0, zmax=1.0,
                              title=t("att.ind_attn_title", lh=lh(bl, bh)), x_title=t("att.fig.key"),
                              y_title=t("att.fig.query"), colorbar_title=t("att.weight")),
                key="att_ind_attn", filename="induction-head-attention")
    # where an induction head's weight sits; said of this head only where the scan found one
    render.caption(t("att.ind_attn_caption" if claim.statement != "none" else "att.ind_attn_caption_none",
                     start=half + 1, end=2 * half, gap=half - 1, score=f"{s.top[0][2]:.3f}", uniform=f"{s.uniform:.3f}"))
    prev = s.best_previous
    render.md(t("att.ind_prev", plh=lh(prev[0], prev[1]), pscore=f"{prev[2]:.2f}"))
    render.caption(t("att.ind_note", half=half))
    render.caption(model_words.by(b))


render.run_sections([
    ("att.sec_why", sec_why),
    ("att.sec_live", sec_live),
    ("att.sec_mh", sec_multi_head),
    ("att.sec_heads_map", sec_heads_map),
    ("att.sec_induction", sec_induction),
    ("att.sec_w17", sec_w17),
    ("att.sec_scale", sec_scale),
    ("att.sec_mask", sec_mask),
    ("att.sec_softmax", sec_softmaxes),
])
