"""Start the app with ``streamlit run`` on a free port and drive it with Debian Chromium."""
from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(os.environ.get("LMVIZ_SCREENSHOTS", ROOT / "screenshots"))
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"]


def require_browser():
    """Skip (or fail under LMVIZ_REQUIRE_BROWSER=1) when Chromium or Playwright is missing."""
    required = os.environ.get("LMVIZ_REQUIRE_BROWSER") == "1"
    problem = None
    if not Path(CHROMIUM).exists():
        problem = f"Chromium not found at {CHROMIUM} (apt-get install chromium fonts-noto-cjk)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "playwright is not installed (pip install -r requirements-dev.txt)"
    if problem:
        if required:
            pytest.fail(f"browser tests are required here but: {problem}")
        pytest.skip(problem)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LIVE_SERVERS: list = []        # the Servers running now (a failed browser test's report asks each)


class Server:
    """``streamlit run serve.py`` (README's run command: the ASGI entry that warms the model at
    server start and paints a chapter's title first) on a free port; ``url(path, **query)`` builds
    page URLs. ``script="app.py"``: the plain ``streamlit run app.py``, which serves the same app."""

    def __init__(self, script: str = "serve.py", log: Path | None = None) -> None:
        self.port = free_port()
        env = dict(os.environ, LMVIZ_THREADS=os.environ.get("LMVIZ_THREADS", "1"))
        if log is None:                     # pytest's own cache folder (git ignores it), made if new
            (ROOT / ".pytest_cache").mkdir(exist_ok=True)
            log = ROOT / ".pytest_cache" / f"streamlit-{self.port}.log"
        self.log = open(log, "w") if log is not None else subprocess.DEVNULL
        self.log_path = log
        # kill -USR1 writes every thread's stack here (lmviz/server/stacks.py): a failed browser
        # test's report shows where each session's run was waiting (diagnosis)
        self.stacks = Path(log).with_suffix(".stacks") if log is not None else None
        if self.stacks is not None:
            env["LMVIZ_STACKS_FILE"] = str(self.stacks)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", script, "--server.headless=true",
             f"--server.port={self.port}", "--server.address=127.0.0.1",
             "--browser.gatherUsageStats=false"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_healthy()
        LIVE_SERVERS.append(self)

    def wait_healthy(self, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("streamlit exited early")
            try:
                with urllib.request.urlopen(self.url("_stcore/health"), timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError("streamlit did not report healthy")

    def url(self, path: str = "", **query) -> str:
        q = "&".join(f"{k}={v}" for k, v in query.items())
        return f"http://127.0.0.1:{self.port}/{path}" + (f"?{q}" if q else "")

    def diagnosis(self, log_lines: int = 40) -> str:
        """Every thread's stack now (serve.py only) and the log's last lines, for a failure report."""
        import signal

        parts = []
        if self.stacks is not None and self.proc.poll() is None:
            before = self.stacks.stat().st_size if self.stacks.exists() else 0
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
            if self.stacks.exists():
                with open(self.stacks, errors="replace") as f:
                    f.seek(before)
                    parts.append(f.read()[-12_000:])
        if self.log_path is not None and Path(self.log_path).exists():
            tail = Path(self.log_path).read_text(errors="replace").splitlines()[-log_lines:]
            parts.append("log:\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop(self) -> None:
        if self in LIVE_SERVERS:
            LIVE_SERVERS.remove(self)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module", name="server")
def own_server():
    """A server of a test module's own, for class activities that count what one address sends
    and runs (live classes, answers, sentences per address): on the suite's shared server every
    earlier class test, all from 127.0.0.1, counts too. A module takes it, and the browser that
    goes with it, by importing both: ``from tests.browser_util import own_browser, own_server``."""
    require_browser()
    srv = Server()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(name="browser")
def own_browser(server, chromium):
    """The session's Chromium, for a module on its own server (:func:`own_server`)."""
    return chromium


def wait_idle(page, timeout_ms: int = 90_000) -> None:
    """Wait until the script has finished running (twice, to ride over a quick rerun) and no
    model is loading (ui.session.loading_page: its poll's timer runs the page again)."""
    for _ in range(2):
        page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]",
                               timeout=timeout_ms, state="attached")
        page.wait_for_selector(".st-key-lmviz-model-loading", timeout=timeout_ms, state="detached")
        page.wait_for_timeout(400)


def wait_charts(page, timeout_ms: int = 60_000, every: bool = False, at_least: int = 0) -> int:
    """Wait for the Plotly charts the page declares to render (the first one; ``every``: all of
    them); returns how many there are. ``at_least``: first wait until the page declares that many
    (a rerun after a button press swaps the elements in one by one, and a loaded machine is slow)."""
    if at_least:
        page.wait_for_function(
            f"() => document.querySelectorAll('[data-testid=stPlotlyChart]').length >= {int(at_least)}",
            timeout=timeout_ms, polling=100)
    n = page.locator("[data-testid=stPlotlyChart]").count()
    if n and every:
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')]"
            ".every(c => c.querySelector('.main-svg'))", timeout=timeout_ms, polling=50)
    elif n:
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=timeout_ms)
    return n


SLIDER = "[data-testid=stSlider] input[type=range]"  # Streamlit 1.67: react-aria around an input


