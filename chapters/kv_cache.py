"""Chapter 9: the KV cache. Prefill and decode on real tensors (KV-cache walk-through, cached-equals-uncached example), why reuse is valid
and what an edit invalidates, how big a cache gets (KV-cache-size example) and how fast decoding is with it (decode-speed example)."""
from __future__ import annotations

import numpy as np
import streamlit as st

import lmviz
from lmviz.chapters.questions import KV_PRESET
from lmviz.tokenizer import fit_context
from ui import model_words, session, render, urlstate
from ui.chapters import by_slug, registered
from ui.i18n import lang, listed, said, t
from viz.kv_cache import (
    cache_figure, next_token_figure, query_figure, recompute_figure, edit_figure, bytes_figure,
    variants_figure, speed_figure,
)
from viz.tokenization import visible

render.page_header("kv.title", "kv.intro")

TOY_NEW = 3          # KV-cache walk-through: 学习, 数学, then <结束>
LIVE_MAX_PROMPT = 48  # characters of the live prompt


# ---------------------------------------------------------------- cached computations ----
def _walk_record(model, tok, ids: list[int], n_new: int) -> dict:
    """A walkthrough as plain numpy/lists (cheap to cache and to draw)."""
    from lmviz.chapters.kv_cache import cache_rows, walkthrough

    w = walkthrough(model, ids, n_new)
    K, V = cache_rows(w)
    seq = w.prompt + w.generated
    return {
        "K": K.numpy(), "V": V.numpy(),                                  # [L,T,F]
        "spans": [(s.snap.start, s.snap.end) for s in w.steps],
        "inputs": [s.inputs for s in w.steps],
        "weights": [s.snap.weights[:, :, -1].numpy() for s in w.steps],  # [L,H,end] new token's row
        "probs": [s.probs.numpy() for s in w.steps],
        "predicted": [s.predicted for s in w.steps],
        "diff": [s.uncached_max_diff for s in w.steps],
        "words": [tok.token(i) for i in seq],
        "vocab": [tok.token(i) for i in range(tok.vocab_size)],
        "n_prompt": len(w.prompt),
    }


@st.cache_data(show_spinner=False)
def _toy_walk(n_new: int) -> dict:
    from lmviz.chapters.kv_cache import TOY_PROMPT

    toy = session.toy("kv")
    return _walk_record(toy.model, toy.tokenizer, toy.tokenizer.encode(TOY_PROMPT), n_new)


@st.cache_data(show_spinner=False, max_entries=64)
def _live_walk(prompt_ids: tuple[int, ...], n_new: int, model_key: str) -> dict:
    b = session.live_bundle()
    return _walk_record(b.model, b.tokenizer, list(prompt_ids), n_new)


