"""Chapter 8 · Generation: temperature (softmax example, temperature example), top-k / top-p (top-k/top-p example), greedy stepping on the
toy table (greedy-decoding example), step-by-step sampling from the live model with a seed, the room playing the
language model (ui.room), and why greedy is not the most probable sequence (greedy-vs-best example).

Every interactive section is an ``st.fragment``: a slider reruns only its own section. The live
section keeps the current step's logits in session state, so moving τ, k or p only re-applies
the filters (lmviz.sampling.distributions) to cached numbers; the model runs only on Step/Play.
"""
from __future__ import annotations

import functools
import html
import itertools
from contextlib import nullcontext

import numpy as np
import streamlit as st

from lmviz.numfmt import short
from lmviz.tokenizer import fit_context
from lmviz.chapters.about_model import prompt_for
from ui import model_words, session, render, urlstate
from ui.i18n import lang, listed, t, translate
from viz.generation import (branch_figure, candidates_figure, filter_figure, greedy_steps_figure, prob_bars,
                            temperature_curves_figure, tree_figure)
from viz.tokenization import visible

LOGITS = (2.0, 1.0, -1.0)           # the notes' three candidates (softmax example, temperature example)
LOGIT_LABELS = ("A", "B", "C")      # the notes call them A, B, C (cross-entropy example: "the answer is B")
TABLE_TAUS = (0.5, 1.0, 2.0)        # the three temperatures of the notes' table
PROBS = (0.50, 0.30, 0.15, 0.05)    # the notes' top-k / top-p distribution (top-k/top-p example)
PROB_LABELS = ("A", "B", "C", "D")
NOTES_P, NOTES_K = 0.9, 2           # the notes' top-p and top-k settings for PROBS
MAX_PROMPT = 400                    # characters in the live prompt box
MAX_NEW = 300                       # tokens the live stepper generates at most
N_SHOW = 12                         # candidates drawn per live step
PLAY_EVERY = 0.5                    # seconds between tokens while playing

def _fmt_setting(tau: float, k: int, p: float) -> str:
    """Short human label of the sampling settings, e.g. 'τ=0.8 · k=off · p=0.9'."""
    return (f"τ={tau:g}" + (f" ({t('gen.greedy_word')})" if tau == 0 else "")
            + f" · k={k if k else t('gen.off')} · p={p:g}" + (f" ({t('gen.off')})" if p >= 1 else ""))


# ---------------------------------------------------------------- softmax and temperature ----
@st.cache_data(show_spinner=False)
def _curves():
    from lmviz.sampling import temperature_curves

    taus = np.geomspace(0.05, 5.0, 160)
    return taus, temperature_curves(LOGITS, taus.tolist()).numpy()


def temperature_figures(tau: float, lang_code: str):
    """(bars, curves): the temperature section's two charts at τ, in language ``lang_code`` (no
    session needed: bench/chart_mount.py and tests/test_browser_flat_charts.py draw these)."""
    from lmviz.sampling import softmax_t

    def tr(key: str, **kw) -> str:
        return translate(key, lang_code, **kw)

    p = softmax_t(LOGITS, tau).numpy()
    title = tr("gen.fig.temp_bars", tau=f"{tau:g}") + (f" ({tr('gen.greedy_word')})" if tau == 0 else "")
    bars = prob_bars([f"{a} (z={z:g})" for a, z in zip(LOGIT_LABELS, LOGITS)], p,
                     highlight=int(np.argmax(p)), y_title=tr("gen.fig.prob"), title=title)
    taus, P = _curves()
    mark = tr("gen.fig.tau_mark", tau=f"{tau:g}") if tau > 0 else tr("gen.fig.tau_mark_zero")
    curves = temperature_curves_figure(taus, P, LOGIT_LABELS, tau, x_title=tr("gen.fig.tau_axis"),
                                       y_title=tr("gen.fig.prob"), marker_text=mark, title=tr("gen.fig.curves"))
    return bars, curves


@st.cache_resource(max_entries=256, show_spinner=False)
def _temp_figures(tau: float, lang_code: str):
    """``temperature_figures``, built once per server, τ and language (τ moves in steps of 0.05;
    read-only afterwards: st.plotly_chart only serialises them)."""
    return temperature_figures(tau, lang_code)


