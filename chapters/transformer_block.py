"""Chapter 5 · The Transformer block: the residual stream's shapes ([n, d] through the blocks,
[n, |V|] at the head), LayerNorm vs RMSNorm on one vector (LayerNorm/RMSNorm example), contextual vectors: the same
word at the same position after two left contexts, cosine per layer on the live model, and the logit lens: every
layer's stream read through the final norm and the unembedding."""
from __future__ import annotations

import re

import streamlit as st

from lmviz.chapters.examples import CONTEXTS, LENS_PROMPT, default_for, model_languages
from lmviz.chapters.about_model import word_ids
from ui import model_words, session, render, urlstate
from ui.i18n import lang, language_names, sentences, t
from viz.pipeline import Stage, pipeline_figure
from viz.theme import TOKEN_CYCLE
from viz.tokenization import visible
from viz.transformer_block import stream_figure, norms_figure, cosine_figure, lens_figure

render.page_header("blk.title", "blk.intro")

MAX_CHARS = 200
DEFAULT_TEXT = {"en": "The capital of France is Paris.", "zh": "床前明月光，疑是地上霜。"}  # lines the default model knows
MAX_DIMS = 16





def _bundle():
    return session.try_live_bundle("blk.no_model")


_key = session.model_key


def sec_shapes():
    from lmviz.chapters.embedding import encode_for_model

    b = _bundle()
    if b is None:
        return
    cfg = b.model.cfg
    render.md(t("blk.shapes_text"))
    text = urlstate.text(t("blk.sentence"), DEFAULT_TEXT[lang()], param="bs", key="blk_text",
                         max_chars=MAX_CHARS)
    enc = encode_for_model(b.tokenizer, text, cfg.block_size)
    render.unknown_chars(enc.unknown)
    render.context_cut(enc.context)
    if not enc.ids:
        st.warning(t("blk.empty"))
        return
    n, d, V = len(enc.ids), cfg.d_model, cfg.vocab_size
    tr = session.trace(b.model, _key(b), tuple(enc.ids))
    stages = [
        Stage(t("blk.st.embed"), f"[{n}, {d}]", "", TOKEN_CYCLE[1]),
        Stage(t("blk.st.norm1"), f"[{n}, {d}]", "", TOKEN_CYCLE[4]),
        Stage(t("blk.st.attn"), f"[{n}, {d}]", "", TOKEN_CYCLE[2]),
        Stage(t("blk.st.add"), f"[{n}, {d}]", "", TOKEN_CYCLE[5]),
        Stage(t("blk.st.norm2"), f"[{n}, {d}]", "", TOKEN_CYCLE[4]),
        Stage(t("blk.st.mlp"), f"[{n}, {cfg.mlp_ratio * d}→{d}]", "", TOKEN_CYCLE[2]),
        Stage(t("blk.st.add"), f"[{n}, {d}] × {cfg.n_layer}", "", TOKEN_CYCLE[5]),
        Stage(t("blk.st.final"), f"[{n}, {d}]", "", TOKEN_CYCLE[4]),
        Stage(t("blk.st.head"), f"[{n}, {V}]", "", TOKEN_CYCLE[3]),
    ]
    render.plot(render.figure(pipeline_figure, stages, t("blk.repeat", L=cfg.n_layer), loop=(1, 6)),
                key="blk_pipe", filename="block-shapes")
    # each tensor under the step it comes out of (the names are the trace's fields, lmviz.model)
    shapes = [("blk.st.embed", "x0", tr.x0), ("blk.st.norm1", "ln1", tr.layers[0].ln1),
              ("blk.st.attn", "attn_out", tr.layers[0].attn_out), ("blk.st.mlp_hidden", "mlp_hidden", tr.layers[0].mlp_hidden),
              ("blk.st.block_out", "resid_out", tr.layers[-1].resid_out), ("blk.st.final", "hidden", tr.hidden),
              ("blk.st.head", "logits", tr.logits)]
    render.table([{t("blk.col.step"): t(key, n=cfg.n_layer), t("blk.col.tensor"): name, t("blk.col.shape"): str(list(x.shape))}
                  for key, name, x in shapes], hide_index=True)
    _stream(tr, enc.tokens)


