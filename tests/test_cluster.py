"""The local cluster of deploy/ (``deploy/local-cluster.sh``): nginx in front of two Streamlit
replicas for the room and one for the lecturers, class state in Redis, everything on 127.0.0.1 and
free ports.

- through nginx, one browser stays on one replica across reruns, reloads and an upload (the
  replica is read from nginx's access log, which names the upstream of every request), while
  new browsers are spread over both replicas;
- Streamlit's websocket origin check still holds behind the proxy (Host passed through);
- a lecturer who turns presenter mode on in a room replica's page and presses "Start a class" has
  the class on the lecture replica, and a student's link is followed from a room replica;
- a class a lecturer drives from replica A's process is followed and answered from replica B's
  process, through the cluster's Redis;
- a training started in a page of replica A runs on the cluster's Ray head (the page names the
  Ray node as its device) and its step count grows in the page;
- ``down`` stops exactly what ``up`` started.

Out of the default run: runs with LMVIZ_CLUSTER_TESTS=1 (``.ci/run`` sets it). Skips with a
reason when nginx, redis-server, the redis package, ray (for the Ray test) or Chromium is missing,
except with LMVIZ_CLUSTER_TESTS=1, where it fails instead.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests import redis_util
from tests.conftest import ROOT, run_async

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(os.environ.get("LMVIZ_CLUSTER_TESTS") != "1",
                       reason="cluster tests run with LMVIZ_CLUSTER_TESTS=1 (.ci/run sets it)"),
]

SCRIPT = ROOT / "deploy" / "local-cluster.sh"
LOG_RE = re.compile(r'"(?P<method>\S+) (?P<path>\S+) [^"]*" (?P<status>\d+) \d+ '
                    r'upstream=(?P<upstream>\S+) route=(?P<route>\S+)')


def _require(ok: bool, problem: str) -> None:
    if not ok:
        if redis_util.cluster_required():
            pytest.fail(f"cluster tests are required in CI but: {problem}")
        pytest.skip(problem)


class Cluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lmviz-cluster-test-"))
        self.env = dict(os.environ, LMVIZ_CLUSTER_DIR=str(self.dir), LMVIZ_PYTHON=sys.executable,
                        LMVIZ_REPLICAS="2", LMVIZ_THREADS="1")

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SCRIPT), *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def up(self) -> None:
        r = self.run("up")
        assert r.returncode == 0, r.stdout + r.stderr
        self.state = dict(line.split("=", 1) for line in (self.dir / "state").read_text().split())
        self.port = int(self.state["NGINX_PORT"])
        self.replicas = {(self.dir / f"replica-{n}.addr").read_text().strip(): n for n in ("a", "b", "lecture")}

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def log(self) -> list[dict]:
        """nginx's access log, one dict per request, with the replica name that served it."""
        out = []
        for line in (self.dir / "nginx-access.log").read_text().splitlines():
            m = LOG_RE.search(line)
            if m:
                d = m.groupdict()
                d["replica"] = self.replicas.get(d["upstream"], d["upstream"])
                out.append(d)
        return out

    def pids(self) -> list[int]:
        return [int(p.read_text().strip()) for p in self.dir.glob("*.pid")]