def _vector(xs, fmt: str) -> str:
    """[2, 1, −1]: numbers as the notes write them (a true minus sign)."""
    return "[" + ", ".join(format(float(x), fmt).replace("-", "−") for x in xs) + "]"


@functools.lru_cache(maxsize=1)
def _plain_softmax() -> str:
    """softmax(LOGITS) at τ = 1, as the notes write it (computed once per process)."""
    from lmviz.sampling import softmax_t

    return _vector(softmax_t(LOGITS).tolist(), ".3f")


def _filter_why() -> str:
    """The notes' example (p = 0.9, k = 2 on PROBS) explained with the filters' own results."""
    from lmviz.sampling import top_k_filter, top_p_filter

    kept = top_p_filter(PROBS, NOTES_P).kept
    first, nxt = kept[:-1], kept[-1]
    and_ = t("common.and")
    return t("gen.filter_why", p=f"{NOTES_P:g}", n=len(kept), first=and_.join(PROB_LABELS[i] for i in first),
             sum=" + ".join(f"{PROBS[i]:.2f}" for i in first), mass=f"{sum(PROBS[i] for i in first):.2f}",
             next=PROB_LABELS[nxt], mass_next=f"{sum(PROBS[i] for i in kept):.2f}", k=NOTES_K,
             topk=and_.join(PROB_LABELS[i] for i in top_k_filter(PROBS, NOTES_K).kept))


@st.fragment
def sec_temperature() -> None:
    from lmviz.sampling import softmax_t

    render.md(t("gen.temp_intro", z=_vector(LOGITS, "g"), p=_plain_softmax()))
    tau = urlstate.slider(t("gen.tau"), 0.0, 5.0, 1.0, 0.05, param="tau", key="gen_tau")
    if tau == 0:
        st.info(t("gen.tau_zero"))
    bars, curves = _temp_figures(round(float(tau), 4), lang())
    left, right = st.columns(2)
    with left:
        render.plot(bars, key="gen_temp_bars", filename="temperature-bars")
    with right:
        render.plot(curves, key="gen_temp_curves", filename="temperature-curves")
    rows = []
    for tv in sorted({*TABLE_TAUS, tau}):
        q = softmax_t(LOGITS, tv).tolist()
        rows.append({"τ": f"{tv:g}" + (" ←" if tv == tau else "")
                     + (f" ({t('gen.greedy_word')})" if tv == 0 else ""),
                     **{f"p({a})": round(v, 3) for a, v in zip(LOGIT_LABELS, q)}})
    render.table(rows, hide_index=True, width="stretch")
    render.md(t("gen.temp_limits"))


# ---------------------------------------------------------------- top-k / top-p ----------------------
@st.fragment
def sec_filters() -> None:
    from lmviz.sampling import distributions

    render.md(t("gen.filter_intro"))
    c1, c2 = st.columns(2)
    with c1:
        k = urlstate.slider(t("gen.k"), 0, len(PROBS), 0, 1, param="k", key="gen_k",
                            help=t("gen.k_help"))
    with c2:
        p = urlstate.slider(t("gen.p"), 0.0, 1.0, 0.9, 0.05, param="p", key="gen_p",
                            help=t("gen.p_help"))
    # the toy distribution is given as probabilities: log p are logits that give it back at τ = 1
    d = distributions(np.log(PROBS), 1.0, top_k=k, top_p=p)
    kept = [PROB_LABELS[i] for i in d.kept]
    fig = render.figure(filter_figure, PROB_LABELS, PROBS, d.p_final.numpy(), d.kept, p if p < 1 else None,
                        names=(t("gen.fig.original"), t("gen.fig.renorm"), t("gen.fig.cum"),
                               t("gen.fig.threshold", p=f"{p:g}")),
                        y_title=t("gen.fig.prob"), title=t("gen.fig.filter_title", k=k or t("gen.off"), p=f"{p:g}"))
    render.plot(fig, key="gen_filter", filename="top-k-top-p")
    notes = []
    if k == 0:
        notes.append(t("gen.k_off"))
    if p >= 1:
        notes.append(t("gen.p_off"))
    elif p == 0:
        notes.append(t("gen.p_zero"))
    for n in notes:
        render.caption(n)
    # the kept set's own mass in the original distribution (not the mass top-k alone kept)
    mass = float(sum(PROBS[i] for i in d.kept))
    probs = ", ".join(f"{PROB_LABELS[i]}={float(d.p_final[i]):.3f}" for i in d.kept)
    if k and len(d.kept_k) < len(PROBS):
        render.md(t("gen.kept_msg_k", n=len(kept), kept=listed(kept), mass=f"{mass:.2f}", nk=len(d.kept_k),
                      mass_k=f"{float(sum(PROBS[i] for i in d.kept_k)):.2f}", probs=probs))
    else:
        render.md(t("gen.kept_msg", n=len(kept), kept=listed(kept), mass=f"{mass:.2f}", probs=probs))
    render.md(_filter_why())


