"""The live training page in a real browser: how hard the page makes Chromium work while a model
trains, and how soon a Stop click lands.

    python bench/live_page.py [--seconds 60] [--lang zh] [--preset poetry] [--skip-panel]

Two parts, each side by side in one run:

1. **The perplexity panel alone**: a one-chart Streamlit page (written to a temporary folder)
   redraws ``viz.training.ppl_lr_figure`` once a second with growing data, as the live page
   does; once with the figure as lmviz builds it (a given log range, the lines' labels placed in
   log10 units) and once as it was built before (autorange, the labels in data units, which on a
   log axis puts them far off the chart). Prints the browser's layouts per second and the share of its
   main thread in tasks (Chrome's Performance metrics ``LayoutCount`` and ``TaskDuration``).
2. **The whole /training page** (a fresh server; ``--lang``, ``--corpus``, ``--preset``: the Tang
   poems' ``poetry`` preset in Chinese by default), every question skipped: idle, then for
   ``--seconds`` while the model trains: layouts per second, main-thread share (Chrome's
   ``TaskDuration``; a 20 ms in-page sampler of faded elements runs meanwhile and is counted in
   it), the longest task, the faded elements (share of samples, and each element's longest
   continuous faded stretch), copies of each live chart in the page (one is right), Plotly's
   draws of each chart (its ``plotly_afterplot`` events); then Pause
   (click to Resume enabled), ``--scrubs`` (3) replay scrub steps while paused (the arrow key on the step
   slider, until the section's caption names the new step, the run has finished and its three charts
   are drawn again), Resume, and
   Stop (click to Start enabled). The three presses are timed in the page, from the click event
   to the first 5 ms sample showing the other button enabled (what the lecturer sees), and, as
   before, from Playwright's click call to its wait's return (which adds its own 0.1-0.4 s).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_util import CHROMIUM, LAUNCH_ARGS, Server, skip_questions, wait_idle  # noqa: E402

PANEL_APP = """
import sys; sys.path.insert(0, {root!r})
import streamlit as st
from viz.training import ppl_lr_figure
st.session_state.setdefault("n", 10)

@st.fragment(run_every=1.0)
def body():
    st.session_state["n"] += 10
    k = st.session_state["n"]
    steps = list(range(1, k)); lrs = [1e-3 * min(1, s / 20) for s in steps]
    ev = list(range(0, k, 25))
    fig = ppl_lr_figure(ev, [80 / (1 + e / 50) for e in ev], steps, lrs,
                        lines=[(83.0, "uniform"), (22.4, "unigram")])
    if st.query_params.get("mode") == "before":     # autorange, labels placed in data units
        fig.update_yaxes(range=None, autorange=True, tickvals=None, ticktext=None, dtick="D2", row=1, col=1)
        for a in fig.layout.annotations:
            if a.text in ("uniform", "unigram"):
                a.y = 10 ** a.y
    c1, c2 = st.columns([3, 2])
    with c2:
        st.plotly_chart(fig, key="p", width="stretch")
body()
"""


def metrics(cdp) -> dict:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def rates(page, seconds: float) -> tuple[float, float]:
    """(layouts per second, share of the main thread in tasks) over ``seconds``."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    a = metrics(cdp)
    time.sleep(seconds)
    z = metrics(cdp)
    return (z["LayoutCount"] - a["LayoutCount"]) / seconds, (z["TaskDuration"] - a["TaskDuration"]) / seconds