@pytest.fixture(scope="module")
def cluster():
    _require(shutil.which("nginx") is not None or Path("/usr/sbin/nginx").exists(),
             "nginx not found (apt-get install nginx)")
    _require(shutil.which("redis-server") is not None, "redis-server not found (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
        have_redis = True
    except ImportError:
        have_redis = False
    _require(have_redis, "the redis package is missing (pip install -r requirements-cluster.txt)")
    c = Cluster()
    c.up()
    yield c
    c.run("down")
    shutil.rmtree(c.dir, ignore_errors=True)


def _get(url: str, cookie: str | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()
        headers = {k: v for k, v in r.headers.items() if k.lower() != "set-cookie"}
        # lmviz's cookies only (Streamlit also sets _streamlit_xsrf); a page sets two: nginx's
        # lmviz_route (first here) and the app's signed browser id lmviz_id
        cookies = [c for c in r.headers.get_all("Set-Cookie") or [] if c.startswith("lmviz_")]
        if cookies:
            headers["Set-Cookie"] = "\n".join(sorted(cookies, key=lambda c: not c.startswith("lmviz_route=")))
        return r.status, headers


def test_status_names_every_part(cluster):
    r = cluster.run("status")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"redis\s+up", r.stdout) and re.search(r"nginx\s+up", r.stdout)
    assert len(re.findall(r"replica\s+up", r.stdout)) == 3 and re.search(r"replica\s+up\s+lecture", r.stdout)
    again = cluster.run("up")
    assert again.returncode != 0 and "already up" in again.stderr


def test_a_routing_cookie_pins_requests_and_new_visitors_spread(cluster):
    before = len(cluster.log())
    routes = []
    for _ in range(16):                               # 16 new visitors (no cookie yet)
        status, headers = _get(cluster.url())
        assert status == 200
        m = re.match(r"lmviz_route=([0-9a-f]{32});", headers.get("Set-Cookie", ""))
        assert m and "HttpOnly" in headers["Set-Cookie"], headers
        routes.append(m.group(1))
    for r in routes[:4]:                              # each comes back with its cookie, 5 times
        for _ in range(5):
            status, headers = _get(cluster.url("_stcore/health"), f"lmviz_route={r}")
            assert status == 200 and "Set-Cookie" not in headers    # the key is kept, not renewed
    for r in routes[:4]:                              # ... and as a lecturer's browser
        status, _ = _get(cluster.url("_stcore/health"), f"lmviz_route={r}; lmviz_lecture=1")
        assert status == 200
    seen = cluster.log()[before:]
    by_route: dict[str, set] = {}
    for e in seen:
        by_route.setdefault(e["route"], set()).add(e["replica"])
    assert all(len(by_route[r]) == 1 for r in routes[4:]), by_route      # sticky
    assert {next(iter(by_route[r])) for r in routes[4:]} == {"a", "b"}   # both room replicas used
    assert all(by_route[r] - {"a", "b"} == {"lecture"} for r in routes[:4]), by_route   # the lecturer's own


def _upgrade(port: int, host: str, origin: str) -> str:
    """The status line nginx returns for a websocket upgrade of /_stcore/stream."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Protocol: streamlit\r\nOrigin: {origin}\r\n\r\n").encode())
        return s.recv(4096).decode("latin-1").split("\r\n")[0]


def test_websocket_upgrade_and_origin_check_behind_the_proxy(cluster):
    # a public host name as a department would serve it: same origin -> upgraded
    assert " 101 " in _upgrade(cluster.port, "lmviz.example.edu", "http://lmviz.example.edu")
    assert " 101 " in _upgrade(cluster.port, "lmviz.example.edu:8443", "https://lmviz.example.edu:8443")
    # another site's page opening the websocket -> refused by Streamlit, as without the proxy
    assert " 403 " in _upgrade(cluster.port, "lmviz.example.edu", "http://evil.example")


def test_a_browser_stays_on_one_replica_across_reruns_reloads_and_an_upload(cluster, request):
    from tests.browser_util import SLIDER, exceptions, move_first_slider, require_browser, wait_idle

    if redis_util.cluster_required():
        os.environ.setdefault("LMVIZ_REQUIRE_BROWSER", "1")
    require_browser()
    b = request.getfixturevalue("chromium")       # the run's one Playwright (conftest.py)
    before = len(cluster.log())
    ctx = b.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(cluster.url("tokenization?lang=en&corpus=upload"), timeout=120_000)
        wait_idle(page, 120_000)
        route = next(c["value"] for c in ctx.cookies() if c["name"] == "lmviz_route")
        # an upload: POST with Streamlit's XSRF cookie and header, through the proxy
        text = "low lower lowest newer newest " * 20
        page.locator("input[type=file]").first.set_input_files(
            {"name": "mine.txt", "mimeType": "text/plain", "buffer": text.encode()})
        page.get_by_text(f"Show the corpus ({len(text)} characters)").wait_for(timeout=60_000)
        wait_idle(page)
        for _ in range(3):                                    # reruns on one websocket
            # the corpus's sections follow its line in the same run: wait for the slider, do not race
            # it (CI once counted no slider right after "Show the corpus" appeared; 3 of 3 passed here)
            page.wait_for_selector(SLIDER, state="visible", timeout=60_000)
            assert move_first_slider(page) is not None
        for _ in range(2):                                    # new websockets
            page.reload(timeout=120_000)
            wait_idle(page, 120_000)
        assert exceptions(page) == []
    finally:
        ctx.close()
    # nginx logs a websocket when it closes: give the last one a moment after the context closed
    deadline = time.time() + 15
    while True:
        mine = [e for e in cluster.log()[before:] if e["route"] == route]
        if sum(e["path"].startswith("/_stcore/stream") for e in mine) >= 3 or time.time() > deadline:
            break
        time.sleep(0.3)
    streams = [e for e in mine if e["path"].startswith("/_stcore/stream")]
    uploads = [e for e in mine if e["path"].startswith("/_stcore/upload_file")]
    assert len(streams) >= 3 and uploads and all(e["status"] in ("101", "200", "204") for e in uploads)
    # Streamlit's frontend files come from nginx's own copy (deploy/site_conf.py frontend): no replica
    assets = [e for e in mine if e["path"].startswith("/static/")]
    assert assets and all(e["replica"] == "-" and e["status"] in ("200", "304") for e in assets), assets
    rest = [e for e in mine if not e["path"].startswith("/static/")]
    assert len({e["replica"] for e in rest}) == 1, rest       # page, websockets, upload, media


def test_a_lecturer_starts_the_class_on_the_lecture_replica_and_a_student_follows_from_the_room(cluster, request):
    from tests.browser_util import exceptions, require_browser, wait_idle
    from ui.i18n import translate

    if redis_util.cluster_required():
        os.environ.setdefault("LMVIZ_REQUIRE_BROWSER", "1")
    require_browser()
    b = request.getfixturevalue("chromium")
    before = len(cluster.log())
    lect = b.new_context(viewport={"width": 1280, "height": 900})
    student = b.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = lect.new_page()
        page.goto(cluster.url("generation?lang=zh"), timeout=120_000)     # a room replica's page
        wait_idle(page, 120_000)
        page.get_by_text(translate("common.present", "zh"), exact=True).click()
        wait_idle(page, 60_000)
        page.get_by_role("button", name=translate("class.start", "zh")).click()
        code_box = page.locator(".lmviz-class-code")                    # after the tab's reload
        code_box.wait_for(timeout=120_000)
        code = code_box.inner_text().strip()
        assert "present=1" in page.url and "start=" not in page.url, page.url
        assert {c["name"]: c["value"] for c in lect.cookies()}.get("lmviz_lecture") == "1"
        route = next(c["value"] for c in lect.cookies() if c["name"] == "lmviz_route")
        phone = student.new_page()
        phone.goto(cluster.url(f"?follow={code}&lang=en"), timeout=120_000)
        phone.get_by_text(translate("class.following", "en", cls=code).replace("**", "")).first.wait_for(timeout=120_000)
        assert "/generation" in phone.url
        assert exceptions(page) == [] and exceptions(phone) == []
    finally:
        lect.close()
        student.close()
    deadline = time.time() + 15                     # nginx logs a websocket when it closes
    while True:
        streams = [e for e in cluster.log()[before:] if e["path"].startswith("/_stcore/stream")]
        if len(streams) >= 3 or time.time() > deadline:
            break
        time.sleep(0.3)
    mine = [e["replica"] for e in streams if e["route"] == route]
    theirs = [e["replica"] for e in streams if e["route"] != route]
    assert mine[-1:] == ["lecture"] and set(mine[:-1]) <= {"a", "b"} and len(mine) == 2, streams
    assert theirs and set(theirs) <= {"a", "b"}, streams


def test_a_class_on_replica_a_is_followed_from_replica_b(cluster):
    """Two OS processes, each configured as one replica (LMVIZ_REPLICA, LMVIZ_REDIS_URL), share a
    class through the cluster's Redis with store_from_env."""
    def replica(name: str, code: str) -> dict:
        env = dict(os.environ, LMVIZ_REPLICA=name, LMVIZ_REDIS_URL=cluster.state["REDIS_URL"])
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=60, input="")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    lecturer = replica("a", """
        import json
        from lmviz.server.classroom_backend import store_from_env
        s = store_from_env()
        c = s.create_class()
        s.publish(c.code, c.secret, "generation", "temperature", {"tau": "0.5"})
        s.open_question(c.code, c.secret, "gen_tau_half", ["rises", "falls", "same"])
        print(json.dumps({"code": c.code, "secret": c.secret, "backend": type(s._db).__name__}))
    """)
    assert lecturer["backend"] == "RedisBackend"
    student = replica("b", f"""
        import json
        from lmviz.server.classroom_backend import store_from_env
        s = store_from_env()
        f = s.follow({lecturer["code"]!r}, "student-1")
        ok = s.answer({lecturer["code"]!r}, "student-1", "gen_tau_half", "falls").ok
        twice = s.answer({lecturer["code"]!r}, "student-1", "gen_tau_half", "rises").reason
        drive = s.publish({lecturer["code"]!r}, "not-the-secret", "attention").reason
        print(json.dumps([f.status, f.chapter, dict(f.settings), f.question.id, ok, twice, drive]))
    """)
    assert student == ["live", "generation", {"tau": "0.5"}, "gen_tau_half", True,
                       "already_answered", "wrong_secret"]
    seen = replica("a", f"""
        import json
        from lmviz.server.classroom_backend import store_from_env
        s = store_from_env()
        v = s.lecturer_view({lecturer["code"]!r}, {lecturer["secret"]!r})
        print(json.dumps([v.followers, dict(v.question.counts)]))
    """)
    assert seen == [1, {"rises": 0, "falls": 1, "same": 0}]
    # a student link through nginx, whichever replica answers it, lands on the class's chapter
    import http.client

    for _ in range(2):
        conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
        conn.request("GET", f"/?follow={lecturer['code'].lower()}&lang=zh")
        r = conn.getresponse()
        assert (r.status, r.getheader("Location")) == (302, f"/generation?follow={lecturer['code']}&lang=zh")
        conn.close()