# ---------------------------------------------------------------- greedy decoding, step by step -------
def sec_greedy() -> None:
    render.md(t("gen.greedy_intro"))
    render.caption(t("gen.greedy_made_up"))
    _greedy_stepper()


@st.fragment
def _greedy_stepper() -> None:
    from lmviz.sampling import TOY_TABLE, TOY_VOCAB, greedy_trace

    trace = greedy_trace(TOY_TABLE)
    st.session_state.setdefault("gen_greedy_k", 0)

    def bump(delta: int | None) -> None:  # callbacks run before the rerun, so buttons draw current state
        k0 = st.session_state["gen_greedy_k"]
        st.session_state["gen_greedy_k"] = 0 if delta is None else min(k0 + delta, len(trace))

    k = min(int(st.session_state["gen_greedy_k"]), len(trace))
    b1, b2, _ = st.columns([1, 1, 4])
    b1.button(t("gen.greedy_next"), disabled=k >= len(trace), key="gen_greedy_next",
              on_click=bump, args=(1,))
    b2.button(t("gen.greedy_reset"), disabled=k == 0, key="gen_greedy_reset", on_click=bump,
              args=(None,))
    prefix = list(trace[0].prefix) + [s.token for s in trace[:k]]
    chips = " ".join(f"<code>{html.escape(w)}</code>" if i < len(trace[0].prefix)
                     else f"<mark>{html.escape(w)}</mark>" for i, w in enumerate(prefix))
    st.markdown(t("gen.greedy_prefix", n=k, total=len(trace)) + " " + chips, unsafe_allow_html=True)
    if k == 0:
        st.info(t("gen.greedy_start"))
        return
    steps = [(" ".join(s.prefix[-2:]) + " →", s.probs, TOY_VOCAB.index(s.token)) for s in trace[:k]]
    render.plot(render.figure(greedy_steps_figure, TOY_VOCAB, steps, y_title=t("gen.fig.prob"),
                                    title=t("gen.fig.greedy_title")),
                key="gen_greedy_fig", filename="greedy-steps")
    if k == len(trace):
        joint = float(np.prod([s.prob for s in trace]))
        st.success(t("gen.greedy_done", joint=f"{joint:.4f}"))


# ---------------------------------------------------------------- live model ---------------
def _bundle():
    return session.try_live_bundle("gen.no_model")


def _encode_prompt(b, prompt: str) -> list[int] | None:
    """Prompt text -> ids with the messages the issue asks for; None when nothing is usable."""
    if not prompt:
        st.warning(t("gen.err_empty"))
        return None

    ids, unknown = b.tokenizer.encode_lossy(prompt)
    shown = " ".join(repr(u) for u in unknown[:12]) + (" …" if len(unknown) > 12 else "")
    if not ids:
        st.error(t("gen.err_all_unknown", chars=html.escape(shown)))
        return None
    render.unknown_chars(unknown)
    # the stepper keeps the whole prompt; next_logits reads its last block_size ids (this cut)
    render.context_cut(fit_context(b.tokenizer, prompt, b.model.cfg.block_size, keep="end"))
    return ids


def _live_state(b, ids: list[int], seed: int) -> dict:
    """The stepper's session record (lmviz.chapters.generation.Stepper) and the logits of its
    text; a new prompt, seed or model starts it afresh."""
    from lmviz.chapters.generation import start

    key = (session.model_key(b), tuple(ids), int(seed))
    s = st.session_state.get("gen_live")
    if s is None or s["key"] != key:
        s = {"key": key, "stepper": start(ids, seed), "logits": None, "logits_len": -1, "spread": None}
        st.session_state["gen_live"] = s
    _logits_of(b, s)
    return s