def panel(browser, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "panel.py"
        app.write_text(PANEL_APP.format(root=str(ROOT)))
        srv = Server(str(app))
        try:
            for mode in ("lmviz", "before", "lmviz", "before"):      # interleaved
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(srv.url("", mode=mode))
                page.wait_for_selector(".js-plotly-plot", timeout=60_000)
                time.sleep(3)
                lay, busy = rates(page, seconds)
                print(f"panel, {mode:6s}: {lay:6.1f} layouts/s, main thread {100 * busy:3.0f} % busy", flush=True)
                page.close()
        finally:
            srv.stop()


# Plotly draws per chart, counted in the page: each chart's plotly_afterplot events (Plotly fires
# it after every draw; Streamlit draws a changed chart twice here), by the chart's st-key-*
PLOTLY_DRAWS = """() => { window.__draws = {}; const key = e => { const b = e.closest('[class*=st-key-]');
    return b ? [...b.classList].find(c => c.startsWith('st-key-')).slice(7) : '?'; };
  const hook = gd => { if (gd.__counted || !gd.on) return; gd.__counted = true;
    gd.on('plotly_afterplot', () => { const k = key(gd); window.__draws[k] = (window.__draws[k] || 0) + 1; }); };
  document.querySelectorAll('.js-plotly-plot').forEach(hook);
  window.__drawsObs = new MutationObserver(() => document.querySelectorAll('.js-plotly-plot').forEach(hook));
  window.__drawsObs.observe(document.body, {childList: true, subtree: true}); }"""
LONG_TASKS = """() => { window.__long = []; new PerformanceObserver(l => { for (const e of l.getEntries())
  window.__long.push(e.duration); }).observe({type: 'longtask', buffered: false}); }"""
# Faded elements, sampled in the page every 20 ms: Streamlit fades an element it marks stale
# (drawn by an earlier run, not yet redrawn by this one: "opacity 1s ease-in 0.5s" to 0.33), and
# for a chart it remounts (its figure changed, so its element id did) it keeps the old copy, faded
# and with an empty box (not drawn), beside the new one for up to ~0.4 s: only elements with a
# box are counted. A stretch is one element's continuous faded time.
FADE_SAMPLER = """() => { window.__fade = {on: {}, stretches: [], samples: 0, any: 0}; const f = window.__fade;
  window.__fadeTimer = setInterval(() => { f.samples++; const now = performance.now(); const seen = {};
    for (const e of document.querySelectorAll('[data-testid=stMain] [data-testid=stElementContainer][data-stale=true]')) {
      const box = e.getBoundingClientRect();
      if (!box.width || !box.height || parseFloat(getComputedStyle(e).opacity) >= 0.9) continue;
      const k = [...e.classList].find(c => c.startsWith('st-key-')) || e.dataset.testid || '?';
      seen[k] = true; if (!(k in f.on)) f.on[k] = now; }
    if (Object.keys(seen).length) f.any++;
    for (const k of Object.keys(f.on)) if (!seen[k]) { f.stretches.push([k, now - f.on[k]]); delete f.on[k]; }
  }, 20); }"""
FADE_RESULT = """() => { clearInterval(window.__fadeTimer); const f = window.__fade; const now = performance.now();
  for (const k of Object.keys(f.on)) f.stretches.push([k, now - f.on[k]]);
  return [f.samples, f.any, f.stretches]; }"""


def fade_summary(samples: int, any_faded: int, stretches: list) -> str:
    """One line: the share of 20 ms samples with a faded element, the stretches by element."""
    by: dict[str, list[float]] = {}
    for k, ms in stretches:
        by.setdefault(k.replace("st-key-", ""), []).append(ms)
    parts = [f"{k} {len(v)}x, longest {max(v):.0f} ms" for k, v in sorted(by.items(), key=lambda kv: -max(kv[1]))]
    longest = max((ms for _, ms in stretches), default=0.0)
    return (f"a faded element in {any_faded} of {samples} samples every 20 ms ({100 * any_faded / max(1, samples):.1f} %), "
            f"longest faded stretch {longest:.0f} ms" + (f" ({'; '.join(parts[:6])})" if parts else ""))


def _time_until(page, selector: str, t0: float, timeout_s: float = 30.0) -> float:
    """Seconds from ``t0`` until ``selector`` is attached (nan after ``timeout_s``)."""
    try:
        page.wait_for_selector(selector, state="attached", timeout=timeout_s * 1000)
    except Exception:  # noqa: BLE001 - a timeout is a measurement
        return float("nan")
    return time.perf_counter() - t0


def _arm(event: str, landed: str) -> str:
    """A function for ``page.evaluate(js, arg)`` that notes, in the page, the time of the next
    ``event`` (capture phase, before Streamlit handles it) and of the first 5 ms sample after it at
    which ``landed(arg)`` (JavaScript) is true, in ``window.__timed``: what a user sees, without
    Playwright's own time to dispatch the event and to poll (0.1-0.4 s here)."""
    return f"""arg => {{ window.__timed = {{start: null, seen: null}};
  addEventListener('{event}', () => {{ if (window.__timed.start === null) window.__timed.start = performance.now(); }},
                   {{capture: true, once: true}});
  const landed = {landed};
  const iv = setInterval(() => {{ if (window.__timed.start !== null && landed(arg)) {{
    window.__timed.seen = performance.now(); clearInterval(iv); }} }}, 5);
  setTimeout(() => clearInterval(iv), 30000); }}"""


def _timed(page) -> float:
    """Seconds from the armed event to its landing in the page (nan when either is missing)."""
    r = page.evaluate("() => window.__timed")
    return (r["seen"] - r["start"]) / 1e3 if r and r["seen"] is not None and r["start"] is not None else float("nan")


# a press: until the selector ``arg`` matches
_ARM_PRESS = _arm("click", "sel => document.querySelector(sel)")
# A scrub step: until the slider shows another step (``arg``: [the step before, Chinese]), the
# section's caption names it (drawn by the server's run, so the run for the new step has come
# back), the script has finished, and each of the section's three charts has been drawn again
# (Plotly's plotly_afterplot: the caption comes before the charts, which were drawn up to 0.2 s later)
_ARM_SCRUB = _arm("keydown", """([b, zh]) => { const box = document.querySelector('.st-key-train_replay_box');
    const v = document.querySelector('.st-key-train_replay_step [data-testid=stSliderThumbValue]');
    if (!box || !v || v.innerText === b) return false;
    const want = zh ? `第 ${v.innerText} 步` : `step ${v.innerText}.`;
    const app = document.querySelector('[data-testid=stApp]');
    const drawn = ['att', 'emb', 'dist'].every(k => (window.__draws['train_replay_' + k] || 0) > 0);
    return box.innerText.includes(want) && app.dataset.testScriptState === 'notRunning' && drawn; }""")


def _press(page, button: str, until: str) -> tuple[float, float]:
    """Click ``button`` (a selector); (seconds in the page from the click to ``until`` matching,
    seconds from Playwright's click call to its wait for ``until`` returning); nan on a time-out."""
    page.evaluate(_ARM_PRESS, until)
    t0 = time.perf_counter()
    page.locator(button).click()
    outside = _time_until(page, until, t0)
    page.wait_for_timeout(50)
    return _timed(page), outside


def _replay_step(page) -> str:
    return page.locator(".st-key-train_replay_step [data-testid=stSliderThumbValue]").first.inner_text()


def whole_page(browser, seconds: float, lang: str, corpus: str, preset: str, scrubs: int = 3) -> None:
    srv = Server()
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(srv.url("training", lang=lang, corpus=corpus, preset=preset))
        wait_idle(page)
        skip_questions(page, lang)                # the run section waits behind a question
        wait_idle(page)
        lay, busy = rates(page, min(seconds, 10))
        print(f"/training {lang} {preset}, idle:     {lay:6.1f} layouts/s, main thread {100 * busy:3.0f} % busy", flush=True)
        page.evaluate(LONG_TASKS)
        page.locator(".st-key-train_start button").click()
        page.wait_for_selector(".st-key-train_loss .js-plotly-plot", state="attached")
        time.sleep(3)
        page.evaluate("() => { window.__long = []; }")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        a = metrics(cdp)
        page.evaluate(FADE_SAMPLER)
        page.evaluate(PLOTLY_DRAWS)
        time.sleep(seconds)
        z = metrics(cdp)
        fades = page.evaluate(FADE_RESULT)
        draws = page.evaluate("() => { window.__drawsObs.disconnect(); return window.__draws; }")
        busy = (z["TaskDuration"] - a["TaskDuration"]) / seconds
        lay = (z["LayoutCount"] - a["LayoutCount"]) / seconds
        longest = max(page.evaluate("() => window.__long"), default=0.0) / 1e3
        print(f"/training {lang} {preset}, training {seconds:.0f} s: {lay:6.1f} layouts/s, main thread "
              f"{100 * busy:3.0f} % busy, longest task {longest:.2f} s; {fade_summary(*fades)}", flush=True)
        copies = {k: page.locator(f".st-key-{k} .js-plotly-plot").count()
                  for k in ("train_loss", "train_ppl_lr", "train_att")}
        print(f"/training, copies of each live chart in the page: {copies}", flush=True)
        print(f"/training, Plotly draws per chart in {seconds:.0f} s (plotly_afterplot): "
              + ", ".join(f"{k} {v}" for k, v in sorted(draws.items(), key=lambda kv: -kv[1])), flush=True)
        # Pause, then Resume: from the click until the page shows the other button enabled
        pause, pause_pw = _press(page, ".st-key-train_pause button", ".st-key-train_resume button:not([disabled])")
        # replay scrub steps while paused: the slider one snapshot back each (_ARM_SCRUB: until it landed)
        scrub, scrub_pw = [], []
        thumb = page.locator(".st-key-train_replay_step input[type=range]").first
        for _ in range(scrubs):
            before = _replay_step(page)
            page.evaluate(PLOTLY_DRAWS)           # each replay chart's draws from here on
            page.evaluate(_ARM_SCRUB, [before, lang == "zh"])
            thumb.focus()
            t0 = time.perf_counter()
            page.keyboard.press("ArrowLeft")
            try:
                page.wait_for_function("() => window.__timed.seen !== null", timeout=30_000)
                scrub_pw.append(time.perf_counter() - t0)
                scrub.append(_timed(page))
            except Exception:  # noqa: BLE001 - a timeout is a measurement
                scrub.append(float("nan"))
                scrub_pw.append(float("nan"))
                state = page.evaluate("""() => [document.querySelector('[data-testid=stApp]').dataset.testScriptState,
                    (document.querySelector('.st-key-train_replay_box') || {innerText: ''}).innerText.match(/(第 \\d+ 步|step \\d+\\.)/g)]""")
                print(f"  a scrub step did not land in 30 s: the slider showed {before} before the key and "
                      f"{_replay_step(page)} after it; the page's script state {state[0]!r}, the section "
                      f"names {state[1]}", flush=True)
            time.sleep(0.5)
        page.evaluate("() => window.__drawsObs.disconnect()")
        resume, resume_pw = _press(page, ".st-key-train_resume button", ".st-key-train_pause button:not([disabled])")
        time.sleep(3)
        stop, stop_pw = _press(page, ".st-key-train_stop button", ".st-key-train_start button:not([disabled])")
        print(f"/training {lang} {preset}, in the page from the click: Pause landed (Resume enabled) "
              f"{pause:.2f} s, Resume {resume:.2f} s, Stop (Start enabled) {stop:.2f} s; through Playwright "
              f"(its click call to its wait's return): {pause_pw:.2f} / {resume_pw:.2f} / {stop_pw:.2f} s; "
              f"replay scrub steps in the page {', '.join(f'{x:.2f}' for x in scrub)} s; through "
              f"Playwright {', '.join(f'{x:.2f}' for x in scrub_pw)} s", flush=True)
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the training measurement")
    ap.add_argument("--lang", default="zh", choices=("en", "zh"))
    ap.add_argument("--corpus", default="poetry")
    ap.add_argument("--preset", default="poetry")
    ap.add_argument("--skip-panel", action="store_true", help="only the whole page")
    ap.add_argument("--scrubs", type=int, default=3, help="replay scrub steps while paused (one snapshot back each)")
    args = ap.parse_args()
    if not 1 <= args.seconds <= 120:
        ap.error("seconds: 1-120")
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("LMVIZ_THREADS", "1")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        if not args.skip_panel:
            panel(browser, min(args.seconds, 8))
        whole_page(browser, args.seconds, args.lang, args.corpus, args.preset, args.scrubs)
        browser.close()


if __name__ == "__main__":
    main()