@st.cache_data(show_spinner=False, max_entries=64)
def _edit(ids: tuple[int, ...], pos: int, new_id: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    from lmviz.chapters.kv_cache import edit_effect

    e = edit_effect(session.toy("kv").model, list(ids), pos, new_id)
    return e.k_diff.numpy(), e.v_diff.numpy(), e.changed_rows()


def _labels(words: list[str]) -> list[str]:
    """'position token' labels; blanks made visible (a character model has them)."""
    return [f"{i} {visible(w)}" for i, w in enumerate(words)]


# ---------------------------------------------------------------- the stepper ----
def _draw_step(rec: dict, step: int, key: str, layers: list[int] | None = None) -> None:
    """Cache heatmaps, the new q's attention, the next-token bar and the recompute grid."""
    from lmviz.chapters.kv_cache import recompute_plan

    start, end = rec["spans"][step]
    words, labels = rec["words"], _labels(rec["words"])
    inputs = " ".join(rec["words"][start:end])
    pred = rec["vocab"][rec["predicted"][step]]
    p = float(rec["probs"][step][rec["predicted"][step]])
    if step == 0:
        render.md(t("kv.step_prefill", n=end, tokens=render.escape(inputs), rows=f"0–{end - 1}",
                      pred=render.escape(pred), p=p))
    else:
        render.md(t("kv.step_decode", step=step, token=render.escape(inputs), row=start,
                      pred=render.escape(pred), p=p, n=end))
    T = len(words)
    layers = layers if layers is not None else list(range(rec["K"].shape[0]))
    K, V = rec["K"][layers], rec["V"][layers]
    left, right = st.columns([3, 2])
    with left:
        fig = render.figure(cache_figure, K, V, end, range(start, end), labels[:T], k_title=t("kv.k_cache"),
                            v_title=t("kv.v_cache"), layer_label=t("common.layer_n"),
                            feature_label=t("kv.feature"),
                            layer_numbers=[lay + 1 for lay in layers])     # layers counted from 1
        render.plot(fig, key=f"{key}_cache", filename=f"kv-cache-{key}")
        render.caption(t("kv.cache_caption"))
    with right:
        lay = layers[-1]
        w = rec["weights"][step][lay]                                        # [H,end]
        q_title = t("kv.q_title", layer=lay + 1, token=render.escape(words[end - 1]))
        render.plot(render.figure(query_figure, w, labels[:end], title=q_title,
                                  head_label=t("common.head_n"), y_label=t("kv.weight")),
                    key=f"{key}_q", filename=f"kv-query-{key}")
        render.plot(render.figure(next_token_figure, rec["vocab"], rec["probs"][step], rec["predicted"][step],
                                  title=t("kv.next_title")) if len(rec["vocab"]) <= 16 else
                    _top_next(rec, step), key=f"{key}_next", filename=f"kv-next-{key}")
    n_new = end - start
    first = max(0, end - 12)          # long contexts: the last 12 rows tell the same story
    plans = [recompute_plan(end, n_new, cached=True)[first:], recompute_plan(end, n_new, cached=False)[first:]]
    words_plan = {"compute": t("kv.plan_compute"), "reuse": t("kv.plan_reuse"), "skip": t("kv.plan_skip")}
    titles = [t("kv.with_cache", n=3 * n_new), t("kv.without_cache", n=3 * end)]
    render.plot(render.figure(recompute_figure, plans, labels[first:end], titles, words_plan), key=f"{key}_plan",
                filename=f"kv-recompute-{key}")
    render.caption(t("kv.w26_check", diff=f"{rec['diff'][step]:.1e}"))


def _top_next(rec: dict, step: int, k: int = 10):
    probs = rec["probs"][step]
    top = np.argsort(-probs)[:k]
    words = [visible(rec["vocab"][i]) for i in top]
    chosen = int(np.where(top == rec["predicted"][step])[0][0]) if rec["predicted"][step] in top else -1
    return render.figure(next_token_figure, words, probs[top], chosen, title=t("kv.next_title"))


# ---------------------------------------------------------------- sections ----
def sec_walk():
    render.md(t("kv.walk_intro"))
    render.latex(r"K_{\mathrm{cache}}=[K_{\mathrm{past}};\,k_t],\quad V_{\mathrm{cache}}=[V_{\mathrm{past}};\,v_t],\quad "
             r"o_t=\mathrm{softmax}\!\left(\frac{q_t K_{\mathrm{cache}}^{\top}}{\sqrt{d_h}}\right)V_{\mathrm{cache}}")
    try:
        rec = _toy_walk(TOY_NEW)
    except Exception as e:  # noqa: BLE001 - a missing or broken weights file: say so, no traceback
        st.error(t("kv.toy_missing", err=render.escape(str(e)[:200])))
        return
    n = len(rec["spans"])
    playing = st.toggle(t("kv.play"), key="kv_play")

    @st.fragment(run_every=1.6 if playing else None)
    def stepper():
        if st.session_state.get("kv_play") and "kv_step" in st.session_state:
            st.session_state["kv_step"] = (st.session_state["kv_step"] + 1) % n
        step = urlstate.slider(t("kv.step"), 0, n - 1, 0, 1, param="step", key="kv_step",
                               help=t("kv.step_help"))
        _draw_step(rec, step, "toy")

    stepper()
    render.caption(t("kv.toy_note"))


def sec_live():
    try:
        b = session.live_bundle()
    except Exception:  # noqa: BLE001 - the default model is not shipped yet
        st.warning(t("kv.no_live"))
        return
    render.md(t("kv.live_intro", name=model_words.name(b), reads=model_words.reads(b)))
    cfg, tok = b.model.cfg, b.tokenizer
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        text = urlstate.text(t("kv.prompt"), t("kv.default_prompt"), param="prompt", key="kv_prompt",
                             max_chars=LIVE_MAX_PROMPT)

    fit = fit_context(tok, text, max(1, cfg.block_size - 1), keep="end")   # room for one new token
    # (the sentence says "here": this page reads one token less than the context holds)
    render.unknown_chars(fit.unknown, limit=10)
    if not fit.ids:
        st.warning(t("kv.empty_prompt"))
        return
    render.context_cut(fit)
    ids = fit.ids
    room = cfg.block_size - len(ids) + 1
    with c2:
        n_new = st.number_input(t("kv.n_new"), 1, max(1, min(12, room)), min(6, room), key="kv_live_new")
    with c3:
        layer = st.selectbox(t("kv.layer"), list(range(cfg.n_layer)), key="kv_live_layer",
                             format_func=lambda i: str(i + 1))
    rec = _live_walk(tuple(ids), int(n_new), session.model_key(b))
    step = st.select_slider(t("kv.step"), options=list(range(len(rec["spans"]))), key="kv_live_step")
    _draw_step(rec, step, "live", layers=[layer])
    render.caption(t("kv.live_note", name=model_words.name(b), layers=cfg.n_layer, heads=cfg.n_head, kv=cfg.n_kv_head,
                     dh=cfg.head_dim))


def sec_why():
    render.md(t("kv.why_text"))
    if any(c.slug == "attention" for c in registered()):
        st.page_link(by_slug("attention").file, label=t("kv.link_attention"), icon=":material/visibility:")
    else:
        render.md(f"[{t('kv.link_attention')}](/attention)")
    rec = _toy_walk(TOY_NEW)
    toy = session.toy("kv")
    words = rec["words"][:-1]                      # <开始> 我 喜欢 学习 数学
    ids = toy.tokenizer.encode_lossy(" ".join(words))[0]
    c1, c2 = st.columns(2)
    with c1:
        pos = st.selectbox(t("kv.edit_pos"), list(range(1, len(words))), index=0,
                           format_func=lambda i: f"{i} {words[i]}", key="kv_edit_pos")
    choices = list(range(toy.tokenizer.vocab_size))   # fixed options: a stored choice stays valid
    with c2:
        you = toy.tokenizer.encode_lossy("你")[0]
        default = choices.index(you[0]) if you and you[0] in choices else 0
        new_id = st.selectbox(t("kv.edit_to"), choices, index=default, format_func=toy.tokenizer.token,
                              key="kv_edit_to")
    kd, vd, changed = _edit(tuple(ids), pos, new_id)
    edited = list(words)
    edited[pos] = toy.tokenizer.token(new_id)

    render.plot(render.figure(edit_figure, kd, _labels(edited), pos, title=t("kv.edit_title"), layer_label=t("common.layer_n"),
                              color_label="max |ΔK|"), key="kv_edit", filename="kv-edit")
    kept = listed(words[:pos])
    render.md(t("kv.edit_result", kept=render.escape(kept), n_kept=pos, n_redo=len(words) - pos,
                  rows=listed(changed)))


def _size(n: float) -> str:
    """Bytes as the notes write a cache: KiB, MiB or GiB."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= k:
            return f"{n / k:,.{0 if n % k == 0 else 1}f} {unit}"
    return f"{n:,.0f} B"


def _current_model_bytes() -> None:
    """The current model's KV bytes per token, from its own config, beside the notes' 2 GiB example."""
    from lmviz.chapters.kv_cache import MODEL_SHAPES, dtype_name, model_kv

    b = session.try_live_bundle(None)
    if b is None:
        return
    cfg = b.model.cfg
    here = model_kv(cfg, dtype_name(b.model.wte.weight.dtype), cfg.block_size)
    shape = MODEL_SHAPES["notes"]
    notes = model_kv(shape, shape.dtype, shape.n_tokens)
    half = model_kv(cfg, notes.dtype, notes.context)             # the notes' format and length
    name = model_words.name(b, start=True)
    render.md(t("kv.model_bytes", name=name, L=here.n_layer, hkv=here.n_kv_head, dh=here.head_dim,
                s=f"{here.bytes_per_element:g}", dtype=here.dtype, pt=f"{here.per_token:,}",
                kib=f"{here.per_token / 2**10:,.1f}", ctx=f"{here.context:,}", ctx_size=_size(here.at_context)))
    ratio = notes.at_context / half.at_context
    render.md(t("kv.model_vs_notes_smaller" if ratio >= 1 else "kv.model_vs_notes_larger", dtype=notes.dtype,
                n=f"{notes.context:,}", size=_size(half.at_context), notes=_size(notes.at_context),
                pt=f"{half.per_token:,}", notes_pt=f"{notes.per_token:,}", x=f"{max(ratio, 1 / ratio):,.1f}"))
    if here.n_kv_head == here.n_head:
        render.md(t("kv.model_mha", hq=here.n_head))
    else:
        render.md(t("kv.model_mqa" if here.n_kv_head == 1 else "kv.model_gqa", hq=here.n_head, hkv=here.n_kv_head,
                    g=here.group, mha=f"{here.mha_per_token:,}", pt=f"{here.per_token:,}"))
    cols = [t("kv.col.what"), "L", "H_q", "H_kv", "d_h", "s", t("kv.col.per_token"), t("kv.col.tokens"), t("kv.col.cache")]
    rows = [(t("kv.row.here", name=model_words.name(b, start=True), dtype=here.dtype), here),
            (t("kv.row.notes_format", name=model_words.name(b, start=True), dtype=half.dtype), half),
            (t("kv.preset_notes"), notes)]
    render.table([dict(zip(cols, (label, k.n_layer, k.n_head, k.n_kv_head, k.head_dim, f"{k.bytes_per_element:g}",
                                  f"{k.per_token:,}", f"{k.context:,}", _size(k.at_context)))) for label, k in rows],
                 hide_index=True, width="stretch")


def _apply_preset():
    from lmviz.chapters.kv_cache import MODEL_SHAPES

    s = MODEL_SHAPES[st.session_state["kv_preset"]]
    st.session_state.update(kv_L=s.n_layer, kv_hq=s.n_head, kv_hkv=s.n_kv_head, kv_dh=s.head_dim,
                            kv_n=s.n_tokens, kv_dtype=s.dtype, kv_B=1)


def sec_memory():
    from lmviz.kv_cache import DTYPE_BYTES, kv_cache_bytes, max_tokens_for_budget
    from lmviz.chapters.kv_cache import MODEL_SHAPES, attention_variants

    render.md(t("kv.mem_intro"))
    _current_model_bytes()
    names = list(MODEL_SHAPES)
    if "kv_L" not in st.session_state:  # first run (or a shared link): fill the sliders from the preset
        urlstate.seed_from_url("preset", "kv_preset", KV_PRESET, str, lambda v: v in names)
        _apply_preset()
    preset_labels = {n: t("kv.preset_notes") if n == "notes" else n for n in names}
    urlstate.selectbox(t("kv.preset"), names, names.index(KV_PRESET), param="preset", key="kv_preset",
                       on_change=_apply_preset, format_func=preset_labels.__getitem__)
    render.caption(t("kv.preset_source"))
    ns = [2 ** i for i in range(8, 21)]
    if st.session_state.get("kv_n") not in ns:
        st.session_state["kv_n"] = min(ns, key=lambda x: abs(x - int(st.session_state.get("kv_n", 16384))))
    c1, c2, c3 = st.columns(3)
    with c1:
        B = st.slider(t("kv.batch"), 1, 64, key="kv_B")
        L = st.slider(t("kv.layers"), 1, 128, key="kv_L")
    with c2:
        n = st.select_slider(t("kv.tokens"), options=ns, key="kv_n", format_func=lambda x: f"{x:,}")
        dh = st.slider(t("kv.head_dim"), 16, 256, step=16, key="kv_dh")
    with c3:
        hq = st.slider(t("kv.q_heads"), 1, 128, key="kv_hq")
        hkv = st.slider(t("kv.kv_heads"), 1, 128, key="kv_hkv")
    dtype = st.radio(t("kv.dtype"), list(DTYPE_BYTES), key="kv_dtype", horizontal=True)
    if hkv > hq or hq % hkv:
        st.warning(t("kv.bad_heads", hq=hq, hkv=hkv))
    s = DTYPE_BYTES[dtype]
    total = kv_cache_bytes(B, L, n, hkv, dh, s)
    m1, m2, m3 = st.columns(3)
    render.metric(t("kv.bytes"), f"{total:,}", at=m1)
    render.metric("GiB", f"{total / 2**30:,.3f}", at=m2)
    render.metric(t("kv.per_token"), f"{total / max(n, 1) / 2**10:,.1f} KiB", at=m3)
    render.md(t("kv.formula", B=B, L=L, n=f"{n:,}", hkv=hkv, dh=dh, s=f"{s:g}", total=f"{total:,}",
                  gib=f"{total / 2**30:,.3f}"))
    budget = st.number_input(t("kv.budget"), 0.5, 4096.0, 24.0, 0.5, key="kv_budget")
    fit = max_tokens_for_budget(budget * 2**30, B, L, hkv, dh, s)
    render.md(t("kv.budget_result", budget=f"{budget:g}", n=f"{fit:,}", B=B))
    variants = attention_variants(B, L, n, hq, min(hkv, hq), dh, s)
    grid = np.array(ns)
    series = [(f"{v.name} (H_kv={v.n_kv_head})", np.array([kv_cache_bytes(B, L, x, v.n_kv_head, dh, s) for x in ns]))
              for v in variants]
    c1, c2 = st.columns([3, 2])
    with c1:
        render.plot(render.figure(bytes_figure, grid, series, n, x_label=t("kv.tokens"), y_label="GiB", lang=lang()), key="kv_bytes",
                    filename="kv-bytes")
    with c2:
        render.plot(render.figure(variants_figure, [f"{v.name} · {v.n_kv_head}" for v in variants], [v.bytes / 2**30 for v in variants],
                                  [v.saving for v in variants], y_label="GiB", title=t("kv.variants_title")),
                    key="kv_variants", filename="kv-variants")
    g = variants[1]
    render.md(t("kv.gqa_result", hq=hq, hkv=g.n_kv_head, saving=f"{g.saving:g}", mqa=f"{variants[2].saving:g}"))
    render.caption(t("kv.mem_caveat"))


# ---------------------------------------------------------------- measured speed ----
SPEED_PURPOSE = "kv-speed"          # this session's measurement task (ui.session.session_task)


def _speed_work(model, prompt: list[int], n_new: int, device: str, deadline_s: float):
    def work(ctx):
        from lmviz.chapters.kv_cache import measure_decode

        return measure_decode(model, prompt, n_new, device, cancel=ctx.cancelled, on_step=ctx.progress,
                              deadline_s=deadline_s)
    return work


def _stop_speed() -> None:
    """Stop: the measurement's task is cancelled and no longer asked for (a press of Measure starts one)."""
    session.task_slots().cancel(SPEED_PURPOSE)
    st.session_state["kv_speed_on"] = None
    st.session_state["kv_speed_stopped"] = True


def sec_speed():
    render.md(t("kv.speed_intro"))
    try:
        b = session.live_bundle()
    except Exception:  # noqa: BLE001
        st.warning(t("kv.no_live"))
        return
    from lmviz.chapters.kv_cache import SPEED_CONFIG, SPEED_MIN_CONTEXT, SPEED_PROMPT, plan_speed, speed_model

    device = lmviz.device_name()
    live_cfg = b.model.cfg
    # a context long enough for the cache to matter: the live model's, or lmviz's timing model's
    long_enough = live_cfg.block_size >= SPEED_MIN_CONTEXT or live_cfg.pos != "learned"
    if long_enough:
        model = b.model
        render.caption(t("kv.speed_on_live", n=live_cfg.block_size))
    else:
        model = speed_model()
        render.caption(t("kv.speed_on_timing", live=live_cfg.block_size, n=SPEED_CONFIG.block_size,
                         layers=SPEED_CONFIG.n_layer, d=SPEED_CONFIG.d_model))
    cfg = model.cfg
    n_prompt = SPEED_PROMPT
    # fill the context (a rotary model's, at least 512 tokens: it can decode past a short one)
    wanted = (cfg.block_size if cfg.pos == "learned" else max(cfg.block_size, 512)) - n_prompt
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    plan = plan_speed(cfg, weight_bytes, n_prompt, wanted, model.device)
    if plan.cut:
        render.caption(t("kv.speed_cut", n=plan.n_new, wanted=plan.wanted, est=f"{plan.est_s:.0f}",
                         full=_duration(plan.est_wanted_s), budget=f"{plan.budget_s:g}", prompt=n_prompt))
    n_new = plan.n_new
    key = (session.model_key(b) if long_enough else "timing", n_prompt, n_new)
    if st.button(t("kv.measure", n=n_new, device=device), key="kv_measure", icon=":material/timer:"):
        session.task_slots().cancel(SPEED_PURPOSE)          # a fresh measurement, not a stopped one's
        st.session_state["kv_speed_on"] = key
        st.session_state["kv_speed_stopped"] = False
    if long_enough:
        ids = ((b.tokenizer.encode_lossy(t("kv.default_prompt"))[0] or [0]) * n_prompt)[:n_prompt]
    else:
        ids = list(range(n_prompt))

    def snapshot():
        if st.session_state.get("kv_speed_on") != key:
            return None
        return session.session_task(SPEED_PURPOSE, key, _speed_work(model, ids, n_new, device, 2 * plan.budget_s),
                                    name="lmviz-kv-speed", total=n_new - 1)

    def show(snap):
        if snap is None:
            render.caption(t("kv.speed_stopped" if st.session_state.get("kv_speed_stopped") else "kv.speed_none"))
            return
        if snap.active:
            st.button(t("kv.stop"), key="kv_speed_stop", on_click=_stop_speed, icon=":material/stop:")
        done = session.task_status(snap, queued_key="kv.speed_queued", running_key="kv.measuring",
                                   error_key="kv.speed_error", device=device)
        if done and snap.result is not None:
            _draw_speed(snap.result, cfg)

    session.poll(snapshot, show, every=0.7)


def _duration(seconds: float) -> str:
    """An estimate's length in words: seconds, minutes or hours."""
    if seconds < 90:
        return t("kv.secs", n=f"{seconds:.0f}")
    if seconds < 5400:
        return t("kv.mins", n=f"{seconds / 60:.0f}")
    return t("kv.hours", n=f"{seconds / 3600:.1f}")


def _draw_speed(r, cfg) -> None:
    from lmviz.chapters.kv_cache import growth, step_flops

    gc, gu = growth(r.cache_len, r.cached_ms), growth(r.cache_len, r.uncached_ms)
    lens = gc.lens
    flops = ([step_flops(cfg, n, True) for n in lens], [step_flops(cfg, n, False) for n in lens])
    render.plot(render.figure(speed_figure, lens, gc.ms, gu.ms, cached_name=t("kv.with"), uncached_name=t("kv.without"),
                              x_label=t("kv.ctx_len"), y_label=t("kv.ms"), title=t("kv.speed_title", device=r.device),
                              fits=tuple([g.intercept_ms + g.slope_ms * n for n in lens] for g in (gc, gu)),
                              fit_names=(t("kv.fit_with"), t("kv.fit_without")), flops=flops, flop_names=(t("kv.flops_with"), t("kv.flops_without")),
                              flop_label=t("kv.flops_axis"), lang=lang()),
                key="kv_speed", filename="kv-speed")
    render.md(t("kv.speed_result", n=len(r.cache_len) + 1, c=f"{r.total_cached_s:.3f}",
                  u=f"{r.total_uncached_s:.3f}", x=f"{r.speedup:.1f}", device=r.device))
    render.md(t("kv.speed_same" if r.same_tokens else "kv.speed_differ", n=len(r.tokens),
                k=sum(a != b for a, b in zip(r.tokens, r.uncached_tokens))))
    if len(r.tokens) < r.asked:
        render.caption(t("kv.speed_deadline", n=len(r.tokens), asked=r.asked))
    render.caption(t("kv.speed_warmup", w=gc.dropped, a=lens[0], b=lens[-1]))
    fc0, fc1 = flops[0][0], flops[0][-1]
    fu0, fu1 = flops[1][0], flops[1][-1]
    for g, name, f0, f1 in ((gu, "without", fu0, fu1), (gc, "with", fc0, fc1)):
        fmt = dict(which=t(f"kv.{name}"), a=lens[0], b=lens[-1], pct=f"{100 * (f1 - f0) / f0:,.0f}",
                   noise=f"{g.noise_ms:.2f}", med=f"{g.median_ms:.2f}")
        change = g.change_ms if g.verdict != "noise" else abs(g.change_ms)
        render.md(t(f"kv.growth_{g.verdict}", per=f"{g.slope_ms * 1000:.2f}", se=f"{g.stderr_ms * 1000:.2f}",
                    change=f"{change:.2f}", **fmt))
    render.caption(t("kv.speed_caveat"))


render.run_sections([
    ("kv.sec_walk", sec_walk),
    ("kv.sec_live", sec_live),
    ("kv.sec_why", sec_why),
    ("kv.sec_memory", sec_memory),
    ("kv.sec_speed", sec_speed),
])