@st.fragment
def _stream(tr, tokens):
    # keyed by the length: another model's (or text's) tokens start at their own end, never past it
    pos = urlstate.slider(t("blk.position"), 1, len(tokens), len(tokens), param="bp", key=f"blk_pos:{len(tokens)}")
    i = pos - 1
    labels, vals = [t("blk.st.embed")], [float(tr.x0[i].norm())]
    for li, L in enumerate(tr.layers, start=1):
        labels += [t("blk.st.plus_attn", n=li), t("blk.st.plus_mlp", n=li)]
        vals += [float(L.resid_mid[i].norm()), float(L.resid_out[i].norm())]
    labels.append(t("blk.st.final"))
    vals.append(float(tr.hidden[i].norm()))
    fig = render.figure(stream_figure, labels, vals, y_title=t("blk.norm_y"),
                        title=t("blk.stream_title", tok=tokens[i], pos=pos))
    render.plot(fig, key="blk_stream", filename="residual-stream")
    render.caption(t("blk.stream_caption"))


def _parse_vector(raw: str) -> list[float] | None:
    parts = [p for p in raw.replace("，", ",").replace(";", ",").replace(" ", ",").split(",") if p]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        return None
    if not vals or len(vals) > MAX_DIMS or any(v != v or abs(v) > 1e6 for v in vals):
        return None
    return vals


def sec_norms():
    from lmviz.chapters.transformer_block import norm_steps

    render.md(t("blk.norm_text"))
    raw = urlstate.text(t("blk.vector"), "2, -1, 0.5, 3.5", param="vec", key="blk_vec", max_chars=200)
    h = _parse_vector(raw)
    if h is None:
        st.warning(t("blk.bad_vector", n=MAX_DIMS))
        return
    s = norm_steps(h)
    f = lambda v: "[" + ", ".join(f"{x:.4f}" for x in v.tolist()) + "]"  # noqa: E731
    c1, c2 = st.columns(2)
    with c1:
        render.md("**LayerNorm**")
        render.code(f"mean        = {s.mean:.4f}\nh - mean    = {f(s.centered)}\n"
                f"var         = {s.var:.4f}\nsqrt(var+ε) = {s.ln_den:.4f}\n"
                f"LayerNorm   = {f(s.layernorm)}", language=None)
    with c2:
        render.md("**RMSNorm**")
        render.code(f"mean(h²)         = {s.mean_sq:.4f}\nsqrt(mean(h²)+ε) = {s.rms_den:.4f}\n"
                f"RMSNorm          = {f(s.rmsnorm)}", language=None)
    render.plot(render.figure(norms_figure, s, names=("h", "LayerNorm", "RMSNorm"), dim_word=t("blk.dim"),
                              title=t("blk.norm_fig")), key="blk_norms", filename="layernorm-vs-rmsnorm")
    render.md(t("blk.norm_result", ln_mean=f"{float(s.layernorm.mean()):.4f}",
                  rms_mean=f"{float(s.rmsnorm.mean()):.4f}",
                  rms_ms=f"{float((s.rmsnorm ** 2).mean()):.4f}", eps=f"{s.eps:g}"))


