"""A room's first visit: Streamlit's frontend files as Streamlit sends them, as serve.py does, as nginx does.

    python bench/room_assets.py [--students 30] [--rounds 2] [--chapter generation]

A student's first visit of a chapter fetches Streamlit's frontend files (``/static/``: about 9 MB of
JavaScript for a chapter with a chart) before the page can draw. Streamlit sends them uncompressed
from its event loop, the loop that also carries the room's websockets; ``serve.py`` sends a gzip
copy kept in memory (``lmviz/server/frontend_gzip.py``); deploy/'s nginx sends its own gzip copy
from disk (``deploy/site_conf.py frontend``) and the replica sees none of it.

Three servers side by side: ``streamlit run app.py`` (Streamlit's own serving), ``streamlit run
serve.py``, and nginx (deploy/nginx-lmviz.conf.template) in front of that serve.py. The list of
files is what headless Chromium fetched when it opened the chapter. Then, for each in turn
(alternating, ``--rounds`` times): N students start within one second, each fetching the whole
list over six keep-alive connections (as a browser does) with ``Accept-Encoding: gzip``, while a
lecturer's session on that server (Streamlit's own protocol, ``ui/headless.py``) moves a slider
every 0.5 s.

Prints per wave: each student's time to the last byte (p50/p95/max), bytes on the wire per
student, the CPU seconds of the server (and nginx's), and the lecturer's slider reruns during the wave
(p50/max: what the room's first visit costs the lecture).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import cpu_s, cpu_ticks, pct  # noqa: E402
from ui.headless import Session  # noqa: E402

CONNECTIONS = 6     # a browser's connections to one host over HTTP/1.1


async def _fetch(reader, writer, host: str, path: str) -> int:
    """One GET on a keep-alive connection; returns the bytes of the response's body on the wire."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept-Encoding: gzip\r\n"
                 "Connection: keep-alive\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
    if status != 200:
        raise RuntimeError(f"{path}: {status}")
    if "content-length" in headers:
        n = int(headers["content-length"])
        await reader.readexactly(n)
        return n
    n = 0                                           # chunked
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        await reader.readexactly(size + 2)
        n += size
        if size == 0:
            return n


async def student(port: int, paths: list[str], start_in: float) -> tuple[float, int]:
    """Fetch every path over CONNECTIONS connections; (seconds to the last byte, body bytes)."""
    await asyncio.sleep(start_in)
    todo = list(paths)
    total = 0
    t0 = time.perf_counter()

    async def conn():
        nonlocal total
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**20)
        try:
            while todo:
                n = await _fetch(reader, writer, f"127.0.0.1:{port}", todo.pop(0))
                total += n      # after the await: the six connections add to it in turn
        finally:
            writer.close()

    await asyncio.gather(*(conn() for _ in range(CONNECTIONS)))
    return time.perf_counter() - t0, total


def nginx_cpu(run: Path) -> float:
    """CPU seconds of nginx's master and its workers."""
    master = int((run / "nginx.pid").read_text())
    return sum(cpu_ticks(master).values()) / os.sysconf("SC_CLK_TCK")


async def frontend_paths(port: int, chapter: str) -> list[str]:
    """The /static/ paths headless Chromium fetches when it opens the chapter (first visit)."""
    from playwright.async_api import async_playwright

    from tests.browser_util import CHROMIUM, LAUNCH_ARGS

    paths: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        page = await browser.new_page()
        page.on("request", lambda r: paths.append(r.url.split(str(port), 1)[1].split("?")[0])
                if "/static/" in r.url else None)
        await page.goto(f"http://127.0.0.1:{port}/{chapter}?lang=en")
        await page.wait_for_selector("[data-testid=stMain] h1", timeout=120_000)
        await page.wait_for_load_state("networkidle")
        await asyncio.sleep(3)          # the chunks its elements ask for once drawn
        await browser.close()
    return list(dict.fromkeys(paths))