def _has_ray() -> bool:
    try:
        import ray  # noqa: F401
        return True
    except ImportError:
        return False


def test_a_training_started_on_replica_a_runs_on_ray_and_its_curve_grows(cluster):
    _require(_has_ray(), "ray is not installed (pip install -r requirements-cluster.txt)")
    assert cluster.state.get("RAY_ADDRESS"), "the cluster started without a Ray head"
    import asyncio

    from ui.headless import Session

    class Page(Session):
        """A client that also keeps the progress line and the captions the page draws."""

        def _on_delta(self, d) -> None:
            super()._on_delta(d)
            if d.WhichOneof("type") == "new_element":
                el = d.new_element
                if el.WhichOneof("type") == "progress":
                    self.progress.append(el.progress.text)
                elif el.WhichOneof("type") == "markdown":
                    self.texts.append(el.markdown.body)

    a_port = int(next(addr for addr, n in cluster.replicas.items() if n == "a").rsplit(":", 1)[1])

    def steps(page: Page) -> list[int]:
        """The step counts of the progress lines the page drew, oldest first."""
        found = (re.search(r"step ([\d,]+) /", text) for text in page.progress)
        return [int(m.group(1).replace(",", "")) for m in found if m]

    async def scenario() -> tuple[list[int], list[str], list[str], list[str]]:
        page = Page(a_port, "training", "lang=en")
        page.progress, page.texts = [], []
        async with page:
            await page.wait_idle(180)
            await page.skip_questions()          # Start sits in a section a question holds back
            start = page.button("train_start")
            assert start is not None, page.widgets
            await page.click(start, timeout=120)
            end = asyncio.get_running_loop().time() + 180
            while asyncio.get_running_loop().time() < end:      # the polling fragment redraws
                seen = steps(page)
                if len(set(s for s in seen if s > 0)) >= 3:
                    break
                await asyncio.sleep(0.5)
            stop = page.button("train_stop")
            if stop is not None:
                await page.click(stop, timeout=60)
            await asyncio.sleep(1.5)
        return steps(page), page.texts, page.errors, page.alerts

    seen, texts, errors, alerts = run_async(scenario())
    assert errors == [], errors
    grown = [s for s in seen if s > 0]
    assert len(set(grown)) >= 3 and grown == sorted(grown), (seen, alerts)
    assert any("Ray" in t for t in texts), texts            # the device line names the Ray node


def test_down_stops_exactly_what_up_started(cluster):
    pids = cluster.pids()
    ray_pids = [int((cluster.dir / "ray.pid").read_text())] if (cluster.dir / "ray.pid").exists() else []
    assert len(pids) == 5 + len(ray_pids)             # redis, nginx, three replicas (and Ray's head)
    r = cluster.run("down")
    assert r.returncode == 0, r.stderr
    assert not any(Path(f"/proc/{p}").exists() for p in pids)
    left = subprocess.run(["pgrep", "-f", str(cluster.dir)], capture_output=True, text=True).stdout.split()
    assert left == [], left                           # nothing Ray started is left either
    assert cluster.pids() == []
    assert cluster.run("status").returncode == 3
