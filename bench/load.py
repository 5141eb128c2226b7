"""Load benchmark: N sessions move sliders while T models train, all on one fresh server.

    python bench/load.py --sessions 20 --trainings 2 [--moves 5] [--time-limit 300]

Starts ``streamlit run serve.py`` on a free port on 127.0.0.1, opens T sessions on /training and
presses Start (they keep polling the run once a second, as a browser tab does), then opens N
sessions spread over the chapters, each on its chapter's first slider, and moves that slider
``--moves`` times at random moments. A move is timed from the message leaving the client to the
server's "run finished": the server's whole work for that slider change. The clients are
websocket clients that speak Streamlit's own protocol (``ui/headless.py``): no browser draws
anything, so the 2-core machine's time goes to the server being measured.

Prints the latency percentiles, errors (exception boxes, time-outs), server CPU and resident
memory before, with the sessions open and after they closed. "After" waits for the server to
forget the sessions and stop their trainings: ``--ttl`` seconds (the disconnected-session
time-to-live this bench gives the server), ``--ttl`` more (the trainings' grace period after
their session ended, LMVIZ_RUN_GRACE_S), plus 10 s. With
``--waves K`` the whole room (sessions, trainings, moves, close) comes K times to the same
server: memory that sessions leave behind grows with every wave, memory the process keeps for
reuse (allocator pools, torch's caches) does not. Its last line reads
``slider p50 X s, p95 Y s, max Z s, sessions N, trainings T``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ui.headless import Session  # noqa: E402

# chapters with a slider near the top, and the query each session opens them with
CHAPTERS = ("generation", "attention", "tokenization", "embedding", "transformer-block",
            "loss-and-gradients", "kv-cache", "cost", "autoregression")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of the process, all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_ticks(root: int) -> dict:
    """Cumulative CPU ticks (user + system) of the server ``root`` and its descendants, read from
    /proc: ``{("thread", tid): ticks}`` for each thread of the server itself, ``{("process", pid):
    ticks}`` for each descendant (the fork server and the trainings' processes). {} off Linux."""
    def ticks(stat: str) -> int:
        f = stat[stat.rindex(")") + 2:].split()          # fields after "pid (comm) "
        return int(f[11]) + int(f[12])                   # utime, stime

    out, kids = {}, {}
    try:
        for tid in os.listdir(f"/proc/{root}/task"):
            out[("thread", int(tid))] = ticks(Path(f"/proc/{root}/task/{tid}/stat").read_text())
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    st = Path(f"/proc/{d}/stat").read_text()
                except OSError:
                    continue
                kids.setdefault(int(st[st.rindex(")") + 2:].split()[1]), []).append((int(d), st))
    except OSError:
        return out
    todo = [root]
    while todo:
        for pid, st in kids.get(todo.pop(), []):
            out[("process", pid)] = ticks(st)
            todo.append(pid)
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def print_latencies(label: str, xs: list[float], tail: str) -> None:
    """The two closing lines both page benches print: the mean (when any was measured), then
    p50/p95/max under `label`, ending with `tail` (what the run was)."""
    if xs:
        print(f"mean {statistics.mean(xs):.3f} s")
    print(f"{label} p50 {pct(xs, 0.5):.2f} s, p95 {pct(xs, 0.95):.2f} s, max {max(xs, default=float('nan')):.2f} s, "
          f"{tail}")


async def trainer(port: int, i: int, started: list, errors: list) -> Session:
    s = Session(port, "training", "lang=en" if i % 2 == 0 else "lang=zh")
    await s.__aenter__()
    await s.wait_idle()
    await s.skip_questions()                  # the sections a question holds back
    btn = s.button("train_start")
    if btn is None:
        errors.append("training: no Start button")
        return s
    await s.click(btn)
    started.append(time.perf_counter())
    return s


async def mover(port: int, i: int, moves: int, lat: list, errors: list, rng: random.Random,
                deadline: float) -> Session | None:
    page = CHAPTERS[i % len(CHAPTERS)]
    s = Session(port, page, "lang=zh" if i % 2 else "lang=en", auto_rerun=False)
    try:
        await s.__aenter__()
        await s.wait_idle(timeout=120)
        await s.skip_questions()
    except Exception as e:  # noqa: BLE001 - counted, not raised
        errors.append(f"{page}: open failed ({type(e).__name__})")
        return s
    sliders = s.sliders()
    if not sliders:
        errors.append(f"{page}: no slider")
        return s
    w = sliders[0]
    lo, hi = w.lo, w.hi
    for m in range(moves):
        if time.perf_counter() > deadline:
            break
        await asyncio.sleep(rng.uniform(0.3, 2.0))
        value = lo + (hi - lo) * (0.25 if m % 2 == 0 else 0.75)
        value = round(value) if float(lo).is_integer() and float(hi).is_integer() and hi - lo >= 4 else value
        try:
            lat.append(await s.move_slider(w, value, timeout=60))
        except asyncio.TimeoutError:
            errors.append(f"{page}: slider rerun timed out")
    errors.extend(f"{page}: exception box: {e}" for e in s.errors)
    return s


async def run(args) -> None:
    from tests.browser_util import Server

    os.environ["STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL"] = str(args.ttl)
    os.environ["LMVIZ_RUN_GRACE_S"] = str(args.ttl)
    srv = Server()
    pid = srv.proc.pid
    rng = random.Random(args.seed)
    lat: list[float] = []
    errors: list[str] = []
    try:
        # warm the server once (torch import, default model) so the first mover is not the cold start
        warm = Session(srv.port, "attention", "lang=en", auto_rerun=False)
        await warm.__aenter__()
        await warm.wait_idle(timeout=180)
        await warm.close()
        rss0, cpu0, t0 = rss_mb(pid), cpu_s(pid), time.perf_counter()
        rss_open, rss_closed, polls = [], [], []
        for _ in range(args.waves):
            started: list[float] = []
            trainers = [await trainer(srv.port, i, started, errors) for i in range(args.trainings)]
            deadline = time.perf_counter() + args.time_limit / args.waves
            sessions = await asyncio.gather(*(mover(srv.port, i, args.moves, lat, errors, rng, deadline)
                                              for i in range(args.sessions)))
            rss_open.append(rss_mb(pid))
            polls.append([s.runs for s in trainers])
            for s in list(sessions) + trainers:
                if s is not None:
                    await s.close()
            await asyncio.sleep(2 * args.ttl + 10)      # sessions forgotten (ttl), then trainings stopped (grace)
            rss_closed.append(rss_mb(pid))
        cpu_used = cpu_s(pid) - cpu0
        wall = time.perf_counter() - t0
    finally:
        srv.stop()
    n = len(lat)
    print(f"moves timed: {n}; errors: {len(errors)}")
    for e in sorted(set(errors))[:20]:
        print(f"  error: {e} (x{errors.count(e)})")
    print(f"training sessions: {args.trainings} per wave, page polls seen {polls}")
    print(f"server CPU: {cpu_used:.1f} s over {wall:.1f} s wall ({100 * cpu_used / wall:.0f} % of one core)")
    per = (rss_open[0] - rss0) / max(1, args.sessions + args.trainings)
    print(f"server RSS: {rss0:.0f} MB before, {rss_open[0]:.0f} MB with {args.sessions} sessions and "
          f"{args.trainings} trainings ({per:.1f} MB per session)")
    for k, (o, c) in enumerate(zip(rss_open, rss_closed), 1):
        print(f"  wave {k}: {o:.0f} MB open, {c:.0f} MB {2 * args.ttl + 10} s after they closed")
    print_latencies("slider", lat, f"sessions {args.sessions}, trainings {args.trainings}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--trainings", type=int, default=2)
    ap.add_argument("--moves", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ttl", type=int, default=10, help="disconnected-session TTL given to the server (s)")
    ap.add_argument("--time-limit", type=float, default=300, help="stop moving sliders after this (s, all waves)")
    ap.add_argument("--waves", type=int, default=1, help="times the whole room comes and goes")
    args = ap.parse_args()
    if not (0 < args.sessions <= 100 and 0 <= args.trainings <= 8 and 0 < args.moves <= 50 and 0 < args.waves <= 5):
        ap.error("sessions 1-100, trainings 0-8, moves 1-50, waves 1-5")
    asyncio.run(asyncio.wait_for(run(args), args.time_limit + args.waves * (args.ttl + 200) + 600))


if __name__ == "__main__":
    main()
