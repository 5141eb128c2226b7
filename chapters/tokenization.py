"""Chapter 1 · Tokens and BPE: learn merges on a corpus step by step, encode new text, and
measure the vocabulary-size trade-off (BPE 'low lower' example, embedding-table example)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import streamlit as st

from lmviz import limits
from lmviz.limits import DRAW_TOKENS
from ui import model_words, render, session, urlstate
from ui.i18n import lang, listed, said, t
from viz.tokenization import (pair_counts_figure, segmentation, token_chips_html,
                              tradeoff_figure, visible)

EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"
MAX_CHARS = 10_000         # corpus cap
# BPE on the page: a bundled example (at most 2,720 characters) learns 500 merges in ~0.2 s
# here, so it is learned on the page; a user's text can take 5-27 s at the caps (10,000
# characters, 500 merges, measured 2026-12-01), so it is tried on the page for INLINE_S and, when
# longer, handed to the server's low-priority task pool (ui.session.session_task: one run per
# session, the previous one cancelled when an input changes, cancelled with the session); the
# page polls it. Finished runs are shared by every session (BPE_RESULTS runs kept).
INLINE_S = 0.5
BPE_RESULTS = 8
MAX_ENCODE = 2_000         # chars in the encoder box
SOURCES = ("toy", "english", "chinese", "code", "own", "upload", "room")
SHOW_SPECIAL = 6            # the other special tokens of a real tokenizer named one by one
UNKNOWN_DEFAULT = {"en": "snow ☃ café", "zh": "明月 ☃ 光"}   # ☃ is in no vocabulary here
ENCODE_DEFAULT = {"toy": "lower low owl", "english": "The slowest readers learned.",
                  "chinese": "学生在图书馆里学习数学。", "code": "def merge(words, pair):"}

render.page_header("tok.title", "tok.intro")


# ---------------------------------------------------------------- BPE runs (see INLINE_S) --------
def _bpe_work(text: str, n: int, level: str, split: bool):
    from lmviz.bpe import train_bpe

    return lambda ctx: train_bpe(text, n, level=level, split_words=split, cancel=ctx.cancelled)


def _tradeoff_work(text: str, level: str, split: bool, d: int):
    from lmviz.bpe import split_heldout, train_bpe, vocab_tradeoff

    def work(ctx):
        train, held = split_heldout(text, 0.2)
        tok = train_bpe(train, 400, level=level, split_words=split, record=False, cancel=ctx.cancelled)
        n = len(tok.merges)
        ks = sorted({0, *(round(n * f) for f in (0.05, 0.1, 0.2, 0.35, 0.5, 0.75)), n})
        return vocab_tradeoff(tok, held, ks, d), len(train), len(held)
    return work


def _run(purpose: str, key: tuple, work, bundled: bool):
    """A snapshot function of this session's BPE run ``purpose`` at ``key`` (see INLINE_S)."""
    return lambda: session.session_task(purpose, key, work, name="lmviz-bpe", max_results=BPE_RESULTS,
                                        inline_s=math.inf if bundled else INLINE_S)


def _run_status(snap) -> None:
    """The status line of a BPE run in the background (queued, running, failed)."""
    if snap is None:
        return
    if snap.state == "queued":
        st.info(t("tok.bg_queued", n=snap.queue_position, cap=session.max_trainings()))
    elif snap.active:
        st.info(t("tok.bg_running"))
    elif snap.state == "error":
        st.error(t("tok.bg_error", error=render.escape(said(snap.error or "?"))))


def _result(snapshot):
    """The run's result when done; otherwise its status, polled until it ends (None)."""
    snap = snapshot()
    if snap.state == "done":
        return snap.result
    session.poll(snapshot, _run_status)       # reruns the page when the run ends
    return None