def sec_context():
    from lmviz.chapters.transformer_block import contextual_cosine, find_word
    from lmviz.chapters.embedding import encode_for_model

    b = _bundle()
    if b is None:
        return
    a = model_words.facts(b)
    pos = a.pos if a.pos in ("learned", "rope", "sinusoidal") else "none"
    render.md(t("blk.ctx_text", name=model_words.name(b, a), pos=t(f"blk.ctx_pos.{pos}")))
    da, db, dw = CONTEXTS[lang()]
    c1, c2, c3 = st.columns([3, 3, 1])
    with c1:
        sa = urlstate.text(t("blk.ctx_a"), da, param="ca", key="blk_a", max_chars=MAX_CHARS)
    with c2:
        sb = urlstate.text(t("blk.ctx_b"), db, param="cb", key="blk_b", max_chars=MAX_CHARS)
    with c3:
        word = urlstate.text(t("blk.ctx_word"), dw, param="cw", key="blk_w", max_chars=20)
    n = b.model.cfg.block_size
    ea, eb = (encode_for_model(b.tokenizer, x, n) for x in (sa, sb))
    for e in (ea, eb):
        render.context_cut(e.context)
    wa, wb = word_ids(b.tokenizer, ea.ids, word), word_ids(b.tokenizer, eb.ids, word)   # " apple" too
    if not wa:
        st.warning(t("blk.ctx_bad_word"))
        return
    pa, pb = find_word(ea.ids, wa), find_word(eb.ids, wb)
    if pa is None or pb is None:
        st.warning(t("blk.ctx_missing", word=_md(word)))
        return
    ta, tb = session.trace(b.model, _key(b), tuple(ea.ids)), session.trace(b.model, _key(b), tuple(eb.ids))
    cc = contextual_cosine(ta, tb, pa, pb)
    names = {"token": t("blk.ctx.token"), "input": t("blk.ctx.input" if pos != "rope" else "blk.ctx.input_rope"),
             "final": t("blk.ctx.final")}
    # "block k" is a layer, named as the lens chart and the residual chart name it
    labels = [names.get(s) or t("common.layer_n", n=int(s.split()[-1])) for s in cc.stages]
    tok = _md(word)
    render.plot(render.figure(cosine_figure, labels, cc.cosine, y_title=t("blk.cos_y"),
                              title=t("blk.ctx_fig", tok=render.escape(word))), key="blk_ctx", filename="contextual-cosine")
    render.md(context_sentence(b.tokenizer, ea.ids, eb.ids, (len(wa), len(wb)), cc, labels, tok,
                               rope=pos == "rope"))
    render.caption(t("blk.ctx_caveat", name=model_words.name(b, a), params=f"{a.params:,}"))
    render.caption(model_words.by(b, a))


