"""Chapter 10 · Cost: attention's O(n^2) measured on this machine (n² attention-cost example), FlashAttention's tiles
stepped through on the live model's own q, k, v and proven exact (FlashAttention example), FLOPs per component of
the live model, and the budget calculators: 6ND, Chinchilla, training memory (compute-budget example)."""
from __future__ import annotations

import re

import numpy as np
import streamlit as st

import lmviz
from lmviz.chapters.claims import power_law
from lmviz.chapters.cost import (MEMORY_RECIPES, attention_dominates_from, mlp_flop_ratio, attention_flops,
                         chinchilla_optimal, chinchilla_optimal_fit, decode_step_flops,
                         layer_flops, training_flops, training_memory_bytes)
from lmviz.chapters.cost import flash_step, flash_tiles, measure_attention_rounds
from lmviz.numfmt import magnitude, sci
from lmviz.tokenizer import fit_context
from ui import model_words, session, render, urlstate
from ui.chapters import by_slug, registered
from ui.i18n import t
from ui.i18n import catalogue, device, lang
from viz import cost as vc
from viz.tokenization import visible

BENCH_NS = (128, 256, 512, 1024, 2048)        # measured on request, per session, in the background
BENCH_ROUNDS = 5                              # the whole series repeated: the slope comes with a spread
MAX_PROMPT = 64                               # characters in the box; the model reads at most its block size
SRAM_KB = (16, 64, 100, 192, 228)             # on-chip budgets (228 KB: an H100 SM's shared memory)
# Hoffmann et al. 2022, Table 3 (approach 1): compute-optimal (FLOPs, parameters)
CHINCHILLA_TABLE3 = [(1.92e19, 400e6), (1.21e20, 1e9), (1.23e22, 10e9), (5.76e23, 67e9),
                     (3.85e24, 175e9), (1.27e26, 1e12)]

render.page_header("cost.title", "cost.intro")


def _human(x: float) -> str:
    """12_300_000 -> '12.3 M' in English, '1230 万' in Chinese (lmviz.numfmt.magnitude)."""
    return magnitude(x, lang())


def _sci(x: float) -> str:
    """5.88e23 -> '5.88 × 10²³' (lmviz.numfmt.sci)."""
    return sci(x)


def _mib(b: float) -> str:
    return f"{b / 2 ** 20:,.2f} MiB" if b < 2 ** 30 else f"{b / 2 ** 30:,.2f} GiB"


# ---------------------------------------------------------------- 1. measured n^2 ---------
def _measure(ctx):
    return measure_attention_rounds(BENCH_NS, BENCH_ROUNDS, repeats=3, cancel=ctx.cancelled,
                                    on_round=lambda i: ctx.progress(i, BENCH_ROUNDS))


def _bench_snapshot():
    """This session's measurement (the timings describe the machine now, under its current
    load, so each visitor measures on request rather than reading one shared run)."""
    task = st.session_state.get("cost_bench")
    return task.snapshot() if task is not None else None


def _device_name() -> str:
    return lmviz.device_name()


def _timing_view(series) -> None:
    rows = series.median()
    lo, hi = series.spread()
    c1, c2 = st.columns([3, 2])
    with c1:
        fig = render.figure(vc.timing_figure, [r.n for r in rows], [r.t_scores for r in rows], [r.t_full for r in rows],
                            names={"scores": t("cost.fig.scores"), "full": t("cost.fig.full"),
                                   "guide": t("cost.fig.n2_guide")},
                            x_title=t("cost.fig.n"), y_title=t("cost.fig.ms"), full_spread=(lo, hi), lang=lang())
        render.plot(fig, key="cost_timing", filename="attention-time")
    with c2:
        table = {
            t("cost.col.n"): [r.n for r in rows],
            t("cost.col.scores_ms"): [round(r.t_scores * 1e3, 3) for r in rows],
            t("cost.col.full_ms"): [round(r.t_full * 1e3, 3) for r in rows],
            t("cost.col.spread_ms"): [f"{a * 1e3:.3f}–{b * 1e3:.3f}" for a, b in zip(lo, hi)],
            t("cost.col.ratio"): ["—" if r.ratio_full is None else f"{r.ratio_full:.2f}" for r in rows],
            t("cost.col.matrix"): [_mib(r.matrix_bytes) for r in rows],
            t("cost.col.flops"): [_human(r.flops) for r in rows],
        }
        render.table(table, hide_index=True, width="stretch")
    last = rows[-1]
    render.md(render.claim(power_law(series.ns, series.full_times())))
    render.md(t("cost.measured_read", n=f"{last.n:,}", mib=_mib(last.matrix_bytes), n4=f"{4096:,}", mib4=_mib(4096 ** 2 * 4)))


