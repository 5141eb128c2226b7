"""One upload limit, read by everything that enforces one (hostile probe, fault 7: nginx had
client_max_body_size 10m while the app allowed 64 MB, so the "bigger" preset's own 18 MB download
got a 413 behind deploy/ and the page showed "AxiosError ... 413")."""
from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from lmviz import limits
from tests.nginx_util import configure, site_conf

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "nginx-lmviz.conf.template"


def _rendered() -> str:
    return site_conf().render(TEMPLATE.read_text(), "127.0.0.1:8080", "server 127.0.0.1:8501;",
                               "/tmp/lmviz-access.log", "/tmp/lmviz-error.log", "/tmp/lmviz-frontend")


def _mib(size: str) -> float:
    """An nginx size ("65m", "10M", "2g", "1024k", "500") in MiB."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", size)
    assert m, size
    return int(m[1]) * {"": 2**-20, "k": 2**-10, "m": 1, "g": 1024}[m[2].lower()]


def test_the_template_types_no_body_limit_of_its_own():
    lines = [ln for ln in TEMPLATE.read_text().splitlines() if "client_max_body_size" in ln
             and not ln.lstrip().startswith("#")]
    assert lines and all("{{MAX_BODY_SIZE}}" in ln for ln in lines), lines


def test_nginx_the_app_and_the_checkpoint_reader_agree():
    sizes = re.findall(r"^\s*client_max_body_size\s+(\S+);", _rendered(), re.M)
    assert sizes == [f"{limits.MAX_REQUEST_MB}m"]
    conf = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    app_mb = conf["server"]["maxUploadSize"]
    assert app_mb == limits.MAX_UPLOAD_MB and limits.MAX_CHECKPOINT_BYTES == app_mb * 2**20
    # nginx passes every request the app accepts: the file plus its multipart framing
    # (Streamlit's streaming cap is maxUploadSize + 1 MB)
    assert _mib(sizes[0]) >= app_mb + 1
    # and the largest checkpoint lmviz writes fits them all
    assert 8 + limits.MAX_HEADER_BYTES + 4 * limits.MAX_PARAMS <= limits.MAX_CHECKPOINT_BYTES


def test_local_cluster_passes_the_limit_to_the_replicas_and_renders_nginx_from_it():
    sh = (ROOT / "deploy" / "local-cluster.sh").read_text()
    assert "deploy/site_conf.py" in sh and "client_max_body_size" not in sh
    assert '--server.maxUploadSize="$upload_mb"' in sh and "from lmviz.limits import MAX_UPLOAD_MB" in sh


def test_the_header_comments_keep_their_placeholders_and_no_placeholder_is_left():
    out = _rendered()
    body = [ln for ln in out.splitlines() if not ln.lstrip().startswith("#")]
    assert not any("{{" in ln for ln in body)
    assert "{{MAX_BODY_SIZE}}" in out                 # the how-to in the header comment


@pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
                    reason="nginx is not installed")
def test_nginx_accepts_the_rendered_site(tmp_path):
    args = configure(tmp_path, 8501, tmp_path / "frontend", 8080)
    r = subprocess.run(args + ["-t", "-q"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
