"""serve.py sends Streamlit's frontend files gzip-compressed (lmviz/server/frontend_gzip.py):
the same bytes once decompressed, only to a browser that accepts gzip, only files that were in
the folder at start (no path from a request is opened), everything else passed on unchanged."""
from __future__ import annotations

import asyncio
import gzip
import os
from concurrent.futures import ThreadPoolExecutor

from lmviz.server.frontend_gzip import FrontendGzip


async def _passed_on(scope, receive, send):
    await send({"type": "http.response.start", "status": 299, "headers": []})
    await send({"type": "http.response.body", "body": b"streamlit"})


def _get(mw, path: str, accept: bytes | None = b"gzip, deflate, br", method: str = "GET"):
    sent = []

    async def send(msg):
        sent.append(msg)

    headers = [(b"accept-encoding", accept)] if accept is not None else []
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    # on a thread of its own: the suite may leave an event loop running on the main thread
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, mw(scope, None, send)).result()
    head = dict(sent[0]["headers"])
    return sent[0]["status"], head, b"".join(m.get("body", b"") for m in sent[1:])


def _folder(tmp_path):
    js = (b"function lmviz(){return 42}\n" * 4000)
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "app.abc123.js").write_bytes(js)
    (tmp_path / "static" / "css").mkdir()
    (tmp_path / "static" / "css" / "a.css").write_bytes(b"body{color:red}")
    (tmp_path / "static" / "media").mkdir()
    (tmp_path / "static" / "media" / "font.woff2").write_bytes(b"\x00woff2")
    (tmp_path / "index.html").write_bytes(b"<html>")
    (tmp_path / "secret.js").write_bytes(b"outside static/")
    return js


def test_a_frontend_file_goes_out_compressed_with_its_type_and_cache_headers(tmp_path):
    js = _folder(tmp_path)
    mw = FrontendGzip(_passed_on, tmp_path)
    status, head, body = _get(mw, "/static/js/app.abc123.js")
    assert status == 200 and head[b"content-encoding"] == b"gzip"
    assert head[b"content-type"] == b"text/javascript" and head[b"vary"] == b"Accept-Encoding"
    assert b"immutable" in head[b"cache-control"] and int(head[b"content-length"]) == len(body)
    assert gzip.decompress(body) == js and len(body) < len(js) / 10
    assert _get(mw, "/static/css/a.css")[1][b"content-type"] == b"text/css"
    assert _get(mw, "/static/css/a.css", b"br;q=1.0, gzip;q=0.5")[1][b"content-encoding"] == b"gzip"
    status, head, body = _get(mw, "/static/js/app.abc123.js", method="HEAD")
    assert status == 200 and body == b"" and int(head[b"content-length"]) > 0


def test_everything_else_is_streamlits(tmp_path):
    _folder(tmp_path)
    mw = FrontendGzip(_passed_on, tmp_path)
    for path, accept in [("/static/js/app.abc123.js", None),          # no gzip: the file as it is
                         ("/static/js/app.abc123.js", b"br, identity"),
                         ("/static/js/app.abc123.js", b"gzipx"),
                         ("/static/js/app.abc123.js", b"gzip;q=0, br"),
                         ("/static/js/app.abc123.js", b"deflate, gzip; q=0.0"),
                         ("/static/media/font.woff2", b"gzip"),         # already compressed
                         ("/index.html", b"gzip"), ("/secret.js", b"gzip"), ("/", b"gzip"),
                         ("/static/js/../../secret.js", b"gzip"),       # no path is ever opened
                         ("/static/js/%2e%2e/%2e%2e/secret.js", b"gzip"),
                         ("/static/js/new.js", b"gzip")]:
        assert _get(mw, path, accept)[0] == 299, (path, accept)
    assert _get(mw, "/static/js/app.abc123.js", method="POST")[0] == 299


def test_a_file_that_cannot_be_read_is_passed_on_and_tried_again(tmp_path):
    js = _folder(tmp_path)
    mw = FrontendGzip(_passed_on, tmp_path)
    f = tmp_path / "static" / "js" / "app.abc123.js"
    f.rename(f.with_suffix(".gone"))
    assert _get(mw, "/static/js/app.abc123.js")[0] == 299
    f.with_suffix(".gone").rename(f)
    status, _, body = _get(mw, "/static/js/app.abc123.js")
    assert status == 200 and gzip.decompress(body) == js
    assert os.path.exists(f)


def test_the_warm_up_compresses_every_file_before_anyone_asks(tmp_path, monkeypatch):
    from lmviz.server import frontend_gzip

    js = _folder(tmp_path)
    monkeypatch.setattr(frontend_gzip, "_MIDDLEWARES", [])
    mw = FrontendGzip(_passed_on, tmp_path)
    assert frontend_gzip.warm(lambda: True) == 0           # cancelled: nothing made
    assert frontend_gzip.warm() == 2 and frontend_gzip.warm() == 0   # the .js and the .css, once
    monkeypatch.setattr(frontend_gzip.asyncio, "to_thread", None)    # no compressing at request time
    status, _, body = _get(mw, "/static/js/app.abc123.js")
    assert status == 200 and gzip.decompress(body) == js