def sec_measured() -> None:
    render.md(t("cost.measured_intro"))
    name = _device_name()
    render.caption(t("common.device", name=device(name)))
    snap = _bench_snapshot()
    busy = snap is not None and snap.active
    label = t("cost.measure_again" if snap is not None else "cost.measure",
              k=len(BENCH_NS), n0=f"{BENCH_NS[0]:,}", n1=f"{BENCH_NS[-1]:,}", rounds=BENCH_ROUNDS)
    if st.button(label, key="cost_measure", disabled=busy, icon=":material/timer:"):
        st.session_state["cost_bench"] = session.start_task(_measure, name="lmviz-cost-bench",
                                                            total=BENCH_ROUNDS)

    def body(now) -> None:
        if now is None:
            st.info(t("cost.measure_hint"))
            return
        done = session.task_status(now, queued_key="cost.measure_queued", running_key="cost.measuring",
                                   error_key="cost.measure_failed")
        if done and now.result is not None:
            _timing_view(now.result)

    session.poll(_bench_snapshot, body)
    render.caption(t("cost.measured_caveat"))


# ---------------------------------------------------------------- 2. FlashAttention -------
def _bundle():
    return session.try_live_bundle(None)


@st.cache_data(max_entries=32, show_spinner=False)
def _qkv(prompt: str, layer: int, head: int, model_key: str, _model, _tok):
    """q, k, v [T, dh] of one head of the live model for `prompt` (numpy, float64), the prompt cut
    to the model's context (the fit_context record says how much was cut)."""
    fit = fit_context(_tok, prompt, _model.cfg.block_size)
    if not fit.ids:
        return None, fit
    tr = session.trace(_model, model_key, tuple(fit.ids))
    L = tr.layers[layer]
    labels = [_tok.token(i) for i in fit.ids]
    return (L.q[head].double().numpy(), L.k[head].double().numpy(), L.v[head].double().numpy(),
            labels), fit


@st.cache_data(max_entries=4, show_spinner=False)
def _random_qkv(n: int, dh: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, dh)) for _ in range(3))
    return q, k, v


@st.cache_data(max_entries=64, show_spinner=False)
def _tiled(q, k, v, bq: int, bk: int, causal: bool, row: int):
    """lmviz.chapters.cost.flash_tiles, cached for the same q, k, v and settings."""
    return flash_tiles(q, k, v, bq, bk, causal, row)


