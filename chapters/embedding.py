"""Chapter 2 · Embeddings and positions: the notes' toy table (toy embedding table), robot + P3 (position-vector example), two orders
without positions (word-order example), the live model's table [V, d] (embedding-table example) and its position signal: learned,
sinusoidal and RoPE."""
from __future__ import annotations

import streamlit as st

from lmviz.chapters.claims import cosine_by_distance, positions
from ui import model_words, session, render, urlstate
from ui.i18n import lang, t
from viz.attention import heatmap
from viz.embedding import table_figure, two_orders_figure, vector_sum_figure, rope_plane_figure
from viz.theme import COLORS

render.page_header("emb.title", "emb.intro")

MAX_CHARS = 200
DEFAULT_TEXT = {"en": "I love robots", "zh": "床前明月光"}  # the live table: characters the default model knows
SCHEMES = ("learned", "sinusoidal", "rope")
P2_FILLED = [0.02, 0.08, -0.05]   # the notes give only P3; P2 is filled in (said on the page)


def _dims(d: int) -> list[str]:
    return [f"d{i + 1}" for i in range(d)]


def sec_toy():
    from lmviz.chapters.embedding import lookup, toy_embedding

    e = toy_embedding()
    render.md(t("emb.toy_text"))
    c1, c2 = st.columns([3, 2])
    with c2:
        i = urlstate.slider(t("emb.pick_id"), 0, len(e.tokens) - 1, 3, param="id", key="emb_id")
        row = lookup(e.E, [i])[0]
        render.md(t("emb.lookup_result", id=i, tok=render.escape(e.tokens[i]),
                      row=", ".join(f"{x:.2f}" for x in row.tolist())))
        render.code(f"E.shape = {list(e.E.shape)}\nE[{i}] = {[round(x, 2) for x in row.tolist()]}", language=None)
        if i in e.filled:
            st.info(t("emb.eos_filled"))
        else:
            render.caption(t("emb.eos_note"))
    with c1:
        labels = [f"{k} · {tok}" + (" *" if k in e.filled else "") for k, tok in enumerate(e.tokens)]
        fig = render.figure(table_figure, e.E, labels, _dims(3), highlight=[i], title=t("emb.toy_fig"),
                            x_title=t("emb.dim"), y_title=t("emb.id_token"), height=330)
        render.plot(fig, key="emb_toy", filename="toy-embedding")


def sec_position():
    import torch

    from lmviz.chapters.embedding import TOY_P3, add_position, order_check, toy_embedding

    e = toy_embedding()
    robot = e.E[3]
    s = add_position(robot, TOY_P3)
    render.md(t("emb.w2_text"))
    c1, c2 = st.columns([3, 2])
    with c1:
        fig = render.figure(vector_sum_figure, [(t("emb.robot_row"), robot, COLORS["token"]),
                                                (t("emb.p3"), TOY_P3, COLORS["key"]),
                                                (t("emb.sum"), s, COLORS["chosen"])], _dims(3), title=t("emb.w2_fig"))
        render.plot(fig, key="emb_w2", filename="robot-plus-p3")
    with c2:
        fmt = lambda v: "[" + ", ".join(f"{x:.2f}" for x in v) + "]"  # noqa: E731
        total = t("emb.sum_word")                          # "sum" / "和": the page's own word
        width = lambda name: sum(2 if ord(c) > 0x2E80 else 1 for c in name)  # noqa: E731  (CJK: two columns)
        pad = lambda name: name + " " * max(0, 5 - width(name))             # noqa: E731
        render.code(f"{pad('robot')} = {fmt(robot.tolist())}\n{pad('P3')} = {fmt(TOY_P3)}\n"
                    f"{pad(total)} = {fmt(s.tolist())}", language=None)
    render.md(t("emb.w3_text"))
    P = torch.tensor([P2_FILLED, TOY_P3], dtype=torch.float64)   # positions 2 and 3
    c = order_check(e.E, [3, 2], [2, 3], P)
    fig = render.figure(two_orders_figure, c.rows_a, c.rows_b, ["robot", "love"], ["love", "robot"], _dims(3),
                        ["robot love", "love robot"])
    render.plot(fig, key="emb_w3", filename="two-orders")
    render.md(t("emb.w3_result", same=t("emb.yes") if c.same_multiset else t("emb.no"),
                  order=t("emb.yes") if c.same_sequence else t("emb.no"),
                  withpos=t("emb.yes") if c.same_multiset_with_pos else t("emb.no")))
    render.caption(t("emb.p2_filled", p2=", ".join(f"{x:.2f}" for x in P2_FILLED)))


@st.cache_data(show_spinner=False, max_entries=32)
def _rows(model_key: str, _E, ids: tuple[int, ...]):
    return _E[list(ids)].detach().cpu().float().numpy()