def _logits_of(b, s: dict) -> None:
    """The logits after the stepper's text; the model runs only when the text has grown."""
    ids = s["stepper"].ids
    if s["logits_len"] != len(ids):
        s["logits"], s["logits_len"] = session.next_logits(b, ids), len(ids)


def _finite(s: dict) -> bool:
    """True when the cached next-token logits are all finite; otherwise the page says why no
    probabilities can be computed (a model with NaN or infinite weights) and playing stops."""
    from lmviz.chapters.generation import finite

    if finite(s["logits"]):
        return True
    st.session_state["gen_playing"] = False
    st.warning(t("gen.nonfinite"))
    return False


def _take_step(b, s: dict, tau: float, k: int, p: float) -> None:
    """One token drawn from the cached logits; the stepper's record moves on."""
    s["stepper"] = s["stepper"].step(s["logits"], tau, k, p)
    _logits_of(b, s)
    s["spread"] = None


def _draw_row(b, i: int, d) -> dict:
    """One line of the stepper's history table."""
    tok = b.tokenizer.token
    return {"#": i, "settings": _fmt_setting(d.temperature, d.top_k, d.top_p),
            "top3": "  ".join(f"{visible(tok(j))} {v:.2f}" for j, v in d.top3),
            "kept": d.kept, "u": round(d.u, 3), "pick": visible(tok(d.token)), "p": round(d.prob, 3)}


def _running_text_html(b, s: dict) -> str:
    """Prompt in grey, generated text highlighted; user text escaped."""
    st_ = s["stepper"]
    prompt = b.tokenizer.decode(st_.ids[: st_.n_prompt])
    new = b.tokenizer.decode(st_.ids[st_.n_prompt:])
    return ("<div style='font-family:monospace;font-size:1.1rem;white-space:pre-wrap;"
            "border:1px solid #ddd;border-radius:6px;padding:0.6rem;line-height:1.6'>"
            f"<span style='color:#666'>{html.escape(prompt)}</span>"
            f"<span style='background:#FBE3C0'>{html.escape(new)}</span><span style='color:#D55E00'>▌</span></div>")


def _stops(b) -> tuple[int, ...]:
    """The ids that end the current model's text (its eos, its chat template's end of turn)."""
    from lmviz.chapters.beyond_chat import stop_ids

    return stop_ids(b.meta, getattr(b.tokenizer, "special", None))


def sec_live() -> None:
    b = _bundle()
    if b is not None:
        render.md(t("gen.live_intro", name=model_words.name(b), reads=model_words.reads(b)))
    render.md(t("gen.note_many"))
    if b is None:
        return
    render.caption(model_words.by(b))
    c1, c2 = st.columns([3, 1])
    with c1:
        prompt = urlstate.text(t("gen.prompt"), prompt_for(b.tokenizer, t("gen.prompt_default")), param="prompt",
                               key="gen_prompt", max_chars=MAX_PROMPT)
    with c2:
        seed = st.number_input(t("gen.seed"), 0, 1_000_000, 0, 1, key="gen_seed", help=t("gen.seed_help"))
    ids = _encode_prompt(b, prompt)
    if ids is None:
        st.session_state["gen_playing"] = False
        return
    st.session_state.setdefault("gen_playing", False)
    _live_stepper(b, ids, int(seed))