def move_first_slider(page) -> tuple[str, str] | None:
    """Press ArrowRight on the page's first slider; returns (before, after) values, or None when
    the page has no slider."""
    sliders = page.locator(SLIDER)
    if not sliders.count():
        return None
    slider = sliders.first
    slider.scroll_into_view_if_needed()
    before = slider.input_value()
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(600)
    wait_idle(page)
    after = page.locator(SLIDER).first.input_value()
    assert after != before or before == page.locator(SLIDER).first.get_attribute("max")
    return before, after


def exceptions(page) -> list[str]:
    return [e.inner_text() for e in page.locator("[data-testid=stException]").all()]


def shot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    # Streamlit scrolls inside its main container, so a "full page" shot would only show the
    # viewport: grow the viewport to the content's height (capped) for the shot, then restore it.
    size = page.viewport_size
    height = page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                           " return m ? m.scrollHeight : document.body.scrollHeight; }")
    if size and height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(height), 8000)})
        page.wait_for_timeout(700)
    page.screenshot(path=str(path), full_page=True)
    if size:
        page.set_viewport_size(size)
    return path


def has_chromium() -> bool:
    return Path(CHROMIUM).exists() and shutil.which(CHROMIUM) is not None


def skip_questions(page, lang: str = "en") -> int:
    """Press every predict-then-reveal question's "skip" button on the page (a student who wants
    the whole chapter at once), waiting for each rerun; returns how many were pressed."""
    from ui.i18n import translate

    import json

    label = translate("class.skip", lang)
    count = ("() => [...document.querySelectorAll('button')].filter(b => b.innerText.trim() === "
             f"{json.dumps(label)}).length")
    n = 0
    for _ in range(12):
        buttons = page.get_by_role("button", name=label)
        before = buttons.count()
        if not before:
            break
        buttons.first.click()
        # a loaded server reruns late: wait until that question is gone rather than a fixed time
        # (a question revealed by the rerun may keep the count: then the loop looks again)
        try:
            page.wait_for_function(f"() => ({count})() < {before}", timeout=20_000, polling=100)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: look again below
            pass
        wait_idle(page)
        n += 1
    return n


def axe_source() -> str:
    """axe-core's script (``tests/tools/fetch_axe.sh``: pinned, from the npm registry, test-only;
    the app never loads it). Skips without npm or network, fails under LMVIZ_REQUIRE_BROWSER=1."""
    try:
        out = subprocess.run(["bash", str(ROOT / "tests" / "tools" / "fetch_axe.sh")], cwd=ROOT,
                             capture_output=True, text=True, timeout=180, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        if os.environ.get("LMVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(f"axe-core could not be fetched: {e}")
        pytest.skip(f"axe-core could not be fetched (npm pack axe-core): {e}")
    return (ROOT / out.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")


def axe_violations(page, axe_js: str) -> list[dict]:
    """The serious and critical WCAG 2 A/AA (2.0 and 2.1) violations axe-core finds on the page."""
    page.evaluate(axe_js)
    return page.evaluate("""async () => {
      const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}});
      return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => ({id: v.id, impact: v.impact, n: v.nodes.length,
                    nodes: v.nodes.slice(0, 4).map(n => [n.target.join(' '), (n.failureSummary || '').slice(0, 160)])}));
    }""")


KEPT: list[tuple[object, str, str]] = []   # (page, its url, what it showed and did), for the failure hook
_KEPT_N = itertools.count(1)               # file numbers over the whole run: a second failing test keeps its own


def keep_page(pg) -> None:
    """What a page shows now (a screenshot, its text) and its last events, for the failure hook;
    once per failure (end_class keeps the pages before the class ends, their context's close
    would keep them again, ended)."""
    if any(p is pg for p, _, _ in KEPT):
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    n = next(_KEPT_N)
    try:
        pg.screenshot(path=str(SHOTS / f"fail-page-{n}.png"), timeout=10_000)
        text = pg.locator("body").inner_text(timeout=5_000)
    except Exception as e:  # noqa: BLE001 - a page that cannot be read says why
        text = f"(not read: {e})"
    events = "\n".join(getattr(pg, "lmviz_events", []))
    KEPT.append((pg, pg.url, f"events:\n{events}\n\nlast text:\n{text[-700:]}"))
    (SHOTS / f"fail-page-{n}.txt").write_text(f"{pg.url}\n\nevents:\n{events}\n\n{text}")


def end_class(page, lang: str = "en") -> None:
    """The lecturer ends its class (a class whose lecturer's tab closes stays live three minutes,
    and one address may run a bounded number of live classes: a suite's later class tests would
    be refused). Best effort: a test that failed may have left the page in any state."""
    from ui.i18n import translate

    if sys.exc_info()[0] is not None:       # a failing test: every page as it is, before the end
        for ctx in page.context.browser.contexts:
            for pg in ctx.pages:
                keep_page(pg)
    try:
        button = page.get_by_role("button", name=translate("class.end", lang))
        if button.count():
            button.first.click(timeout=5_000)
            wait_idle(page, timeout_ms=20_000)
    except Exception:  # noqa: BLE001 - cleanup: the test's own assertion says what went wrong
        pass