@st.cache_resource(max_entries=8, show_spinner=False)
def _example_bpe(text: str, n: int, level: str, split: bool):
    """BPE on a bundled example text (shared, read-only; ~0.2 s at 500 merges)."""
    from lmviz.bpe import train_bpe

    return train_bpe(text, n, level=level, split_words=split)


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
        render.caption(t("tok.toy_note"))
    elif source in ("english", "chinese", "code"):
        text = (EXAMPLES / f"{source}.txt").read_text(encoding="utf-8")
    elif source == "own":
        text = st.text_area(t("tok.own_label"), value="low low lower newer newest",
                            max_chars=MAX_CHARS, height=120, key="tok_own")
    elif source == "room":                    # the room's sentences (ui.room: send, moderate)
        from ui import room

        text = room.room_corpus()
        if text is None:
            render.end_page()
    else:
        up = st.file_uploader(t("tok.upload_label", kb=limits.TOKENIZER_UPLOAD_BYTES // 1024), type=["txt"],
                              key="tok_upload")
        if up is None:
            st.info(t("tok.upload_wait"))
        else:
            text = render.upload_text(up, limits.TOKENIZER_UPLOAD_BYTES, {why: t(f"tok.err_{why}", kb=limits.TOKENIZER_UPLOAD_BYTES // 1024)
                                                       for why in ("too_big", "binary", "utf8")})
    if text is not None and source not in ("toy", "own", "room"):
        with st.expander(t("tok.show_corpus", n=len(text))):
            st.text(text[:3000] + ("…" if len(text) > 3000 else ""))

if text is not None and len(text) > MAX_CHARS:
    st.warning(t("tok.err_long", n=MAX_CHARS))
    text = text[:MAX_CHARS]
if text is not None and not text.strip():
    st.warning(t("tok.err_empty"))
    text = None
if text is None:
    render.end_page()

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

BUNDLED = source in ("toy", "english", "chinese", "code")
tok = _result(_run("tok_bpe", (text, int(n_req), level, split), _bpe_work(text, int(n_req), level, split),
                   BUNDLED))
if tok is None:
    render.end_page()
n = len(tok.merges)
if tok.stopped_early:
    st.info(t(f"tok.stop.{tok.stop_reason}", done=n, asked=int(n_req)))
render.caption(t("tok.tie_rule"))
if source == "room":
    from ui import room

    room.room_costs(tok, text)


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
        names = listed(f"({_md(a)} + {_md(b)})" for a, b in h.tied)
        render.md(t("tok.tie_msg", pairs=names, c=h.count, a=_md(h.pair[0]), ida=h.ids[0],
                      b=_md(h.pair[1]), idb=h.ids[1]))
    left, right = st.columns([3, 2])
    with left:
        cands = h.candidates[:25]  # the winner is always first
        fig = render.figure(pair_counts_figure,
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
        render.table(rows, hide_index=True, width="stretch", height=min(400, 38 + 35 * len(rows)))
        render.caption(t("tok.table_note"))
    merges = [{"#": i + 1, t("tok.col.pair"): _pair(m.pair), t("tok.col.new"): visible(m.token),
               "ID": m.new_id, t("tok.col.count"): m.count} for i, m in enumerate(tok.history[:k])]
    with st.expander(t("tok.merge_list", k=k), expanded=n <= 12):
        render.table(merges, hide_index=True, width="stretch", height=min(300, 38 + 35 * k))


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
    render.md(t("tok.note_no_loss"))


def _encode_section() -> None:
    first = text.splitlines()[0] if source == "room" else "low lower"   # the room: its first sentence
    new_text = st.text_area(t("tok.encode_label"), value=ENCODE_DEFAULT.get(source, first),
                            max_chars=MAX_ENCODE, height=80, key=f"tok_enc_{source}")
    if not new_text:
        st.info(t("tok.encode_empty"))
    else:
        toks = tok.tokens(new_text)
        st.html(token_chips_html(toks, id_word="ID", bytes_word=t("tok.bytes")))
        m1, m2, m3, m4 = st.columns(4)
        render.metric(t("tok.m.tokens"), len(toks), at=m1)
        render.metric(t("tok.m.chars"), len(new_text), at=m2)
        render.metric(t("tok.m.bytes"), len(new_text.encode("utf-8")), at=m3)
        render.metric(t("tok.m.ratio"), f"{len(toks) / len(new_text):.2f}", at=m4)
        n_unk = sum(x.unk for x in toks)
        if n_unk:
            st.warning(t("tok.unk_warn", n=n_unk))
        ids = [x.id for x in toks]
        render.code(str(ids[:300]) + (" …" if len(ids) > 300 else ""), language=None)
        render.md(t("tok.ids_note", v=tok.vocab_size, a=ids[0], row=ids[0]))
    render.md(t("tok.note_not_text"))


def _tradeoff_section() -> None:
    render.md(t("tok.tradeoff_intro"))
    d = st.select_slider(t("tok.d"), options=[64, 128, 256, 512, 768, 1024, 4096], value=768,
                         key="tok_d")
    corpus, bundled = text, BUNDLED
    if len(text) < 200:   # too short to hold out a test part: the example of the page's language
        example = "chinese" if lang() == "zh" else "english"
        corpus, bundled = (EXAMPLES / f"{example}.txt").read_text(encoding="utf-8")[:MAX_CHARS], True
        st.info(t("tok.tradeoff_small", example=t(f"tok.src.{example}")))
    res = _result(_run("tok_tradeoff", (corpus, level, split, int(d)),
                       _tradeoff_work(corpus, level, split, int(d)), bundled))
    if res is None:
        return
    pts, n_train, n_held = res
    fig = render.figure(tradeoff_figure, [p.table_params for p in pts], [p.tokens_per_char for p in pts],
                        [p.vocab_size for p in pts], x_title=t("tok.fig.params", d=d),
                        y_title=t("tok.fig.tpc"), title=t("tok.fig.tradeoff_title"), lang=lang())
    render.plot(fig, key="tok_tradeoff", filename="bpe-vocab-tradeoff")
    render.caption(t("tok.tradeoff_note", train=n_train, held=n_held))


def _bytes_section() -> None:
    render.md(t("tok.bytes_intro"))
    sample = st.text_input(t("tok.bytes_label"), value="学习 ok 😀", max_chars=40, key="tok_bytes")
    if sample:
        render.table([{t("tok.col.char"): visible(ch), "U+": f"{ord(ch):04X}",
                       "UTF-8": " ".join(f"{b:02X}" for b in ch.encode("utf-8")),
                       t("tok.col.nbytes"): len(ch.encode("utf-8"))} for ch in sample],
                     hide_index=True, width="stretch")


def _special_column(title: str, tk, sample: str, roles: dict | None = None) -> None:
    from lmviz.chapters.tokenization import MARKERS, encode_unknown, special_tokens, split_chars

    sp = special_tokens(tk, roles)
    render.md(f"**{title}**")
    if sp.reserved or sp.others:
        names = t("common.and").join(t("tok.sp_item", text=_prose(r.text), id=r.id,
                                       role=t(f"tok.sp_role_{r.role}")) for r in sp.reserved)
        render.md(t("tok.sp_reserved", n=len(sp.reserved) + len(sp.others), v=sp.vocab_size, tokens=names))
        if sp.others:
            shown = [_prose(r.text) for r in sp.others[:SHOW_SPECIAL]]
            render.md(t("tok.sp_others", k=len(sp.others), tokens=listed(shown + (["…"] if len(sp.others) > SHOW_SPECIAL
                                                                                  else []))))
    else:
        render.md(t("tok.sp_none", v=f"{sp.vocab_size:,}"))
    pieces = dict(sp.marker_pieces)
    if "bos" in pieces and pieces["bos"]:
        p = pieces["bos"]
        render.md(t("tok.sp_marker", marker=_prose(MARKERS["bos"]), n=len(p),
                    pieces=" ".join(urlstate.literal(x) for x in p)))
    r = encode_unknown(tk, sample)
    chars = listed(r.unknown)
    if r.policy == "bytes":             # no character is unknown: one it never merged becomes bytes
        split = split_chars(tk, sample)
        render.md(t("tok.sp_unk_bytes", chars=_prose(listed(split))) if split else t("tok.sp_bytes_whole"))
    elif not r.unknown:
        render.md(t("tok.sp_all_known"))
    elif r.policy == "error":
        render.md(t("tok.sp_unk_error", chars=_prose(chars)))
    elif r.policy == "bytes":
        render.md(t("tok.sp_unk_bytes", chars=_prose(chars)))
    else:
        unk = sp.reserved[[x.role for x in sp.reserved].index("unk")]
        pos = listed(i + 1 for i in r.unk_positions)
        render.md(t("tok.sp_unk_unk", tok=_prose(unk.text), id=unk.id, positions=pos, n=len(r.unk_positions),
                    decoded=_prose(r.decoded)))
        if "\ufffd" in r.decoded:   # what the decoder writes for <unk>: say what the mark is
            render.md(t("tok.sp_replacement", n=r.decoded.count("\ufffd")))
    render.code(" | ".join(visible(x) for x in r.pieces) or "∅", language=None)


def _special_section() -> None:
    from lmviz.chapters.tokenization import PAD_LABEL

    render.md(t("tok.sp_body"))
    sample = st.text_input(t("tok.sp_sample"), value=UNKNOWN_DEFAULT[lang()], max_chars=80, key="tok_sp_text")
    if not sample:
        return
    c1, c2 = st.columns(2)
    with c1:
        b = session.try_live_bundle("tok.sp_no_model")
        if b is not None:
            _special_column(t("tok.sp_live_h", name=model_words.name(b)), b.tokenizer, sample,
                            {"bos": b.meta.get("bos_token_id"), "eos": b.meta.get("eos_token_id")})
    with c2:
        _special_column(t("tok.sp_bpe_h"), tok, sample)
    render.caption(t("tok.sp_pad", label=PAD_LABEL))


def _rare_section() -> None:
    """A frequent and a once-seen word, cut by this BPE; on the Chinese page, runs of Chinese
    characters (no spaces mark words there), on the Chinese example when the corpus has none."""
    from lmviz.chapters.tokenization import rare_vs_common, rare_vs_common_han

    han = lang() == "zh"
    find = rare_vs_common_han if han else rare_vs_common
    try:
        rv = find(tok, text)
    except ValueError:
        # this corpus has no pair: show it on the example of the page's language, and say so
        example = "chinese" if han else "english"
        st.info(t("tok.rare_none_han" if han else "tok.rare_none"))
        try:
            ex = (EXAMPLES / f"{example}.txt").read_text(encoding="utf-8")[:MAX_CHARS]
            rv = find(_example_bpe(ex, max(int(n_req), 60), level, split), ex)
        except ValueError:
            return
        render.caption(t("tok.rare_fallback_han" if han else "tok.rare_fallback", n=max(int(n_req), 60)))
    pieces = " ".join(urlstate.literal(visible(x)) for x in rv.rare.pieces)
    render.md(t("tok.rare_body_han" if han else "tok.rare_body", common=_prose(rv.common.word),
                count=rv.common.count, n_common=rv.common.n_pieces, rare=_prose(rv.rare.word),
                n_rare=rv.rare.n_pieces, pieces=pieces, n=len(rv.rare.word)))
    render.table([{t("tok.col.word"): w.word, t("tok.col.count"): w.count, t("tok.rare_col_n"): w.n_pieces,
                   t("tok.rare_col_pieces"): " | ".join(visible(x) for x in w.pieces)}
                  for w in (rv.common, rv.rare)], hide_index=True, width="stretch")
    render.md(t("tok.rare_note"))


REAL_DEFAULT = {"en": "Unbelievably, 学习 means learning.", "zh": "学生在图书馆里学习数学。"}


def _real_section() -> None:
    """The pretrained model's own tokenizer (chosen in the sidebar) on the user's text: its pieces
    as bytes, the character a partial piece helps spell, and each merge's rank."""
    b = session.try_live_bundle(None)
    if b is None or b.source != "pretrained":
        render.md(t("tok.real_none"))
        return
    tk = b.tokenizer
    sample = st.text_area(t("tok.real_label"), value=REAL_DEFAULT[lang()], max_chars=MAX_ENCODE, height=80,
                          key="tok_real_text")
    if not sample:
        return
    pieces, toks = tk.text_pieces(sample), tk.tokens(sample)
    if len(pieces) > DRAW_TOKENS:
        render.caption(t("tok.real_cut", n=len(pieces), shown=DRAW_TOKENS))
        pieces, toks = pieces[:DRAW_TOKENS], toks[:DRAW_TOKENS]
    partial = [p for p in pieces if not p.whole]
    render.md(t("tok.real_intro", name=model_words.name(b), v=f"{tk.vocab_size:,}",
                merges=f"{len(tk.ranks):,}", n=len(pieces), chars=len(sample)))
    st.html(token_chips_html(toks, id_word="ID", bytes_word=t("tok.bytes")))
    if partial:
        p = partial[0]
        render.md(t("tok.real_partial", k=len(partial), label=urlstate.literal(p.label), char=_prose(p.chars),
                    hex=" ".join(f"{x:02X}" for x in p.chars.encode("utf-8"))))
    render.table([{t("tok.real_col_piece"): visible(p.label), "ID": p.id,
                   "UTF-8": " ".join(f"{x:02X}" for x in p.raw), t("tok.real_col_char"): visible(p.chars),
                   t("tok.real_col_rank"): "—" if p.rank is None else str(p.rank)} for p in pieces],
                 hide_index=True, width="stretch")
    render.caption(t("tok.real_rank_note"))


# The corpus controls above are always shown; in presenter mode the sections below are
# stepped one at a time (ui.render.run_sections).
render.run_sections([
    ("tok.stepper", _stepper_section),
    ("tok.encode", _encode_section),
    ("tok.tradeoff", _tradeoff_section),
    ("tok.bytes_title", _bytes_section),
    ("tok.sp_title", _special_section),
    ("tok.rare_title", _rare_section),
    ("tok.real_title", _real_section),
])
