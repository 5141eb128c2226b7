"""Live training in Chinese against English, side by side in one run (CPU, 1 torch thread as the app).

    .venv/bin/python bench/train_zh.py             # both presets to the end of their runs (~5 min)
    .venv/bin/python bench/train_zh.py --quick     # stop each run at 60 s
    .venv/bin/python bench/train_zh.py --with-load 0,20   # served, with 20 sessions moving sliders
    .venv/bin/python bench/train_zh.py --with-load 0,20 --backends process,thread

For the "poetry" preset on the Tang-poetry corpus (lmviz.poetry: its tokenizer, held-out whole
poems) and the English "tiny" preset on the English corpus, it reports:

1. held-out loss after 60 s of training (or at the end of the run, if sooner) against the
   uniform and unigram baselines of the same tokenizer and split (lmviz.baselines);
2. when the held-out loss first fell below the unigram baseline (checked every BEAT_EVERY
   steps), and the held-out loss at the end of the run;
3. the form metric (lmviz.poetry.form_share: share of generated lines that are 5 or 7
   characters) of the run's fixed sample (Trainer.sample: the preset's sample_len tokens, what
   the page shows) at the end and at 60 s, for the poetry preset.

With ``--with-load 0,20`` it measures the served run instead: one fresh server per number, a
session on /training?lang=zh starts the poetry preset while that many sessions move sliders
(bench/load.py's room), and it reports the time from Start until the page states that the run
went below the unigram baseline (the sentence of lmviz.chapters.claims.baseline), the step and
seconds the page states, the last pace the page stated, the room's slider p95, and the share of
one core the training had over that time (CPU time from /proc: its process's, or on a thread the
server's busiest thread's, over the wall time).

Held-out loss is lmviz.baselines.heldout_loss on the first EVAL_TOKENS tokens of the held-out
part (deterministic), timed out of the training clock. The machine is shared: the load average is
printed before and after each run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

from lmviz.baselines import heldout_loss, unigram_baseline  # noqa: E402
from lmviz.poetry import PROMPT, form_share, poetry_tokenizer, training_text  # noqa: E402
from lmviz.train import Trainer, corpus_text, make_config  # noqa: E402

EVAL_TOKENS = 16_384
CHECK_S = 60.0
BEAT_EVERY = 50           # steps between checks of "held-out loss below the unigram baseline yet?"


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def run(name: str, trainer: Trainer, check_s: float, quick: bool, prompt: str, form: bool) -> dict:
    b = unigram_baseline(trainer.train_ids, trainer.val_ids, trainer.tokenizer.vocab_size)
    rec = {"name": name, "params": trainer.num_params(), "vocab": trainer.tokenizer.vocab_size,
           "uniform": b.uniform, "unigram": b.unigram, "load_before": load()}
    train_s, at_check, beat = 0.0, None, None
    while not trainer.done:
        t0 = time.perf_counter()
        trainer.step(10)
        train_s += time.perf_counter() - t0
        if beat is None and trainer.steps_done % BEAT_EVERY == 0:
            if heldout_loss(trainer.model, trainer.val_ids, EVAL_TOKENS) < b.unigram:
                beat = {"t": train_s, "step": trainer.steps_done}
        if at_check is None and (train_s >= check_s or trainer.done):
            at_check = {"t": train_s, "step": trainer.steps_done,
                        "val": heldout_loss(trainer.model, trainer.val_ids, EVAL_TOKENS)}
            if form:
                smp = trainer.sample(prompt)
                at_check["form"] = form_share(smp.prompt + smp.text)   # the prompt begins the first line
            if quick:
                break
    rec["check"], rec["beat"] = at_check, beat
    rec["end"] = {"t": train_s, "step": trainer.steps_done,
                  "val": heldout_loss(trainer.model, trainer.val_ids, EVAL_TOKENS),
                  "train": heldout_loss(trainer.model, trainer.train_ids, EVAL_TOKENS)}
    s = trainer.sample(prompt)
    rec["sample"] = s.prompt + s.text
    if form:
        rec["end"]["form"] = form_share(s.prompt + s.text)
    rec["load_after"] = load()
    return rec


# ------------------------------------------------------------------ --with-load ----------
def _template_regex(key: str, lang: str):
    """A catalogue sentence as a regex: its numbers captured by placeholder name."""
    import re

    from ui.i18n import catalogue

    text = catalogue(lang)[key]
    out, pos = "", 0
    for m in re.finditer(r"\{(\w+)(?::[^}]*)?\}", text):
        out += re.escape(text[pos:m.start()]) + rf"(?P<{m.group(1)}>[\d.,]+)"
        pos = m.end()
    return re.compile(out + re.escape(text[pos:]))


def training_share(before: dict, after: dict, wall_s: float, backend: str) -> float | None:
    """The training's share of one core between two ``cpu_ticks`` readings: in its own process,
    the busiest descendant of the server (the fork server itself idles); on a thread, the
    server's busiest thread (the training's: the pages' runs are spread over many threads)."""
    kind = "process" if backend == "process" else "thread"
    spent = [after[k] - before.get(k, 0) for k in after if k[0] == kind]
    if not spent or wall_s <= 0:
        return None
    return max(spent) / os.sysconf("SC_CLK_TCK") / wall_s