@st.fragment(run_every=PLAY_EVERY if st.session_state.get("gen_playing") else None)
def _live_stepper(b, ids: list[int], seed: int) -> None:
    from lmviz.chapters.generation import N_SPREAD

    s = _live_state(b, ids, seed)
    if not _finite(s):
        return
    c1, c2, c3 = st.columns(3)
    with c1:
        tau = urlstate.slider(t("gen.live_tau"), 0.0, 3.0, 1.0, 0.05, param="ltau", key="gen_live_tau")
    with c2:
        k = urlstate.slider(t("gen.live_k"), 0, 50, 0, 1, param="lk", key="gen_live_k", help=t("gen.k_help"))
    with c3:
        p = urlstate.slider(t("gen.live_p"), 0.0, 1.0, 1.0, 0.01, param="lp", key="gen_live_p", help=t("gen.p_help"))
    playing = bool(st.session_state.get("gen_playing"))
    n_new = s["stepper"].n_new
    stops = _stops(b)
    ended = n_new > 0 and s["stepper"].ids[-1] in stops      # the model wrote its end token: the text is over
    if playing:  # a timer tick: one token per tick until MAX_NEW or the end token
        if n_new >= MAX_NEW or ended:
            st.session_state["gen_playing"] = False
            st.rerun()
        _take_step(b, s, tau, k, p)
    b1, b2, b3, b4 = st.columns(4)
    if b1.button(t("gen.step"), key="gen_step", disabled=playing or n_new >= MAX_NEW or ended,
                 icon=":material/skip_next:"):
        _take_step(b, s, tau, k, p)
    if b2.button(t("gen.pause") if playing else t("gen.play"), key="gen_play",
                 icon=":material/pause:" if playing else ":material/play_arrow:"):
        st.session_state["gen_playing"] = not playing
        st.rerun()
    if b3.button(t("gen.reset"), key="gen_reset", icon=":material/restart_alt:"):
        st.session_state.pop("gen_live", None)
        st.session_state["gen_playing"] = False
        st.rerun()
    spread_clicked = b4.button(t("gen.spread", n=N_SPREAD), key="gen_spread", icon=":material/casino:")
    stepper = s["stepper"]                            # a step just taken counts
    n_new = stepper.n_new
    ended = n_new > 0 and stepper.ids[-1] in stops
    if ended:
        render.caption(t("gen.ended", tok=render.escape(visible(b.tokenizer.token(stepper.ids[-1]))), n=n_new))
    elif n_new >= MAX_NEW:
        render.caption(t("gen.max_new", n=MAX_NEW))
    st.html(_running_text_html(b, s))

    if not _finite(s):       # the step just taken led to logits no probability can come from
        return
    # the pending step: filters re-applied to the cached logits (no model call here)
    from lmviz.sampling import distributions, pick, softmax_t

    d = distributions(s["logits"], tau, k or None, p)
    u = stepper.peek_u()
    nxt = pick(d, u)
    raw = softmax_t(s["logits"]).numpy()
    show = list(np.argsort(-raw, kind="stable")[:N_SHOW])
    show += [i for i in d.kept if i not in show][: max(0, N_SHOW + 4 - len(show))]
    if nxt not in show:
        show.append(nxt)
    labels = [f"{visible(b.tokenizer.token(int(i)))}" for i in show]
    # two tokens can look alike once whitespace is made visible: keep labels unique
    labels = [lab if labels.count(lab) == 1 else f"{lab}#{int(i)}" for lab, i in zip(labels, show)]
    series = [(t("gen.fig.raw"), raw[show]), (t("gen.fig.after_tau", tau=f"{tau:g}"), d.p_temp.numpy()[show]),
              (t("gen.fig.after_filters"), d.p_final.numpy()[show])]
    render.plot(render.figure(candidates_figure, labels, series, chosen=show.index(nxt), y_title=t("gen.fig.prob"),
                              title=t("gen.fig.live_title", n=len(stepper.draws) + 1)),
                key="gen_live_fig", filename="live-step")
    render.md(t("gen.next_pick", u=f"{u:.3f}", tok=html.escape(visible(b.tokenizer.token(nxt))),
                  p=short(float(d.p_final[nxt]), lang()), kept=len(d.kept), v=len(raw)))   # a sampled rare token: 0.000123, not 0.000
    if tau == 0:
        render.caption(t("gen.tau_zero_live"))
    if stepper.draws:
        with st.expander(t("gen.history", n=len(stepper.draws)), expanded=False):
            cols = {"#": "#", "settings": t("gen.col.settings"), "top3": t("gen.col.top3"),
                    "kept": t("gen.col.kept"), "u": "u", "pick": t("gen.col.pick"), "p": "p"}
            rows = [_draw_row(b, i, d) for i, d in enumerate(stepper.draws, 1)]
            render.table([{cols[c]: r[c] for c in cols} for r in rows[::-1]],
                         hide_index=True, width="stretch", height=min(320, 38 + 35 * len(rows)))
    if spread_clicked:
        s["spread"] = (_fmt_setting(tau, k, p),
                       [b.tokenizer.decode(r) for r in stepper.spread(b.model, tau, k, p)])
    if s.get("spread"):
        setting, outs = s["spread"]
        render.md(t("gen.spread_title", n=len(outs), setting=setting))
        st.html("".join(
            "<div style='font-family:monospace;white-space:pre-wrap;border-left:4px solid #56B4E9;"
            f"padding:2px 8px;margin:4px 0'><b>{i + 1}.</b> {html.escape(o)}</div>"
            for i, o in enumerate(outs)))
        render.caption(t("gen.spread_note"))