@st.fragment   # its widgets rerun only this section
def sec_flash() -> None:
    render.md(t("cost.flash_intro"))
    top = st.container()        # the tile stepper goes first (it is the page's main slider)
    b = _bundle()
    with render.controls():
        c1, c2, c3, c4 = st.columns(4)
        with c1:
            bq = urlstate.slider(t("cost.block_q"), 2, 32, 8, param="bq", key="cost_bq")
        with c2:
            bk = urlstate.slider(t("cost.block_k"), 2, 32, 8, param="bk", key="cost_bk")
        with c3:
            causal = st.checkbox(t("cost.causal"), value=True, key="cost_causal", help=t("cost.causal_help"))
        if b is not None:
            cfg = b.model.cfg
            with c4:
                # indices stay 0-based (and in the URL); the labels count from 1, as a lecturer says them
                layer = urlstate.selectbox(t("cost.layer"), list(range(cfg.n_layer)), param="fl",
                                           key="cost_layer", format_func=lambda i: str(i + 1))
                head = urlstate.selectbox(t("cost.head"), list(range(cfg.n_head)), param="fh",
                                          key="cost_head", format_func=lambda i: str(i + 1))
            prompt = urlstate.text(t("cost.prompt"), t("cost.prompt_default"), param="fp", key="cost_prompt",
                                   max_chars=MAX_PROMPT)
    if b is None:
        st.info(t("cost.no_model"))
        q, k, v = _random_qkv(48, 32)
        labels = None
    else:
        got, fit = _qkv(prompt, layer, head, session.model_key(b), b.model, b.tokenizer)
        render.unknown_chars(fit.unknown, limit=20)
        render.context_cut(fit)
        if got is None:
            st.warning(t("cost.empty_prompt"))
            return
        q, k, v, labels = got
    n = q.shape[0]
    if n < 2:
        st.warning(t("cost.short_prompt"))
        return
    row_key = "cost_row"
    if row_key in st.session_state and st.session_state[row_key] > n - 1:
        st.session_state[row_key] = n - 1
    with top:
        s1, s2 = st.columns([3, 1])
    with s2:
        row = st.slider(t("cost.row"), 0, n - 1, n - 1, key=row_key)
    tiles = _tiled(q, k, v, bq, bk, causal, row)
    tr, visits = tiles.trace, tiles.trace.visits
    step_key = "cost_step"
    if step_key in st.session_state and st.session_state[step_key] > len(visits):
        st.session_state[step_key] = len(visits)
    with s1:
        if len(visits) > 1:
            step = urlstate.slider(t("cost.step", n=len(visits)), 1, len(visits), 1, param="tile",
                                   key=step_key)
        else:  # the whole row fits in one tile (a short prompt): nothing to step through
            step = 1
            render.caption(t("cost.step", n=1))
    fs = flash_step(tiles, step)
    v_now = fs.visit
    what = t("cost.visit_skipped") if v_now.skipped else (
        t("cost.visit_partial") if v_now.partial else t("cost.visit_full"))
    render.md(t("cost.visit", i=step, n=len(visits), qi=v_now.qi, kj=v_now.kj,
                q0=v_now.q_range[0], q1=v_now.q_range[1] - 1, k0=v_now.k_range[0],
                k1=v_now.k_range[1] - 1, what=what))

    updates = fs.updates
    states = vc.tile_states(n, n, visits, step, causal)
    g1, g2 = st.columns([3, 2])
    with g1:
        fig = render.figure(vc.tile_grid_figure,
            states, bq, bk, row=row,
            state_names=[t(f"cost.state.{s}") for s in ("pending", "done", "current", "skipped", "masked")],
            x_title=t("cost.fig.keys"), y_title=t("cost.fig.queries"), row_text=t("cost.fig.traced"),
            tick_labels=[visible(lab) for lab in labels] if labels else None)
        render.plot(fig, key="cost_tiles", filename="flash-tiles")
    with g2:
        if updates:
            fig = render.figure(vc.row_stats_figure, updates, names={"tile_max": t("cost.fig.tile_max"),
                                                                     "m": t("cost.fig.m"), "l": t("cost.fig.l")},
                                x_title=t("cost.fig.key_tile"))
            render.plot(fig, key="cost_rowstats", filename="online-softmax")
        else:
            render.info(t("cost.row_waiting", row=row))
    fig = render.figure(vc.row_compare_figure, fs.so_far, tiles.dense[row], names={"tiled": t("cost.fig.tiled_row"),
                                                                          "dense": t("cost.fig.dense_row")},
                        x_title=t("cost.fig.dim"), height=260)
    render.plot(fig, key="cost_rowcmp", filename="row-vs-dense")
    render.md(t("cost.row_exact" if fs.row_done else "cost.row_partial", row=row, gap=f"{fs.gap:.1e}"))
    m1, m2, m3 = st.columns(3)
    render.metric(t("cost.max_err"), f"{fs.max_err:.1e}", at=m1)
    render.metric(t("cost.largest_block"), f"{tr.max_block_elems:,}", help=t("cost.largest_block_help"), at=m2)
    render.metric(t("cost.full_matrix"), f"{n * n:,}", at=m3)
    render.md(t("cost.skipped_read", s=fs.skipped, n=len(visits)) if causal else t("cost.noncausal_read"))


