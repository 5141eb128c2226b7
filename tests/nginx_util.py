"""nginx with lmviz's site file (deploy/nginx-lmviz.conf.template filled by deploy/site_conf.py, as
deploy/local-cluster.sh does), in a folder of its own, for the tests that need nginx itself."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser_util import free_port
from tests.redis_util import cluster_required

ROOT = Path(__file__).resolve().parent.parent
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def site_conf():
    """deploy/site_conf.py as a module (deploy/ is not a package)."""
    spec = importlib.util.spec_from_file_location("site_conf", ROOT / "deploy" / "site_conf.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def need_nginx() -> None:
    if not Path(NGINX).exists():
        if cluster_required():
            pytest.fail("nginx is required with LMVIZ_CLUSTER_TESTS=1")
        pytest.skip("nginx not found (apt-get install nginx)")


def configure(run: Path, upstream_port: int, frontend_root: Path, port: int) -> list[str]:
    """Write the site file and the main config (the one local-cluster.sh writes, its own error log
    at "warn") into ``run``, nginx on ``port`` in front of ``upstream_port``; the nginx command
    line that uses them (add ``-t`` to test them, ``-s quit`` to stop it)."""
    (run / "tmp").mkdir(parents=True, exist_ok=True)
    run.chmod(0o755)        # as local-cluster.sh's run folder: nginx's workers run as another user
    (run / "site.conf").write_text(site_conf().render(
        (ROOT / "deploy/nginx-lmviz.conf.template").read_text(), f"127.0.0.1:{port}",
        f"server 127.0.0.1:{upstream_port} max_fails=1 fail_timeout=10s;",
        str(run / "access.log"), str(run / "error.log"), str(frontend_root)))
    (run / "nginx.conf").write_text(
        f"worker_processes 1;\npid {run}/nginx.pid;\nerror_log {run}/main-error.log warn;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ client_body_temp_path {run}/tmp/b; proxy_temp_path {run}/tmp/p;"
        f" fastcgi_temp_path {run}/tmp/f; uwsgi_temp_path {run}/tmp/u; scgi_temp_path {run}/tmp/s;"
        f" include {run}/site.conf; }}\n")
    return [NGINX, "-p", str(run), "-e", str(run / "main-error.log"), "-c", str(run / "nginx.conf")]


@contextmanager
def nginx_site(run: Path, upstream_port: int, frontend_root: Path):
    """nginx serving the site file from ``run`` in front of ``upstream_port`` (one replica, or a
    port nobody listens on); yields nginx's port. nginx stops when the block ends."""
    need_nginx()
    port = free_port()
    args = configure(run, upstream_port, frontend_root, port)
    subprocess.run(args + ["-t", "-q"], check=True, capture_output=True)
    subprocess.run(args, check=True, capture_output=True)
    try:
        yield port
    finally:
        subprocess.run(args + ["-s", "quit"], capture_output=True)
        for _ in range(50):
            if not (run / "nginx.pid").exists():
                break
            time.sleep(0.1)