# ---------------------------------------------------------------- greedy vs the best sequence -------
@st.cache_data(show_spinner=False)
def _toy_search():
    from lmviz.sampling import TOY_TABLE, best_sequence, table_prob_fn

    return best_sequence(table_prob_fn(TOY_TABLE), depth=2)


def _live_search(b, prompt: str, depth: int, branch: int):
    """lmviz.chapters.generation.live_search after the prompt, kept in the session for the same
    model, prompt and sizes (the radios rerun the section)."""
    from lmviz.chapters.generation import live_search

    key = ("gen_tree", session.model_key(b), prompt, depth, branch)
    hit = st.session_state.get("gen_tree_cache")
    if hit is not None and hit[0] == key:
        return hit[1]
    res = live_search(b.model, b.tokenizer.encode_lossy(prompt)[0], depth, branch)
    st.session_state["gen_tree_cache"] = (key, res)
    return res


@st.fragment
def sec_tree() -> None:
    render.md(t("gen.tree_intro"))
    names = {s: t(f"gen.tree_src.{s}") for s in ("toy", "live")}  # resolved now, not in the lambda
    src = st.radio(t("gen.tree_source"), ("toy", "live"), horizontal=True, key="gen_tree_src",
                   format_func=names.get)
    if src == "toy":
        res = _toy_search()
        render.caption(t("gen.tree_made_up"))
        root, word = "<BOS>", str
    else:
        b = _bundle()
        if b is None:
            return
        prompt = st.session_state.get("gen_prompt") or t("gen.prompt_default")
        ids, _ = b.tokenizer.encode_lossy(prompt)
        if not ids:
            st.warning(t("gen.err_empty"))
            return
        from lmviz.chapters.generation import finite

        if not finite(session.next_logits(b, ids)):
            st.warning(t("gen.nonfinite"))
            return
        c1, c2 = st.columns(2)
        depth = c1.radio(t("gen.tree_depth"), (2, 3), index=1, horizontal=True, key="gen_tree_depth")
        branch = c2.radio(t("gen.tree_branch"), (2, 3), index=0, horizontal=True, key="gen_tree_branch")
        res = _live_search(b, prompt, int(depth), int(branch))
        root, word = "…" + visible(b.tokenizer.decode(ids[-8:])), b.tokenizer.token
        render.caption(t("gen.tree_live_note", branch=branch))
    labels = [root if not n.path else visible(word(n.path[-1])) for n in res.nodes]
    fig = render.figure(tree_figure, res.nodes, labels, res.greedy, res.best,
                        names=(t("gen.fig.greedy_path"), t("gen.fig.best_path"), t("gen.fig.other_path")),
                        title=t("gen.fig.tree_title"))
    render.plot(fig, key="gen_tree_fig", filename="greedy-vs-best")
    g = " ".join(visible(word(x)) for x in res.greedy)
    bst = " ".join(visible(word(x)) for x in res.best)
    if res.best != res.greedy and res.best_joint > res.greedy_joint:
        render.md(t("gen.tree_result", g=html.escape(g), gj=f"{res.greedy_joint:.3f}",
                      b=html.escape(bst), bj=f"{res.best_joint:.3f}"))
    else:
        render.md(t("gen.tree_same", g=html.escape(g), gj=f"{res.greedy_joint:.3f}"))
    render.md(t("gen.tree_caveat"))


# ---------------------------------------------------------------- branch on another token -------
BRANCH_INLINE_S = 1.5               # seconds a decode may take in the page's own run before it becomes a task


def _decode_work(fn):
    """A task's work: ``fn(cancel)``, its progress counted at each model call (the core asks its
    ``cancel`` callback before every one)."""
    def work(ctx):
        calls = itertools.count(1)
        return fn(lambda: ctx.progress(next(calls)) or ctx.cancelled())
    return work