@st.fragment   # its widgets rerun only this section
def sec_traffic() -> None:
    from lmviz.attention import tile_size, traffic_bytes_dense, traffic_bytes_tiled

    render.md(t("cost.traffic_intro"))
    with render.controls():
        c1, c2, c3 = st.columns(3)
        with c1:
            sram = urlstate.selectbox(t("cost.sram"), list(SRAM_KB), index=3, param="sram",
                                      key="cost_sram", format_func=lambda kb: f"{kb} KiB")
        with c2:
            d = urlstate.selectbox(t("cost.head_dim"), [32, 64, 128], index=1, param="hd",
                                   key="cost_hd")
        with c3:
            prec = {"fp16/bf16": 2, "fp32": 4}
            pname = st.radio(t("cost.precision"), list(prec), horizontal=True, key="cost_prec")
    bytes_per = prec[pname]
    try:
        block = tile_size(d, sram * 1024, bytes_per)
    except ValueError:
        st.error(t("cost.sram_too_small"))
        return
    ns = [2 ** i for i in range(8, 17)]
    dense = [traffic_bytes_dense(n, d, bytes_per) for n in ns]
    tiled = [traffic_bytes_tiled(n, d, sram * 1024, bytes_per, causal=False) for n in ns]
    flops = [attention_flops(n, d) for n in ns]
    fig = render.figure(vc.traffic_figure, ns, dense, tiled, flops,
                        names={"dense": t("cost.fig.dense_bytes"), "tiled": t("cost.fig.tiled_bytes"),
                               "flops": t("cost.fig.flops_both")},
                        x_title=t("cost.fig.n"), bytes_title=t("cost.fig.mib"),
                        flops_title=t("cost.fig.flops"), lang=lang())
    render.plot(fig, key="cost_traffic", filename="traffic")
    i = ns.index(4096)
    render.md(t("cost.traffic_read", block=block, kb=sram, n=f"{ns[i]:,}", dense=_mib(dense[i]),
                tiled=_mib(tiled[i]), x=f"{dense[i] / tiled[i]:.1f}", flops=_human(flops[i]),
                f2=_human(attention_flops(2 * ns[i], d))))
    render.caption(t("cost.traffic_caveat"))


# ---------------------------------------------------------------- 3. where the time goes ---
@st.fragment   # its widgets rerun only this section
def sec_where() -> None:
    b = _bundle()
    if b is None:
        from lmviz.model import GPTConfig

        cfg = GPTConfig(vocab_size=96)   # the default model's shape (scripts/train_default.py)
        st.info(t("cost.no_model_cfg"))
    else:
        cfg = b.model.cfg
    d, r, kv = cfg.d_model, mlp_flop_ratio(cfg), cfg.n_kv_head / cfg.n_head
    cross = attention_dominates_from(d, r, kv)
    a = model_words.facts(b) if b is not None else None
    T = a.trained_context if a is not None else cfg.block_size
    p_coef, m_coef = 4 + 4 * kv, 4 * r            # per token and layer, in units of d^2
    render.md(t("cost.where_intro", name=model_words.name(b, a) if b is not None else t("model.name_default"),
                d=d, L=cfg.n_layer, ff=f"{cfg.ff_width:,}", mats=3 if cfg.mlp == "swiglu" else 2, H=cfg.n_head,
                Hkv=cfg.n_kv_head, p=f"{p_coef:.3g}", m=f"{m_coef:.3g}", cross=f"{cross:,.0f}", T=f"{T:,}",
                share=f"{100 * layer_flops(T, d, r, kv).attention_share:.0f}")
              + (t("cost.where_runs", ctx=f"{cfg.block_size:,}") if T != cfg.block_size else ""))
    ns = [2 ** i for i in range(4, 14)]
    recs = [layer_flops(n, d, r, kv) for n in ns]
    names = {p: t(f"cost.part.{p}") for p in ("attention", "projections", "mlp")}
    fig = render.figure(vc.flops_share_figure, recs, names=names, x_title=t("cost.fig.n"), y_title=t("cost.fig.share"),
                        crossover=cross, crossover_text=t("cost.fig.crossover", n=f"{cross:,g}"), lang=lang())
    render.plot(fig, key="cost_share", filename="flops-share")
    n = urlstate.slider(t("cost.prefill_n"), 16, 4096, 512, 16, param="pn", key="cost_pn")
    pre, dec = layer_flops(n, d, r, kv), decode_step_flops(n, d, r, kv)
    c1, c2 = st.columns([3, 2])
    with c1:
        fig = render.figure(vc.prefill_decode_figure, pre, dec, names=names,
                            groups=[t("cost.fig.prefill", n=f"{n:,}"), t("cost.fig.decode", n=f"{n:,}")],
                            y_title=t("cost.fig.flops_layer"), lang=lang())
        render.plot(fig, key="cost_prefill", filename="prefill-vs-decode")
    with c2:
        render.md(t("cost.prefill_read", n=f"{n:,}", pre=_human(pre.total * cfg.n_layer),
                    dec=_human(dec.total * cfg.n_layer), x=f"{pre.total / dec.total:.0f}",
                    head=_human(2 * d * cfg.vocab_size)))
    render.caption(t("cost.where_caveat"))


# ---------------------------------------------------------------- 4. budgets ---------------
def _recipe_label(name: str) -> str:
    """A memory recipe's name in the page's language (the core's English name as fallback)."""
    key = "cost.recipe." + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return catalogue(lang()).get(key, name)


