"""Chapter 1 · Tokens and BPE: learn merges on a corpus step by step, encode new text, and
measure the vocabulary-size trade-off (BPE 'low lower' example, embedding-table example)."""
from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from lmviz import limits
from lmviz.bpe import split_heldout, train_bpe, vocab_tradeoff
from ui import render, urlstate
from ui.i18n import lang, t
from viz.tokenization import (pair_counts_figure, segmentation, token_chips_html,
                              tradeoff_figure, visible)

EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"
MAX_CHARS = 10_000         # corpus cap: training stays well under half a second
MAX_ENCODE = 2_000         # chars in the encoder box
SOURCES = ("toy", "english", "chinese", "code", "own", "upload")
UNKNOWN_DEFAULT = {"en": "snow ☃ café", "zh": "明月 ☃ 光"}   # ☃ is in no vocabulary here
ENCODE_DEFAULT = {"toy": "lower low owl", "english": "The slowest readers learned.",
                  "chinese": "学生在图书馆里学习数学。", "code": "def merge(words, pair):"}

render.page_header("tok.title", "tok.intro")


# ---------------------------------------------------------------- cached pure work --------
@st.cache_data(max_entries=32, show_spinner=False)
def _train(text: str, n: int, level: str, split: bool):
    return train_bpe(text, n, level=level, split_words=split)


@st.cache_data(max_entries=16, show_spinner=False)
def _tradeoff(text: str, level: str, split: bool, d: int):
    train, held = split_heldout(text, 0.2)
    tok = train_bpe(train, 400, level=level, split_words=split, record=False)
    n = len(tok.merges)
    ks = sorted({0, *(round(n * f) for f in (0.05, 0.1, 0.2, 0.35, 0.5, 0.75)), n})
    return vocab_tradeoff(tok, held, ks, d), len(train), len(held)


# ---------------------------------------------------------------- corpus ------------------
render.section("tok.corpus")
c1, c2 = st.columns([2, 1])
with c2:
    # format_func: a dict of labels made now (not a lambda calling t() later), so the labels
    # stay in this run's language wherever they are formatted
    src_labels = {s: t(f"tok.src.{s}") for s in SOURCES}
    urlstate.seed_from_url("corpus", "tok_source", SOURCES[0], str, lambda v: v in SOURCES)
    source = st.radio(t("tok.source"), SOURCES, format_func=src_labels.__getitem__,
                      key="tok_source")
    urlstate.to_url("corpus", source)
