"""A room opens a chapter together: N sessions open the same chapter within one second.

    python bench/room_open.py --sessions 30 --chapter attention[,cost,...] [--lang zh|en,zh] [--training]
                              [--healthy-for 60] [--skip-questions] [--modes "warm views;no warm views"]
                              [--model smollm2] [--loaders 4]

Starts ``streamlit run serve.py`` (README's run command) on a free port on 127.0.0.1, waits until
it is healthy and then ``--healthy-for`` seconds more (the lecture case: the server was started
before the class), optionally starts one training on /training (``--training``: the room opens
a chapter while a model trains), then opens ``--sessions`` websocket sessions on ``/CHAPTER``
spread evenly over one second. Each session is timed from its connect to the server's "script
finished" for its first run: the server's whole work for that visitor's first view (the
browser's drawing is not included; ``bench/startup.py`` times that for one visitor). The clients
speak Streamlit's own protocol (``ui/headless.py``), so the 2-core machine's time goes to the
server. ``--skip-questions``: each session then presses every question's "skip" (the whole
chapter, as a student who skips them sees it), timed to that run's end too. ``--modes``: the same
room against a server per mode, one after the other in one run: ``warm views`` (README's server,
which visits every chapter once as it starts, ui/warmup.py) and ``no warm views``
(LMVIZ_WARM_VIEWS=0: each chapter's default view is computed by its first visitors). A mode's last
line reads ``open p50 X s, p95 Y s, max Z s, sessions N, chapter C, ..., mode M``. Several chapters
(``--chapter a,b,c``, ``--lang en,zh``) are opened one room after another on the same server
(the sessions of one room closed before the next arrives), and a last line gives the range of
their p95. ``--model ID`` opens every session on that model (``?model=``, e.g. ``smollm2``); each
room also prints the server's resident memory while its sessions are open (one copy of a
pretrained model per process: 30 sessions on it should cost little more than one).

``--loaders K`` (issue 55, the hostile probe's "script threads" case): K more sessions from the
same client, started just before the room, each open /attention on its own pretrained folder
(K GPT-2-small-shaped folders in a temporary LMVIZ_MODEL_DIR, so every one is a whole first load
of 0.5 GB); the room's students are timed as above, beside them. Each loader's first
run is timed too: a load on the script's thread holds it for the whole load, a load on a task
only for the run that starts it.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import pct, print_latencies, trainer  # noqa: E402
from ui.headless import Session  # noqa: E402


async def opener(port: int, chapter: str, query: str, delay: float, lat: list, errors: list,
                 timeout: float, skip: bool = False) -> Session | None:
    await asyncio.sleep(delay)
    s = Session(port, chapter, query, auto_rerun=False)
    t0 = time.perf_counter()
    try:
        await s.__aenter__()
        await s.wait_idle(timeout=timeout)
        if skip:
            await s.skip_questions(timeout=timeout)
    except Exception as e:  # noqa: BLE001 - counted, not raised
        errors.append(f"{chapter}: open failed ({type(e).__name__})")
        return s
    lat.append(time.perf_counter() - t0)
    errors.extend(f"{chapter}: exception box: {e}" for e in s.errors)
    return s


async def run(args, mode: str) -> None:
    from tests.browser_util import Server

    os.environ.pop("LMVIZ_WARM_VIEWS", None)
    if mode == "no warm views":
        os.environ["LMVIZ_WARM_VIEWS"] = "0"
    loader_ids = _loader_copies(args.loaders)
    srv = Server()
    os.environ.pop("LMVIZ_WARM_VIEWS", None)
    trainers: list[Session] = []
    rooms = [(c, lang) for lang in args.lang.split(",") for c in args.chapter.split(",")]
    worst: list[tuple[float, str]] = []
    try:
        await asyncio.sleep(args.healthy_for)
        if args.training:
            started: list[float] = []
            trainers.append(await trainer(srv.port, 0 if rooms[0][1] == "en" else 1, started, []))
            await asyncio.sleep(2)                  # the run is past its set-up
        for chapter, lang in rooms:                 # one room after another, on the same server
            lat: list[float] = []
            errors: list[str] = []
            opened: list[Session | None] = []
            try:
                query = f"lang={lang}" + (f"&model={args.model}" if args.model else "")
                loaders: list[float] = []
                for i, mid in enumerate(loader_ids):        # just before the room, 20 ms apart
                    trainers.append(asyncio.ensure_future(opener(
                        srv.port, "attention", f"lang={lang}&model={mid}", 0.02 * i, loaders, errors, args.timeout)))
                opened = await asyncio.gather(*(
                    opener(srv.port, chapter, query, i / max(1, args.sessions), lat, errors,
                           args.timeout, args.skip_questions)
                    for i in range(args.sessions)))
                rss = _rss_mb(srv.proc.pid)               # with the room's sessions open
            finally:
                await _close(opened)
            print(f"sessions opened: {len(lat)} of {args.sessions}; errors: {len(errors)}")
            for e in sorted(set(errors))[:20]:
                print(f"  error: {e} (x{errors.count(e)})")
            print(f"server RSS with the room open: {rss:.0f} MB")
            if loader_ids:
                print(f"loaders: {len(loader_ids)} ({', '.join(loader_ids)}), each a first load of its own folder; "
                      f"their first runs took " + ", ".join(f"{x:.2f}" for x in sorted(loaders)) + " s so far")
            print_latencies("open", lat, f"sessions {args.sessions}, chapter {chapter}, lang {lang}, "
                            f"model {args.model or 'default'}, "
                            f"training {'on' if args.training else 'off'}, healthy for {args.healthy_for:.0f} s, "
                            f"questions {'skipped' if args.skip_questions else 'shown'}, mode {mode}")
            if lat:
                worst.append((pct(lat, 0.95), f"{chapter} ({lang})"))
            await asyncio.sleep(args.pause)
    finally:
        await _close(trainers)
        srv.stop()
    if len(rooms) > 1 and worst:
        worst.sort()
        print(f"rooms {len(rooms)}, mode {mode}: p95 from {worst[0][0]:.2f} s ({worst[0][1]}) to "
              f"{worst[-1][0]:.2f} s ({worst[-1][1]}); {sum(1 for x, _ in worst if x <= 3.0)} of "
              f"{len(worst)} rooms at p95 <= 3 s", flush=True)


def _rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` (Linux /proc), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _loader_copies(k: int) -> list[str]:
    """K GPT-2-small-shaped folders (12 layers of width 768, a 50,257-token table: 124 M
    parameters, 0.5 GB of fp32 safetensors each; random weights, tests.model_util.tiny_hf_folder)
    in a temporary folder made LMVIZ_MODEL_DIR for the server about to start; their ids."""
    if k <= 0:
        return []
    import tempfile

    from lmviz.hf import find_models, model_ids
    from tests.model_util import tiny_hf_folder

    root = Path(tempfile.mkdtemp(prefix="lmviz-loaders-"))
    for i in range(k):
        tiny_hf_folder(root, f"copy{i}", n_layer=12, n_head=12, dm=768)
    os.environ["LMVIZ_MODEL_DIR"] = str(root)
    return [mid for mid, p in model_ids(find_models()).items() if str(root) in str(p)][:k]


async def _close(sessions) -> None:
    for s in sessions:
        if asyncio.isfuture(s):
            s = await s
        if s is not None:
            try:
                await s.close()
            except Exception:  # noqa: BLE001 - closing a broken session
                pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--chapter", default="attention",
                    help="URL path of the chapter, e.g. kv-cache; a comma-separated list opens them one after another")
    ap.add_argument("--lang", default="en", help="en, zh or en,zh (each chapter in each)")
    ap.add_argument("--pause", type=float, default=3.0, help="seconds between two rooms")
    ap.add_argument("--training", action="store_true", help="one training runs while the room opens")
    ap.add_argument("--healthy-for", type=float, default=60.0,
                    help="seconds between the server's health and the room arriving")
    ap.add_argument("--timeout", type=float, default=180.0, help="give up on one session after this (s)")
    ap.add_argument("--skip-questions", action="store_true", help="each session also skips the questions")
    ap.add_argument("--loaders", type=int, default=0,
                    help="sessions that each first-load a pretrained folder of their own as the room opens")
    ap.add_argument("--model", default="", help="a model id (?model=, e.g. smollm2): every session opens on it")
    ap.add_argument("--modes", default="warm views", help="';'-separated, from: warm views; no warm views")
    args = ap.parse_args()
    if set(args.lang.split(",")) - {"en", "zh"}:
        ap.error("--lang: en, zh or en,zh")
    for mode in (m.strip() for m in args.modes.split(";") if m.strip()):
        asyncio.run(run(args, mode))


if __name__ == "__main__":
    main()
