"""Behind deploy/'s nginx, Streamlit's frontend files come from nginx's own copy, compressed, not
from a replica's event loop (deploy/site_conf.py ``frontend``; bench/room_assets.py measures it).
Here the upstream is a port nobody listens on: whatever nginx answers with 200 came from its copy.
Skips when nginx is missing (fails with LMVIZ_CLUSTER_TESTS=1)."""
from __future__ import annotations

import gzip
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.browser_util import free_port
from tests.nginx_util import need_nginx, nginx_site, site_conf


@pytest.fixture(scope="module")
def frontend_copy():
    need_nginx()
    root = Path(tempfile.mkdtemp(prefix="lmviz-frontend-"))
    site_conf().frontend(root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _streamlit_static() -> Path:
    from streamlit import file_util

    return Path(file_util.get_static_dir()) / "static"


def _get(url: str, gz: bool):
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gz else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, dict(r.headers), r.read()


def test_the_copy_holds_every_frontend_file_and_a_gzip_twin_of_each_text_file(frontend_copy):
    src = _streamlit_static()
    files = [f for f in src.rglob("*") if f.is_file()]
    assert len(files) > 100
    for f in files:
        copy = frontend_copy / "static" / f.relative_to(src)
        assert copy.read_bytes() == f.read_bytes()
        twin = Path(f"{copy}.gz")
        if f.suffix in (".js", ".css"):
            assert gzip.decompress(twin.read_bytes()) == f.read_bytes()
        elif f.suffix in (".woff2", ".png", ".gif"):
            assert not twin.exists()            # already compressed: no twin


def test_nginx_sends_the_frontend_itself_compressed_and_the_rest_to_a_replica(frontend_copy):
    src = _streamlit_static() / "js"
    big = max(src.glob("*.js"), key=lambda f: f.stat().st_size)    # Plotly's chunk, ~4.7 MB
    run = Path(tempfile.mkdtemp(prefix="lmviz-nginx-"))
    with nginx_site(run, free_port(), frontend_copy) as port:
        url = f"http://127.0.0.1:{port}/static/js/{big.name}"
        status, headers, body = _get(url, gz=True)
        assert status == 200 and headers.get("Content-Encoding") == "gzip"
        assert gzip.decompress(body) == big.read_bytes()
        assert len(body) < big.stat().st_size / 2
        assert "max-age=315360000" in headers.get("Cache-Control", "")
        assert headers["Content-Type"] == "text/javascript"     # a module script runs only so
        css = next(src.parent.glob("css/*.css"))
        assert _get(f"http://127.0.0.1:{port}/static/css/{css.name}", gz=True)[1]["Content-Type"] == "text/css"
        status, headers, body = _get(url, gz=False)       # a client without gzip: the file itself
        assert status == 200 and "Content-Encoding" not in headers and body == big.read_bytes()
        for path in ("/static/js/not-in-the-copy.js", "/", "/training"):   # the replica's (down)
            with pytest.raises(urllib.error.HTTPError) as e:
                _get(f"http://127.0.0.1:{port}{path}", gz=True)
            assert e.value.code == 502, path
    shutil.rmtree(run, ignore_errors=True)