async def lecturer_moves(s: Session, stop: asyncio.Event, lat: list[float]) -> None:
    w = s.sliders()[0]
    k = 0
    while not stop.is_set():
        k += 1
        value = w.lo + (w.hi - w.lo) * (0.25 if k % 2 else 0.75)
        try:
            lat.append(await s.move_slider(w, value, timeout=60))
        except asyncio.TimeoutError:
            lat.append(float("inf"))
        await asyncio.sleep(0.5)


async def wave(port: int, pid_cpu, paths: list[str], lecturer: Session, n: int,
               rng: random.Random) -> str:
    """N students within one second, the lecturer moving a slider meanwhile: the wave's line."""
    lat: list[float] = []
    stop = asyncio.Event()
    mover = asyncio.create_task(lecturer_moves(lecturer, stop, lat))
    await asyncio.sleep(1.0)
    cpu0 = [f() for f in pid_cpu]
    got = await asyncio.gather(*(student(port, paths, rng.uniform(0, 1)) for _ in range(n)))
    cpu = [f() - c for f, c in zip(pid_cpu, cpu0)]
    stop.set()
    await mover
    times = [t for t, _ in got]
    mb = sum(b for _, b in got) / len(got) / 2**20
    return (f"{n} students, to the last byte p50 {pct(times, 0.5):.2f} s, p95 {pct(times, 0.95):.2f} s, "
            f"max {max(times):.2f} s; {mb:.2f} MB each on the wire; CPU " + " + ".join(f"{c:.2f}" for c in cpu)
            + f" s; the lecturer's slider during the wave p50 {pct(lat, 0.5):.2f} s, "
            f"max {max(lat, default=float('nan')):.2f} s ({len(lat)} moves)")


async def lecturer_on(port: int) -> Session:
    s = Session(port, "attention", "lang=en", auto_rerun=False)
    await s.__aenter__()
    await s.wait_idle(timeout=180)
    await s.skip_questions()
    if not s.sliders():
        raise SystemExit("no slider on the lecturer's page")
    return s


async def run(args) -> None:
    from tests.browser_util import Server
    from tests.nginx_util import nginx_site, site_conf

    plain = Server(script="app.py")       # Streamlit's own serving: every file uncompressed
    served = Server()                     # serve.py: compressed from memory (frontend_gzip)
    work = Path(tempfile.mkdtemp(prefix="lmviz-room-assets-"))
    work.chmod(0o755)
    copy = site_conf().frontend(work / "frontend")
    rng = random.Random(0)
    lecturers: list[Session] = []
    try:
        # app.py's server starts its warm-up at its first visit: the lecturer's, before the wait
        lect_plain, lect_served = await lecturer_on(plain.port), await lecturer_on(served.port)
        lecturers = [lect_plain, lect_served]
        await asyncio.sleep(args.healthy_for)          # both warm-ups done, as in a lecture
        with nginx_site(work / "nginx", served.port, copy) as p_nginx:
            run_dir = work / "nginx"
            paths = await frontend_paths(served.port, args.chapter)
            print(f"{len(paths)} frontend files for /{args.chapter}")
            arms = [("streamlit run app.py (Streamlit's own, uncompressed)", plain.port,
                     [lambda: cpu_s(plain.proc.pid)], lect_plain),
                    ("serve.py (gzip from memory)", served.port, [lambda: cpu_s(served.proc.pid)], lect_served),
                    ("nginx's copy in front of serve.py", p_nginx,
                     [lambda: cpu_s(served.proc.pid), lambda: nginx_cpu(run_dir)], lect_served)]
            for r in range(args.rounds):
                for name, port, cpu, lect in arms:
                    print(f"round {r + 1}, {name}: " + await wave(port, cpu, paths, lect, args.students, rng))
                    await asyncio.sleep(2)
    finally:
        for s in lecturers:
            await s.__aexit__(None, None, None)
        plain.stop()
        served.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--chapter", default="attention")
    ap.add_argument("--healthy-for", type=float, default=60.0,
                    help="seconds the servers have been up before the room comes (its warm-up done)")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    os.environ.setdefault("STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL", "10")
    main()