def _decoded(purpose: str, key, fn, total: int):
    """The result of ``fn(cancel)`` for ``key``: at once when it is cached or quick, else None
    while it runs as this session's task (a progress bar, the page redrawn when it ends)."""
    def snap():
        return session.session_task(purpose, key, _decode_work(fn), name="lmviz-gen-branch", total=total,
                                    inline_s=BRANCH_INLINE_S)

    now = snap()
    if now.state == "done":
        return now.result
    session.poll(snap, lambda s: session.task_status(s, queued_key="gen.branch_queued", running_key="gen.branch_running",
                                                     error_key="gen.branch_error"), every=0.7)
    return None


def _continuation_html(b, prompt_ids, tokens, fork: int, colour: str) -> str:
    """The prompt's end in grey, then each generated token with its step number; from ``fork`` on
    the tokens are underlined in ``colour`` (the forced one bold). A piece that is not whole UTF-8
    (a byte-level BPE's part of a character) is shown as its bytes, a line break as ↵. User text escaped."""
    tok = b.tokenizer

    def piece(x: int) -> str:
        text = tok.decode([x])
        return visible(tok.token(x)) if "\ufffd" in text else text.replace("\n", "↵")

    head = tok.decode(list(prompt_ids)).replace("\n", "↵")
    head = ("…" + head[-40:]) if len(head) > 40 else head
    parts = []
    for i, x in enumerate(tokens):
        style = f"border-bottom:3px solid {colour};" if i >= fork >= 0 else ""
        style += "font-weight:bold;" if i == fork else ""
        parts.append(f"<span style='{style}white-space:pre-wrap'>{html.escape(piece(x))}"
                     f"<sub style='color:#888;font-size:0.6em'>{i + 1}</sub></span>")
    return ("<div style='font-family:monospace;font-size:1.05rem;border:1px solid #ddd;border-radius:6px;"
            f"padding:0.5rem;line-height:1.9'><span style='color:#666;white-space:pre-wrap'>{html.escape(head)}</span>"
            + "".join(parts) + "</div>")


@st.fragment
def sec_branch() -> None:
    from lmviz.chapters.generation_branch import BRANCH_LEN

    render.md(t("gen.branch_intro", n=BRANCH_LEN))
    b = _bundle()
    if b is None:
        return
    render.caption(model_words.by(b))
    cfg, tok = b.model.cfg, b.tokenizer
    prompt = st.session_state.get("gen_prompt") or t("gen.prompt_default")   # the live section's prompt
    room = cfg.block_size - BRANCH_LEN + 1 if cfg.pos == "learned" else cfg.block_size
    fit = fit_context(tok, prompt, max(1, room), keep="end")
    if not fit.ids:
        st.warning(t("gen.err_empty"))
        return
    render.context_cut(fit)
    ids = tuple(fit.ids)
    mk = session.model_key(b)

    def greedy_fn(cancel):
        from lmviz.chapters.generation_branch import greedy_run

        return greedy_run(b.model, ids, BRANCH_LEN, cancel=cancel)

    run = _decoded("gen-branch-run", (mk, ids), greedy_fn, BRANCH_LEN)
    if run is None:
        return
    g = run.path
    n = len(g.tokens)
    c1, c2 = st.columns([2, 3])
    with c1:
        step = st.select_slider(t("gen.branch_step"), options=list(range(n)), key="gen_branch_step",
                                format_func=lambda i: f"{i + 1} · {visible(tok.token(g.tokens[i]))}")
    cands, probs = run.top[step], run.top_probs[step]
    labels = {c: f"{visible(tok.token(c))} ({short(p, lang())})" for c, p in zip(cands, probs)}
    with c2:
        token = st.radio(t("gen.branch_pick", step=step + 1), list(cands), index=min(1, len(cands) - 1),
                         horizontal=True, key=f"gen_branch_pick_{step}", format_func=labels.get)

    def branch_fn(cancel):
        from lmviz.chapters.generation_branch import branch_from

        return branch_from(b.model, run, step, token, cancel=cancel)

    br = _decoded("gen-branch", (mk, ids, step, int(token)), branch_fn, max(1, n - step - 1))
    if br is None:
        return
    forced = render.escape(visible(tok.token(br.chosen)))
    left, right = st.columns(2)
    for col, head, cont, colour in ((left, t("gen.branch_greedy"), br.greedy, "#0072B2"),
                                    (right, t("gen.branch_branch", tok=forced, step=step + 1), br.branch, "#D55E00")):
        with col:
            render.md(head)
            st.html(_continuation_html(b, ids, cont.tokens, step if cont is br.branch else -1, colour))
            render.metric(t("gen.branch_sum", n=n), f"{cont.total:.3f}".replace("-", "−"))
    cum_g = np.cumsum(br.greedy.logprobs)
    cum_b = np.cumsum(br.branch.logprobs)
    name = b.meta.get("name") if b.source == "pretrained" else t("gen.branch_this_model")
    render.plot(render.figure(branch_figure, [f"{i + 1}" for i in range(n)], cum_g, cum_b, step,
                              names=(t("gen.fig.greedy_path"), t("gen.fig.branch_path", tok=visible(tok.token(br.chosen)))),
                              x_title=t("gen.fig.branch_x"), y_title=t("gen.fig.branch_y"),
                              title=t("gen.fig.branch_title", model=name)),
                key="gen_branch_fig", filename="branch-on-another-token")
    if br.chosen == g.tokens[step]:
        render.md(t("gen.branch_same", tok=forced, step=step + 1))
    else:
        fmt = dict(tok=forced, step=step + 1, gtok=render.escape(visible(tok.token(g.tokens[step]))),
                   p=short(probs[cands.index(br.chosen)], lang()), pg=short(probs[0], lang()),
                   b=f"{br.branch.total:.3f}".replace("-", "−"), g=f"{br.greedy.total:.3f}".replace("-", "−"),
                   x=short(float(np.exp(abs(br.margin))), lang()), n=n)
        render.md(t("gen.branch_wins" if br.margin > 0 else "gen.branch_loses", **fmt))
    render.caption(t("gen.branch_note", n=n, shared=step))


