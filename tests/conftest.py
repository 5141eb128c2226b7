"""Shared test fixtures: repo root on sys.path, one torch thread, a hand-moved clock, and the browser server."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LMVIZ_THREADS", "1")
# tasks at the server's own priority: a nice-19 task waits for whatever else loads the machine
# (a test that waits for one then measures that load); test_tasks checks the nice 19 itself
os.environ.setdefault("LMVIZ_TASK_NICE", "0")
os.chdir(ROOT)  # AppTest.from_file("app.py") and relative asset paths


class Clock:
    """A hand-moved clock for the class-store tests: ``ClassStore(clock=Clock())``, then ``advance``."""

    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives the running app in headless Chromium")
    config.addinivalue_line("markers", "apptest: runs pages through streamlit.testing AppTest")
    config.addinivalue_line("markers", "cluster: deploy/local-cluster.sh (nginx, redis, replicas); "
                            "runs with LMVIZ_CLUSTER_TESTS=1")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A browser test that fails (an xfail's failure too) leaves what every open page showed
    (``fail-page-<n>.png`` and ``.txt`` beside the screenshots: a screenshot, its text, its
    renderer crashes, uncaught errors, console errors and page changes) and the same in the
    report: a failure seen only in the full suite on CI can be looked at afterwards. Pages the
    test closed in its ``finally`` were kept as they closed (_watch_pages). Each running server adds
    every thread's stack and its log's last lines (``Server.diagnosis``)."""
    from tests.browser_util import KEPT, keep_page

    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or "chromium" not in item.fixturenames:
        return
    if call.excinfo is not None:
        chromium = item.funcargs.get("chromium") or item.funcargs.get("browser")
        for ctx in (chromium.contexts if hasattr(chromium, "contexts") else []):
            for pg in ctx.pages:
                keep_page(pg)
        for _, url, what in KEPT:
            report.sections.append((f"page at failure: {url}", what))
        from tests.browser_util import LIVE_SERVERS

        for srv in list(LIVE_SERVERS):      # where each server's threads were at the failure
            report.sections.append((f"server {srv.port} at failure", srv.diagnosis()))
    KEPT.clear()


@pytest.fixture(autouse=True)
def _apptest_session_ends():
    """Every AppTest runs as the one session "test session id", so a session-scoped resource (a
    training slot and its job) outlived the test that made it and showed in the next test's page
    (the replay chapter then showed another test's run). After each test that session ends, as a
    closed tab's does: its session caches are released (a job is stopped or handed to its grace)."""
    yield
    try:                     # the core's tests also run where streamlit is absent (bench/gpu.py's device)
        from streamlit.runtime.caching.cache_resource_api import clear_session_cache
    except ImportError:
        return
    clear_session_cache("test session id")


@pytest.fixture(scope="session")
def server():
    """One ``streamlit run serve.py`` on a free port for all browser tests (skips without Chromium,
    fails instead under LMVIZ_REQUIRE_BROWSER=1)."""
    from tests.browser_util import SHOTS, Server, require_browser

    require_browser()
    srv = Server()
    yield srv
    srv.stop()
    print(f"\nscreenshots saved in {SHOTS}")


@pytest.fixture(scope="session")
def chromium():
    """Headless Debian Chromium driven by Playwright: one per test run (a second sync_playwright
    inside the first fails: "using Playwright Sync API inside the asyncio loop")."""
    from playwright.sync_api import sync_playwright

    from tests.browser_util import CHROMIUM, LAUNCH_ARGS, require_browser

    require_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        _watch_pages(b)
        yield b
        b.close()


def _watch_pages(b) -> None:
    """Every page of every context ``b`` makes keeps its last events (a renderer crash, an
    uncaught error, a console error, a navigation of its main frame) in ``page.lmviz_events``:
    the failure hook (pytest_runtest_makereport) writes them beside what the page showed."""
    import time

    new_context = b.new_context

    def watch(page) -> None:
        events: list[str] = []
        page.lmviz_events = events
        t0 = time.monotonic()

        def note(what: str) -> None:
            events.append(f"{time.monotonic() - t0:7.1f} s {what}"[:400])
            del events[:-40]

        page.on("crash", lambda: note("renderer crashed"))
        page.on("pageerror", lambda e: note(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and note(f"console error: {m.text}"))
        paths = [""]

        def navigated(frame) -> None:      # a new page, not a query string written back
            path = frame.url.split("?")[0]
            if frame == page.main_frame and path != paths[0]:
                paths[0] = path
                note(f"navigated: {frame.url}")

        page.on("framenavigated", navigated)
        page.on("close", lambda: note("closed"))

    def tracked(*args, **kwargs):
        ctx = new_context(*args, **kwargs)
        ctx.on("page", watch)
        close = ctx.close

        def closing(*a, **kw):
            from tests.browser_util import keep_page

            # a test's `finally` closes its contexts before the failure hook runs: while an
            # exception is on its way out, what each page shows is kept first
            if sys.exc_info()[0] is not None:
                for pg in ctx.pages:
                    keep_page(pg)
            return close(*a, **kw)

        ctx.close = closing
        return ctx

    b.new_context = tracked


@pytest.fixture(scope="session")
def browser(server, chromium):
    """The shared Chromium, with the shared server started."""
    return chromium


def run_async(coro):
    """``asyncio.run(coro)`` on a thread of its own: the run's one Playwright (``chromium``) keeps
    an event loop in the main thread once a browser test has run, and asyncio.run refuses to
    start inside it."""
    import asyncio
    import threading

    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = e

    t = threading.Thread(target=target, name="run_async")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")