async def served(load_n: int, limit_s: float, lang: str = "zh", backend: str = "process") -> dict:
    """One fresh server: a session on /training (the poetry preset) presses Start, ``load_n``
    sessions move their chapters' sliders until the run's page states that it crossed the
    unigram baseline (lmviz.chapters.claims.baseline, "crossed") or ``limit_s`` passes. The
    training runs in a process of its own (``backend="process"``: LMVIZ_TRAIN_PROCESS=1,
    serve.py's default, lmviz.server.train_process) or on a thread of the server (``"thread"``)."""
    import asyncio
    import random

    sys.path.insert(0, str(ROOT / "bench"))
    from load import cpu_ticks, mover  # noqa: E402 - the room of bench/load.py
    from tests.browser_util import Server
    from ui.headless import Session

    from ui.i18n import catalogue

    crossed_re = _template_regex("claim.baseline.crossed", lang)
    failed = catalogue(lang)["train.error"].split("{msg}")[0]   # the page's "stopped with an error: "
    pace_re = _template_regex("claim.pace.faster", lang), _template_regex("claim.pace.slower", lang), \
        _template_regex("claim.pace.as_estimated", lang)
    os.environ["LMVIZ_TRAIN_PROCESS"] = "1" if backend == "process" else "0"
    srv = Server()
    rec: dict = {"load": load_n, "backend": backend, "load_before": load()}
    rng, lat, errors = random.Random(0), [], []
    movers = []
    try:
        s = Session(srv.port, "training", f"lang={lang}&corpus=poetry&preset=poetry")
        await s.__aenter__()
        await s.wait_idle()
        await s.skip_questions()
        deadline = time.perf_counter() + limit_s
        movers = [asyncio.create_task(mover(srv.port, i, 10_000, lat, errors, rng, deadline))
                  for i in range(load_n)]
        await asyncio.sleep(5 if load_n else 0)           # the room is open before the run starts
        t0, ticks0 = time.perf_counter(), cpu_ticks(srv.proc.pid)
        await s.click(s.button("train_start"))
        seen = t0                                         # the log is capped: read it by time
        while time.perf_counter() < deadline and "crossed" not in rec and "error" not in rec:
            await asyncio.sleep(0.2)
            rec["error"] = next((a for a in s.alerts if a.startswith(failed)), None)
            if rec["error"] is None:
                del rec["error"]
            new = [(at, text) for at, text in s.text_log if at > seen]
            seen = new[-1][0] if new else seen
            for at, text in new:
                m = crossed_re.search(text)
                if m and "crossed" not in rec:
                    rec["crossed"] = {"wall": at - t0, "step": int(m["step"].replace(",", "")),
                                      "secs": float(m["secs"])}
                    rec["share"] = training_share(ticks0, cpu_ticks(srv.proc.pid),
                                                  time.perf_counter() - t0, backend)
                for r in pace_re:
                    p = r.search(text)
                    if p:
                        rec["pace"] = {"sps": float(p["sps"]), "step_sps": float(p["step_sps"]),
                                       "est": float(p["est"])}
        rec["moves"], rec["errors"] = len(lat), len(errors)
        rec["slider_p95"] = sorted(lat)[int(0.95 * (len(lat) - 1))] if lat else float("nan")
    finally:
        for t in movers:
            t.cancel()
        done = await asyncio.gather(*movers, return_exceptions=True)
        for x in done:
            if isinstance(x, Session):
                try:
                    await x.close()
                except Exception:  # noqa: BLE001
                    pass
        srv.stop()
    rec["load_after"] = load()
    return rec


