"""deploy/nginx-lmviz.conf.template writes no secret into nginx's logs (issue 28, fault 10).

/training's ``?run=`` is a training's key: whoever reads it can stop that run. Here nginx runs
the template with an upstream that refuses connections (the case in which nginx writes an error
line, which quotes the request), and a request carries a secret in its query string: the access
log has the path but not the secret, the error log has neither. Skips when nginx is missing
(fails with LMVIZ_CLUSTER_TESTS=1)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.error
import importlib.util
import urllib.request
from pathlib import Path

import pytest

from tests.browser_util import free_port
from tests.redis_util import cluster_required

ROOT = Path(__file__).resolve().parent.parent
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _fill(dead_port: int, port: int, run: Path) -> str:
    """The site file as deploy/local-cluster.sh writes it (deploy/site_conf.py), to a dead upstream."""
    spec = importlib.util.spec_from_file_location("site_conf", ROOT / "deploy" / "site_conf.py")
    site_conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_conf)
    return site_conf.render((ROOT / "deploy/nginx-lmviz.conf.template").read_text(), f"127.0.0.1:{port}",
                            f"server 127.0.0.1:{dead_port} max_fails=1 fail_timeout=10s;",
                            str(run / "access.log"), str(run / "error.log"))


def test_a_secret_in_the_query_string_reaches_no_log():
    if not Path(NGINX).exists():
        if cluster_required():
            pytest.fail("nginx is required with LMVIZ_CLUSTER_TESTS=1")
        pytest.skip("nginx not found (apt-get install nginx)")
    run = Path(tempfile.mkdtemp(prefix="lmviz-nginx-"))
    port, dead = free_port(), free_port()
    (run / "tmp").mkdir()
    (run / "site.conf").write_text(_fill(dead, port, run))
    # the main config as deploy/local-cluster.sh writes it, its own error log at "warn"
    (run / "nginx.conf").write_text(
        f"worker_processes 1;\npid {run}/nginx.pid;\nerror_log {run}/main-error.log warn;\n"
        "events { worker_connections 64; }\n"
        f"http {{ client_body_temp_path {run}/tmp/b; proxy_temp_path {run}/tmp/p;"
        f" fastcgi_temp_path {run}/tmp/f; uwsgi_temp_path {run}/tmp/u; scgi_temp_path {run}/tmp/s;"
        f" include {run}/site.conf; }}\n")
    args = [NGINX, "-p", str(run), "-e", str(run / "main-error.log"), "-c", str(run / "nginx.conf")]
    subprocess.run(args + ["-t", "-q"], check=True, capture_output=True)
    subprocess.run(args, check=True, capture_output=True)
    secret = "RunSecretInTheQuery0123456789"
    try:
        status = None
        for _ in range(50):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/training?run={secret}&lang=en", timeout=5)
            except urllib.error.HTTPError as e:
                status = e.code
                break
            except OSError:
                time.sleep(0.1)
        assert status == 502                      # the upstream refused: nginx had an error to log
    finally:
        subprocess.run(args + ["-s", "quit"], capture_output=True)
        for _ in range(50):
            if not (run / "nginx.pid").exists():
                break
            time.sleep(0.1)
    access = (run / "access.log").read_text()
    errors = "".join(p.read_text() for p in run.glob("*error.log"))
    assert '"GET /training HTTP/1.1" 502' in access
    assert secret not in access and secret not in errors and "run=" not in access + errors
    shutil.rmtree(run, ignore_errors=True)