@st.fragment   # its widgets rerun only this section
def sec_budget() -> None:
    render.md(t("cost.budget_intro"))
    c1, c2, c3 = st.columns(3)
    with c1:
        n_b = st.number_input(t("cost.params_b"), 0.001, 10_000.0, 7.0, key="cost_nb")
    with c2:
        d_t = st.number_input(t("cost.tokens_b"), 0.001, 100_000.0, 140.0, key="cost_db")
    c = training_flops(n_b * 1e9, d_t * 1e9)
    with c3:
        render.metric(t("cost.c_metric"), f"{c:.3g}")
    render.md(t("cost.sixnd_read", n=_human(n_b * 1e9), d=_human(d_t * 1e9), c=_sci(c),
                days=f"{c / (989e12 * 0.4) / 86400:,.1f}", r=f"{d_t / n_b:.3g}"))
    b = _bundle()
    if b is not None:
        meta, cfg = b.meta or {}, b.model.cfg
        seen = meta.get("tokens_seen") or (meta.get("steps", 0) * meta.get("batch_size", 0) * cfg.block_size)
        if seen:
            p = b.model.num_params()
            render.md(t("cost.live_budget", n=_human(p), d=_human(seen), c=_sci(training_flops(p, seen)),
                        r=f"{seen / p:,.0f}"))

    render.md(f"#### {t('cost.chinchilla_h')}")
    logc = urlstate.slider(t("cost.log_c"), 18.0, 26.0, 23.76, 0.01, param="c", key="cost_logc")
    cbud = 10 ** logc
    rule, fit = chinchilla_optimal(cbud), chinchilla_optimal_fit(cbud)
    m1, m2, m3 = st.columns(3)
    render.metric(t("cost.n_opt"), _human(rule.n_params), at=m1)
    render.metric(t("cost.d_opt"), _human(rule.n_tokens), at=m2)
    render.metric(t("cost.n_fit"), _human(fit.n_params),
                  help=t("cost.n_fit_help", r=f"{fit.tokens_per_param:.0f}"), at=m3)
    cs = np.logspace(18, 26, 33)
    fig = render.figure(vc.chinchilla_figure, cs, [chinchilla_optimal(x).n_params for x in cs],
                        [chinchilla_optimal_fit(x).n_params for x in cs], CHINCHILLA_TABLE3, cbud,
                        names={"rule": t("cost.fig.rule"), "fit": t("cost.fig.fit"),
                               "table": t("cost.fig.table3"), "now": t("cost.fig.budget")},
                        x_title=t("cost.fig.compute"), y_title=t("cost.fig.params"), lang=lang())
    render.plot(fig, key="cost_chinchilla", filename="chinchilla")
    render.md(t("cost.chinchilla_read", c=_sci(cbud), n=_human(rule.n_params), d=_human(rule.n_tokens),
                nf=_human(fit.n_params)))

    render.md(f"#### {t('cost.memory_h')}")
    n_mem = st.number_input(t("cost.params_b"), 0.001, 10_000.0, 7.0, key="cost_nmem")
    recipes = list(MEMORY_RECIPES)
    names = [_recipe_label(r) for r in recipes]
    parts = {p: [getattr(MEMORY_RECIPES[r], p) for r in recipes] for p in ("weights", "master", "grads", "optimizer")}
    c1, c2 = st.columns([1, 1])
    with c1:
        fig = render.figure(vc.memory_figure, names, parts, names={p: t(f"cost.mem.{p}") for p in parts},
                            x_title=t("cost.fig.bytes_param"))
        render.plot(fig, key="cost_memory", filename="training-memory")
    with c2:
        render.table({t("cost.col.recipe"): names,
                      t("cost.col.gib"): [round(training_memory_bytes(n_mem * 1e9, r)["total"] / 2 ** 30, 1)
                                          for r in recipes]},
                     hide_index=True, width="stretch")
    render.md(t("cost.memory_read"))
    kv = by_slug("kv-cache")
    if kv in registered():
        st.page_link(kv.file, label=t("cost.kv_link"), icon=":material/memory:")
    else:
        render.caption(t("cost.kv_link"))


render.run_sections([("cost.sec_measured", sec_measured), ("cost.sec_flash", sec_flash),
                     ("cost.sec_traffic", sec_traffic), ("cost.sec_where", sec_where),
                     ("cost.sec_budget", sec_budget)])