def with_load(loads: list[int], limit_s: float, backends: list[str]) -> None:
    import asyncio

    recs = [asyncio.run(served(n, limit_s, backend=b)) for n in loads for b in backends]
    for r in recs:
        c, p = r.get("crossed"), r.get("pace")
        cross = (f"crossed the unigram baseline {c['wall']:.1f} s after Start (the page: step {c['step']}, "
                 f"{c['secs']:.0f} s of steps)" if c else
                 f"the training failed: {r['error']}" if r.get("error") else f"not crossed within {limit_s:.0f} s")
        share = r.get("share")
        cross += f" (the training had {share:.2f} of a core)" if share is not None else ""
        pace_txt = (f"; last stated pace {p['sps']:.1f} steps/s ({p['step_sps']:.1f} steps alone, "
                    f"estimate {p['est']:.1f})" if p else "")
        print(f"with load {r['load']:3d}, training on a {r['backend']}: {cross}{pace_txt}; slider moves {r['moves']}, p95 "
              f"{r['slider_p95']:.2f} s, errors {r['errors']}; {r['load_before']} -> {r['load_after']}", flush=True)
    for b in backends:
        mine = [r for r in recs if r["backend"] == b]
        if len(mine) > 1 and all("crossed" in r for r in mine):
            base = mine[0]["crossed"]["wall"]
            print(f"training on a {b}, time to cross vs load {mine[0]['load']}: " + ", ".join(
                f"load {r['load']}: {r['crossed']['wall'] / base:.2f}x" for r in mine[1:]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="stop each run at the 60 s check")
    ap.add_argument("--check_s", type=float, default=CHECK_S)
    ap.add_argument("--with-load", default="", help="e.g. 0,20: the served run with that many sessions "
                    "moving sliders, one fresh server each, side by side")
    ap.add_argument("--limit", type=float, default=300.0, help="--with-load: give up after this (s)")
    ap.add_argument("--backends", default="process,thread", help="--with-load: where the training runs: "
                    "process (its own, serve.py's default), thread (a thread of the server); each load on each")
    args = ap.parse_args()
    if args.with_load:
        with_load([int(x) for x in args.with_load.split(",")], args.limit, args.backends.split(","))
        return
    print(load(), f"torch threads {torch.get_num_threads()}", flush=True)

    text, vf = training_text()
    zh = Trainer(text, make_config("poetry", val_frac=vf), device="cpu", tokenizer=poetry_tokenizer(),
                 prompt=PROMPT)
    en = Trainer(corpus_text("english"), make_config("tiny"), device="cpu")
    recs = [run("poetry (zh)", zh, args.check_s, args.quick, PROMPT, True),
            run("tiny (en)", en, args.check_s, args.quick, "The ", False)]

    print(f"\n{'':34s}" + "".join(f"{r['name']:>18s}" for r in recs))
    rows = [
        ("parameters", lambda r: f"{r['params']:,}"),
        ("vocabulary", lambda r: f"{r['vocab']:,}"),
        ("uniform baseline ln V (nats)", lambda r: f"{r['uniform']:.3f}"),
        ("unigram baseline, held-out", lambda r: f"{r['unigram']:.3f}"),
        ("first below unigram (step, s)", lambda r: f"{r['beat']['step']}, {r['beat']['t']:.0f} s"
         if r["beat"] else "not yet"),
        (f"held-out loss at {args.check_s:.0f} s", lambda r: f"{r['check']['val']:.3f}"),
        ("  (step, train seconds)", lambda r: f"{r['check']['step']}, {r['check']['t']:.0f} s"),
        ("  below unigram by", lambda r: f"{r['unigram'] - r['check']['val']:.3f}"),
        (f"form share at {args.check_s:.0f} s", lambda r: f"{r['check']['form'].share:.0%} of {r['check']['form'].n_lines}"
         if "form" in r["check"] else "-"),
        ("held-out loss at the end", lambda r: f"{r['end']['val']:.3f}"),
        ("train loss at the end", lambda r: f"{r['end']['train']:.3f}"),
        ("  (step, train seconds)", lambda r: f"{r['end']['step']}, {r['end']['t']:.0f} s"),
        ("form share at the end", lambda r: f"{r['end']['form'].share:.0%} of {r['end']['form'].n_lines}"
         if "form" in r["end"] else "-"),
    ]
    for label, f in rows:
        print(f"{label:34s}" + "".join(f"{f(r):>18s}" for r in recs))
    for r in recs:
        print(f"\n{r['name']}: {r['load_before']} -> {r['load_after']}\nsample: {r['sample']!r}")


if __name__ == "__main__":
    main()