def _md(text: str) -> str:
    """User text safe inside Markdown: HTML escaped, Markdown punctuation backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])", r"\\\1", text)


def context_sentence(tokenizer, ids_a, ids_b, n_word: tuple[int, int], cc, labels: list[str], tok: str,
                     rope: bool = False) -> str:
    """The text beside the cosine chart, formatted from the computed cosines (no claim the
    numbers do not make). ``n_word``: the word's tokens in sentence A and in B (" apple" after a
    word, "apple" at the start of a text). ``rope``: the model adds no position vector (RoPE turns
    q and k), so no sentence speaks of one."""
    from lmviz.chapters.transformer_block import context_curve

    c = context_curve(cc)
    f = lambda x: f"{x:.3f}"  # noqa: E731
    if cc.pos_a == cc.pos_b:
        left_a = _md(tokenizer.decode(list(ids_a[:cc.pos_a - n_word[0] + 1])).strip())
        left_b = _md(tokenizer.decode(list(ids_b[:cc.pos_b - n_word[1] + 1])).strip())
        where = t("blk.ctx_same_pos", tok=tok, pos=cc.pos_a + 1, left_a=left_a, left_b=left_b)
    else:
        where = t("blk.ctx_diff_pos", tok=tok, pa=cc.pos_a + 1, pb=cc.pos_b + 1)
    if not c.changed:
        return sentences(where, t("blk.ctx_flat" + ("_rope" if rope else ""), c0=f(c.embed),
                                  c1=f(c.with_pos), cf=f(c.final)))
    blocks = t("blk.ctx_list_sep").join(t("blk.ctx_item", stage=labels[i + 2], c=f(v))
                                        for i, v in enumerate(c.blocks))
    if c.lowest_stage == len(cc.cosine) - 1:
        return sentences(where, t("blk.ctx_curve_end" + ("_rope" if rope else ""), c0=f(c.embed), c1=f(c.with_pos),
                                  blocks=blocks, cf=f(c.final)))
    return sentences(where, t("blk.ctx_curve" + ("_rope" if rope else ""), c0=f(c.embed), c1=f(c.with_pos),
                              blocks=blocks, cmin=f(c.lowest), where=labels[c.lowest_stage], cf=f(c.final)))


LENS_COLS = 16          # positions the lens grid shows (the last ones; the model reads the whole prompt)
LENS_CELL_CHARS = 8     # characters of a token shown in a cell (the hover has it whole)


@st.cache_resource(max_entries=16, show_spinner=False)
def _lens(_model, model_key: str, ids: tuple[int, ...]):
    from lmviz.chapters.transformer_block import logit_lens

    return logit_lens(_model, session.trace(_model, model_key, ids))


def _cell(label: str) -> str:
    label = visible(label) or "∅"
    return label if len(label) <= LENS_CELL_CHARS else label[:LENS_CELL_CHARS - 1] + "…"


def sec_lens():
    from lmviz.chapters.embedding import encode_for_model
    from lmviz.chapters.transformer_block import lens_lead

    b = _bundle()
    if b is None:
        return
    render.md(t("blk.lens_text"))
    name = model_words.name(b)
    known = model_languages(b.meta)
    in_lang, default = default_for(LENS_PROMPT, lang(), b.meta)
    text = urlstate.text(t("blk.lens_prompt"), default, param="lp", key=f"blk_lens:{in_lang}", max_chars=MAX_CHARS)
    if known is not None and lang() not in known:
        render.caption(t("blk.lens_lang_note", name=model_words.name(b, start=True), langs=language_names(known)))
    enc = encode_for_model(b.tokenizer, text, b.model.cfg.block_size)
    render.unknown_chars(enc.unknown)
    render.context_cut(enc.context)
    if not enc.ids:
        st.warning(t("blk.empty"))
        return
    lens = _lens(b.model, _key(b), tuple(enc.ids))
    T = len(enc.ids)
    first_col = max(0, T - LENS_COLS)
    rows = [t("blk.lens_row_embed")] + [t("common.layer_n", n=k) for k in range(1, len(lens.rows))]
    tok = b.tokenizer.token
    cells = [[_cell(tok(int(i))) for i in line[first_col:]] for line in lens.top_ids.tolist()]
    cols = [f"{visible(tok(i))}" for i in enc.ids[first_col:]]
    lead = lens_lead(lens)
    fig = render.figure(lens_figure, rows, cols, cells, lens.top_probs[:, first_col:].numpy(),
                        mark=(lead.first, T - 1 - first_col), x_title=t("blk.lens_x"), y_title=t("blk.lens_y"),
                        hover=t("blk.lens_hover"), colorbar_title=t("blk.lens_colorbar"),
                        title=t("blk.lens_fig", name=name))
    render.plot(fig, key="blk_lens", filename="logit-lens")
    if first_col:
        render.caption(t("blk.lens_cut", n=T - first_col, total=T))
    render.md(lens_sentence(lens, lead, rows, tok, tok(enc.ids[-1])))
    render.caption(t("blk.lens_caveat"))


def lens_sentence(lens, lead, rows: list[str], tok, last: str) -> str:
    """The sentence under the lens grid, from the grid: where the model's answer at the last
    position first leads, from where it stays ahead, and what leads the row before it."""
    q = lambda s: _md(visible(s))  # noqa: E731
    where = lambda r: t("blk.lens_at_embed") if r == 0 else t("blk.lens_after", layer=rows[r])  # noqa: E731
    fmt = dict(last=q(last), tok=q(tok(lead.token)), p_final=f"{lead.p_final:.3f}", p_first=f"{lead.p_first:.3f}",
               first=where(lead.first), stays=rows[lead.stays])
    last_row = len(lens.rows) - 1
    if lead.first == last_row:
        before = int(lens.top_ids[last_row - 1, -1])
        return t("blk.lens_lead_last", prev=q(tok(before)), p_prev=f"{float(lens.top_probs[last_row - 1, -1]):.3f}",
                 before=where(last_row - 1), **fmt)
    return t("blk.lens_lead_stays" if lead.first == lead.stays else "blk.lens_lead_back", **fmt)


render.run_sections([
    ("blk.sec_shapes", sec_shapes),
    ("blk.sec_norms", sec_norms),
    ("blk.sec_context", sec_context),
    ("blk.sec_lens", sec_lens),
])