def sec_live():
    from lmviz.chapters.embedding import encode_for_model

    try:
        b = session.live_bundle()
    except (ValueError, OSError) as e:
        st.warning(t("emb.no_model", err=str(e)[:200]))
        return
    V, d = b.model.cfg.vocab_size, b.model.cfg.d_model
    render.md(t("emb.live_text", name=model_words.name(b), reads=model_words.reads(b)))
    m1, m2, m3 = st.columns(3)
    render.metric(t("emb.m.shape"), f"[{V}, {d}]", at=m1)
    render.metric(t("emb.m.numbers"), f"{V * d:,}", at=m2)
    render.metric(t("emb.m.big"), f"{50000 * 768:,}", help=t("emb.m.big_help"), at=m3)
    text = urlstate.text(t("emb.live_input"), DEFAULT_TEXT[lang()], param="e", key="emb_text",
                         max_chars=MAX_CHARS)
    enc = encode_for_model(b.tokenizer, text, 32)
    render.unknown_chars(enc.unknown)
    if enc.truncated:
        st.info(t("emb.truncated", n=32))
    if not enc.ids:
        st.warning(t("emb.empty"))
        return
    render.code("ids = " + str(enc.ids), language=None)
    rows = _rows(session.model_key(b), b.model.wte.weight, tuple(enc.ids))
    labels = [f"{tok} · {i}" for tok, i in zip(enc.tokens, enc.ids)]
    fig = render.figure(table_figure, rows, labels, _dims(d), title=t("emb.live_fig", n=len(enc.ids), d=d),
                        x_title=t("emb.dim"), y_title=t("emb.token_id"))
    render.plot(fig, key="emb_live", filename="live-embedding-rows")
    render.caption(model_words.by(b))
    render.caption(t("emb.ids_caveat"))


def sec_positions():
    from lmviz.model import sinusoidal_positions

    b = session.try_live_bundle()
    own = b.model.cfg.pos if b is not None else None         # the scheme the current model uses
    names = {s: t("emb.scheme_own", scheme=t(f"emb.scheme.{s}")) if s == own else t(f"emb.scheme.{s}")
             for s in SCHEMES}                               # translated now, not at format time
    scheme = urlstate.selectbox(t("emb.scheme"), SCHEMES, SCHEMES.index(own) if own in SCHEMES else 0, param="pos",
                                key="emb_scheme", format_func=names.__getitem__)
    render.md(t(f"emb.scheme_text.{scheme}"))
    if own is not None:
        render.caption(t("emb.scheme_uses", name=model_words.name(b),
                         scheme=t(f"emb.scheme.{own}") if own in SCHEMES else own))
    if scheme == "rope":
        _rope()
        return
    cfg = b.model.cfg if b is not None else None
    T, d = (cfg.block_size, cfg.d_model) if cfg else (64, 128)
    if scheme == "learned":
        if b is None or b.model.wpe is None:
            st.info(t("emb.no_learned", name=model_words.name(b)) if b is not None else t("emb.no_model", err="—"))
            return
        P = b.model.wpe.weight.detach().cpu().float()
        title = t("emb.learned_fig", T=T, d=d)
    else:
        P = sinusoidal_positions(T, d)
        title = t("emb.sin_fig", T=T, d=d)
    Pn = P / P.norm(dim=-1, keepdim=True).clamp_min(1e-9)
    c1, c2 = st.columns(2)
    with c1:
        render.plot(render.figure(heatmap, P, title=title, x_title=t("emb.dim"), y_title=t("emb.position"),
                                  diverging=True, text=False, height=420), key="emb_pos", filename=f"positions-{scheme}")
    with c2:
        render.plot(render.figure(heatmap, Pn @ Pn.T, title=t("emb.pos_sim"), x_title=t("emb.position"),
                                  y_title=t("emb.position"), diverging=True, text=False, height=420,
                                  zmin=-1.0, zmax=1.0), key="emb_pos_sim", filename=f"positions-{scheme}-similarity")

    render.caption(render.claim(positions(cosine_by_distance(P.numpy()))))


def _rope():
    from lmviz.chapters.embedding import random_pair, rope_offset_demo

    demo = rope_offset_demo(*random_pair(8, seed=0), n_pos=12, base=10.0)   # a small base: turns visible at low positions
    c1, c2 = st.columns(2)
    with c1:
        render.plot(render.figure(rope_plane_figure, demo, names=("q", "k"), title=t("emb.rope_plane")),
                    key="emb_rope_plane", filename="rope-rotation")
    with c2:
        render.plot(render.figure(heatmap, demo.scores, x_labels=[str(p) for p in range(12)],
                                  y_labels=[str(p) for p in range(12)], title=t("emb.rope_scores"),
                                  x_title=t("emb.k_pos"), y_title=t("emb.q_pos"), diverging=True, text=False,
                                  height=420), key="emb_rope_scores", filename="rope-scores")
    render.md(t("emb.rope_result", spread=f"{demo.max_spread:.1e}"))


render.run_sections([
    ("emb.sec_toy", sec_toy),
    ("emb.sec_position", sec_position),
    ("emb.sec_live", sec_live),
    ("emb.sec_positions", sec_positions),
])
