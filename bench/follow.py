"""Classroom benchmark: one lecturer and N followers on one fresh server; how fast do they follow?

    python bench/follow.py --followers 30 [--moves 6] [--gap 3] [--time-limit 240]

Starts the app (``serve.py``, README's run command) on a free port on 127.0.0.1. A lecturer session opens
/generation in presenter mode and presses "Start a class"; the class code is read from the
student link the page shows. N follower sessions open the student link (``/?follow=CODE``, half
in English, half in Chinese) on the home page; the server reruns their check of the class when it
moves (``ui.follow.pushes``), and their own timers ask for it every ``ui.follow.follow_period`` seconds
as a backstop, as a browser tab does (their joins spread over one second, so their timers are out of
step); each must be switched to /generation by the server. The
lecturer first shows the answer of the question the τ section waits behind (predict, then reveal:
the section is drawn on every screen of the class), then moves the temperature slider ``--moves`` times, ``--gap`` seconds apart. A follower's lag for one move is
the time from the lecturer's message leaving the client to the first slider element the
follower receives that carries the new value (what its screen would draw). The clients are
websocket clients speaking Streamlit's own protocol (``ui/headless.py``): no browser draws,
so the 2-core machine's time goes to the server being measured.

Prints per-move lags, followers that never showed a value (counted as misses, not as lags),
errors, the server's CPU over the moves (per follower) and its resident memory before the
followers joined and with them (per follower). The last line reads
``follow lag p50 X s, p95 Y s, max Z s, followers N``.

``--browsers B`` adds B real headless Chromium followers (Debian's chromium through Playwright),
which open the student link as a student does. For them the lag is measured as a student sees
it: from the lecturer's message leaving the client to the moment the follower's page shows the
new τ in its slider (a watcher in the page samples the slider every 10 ms and timestamps each
change with the wall clock, which this script shares). Their "open" time is from ``goto`` of
the follow link to the page showing the lecturer's chapter with the lecturer's τ, and again from
the page's own navigation start (``performance.timeOrigin``: what ``bench/startup.py`` times a
chapter from; it leaves out Chromium starting the tab's renderer on the same two cores). Printed
as separate lines: ``browser open p50/p95/max``, ``browser open from navigation start`` and
``browser follow lag p50/p95/max``.

The lecturer opens ``--healthy-for`` seconds (default 60) after the server reports healthy: a
lecture's server was started before the class, its warm-up (which visits every chapter) done.

    python bench/follow.py --followers 0 --browsers 3
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
from lmviz.chapters.questions import QUESTIONS  # noqa: E402
from ui.headless import Session  # noqa: E402

VALUES = (0.5, 1.5, 0.25, 2.0, 0.75, 3.0, 1.25, 2.5)   # τ values the lecturer moves through
TAU_KEY = "gen_tau"
# the question the τ section (/generation's "gen.sec_temp") waits behind
TAU_QUESTION = next(q.id for q in QUESTIONS if q.section == "gen.sec_temp")

# In every browser follower's page, before Streamlit loads: every 10 ms, the value of the τ
# slider (the slider labelled with τ), the page's path and whether a chart is drawn (Plotly's
# SVG in the page); each change is pushed with Date.now().
WATCH_JS = """
window.__lmvizSeen = [];
(function () {
  var last = null;
  setInterval(function () {
    var v = null;
    document.querySelectorAll('[data-testid=stSlider]').forEach(function (s) {
      var lab = s.querySelector('[data-testid=stWidgetLabel]');
      var inp = s.querySelector('input[type=range]');
      if (v === null && lab && inp && lab.textContent.indexOf('\u03c4') >= 0) v = inp.value;
    });
    var charts = document.querySelector('[data-testid=stPlotlyChart] .main-svg') !== null;
    var key = location.pathname + ' ' + v + ' ' + charts;
    if (key !== last) {
      last = key; window.__lmvizSeen.push([Date.now() / 1000, location.pathname, v, charts]);
    }
  }, 10);
})();
"""


class BrowserFollower:
    """One headless Chromium tab following the class (a context of its own: its own cookies)."""

    def __init__(self, browser, i: int):
        self.browser, self.i = browser, i
        self.ctx = self.page = None
        self.opened_s: float | None = None
        self.opened_nav_s: float | None = None   # the same, from the page's navigation start
        self.t0: float | None = None             # wall clock at goto

    async def open(self, url: str, tau: float, timeout: float) -> None:
        self.ctx = await self.browser.new_context(viewport={"width": 1280, "height": 800})
        await self.ctx.add_init_script(WATCH_JS)
        self.page = await self.ctx.new_page()
        t0 = self.t0 = time.time()
        await self.page.goto(url, wait_until="commit", timeout=timeout * 1000)
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            when = self.shown_at(tau, t0, await self.seen())
            if when is not None:
                self.opened_s = when - t0
                try:
                    self.opened_nav_s = when - await self.page.evaluate("performance.timeOrigin / 1000")
                except Exception:  # noqa: BLE001 - reported from goto only
                    pass
                return
            await asyncio.sleep(0.1)

    async def seen(self) -> list:
        try:
            return await self.page.evaluate("window.__lmvizSeen || []")
        except Exception:  # noqa: BLE001 - a page between navigations: try again later
            return []

    async def charts_s(self) -> float | None:
        """Seconds from goto to the first chart drawn on /generation (None: never seen)."""
        for when, path, _, charts in await self.seen():
            if charts and path.startswith("/generation") and self.t0 is not None and when >= self.t0:
                return when - self.t0
        return None

    @staticmethod
    def shown_at(value: float, since: float, seen: list) -> float | None:
        for when, path, v, _ in seen:
            try:
                if when >= since and path.startswith("/generation") and v is not None \
                        and abs(float(v) - value) < 1e-9:
                    return when
            except ValueError:
                continue
        return None

    async def close(self) -> None:
        if self.ctx is not None:
            await self.ctx.close()


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


async def start_class(lecturer: Session) -> tuple[str, str]:
    """Press "Start a class" on the lecturer's page: (class code, student link)."""
    start = lecturer.button("class_start")
    if start is None:
        raise SystemExit("no 'Start a class' button on the lecturer's page")
    await lecturer.click(start)
    await wait_for(lambda: any("follow=" in x for x in lecturer.texts), 30)
    link = next((x for x in reversed(lecturer.texts) if "follow=" in x), "")
    m = re.search(r"follow=([A-Z0-9]+)", link)
    if not m:
        raise SystemExit("no student link on the lecturer's page")
    return m.group(1), link