ROOM_MAX = 120                      # characters of the room's sentence


@st.cache_data(show_spinner=False, max_entries=32)
def _open_question(ids: tuple[int, ...], lang_code: str, model_key: str, _model, _tok):
    """lmviz.chapters.generation_room.open_question, once per model, sentence and language."""
    from lmviz.chapters.generation_room import open_question

    return open_question(_model, ids, _tok.token, lang_code)


def sec_room() -> None:
    """Be the language model: the room guesses the next token, then meets the model (ui.room)."""
    from ui import room

    render.md(t("gen.room_intro"))
    b = _bundle()
    if b is None:
        return
    slot = room.answer_slot()
    with room.settings_box():
        sentence = urlstate.text(t("gen.room_sentence"), t("gen.room_sentence_default"), param="rs",
                                 key="gen_room_sentence", max_chars=ROOM_MAX)
        # the room reads a prefix of at most block_size tokens and guesses the one after it
        ctx = fit_context(b.tokenizer, sentence, b.model.cfg.block_size + 1, keep="start")
        render.unknown_chars(ctx.unknown)
        render.context_cut(ctx)
        ids = ctx.ids
        if len(ids) < 2:
            st.info(t("gen.room_short"))
            return
        last = len(ids) - 1
        if st.session_state.get("gen_room_pos", 0) > last:    # a shorter sentence: stay inside it
            st.session_state["gen_room_pos"] = last
        start = _open_question(tuple(ids), lang(), session.model_key(b), b.model, b.tokenizer)
        c1, c2 = st.columns(2)
        with c1:
            pos = urlstate.slider(t("gen.room_pos"), 1, last, start.pos, 1, param="rpos", key="gen_room_pos",
                                  help=t("gen.room_pos_help")) if last > 1 else 1
        with c2:
            tau = urlstate.slider(t("gen.room_tau"), 0.1, 2.0, 1.0, 0.1, param="rtau", key="gen_room_tau")
        if start.chosen and pos == start.pos:
            render.caption(t("gen.room_pos_chosen", h=f"{start.entropy_bits:.2f}"))
    with slot if slot is not None else nullcontext():
        room.activity(b, sentence, ids, int(pos), round(float(tau), 2))


SECTIONS = [
    ("gen.sec_temp", sec_temperature),
    ("gen.sec_filter", sec_filters),
    ("gen.sec_greedy", sec_greedy),
    ("gen.sec_live", sec_live),
    ("gen.sec_room", sec_room),
    ("gen.sec_tree", sec_tree),
    ("gen.sec_branch", sec_branch),
]


def main() -> None:
    render.page_header("gen.title", "gen.intro")
    render.run_sections(SECTIONS)


# Streamlit runs a page as __main__; bench/generation.py imports it to time one section alone.
if __name__ == "__main__":
    main()