text: str | None = None
with c1:
    if source == "toy":
        text = "low low lower"
        st.caption(t("tok.toy_note"))
    elif source in ("english", "chinese", "code"):
        text = (EXAMPLES / f"{source}.txt").read_text(encoding="utf-8")
    elif source == "own":
        text = st.text_area(t("tok.own_label"), value="low low lower newer newest",
                            max_chars=MAX_CHARS, height=120, key="tok_own")
    else:
        up = st.file_uploader(t("tok.upload_label", kb=limits.TOKENIZER_UPLOAD_BYTES // 1024), type=["txt"],
                              key="tok_upload")
        if up is None:
            st.info(t("tok.upload_wait"))
        else:
            text = render.upload_text(up, limits.TOKENIZER_UPLOAD_BYTES, {why: t(f"tok.err_{why}", kb=limits.TOKENIZER_UPLOAD_BYTES // 1024)
                                                       for why in ("too_big", "binary", "utf8")})
    if text is not None and source not in ("toy", "own"):
        with st.expander(t("tok.show_corpus", n=len(text))):
            st.text(text[:3000] + ("…" if len(text) > 3000 else ""))

if text is not None and len(text) > MAX_CHARS:
    st.warning(t("tok.err_long", n=MAX_CHARS))
    text = text[:MAX_CHARS]
if text is not None and not text.strip():
    st.warning(t("tok.err_empty"))
    text = None
if text is None:
    st.stop()

s1, s2, s3 = st.columns(3)
with s1:
    level_labels = {s: t(f"tok.level.{s}") for s in ("char", "byte")}
    urlstate.seed_from_url("lvl", "tok_level", "char", str, lambda v: v in level_labels)
    level = st.radio(t("tok.level"), ("char", "byte"), format_func=level_labels.__getitem__,
                     horizontal=True, key="tok_level")
    urlstate.to_url("lvl", level)
with s2:
    split = st.checkbox(t("tok.split"), value=True, key="tok_split", help=t("tok.split_help"))
with s3:
    urlstate.seed_from_url("merges", f"tok_n_{source}", 2 if source == "toy" else 60, int,
                           lambda v: 1 <= v <= 500)
    n_req = st.number_input(t("tok.num_merges"), 1, 500, key=f"tok_n_{source}")
    urlstate.to_url("merges", int(n_req))

tok = _train(text, int(n_req), level, split)
n = len(tok.merges)
if tok.stopped_early:
    st.info(t(f"tok.stop.{tok.stop_reason}", done=n, asked=int(n_req)))
st.caption(t("tok.tie_rule"))


# ---------------------------------------------------------------- sections ----------------
def _md(s: str) -> str:
    """A token label safe inside Markdown: whitespace made visible, punctuation backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])", r"\\\1", visible(s))


def _prose(s: str) -> str:
    """User or corpus text inside a Markdown sentence: punctuation backslashed, spaces kept."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])", r"\\\1", s)


def _pair(p) -> str:
    return f"{visible(p[0])} + {visible(p[1])}"


def _show_step(k: int) -> None:
    h = tok.history[k - 1]
    before = tok.initial_words if k == 1 else tok.history[k - 2].words
    render.md(t("tok.step_msg", k=k, a=_md(h.pair[0]), b=_md(h.pair[1]), tok=_md(h.token),
                  id=h.new_id, c=h.count))
    if h.tied:
        names = ", ".join(f"({_md(a)} + {_md(b)})" for a, b in h.tied)
        render.md(t("tok.tie_msg", pairs=names, c=h.count, a=_md(h.pair[0]), ida=h.ids[0],
                      b=_md(h.pair[1]), idb=h.ids[1]))
    left, right = st.columns([3, 2])
    with left:
        cands = h.candidates[:25]  # the winner is always first
        fig = pair_counts_figure(
            [_pair(c.pair) for c in cands], [c.count for c in cands], _pair(h.pair),
            {_pair(p) for p in h.tied} - {_pair(h.pair)},
            x_title=t("tok.fig.pair"), y_title=t("tok.fig.count"),
            names=(t("tok.fig.winner"), t("tok.fig.tie"), t("tok.fig.other")),
            title=t("tok.fig.counts_title", k=k, shown=len(cands), total=h.n_candidates))
        render.plot(fig, key="tok_counts", filename="bpe-pair-counts")
    with right:
        # words this merge changed first (by frequency), then the rest
        pairs = sorted(zip(before, h.words), key=lambda ba: ba[0][2] == ba[1][2])
        rows = [{t("tok.col.word"): visible(w), t("tok.col.count"): c,
                 t("tok.col.before"): segmentation(b), t("tok.col.after"): segmentation(a)}
                for (w, c, b), (_, _, a) in pairs]
        st.dataframe(rows, hide_index=True, width="stretch", height=min(400, 38 + 35 * len(rows)))
        st.caption(t("tok.table_note"))
    merges = [{"#": i + 1, t("tok.col.pair"): _pair(m.pair), t("tok.col.new"): visible(m.token),
               "ID": m.new_id, t("tok.col.count"): m.count} for i, m in enumerate(tok.history[:k])]
    with st.expander(t("tok.merge_list", k=k), expanded=n <= 12):
        st.dataframe(merges, hide_index=True, width="stretch", height=min(300, 38 + 35 * k))


def _stepper_section() -> None:
    if n == 0:
        st.warning(t("tok.no_merges"))
    else:
        st.session_state.setdefault("tok_playing", False)
        key = f"tok_step_{source}_{level}_{split}_{n}"
        urlstate.seed_from_url("step", key, 1, int, lambda v: 1 <= v <= n)
        if st.session_state.get(key, 1) > n:
            st.session_state[key] = n

        @st.fragment(run_every=1.0 if st.session_state["tok_playing"] else None)
        def _stepper() -> None:
            if st.session_state["tok_playing"]:
                cur = st.session_state.get(key, 1)
                if cur >= n:
                    st.session_state["tok_playing"] = False
                    st.rerun()
                st.session_state[key] = cur + 1
            b1, b2, b3, _ = st.columns([1, 1, 1, 5])
            cur = st.session_state.get(key, 1)
            if b1.button(t("tok.prev"), disabled=cur <= 1, key="tok_prev"):
                st.session_state[key] = cur - 1
            if b2.button(t("tok.next"), disabled=cur >= n, key="tok_next"):
                st.session_state[key] = cur + 1
            playing = st.session_state["tok_playing"]
            if b3.button(t("tok.pause") if playing else t("tok.play"), key="tok_play"):
                st.session_state["tok_playing"] = not playing
                if not playing and st.session_state.get(key, 1) >= n:
                    st.session_state[key] = 1
                st.rerun()
            if n >= 2:
                k = st.slider(t("tok.step"), 1, n, key=key)
            else:
                k = 1
            urlstate.to_url("step", k)
            _show_step(k)

        _stepper()


def _encode_section() -> None:
    new_text = st.text_area(t("tok.encode_label"), value=ENCODE_DEFAULT.get(source, "low lower"),
                            max_chars=MAX_ENCODE, height=80, key=f"tok_enc_{source}")
    if not new_text:
        st.info(t("tok.encode_empty"))
    else:
        toks = tok.tokens(new_text)
        st.html(token_chips_html(toks, id_word="ID", bytes_word=t("tok.bytes")))
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(t("tok.m.tokens"), len(toks))
        m2.metric(t("tok.m.chars"), len(new_text))
        m3.metric(t("tok.m.bytes"), len(new_text.encode("utf-8")))
        m4.metric(t("tok.m.ratio"), f"{len(toks) / len(new_text):.2f}")
        n_unk = sum(x.unk for x in toks)
        if n_unk:
            st.warning(t("tok.unk_warn", n=n_unk))
        ids = [x.id for x in toks]
        st.code(str(ids[:300]) + (" …" if len(ids) > 300 else ""), language=None)
        render.md(t("tok.ids_note", v=tok.vocab_size, a=ids[0], row=ids[0]))


def _tradeoff_section() -> None:
    render.md(t("tok.tradeoff_intro"))
    d = st.select_slider(t("tok.d"), options=[64, 128, 256, 512, 768, 1024, 4096], value=768,
                         key="tok_d")
    if len(text) < 200:
        st.info(t("tok.tradeoff_small"))
    else:
        pts, n_train, n_held = _tradeoff(text, level, split, int(d))
        fig = tradeoff_figure([p.table_params for p in pts], [p.tokens_per_char for p in pts],
                              [p.vocab_size for p in pts], x_title=t("tok.fig.params", d=d),
                              y_title=t("tok.fig.tpc"), title=t("tok.fig.tradeoff_title"))
        render.plot(fig, key="tok_tradeoff", filename="bpe-vocab-tradeoff")
        st.caption(t("tok.tradeoff_note", train=n_train, held=n_held))


def _bytes_section() -> None:
    render.md(t("tok.bytes_intro"))
    sample = st.text_input(t("tok.bytes_label"), value="学习 ok 😀", max_chars=40, key="tok_bytes")
    if sample:
        st.dataframe([{t("tok.col.char"): visible(ch), "U+": f"{ord(ch):04X}",
                       "UTF-8": " ".join(f"{b:02X}" for b in ch.encode("utf-8")),
                       t("tok.col.nbytes"): len(ch.encode("utf-8"))} for ch in sample],
                     hide_index=True, width="stretch")


def _special_column(title: str, tk, sample: str) -> None:
    from lmviz.special_tokens import MARKERS, encode_unknown, special_tokens

    sp = special_tokens(tk)
    render.md(f"**{title}**")
    if sp.reserved:
        names = t("common.and").join(t("tok.sp_item", text=_prose(r.text), id=r.id,
                                       role=t(f"tok.sp_role_{r.role}")) for r in sp.reserved)
        render.md(t("tok.sp_reserved", n=len(sp.reserved), v=sp.vocab_size, tokens=names))
    else:
        render.md(t("tok.sp_none", v=sp.vocab_size))
    pieces = dict(sp.marker_pieces)
    if "bos" in pieces and pieces["bos"]:
        p = pieces["bos"]
        render.md(t("tok.sp_marker", marker=_prose(MARKERS["bos"]), n=len(p),
                    pieces=" ".join(urlstate.literal(x) for x in p)))
    r = encode_unknown(tk, sample)
    chars = "、".join(r.unknown) if lang() == "zh" else ", ".join(r.unknown)
    if not r.unknown:
        render.md(t("tok.sp_all_known"))
    elif r.policy == "error":
        render.md(t("tok.sp_unk_error", chars=_prose(chars)))
    elif r.policy == "bytes":
        render.md(t("tok.sp_unk_bytes", chars=_prose(chars)))
    else:
        unk = sp.reserved[[x.role for x in sp.reserved].index("unk")]
        pos = ("、" if lang() == "zh" else ", ").join(str(i + 1) for i in r.unk_positions)
        render.md(t("tok.sp_unk_unk", tok=_prose(unk.text), id=unk.id, positions=pos,
                    decoded=_prose(r.decoded)))
    st.code(" | ".join(visible(x) for x in r.pieces) or "∅", language=None)


def _special_section() -> None:
    from lmviz.special_tokens import PAD_LABEL
    from ui import session

    render.md(t("tok.sp_body"))
    sample = st.text_input(t("tok.sp_sample"), value=UNKNOWN_DEFAULT[lang()], max_chars=80, key="tok_sp_text")
    if not sample:
        return
    c1, c2 = st.columns(2)
    with c1:
        b = session.try_live_bundle("tok.sp_no_model")
        if b is not None:
            _special_column(t("tok.sp_live_h"), b.tokenizer, sample)
    with c2:
        _special_column(t("tok.sp_bpe_h"), tok, sample)
    st.caption(t("tok.sp_pad", label=PAD_LABEL))


def _rare_section() -> None:
    from lmviz.special_tokens import rare_vs_common

    try:
        rv = rare_vs_common(tok, text)
    except ValueError:
        # this corpus has no pair: show it on the English example with the same settings, and say so
        st.info(t("tok.rare_none"))
        try:
            eng = (EXAMPLES / "english.txt").read_text(encoding="utf-8")[:MAX_CHARS]
            rv = rare_vs_common(_train(eng, max(int(n_req), 60), level, split), eng)
        except ValueError:
            return
        st.caption(t("tok.rare_fallback", n=max(int(n_req), 60)))
    pieces = " ".join(urlstate.literal(visible(x)) for x in rv.rare.pieces)
    render.md(t("tok.rare_body", common=_prose(rv.common.word), count=rv.common.count,
                n_common=rv.common.n_pieces, rare=_prose(rv.rare.word), n_rare=rv.rare.n_pieces,
                pieces=pieces))
    st.dataframe([{t("tok.col.word"): w.word, t("tok.col.count"): w.count, t("tok.rare_col_n"): w.n_pieces,
                   t("tok.rare_col_pieces"): " | ".join(visible(x) for x in w.pieces)}
                  for w in (rv.common, rv.rare)], hide_index=True, width="stretch")
    render.md(t("tok.rare_note"))


# The corpus controls above are always shown; in presenter mode the sections below are
# stepped one at a time (ui.render.run_sections).
render.run_sections([
    ("tok.stepper", _stepper_section),
    ("tok.encode", _encode_section),
    ("tok.tradeoff", _tradeoff_section),
    ("tok.bytes_title", _bytes_section),
    ("tok.sp_title", _special_section),
    ("tok.rare_title", _rare_section),
])