async def reveal_tau(lecturer: Session) -> None:
    """The τ section waits behind its predict-then-reveal question: the lecturer shows the answer
    (on every screen of the class), so the lecturer's page and the followers' draw the τ slider."""
    show = lecturer.button(f"class_show:{TAU_QUESTION}")
    if show is not None:
        await lecturer.click(show)
    if not await wait_for(lambda: tau_slider(lecturer) is not None, 60):
        raise SystemExit("the lecturer's page shows no τ slider after the reveal")


async def open_class(lecturer: Session) -> tuple[str, str]:
    """The lecturer's page, once drawn, starts a class and shows the τ section: (code, link)."""
    await lecturer.wait_idle(timeout=180)
    code, link = await start_class(lecturer)
    await reveal_tau(lecturer)
    return code, link


async def join(port: int, code: str, i: int, n: int, errors: list) -> Session:
    """Follower ``i`` of ``n`` opens the student link (half in English, half in Chinese). The joins
    spread over one second, so the followers' timers tick at different moments, as real tabs
    opened one by one do (all in step would be the worst case)."""
    await asyncio.sleep(i / n)
    s = Session(port, "", f"follow={code}&lang={'zh' if i % 2 else 'en'}")
    try:
        await s.__aenter__()
    except Exception as e:  # noqa: BLE001 - counted, not raised
        errors.append(f"follower open failed ({type(e).__name__})")
    return s


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
    browsers: list[BrowserFollower] = []
    b_lags: list[float] = []
    charted: list[float] = []    # seconds from each browser's goto to its first chart
    b_misses = 0
    pw = chromium = None
    lecturer = None
    cpu_used = own_used = 0.0
    wall = 1.0
    hard_deadline = time.perf_counter() + args.time_limit
    await asyncio.sleep(args.healthy_for)   # the lecture case: a server started before the class
    try:
        lecturer = Session(srv.port, "generation", "lang=en&present=1")
        await lecturer.__aenter__()
        code, link = await open_class(lecturer)
        print(f"class {code}; lecturer link {link}")
        rss0, t_join = rss_mb(pid), time.perf_counter()

        followers = list(await asyncio.gather(*(join(srv.port, code, i, args.followers, errors)
                                                for i in range(args.followers))))
        ok = await wait_for(lambda: all(tau_slider(s) is not None for s in followers), 120, 0.2)
        on_page = sum(tau_slider(s) is not None for s in followers)
        print(f"{on_page}/{len(followers)} followers on /generation after "
              f"{time.perf_counter() - t_join:.1f} s" + ("" if ok else " (time-out)"))
        if args.browsers:
            from playwright.async_api import async_playwright

            from tests.browser_util import CHROMIUM, LAUNCH_ARGS

            w0 = tau_slider(lecturer)
            tau0 = w0.value[0] if w0 is not None and w0.value else 1.0
            pw = await async_playwright().start()
            chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            browsers = [BrowserFollower(chromium, i) for i in range(args.browsers)]
            for b in browsers:     # one after another, as students open the link
                await b.open(srv.url("", follow=code, lang="zh" if b.i % 2 else "en"), tau0, 60)
            opened = [b.opened_s for b in browsers if b.opened_s is not None]
            print(f"{len(opened)}/{len(browsers)} browser followers showed the lecturer's τ={tau0:g}")
            print_latencies("browser open", opened, f"browsers {len(browsers)}")
            print_latencies("browser open from navigation start",
                            [b.opened_nav_s for b in browsers if b.opened_nav_s is not None],
                            f"browsers {len(browsers)}")
        await asyncio.sleep(2)
        rss_open = rss_mb(pid)
        cpu0, t0, own0 = cpu_s(pid), time.perf_counter(), time.process_time()
        w = tau_slider(lecturer)
        for k in range(args.moves):
            if time.perf_counter() > hard_deadline or w is None:
                break
            value = VALUES[k % len(VALUES)]
            sent, sent_wall = time.perf_counter(), time.time()
            try:
                took = await lecturer.move_slider(w, value, timeout=60)
            except asyncio.TimeoutError:
                took = float("inf")     # the lecturer's own page did not finish within 60 s
                errors.append("the lecturer's rerun took over 60 s")
            await wait_for(lambda: all(shown_at(s, value, sent) for s in followers), args.gap + 5)
            got = [shown_at(s, value, sent) for s in followers]
            move_lags = [g - sent for g in got if g is not None]
            misses += sum(g is None for g in got)
            lags += move_lags
            b_move: list[float] = []
            if browsers:
                deadline = time.perf_counter() + args.gap + 5
                seen = []
                while time.perf_counter() < deadline:
                    seen = [b.shown_at(value, sent_wall, await b.seen()) for b in browsers]
                    if all(x is not None for x in seen):
                        break
                    await asyncio.sleep(0.1)
                b_move = [x - sent_wall for x in seen if x is not None]
                b_misses += sum(x is None for x in seen)
                b_lags += b_move
            per_move.append(f"  move {k + 1}: τ={value:g}: {len(move_lags)}/{len(got)} followers, "
                            f"p50 {pct(move_lags, 0.5):.2f} s, max {max(move_lags, default=float('nan')):.2f} s"
                            + (f"; browsers {len(b_move)}/{len(browsers)}, max "
                               f"{max(b_move, default=float('nan')):.2f} s" if browsers else "")
                            + f" (the lecturer's own rerun {took:.2f} s)")
            rest = args.gap - (time.perf_counter() - sent)
            if rest > 0:
                await asyncio.sleep(rest)
        cpu_used, wall = cpu_s(pid) - cpu0, time.perf_counter() - t0
        own_used = time.process_time() - own0
        for s in [lecturer, *followers]:
            errors.extend(f"exception box: {e}" for e in s.errors)
        for b in browsers:
            for e in await b.page.locator("[data-testid=stException]").all_inner_texts():
                errors.append(f"browser exception box: {e[:80]}")
        charted = [c for b in browsers if (c := await b.charts_s()) is not None]
    finally:
        for b in browsers:
            await b.close()
        if chromium is not None:
            await chromium.close()
        if pw is not None:
            await pw.stop()
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
    print(f"this client's CPU over the moves: {own_used:.1f} s ({100 * own_used / wall:.0f} % of one core; "
          f"near 100 % the websocket followers are limited by this script, not by the server)")
    print(f"server RSS: {rss0:.0f} MB with the lecturer alone, {rss_open:.0f} MB with {len(followers)} "
          f"followers ({(rss_open - rss0) / n:.1f} MB per follower)")
    if browsers:
        print_latencies("browser open to its first chart", charted, f"browsers {len(browsers)}")
        print(f"browser lags measured: {len(b_lags)}; misses: {b_misses}")
        print_latencies("browser follow lag", b_lags, f"browsers {len(browsers)}, "
                        f"websocket followers {len(followers)}")
    print_latencies("follow lag", lags, f"followers {len(followers)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--followers", type=int, default=30, help="websocket followers")
    ap.add_argument("--browsers", type=int, default=0, help="headless Chromium followers")
    ap.add_argument("--moves", type=int, default=6)
    ap.add_argument("--gap", type=float, default=3.0, help="seconds between the lecturer's moves")
    ap.add_argument("--healthy-for", type=float, default=60.0,
                    help="seconds the server has been up before the lecturer opens (its warm-up done)")
    ap.add_argument("--time-limit", type=float, default=240, help="stop moving after this (s)")
    args = ap.parse_args()
    if not (0 <= args.followers <= 300 and 0 <= args.browsers <= 10 and args.followers + args.browsers > 0
            and 0 < args.moves <= 40 and 0.5 <= args.gap <= 30):
        ap.error("--followers 0..300, --browsers 0..10 (one of them > 0), --moves 1..40, --gap 0.5..30")
    asyncio.run(asyncio.wait_for(run(args), args.time_limit + 300))


if __name__ == "__main__":
    main()
