"""Classroom benchmark: one lecturer and N followers on one fresh server; how fast do they follow?

    python bench/follow.py --followers 30 [--moves 6] [--gap 3] [--time-limit 240]

Starts ``streamlit run app.py`` on a free port on 127.0.0.1. A lecturer session opens
/generation in presenter mode and presses "Start a class"; the class code is read from the
student link the page shows. N follower sessions open the student link (``/?follow=CODE``, half
in English, half in Chinese) on the home page and poll the class once a second, as a browser
tab does (their joins spread over one second, so their polls are out of step); each must be switched to /generation by the server. The lecturer then moves the
temperature slider ``--moves`` times, ``--gap`` seconds apart. A follower's lag for one move is
the time from the lecturer's message leaving the client to the first slider element the
follower receives that carries the new value (what its screen would draw). The clients are
websocket clients speaking Streamlit's own protocol (``bench/stclient.py``): no browser draws,
so the 2-core machine's time goes to the server being measured.

Prints per-move lags, followers that never showed a value (counted as misses, not as lags),
errors, the server's CPU over the moves (per follower) and its resident memory before the
followers joined and with them (per follower). The last line reads
``follow lag p50 X s, p95 Y s, max Z s, followers N``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import cpu_s, pct, print_latencies, rss_mb  # noqa: E402
from stclient import Session  # noqa: E402

VALUES = (0.5, 1.5, 0.25, 2.0, 0.75, 3.0, 1.25, 2.5)   # τ values the lecturer moves through
TAU_KEY = "gen_tau"


def tau_slider(s: Session):
    return next((w for w in s.sliders() if w.id.endswith(TAU_KEY)), None)


def shown_at(s: Session, value: float, since: float) -> float | None:
    """When the session first received the τ slider with ``value`` after ``since``."""
    for when, wid, v in s.slider_log:
        if when >= since and wid.endswith(TAU_KEY) and v and abs(v[0] - value) < 1e-9:
            return when
    return None


async def wait_for(cond, timeout: float, step: float = 0.05) -> bool:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if cond():
            return True
        await asyncio.sleep(step)
    return cond()


async def run(args) -> None:
    from tests.browser_util import Server

    os.environ["STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL"] = "10"
    srv = Server()
    pid = srv.proc.pid
    errors: list[str] = []
    lags: list[float] = []
    misses = 0
    per_move: list[str] = []
    followers: list[Session] = []
    lecturer = None
    hard_deadline = time.perf_counter() + args.time_limit
    try:
        lecturer = Session(srv.port, "generation", "lang=en&present=1")
        await lecturer.__aenter__()
        await lecturer.wait_idle(timeout=180)
        start = lecturer.button("class_start")
        if start is None:
            raise SystemExit("no 'Start a class' button on the lecturer's page")
        await lecturer.click(start)
        await wait_for(lambda: any("follow=" in x for x in lecturer.texts), 30)
        link = next((x for x in reversed(lecturer.texts) if "follow=" in x), "")
        m = re.search(r"follow=([A-Z0-9]+)", link)
        if not m:
            raise SystemExit("no student link on the lecturer's page")
        code = m.group(1)
        print(f"class {code}; lecturer link {link}")
        rss0, t_join = rss_mb(pid), time.perf_counter()

        async def join(i: int) -> Session:
            # joins spread over one poll period, so the followers' 1 s timers tick at different
            # moments, as real tabs opened one by one do (all in step would be the worst case)
            await asyncio.sleep(i / args.followers)
            s = Session(srv.port, "", f"follow={code}&lang={'zh' if i % 2 else 'en'}")
            try:
                await s.__aenter__()
            except Exception as e:  # noqa: BLE001 - counted, not raised
                errors.append(f"follower open failed ({type(e).__name__})")
            return s

        followers = list(await asyncio.gather(*(join(i) for i in range(args.followers))))
        ok = await wait_for(lambda: all(tau_slider(s) is not None for s in followers), 120, 0.2)
        on_page = sum(tau_slider(s) is not None for s in followers)
        print(f"{on_page}/{len(followers)} followers on /generation after "
              f"{time.perf_counter() - t_join:.1f} s" + ("" if ok else " (time-out)"))
        await asyncio.sleep(2)
        rss_open = rss_mb(pid)
        cpu0, t0 = cpu_s(pid), time.perf_counter()
        w = tau_slider(lecturer)
        for k in range(args.moves):
            if time.perf_counter() > hard_deadline or w is None:
                break
            value = VALUES[k % len(VALUES)]
            sent = time.perf_counter()
            took = await lecturer.move_slider(w, value, timeout=60)
            await wait_for(lambda: all(shown_at(s, value, sent) for s in followers), args.gap + 5)
            got = [shown_at(s, value, sent) for s in followers]
            move_lags = [g - sent for g in got if g is not None]
            misses += sum(g is None for g in got)
            lags += move_lags
            per_move.append(f"  move {k + 1}: τ={value:g}: {len(move_lags)}/{len(got)} followers, "
                            f"p50 {pct(move_lags, 0.5):.2f} s, max {max(move_lags, default=float('nan')):.2f} s "
                            f"(the lecturer's own rerun {took:.2f} s)")
            rest = args.gap - (time.perf_counter() - sent)
            if rest > 0:
                await asyncio.sleep(rest)
        cpu_used, wall = cpu_s(pid) - cpu0, time.perf_counter() - t0
        for s in [lecturer, *followers]:
            errors.extend(f"exception box: {e}" for e in s.errors)
    finally:
        for s in [*followers, *( [lecturer] if lecturer else [])]:
            await s.close()
        srv.stop()
    n = max(1, len(followers))
    for line in per_move:
        print(line)
    print(f"lags measured: {len(lags)}; misses (no new value within {args.gap + 5:g} s): {misses}; "
          f"errors: {len(errors)}")
    for e in sorted(set(errors))[:10]:
        print(f"  error: {e} (x{errors.count(e)})")
    print(f"server CPU over the moves: {cpu_used:.1f} s in {wall:.1f} s wall "
          f"({100 * cpu_used / wall:.0f} % of one core; {100 * cpu_used / wall / n:.1f} % per follower)")
    print(f"server RSS: {rss0:.0f} MB with the lecturer alone, {rss_open:.0f} MB with {len(followers)} "
          f"followers ({(rss_open - rss0) / n:.1f} MB per follower)")
    print_latencies("follow lag", lags, f"followers {len(followers)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--followers", type=int, default=30)
    ap.add_argument("--moves", type=int, default=6)
    ap.add_argument("--gap", type=float, default=3.0, help="seconds between the lecturer's moves")
    ap.add_argument("--time-limit", type=float, default=240, help="stop moving after this (s)")
    args = ap.parse_args()
    if not (0 < args.followers <= 100 and 0 < args.moves <= 40 and 0.5 <= args.gap <= 30):
        ap.error("--followers 1..100, --moves 1..40, --gap 0.5..30")
    asyncio.run(asyncio.wait_for(run(args), args.time_limit + 300))


if __name__ == "__main__":
    main()
