"""Streamlit's frontend files, compressed, from the app process itself (``serve.py``).

A student's first visit fetches Streamlit's frontend (``/static/``: its JavaScript and CSS, about
9 MB for a chapter with a chart). Streamlit sends those files uncompressed (its gzip middleware
leaves ``/static/`` out), from the same event loop that carries every websocket of the server;
on a lecture hall's shared network 300 students pull 2.8 GB. This middleware answers a request
for one of them, from a browser that accepts gzip, with a gzip copy kept in memory (about 6.5 MB
for every file Streamlit ships; made by the server's warm-up, :func:`warm`, or else on the first
request, on a worker thread): about a third of the bytes, in one write. Anything else goes on to
Streamlit unchanged; behind deploy/'s nginx these requests never come, nginx serves its own
compressed copy (deploy/site_conf.py, which compresses the same TYPES).

Only files found under the directory when the server starts are answered (a fixed set of names,
each carrying a hash of its content): no path from a request is ever opened.
"""
from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

TYPES = {".js": b"text/javascript", ".css": b"text/css", ".svg": b"image/svg+xml",
         ".json": b"application/json", ".map": b"application/json"}
_MIDDLEWARES: list["FrontendGzip"] = []   # this process's instances, for warm()
LEVEL = 6                      # zlib's default: Plotly's 4.7 MB chunk in ~0.2 s, a third of its size
CACHE_CONTROL = b"public, immutable, max-age=31536000"   # as Streamlit's own for hashed files


def _accepts_gzip(headers) -> bool:
    """True when the request's Accept-Encoding names gzip without refusing it (``gzip;q=0``)."""
    for name, value in headers:
        if name == b"accept-encoding":
            for part in value.split(b","):
                coding, _, params = part.partition(b";")
                if coding.strip() == b"gzip":
                    q = params.strip()
                    return not (q.startswith(b"q=") and q[2:].strip(b" 0.") == b"")
    return False


class FrontendGzip:
    """ASGI middleware: ``/static/...`` files of ``directory`` (Streamlit's static folder, whose
    ``static/`` subfolder is served at ``/static/``) sent gzip-compressed to browsers that accept
    it; every other request passes through to ``app``."""

    def __init__(self, app, directory: str | Path) -> None:
        self.app = app
        root = Path(directory)
        self.files: dict[str, Path] = {
            "/" + f.relative_to(root).as_posix(): f
            for f in (root / "static").rglob("*") if f.is_file() and f.suffix in TYPES}
        self._ready: dict[str, bytes] = {}             # URL path -> its gzip bytes, once made
        self._making: dict[str, asyncio.Future] = {}   # URL path -> the request making them now
        _MIDDLEWARES.append(self)

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        f = self.files.get(path) if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") else None
        if f is None or not _accepts_gzip(scope.get("headers", ())):
            await self.app(scope, receive, send)
            return
        body = await self.compressed(path)
        if body is None:                  # unreadable now: Streamlit answers as it would
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", TYPES[f.suffix]), (b"content-encoding", b"gzip"),
            (b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding"),
            (b"cache-control", CACHE_CONTROL)]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    async def compressed(self, path: str) -> bytes | None:
        """The gzip bytes of the file at URL ``path`` (one of ``self.files``): made by the warm-up,
        or on the first request on a worker thread (requests that come meanwhile wait for the same
        result). None when the file cannot be read (tried again at the next request)."""
        body = self._ready.get(path)
        if body is not None:
            return body
        fut = self._making.get(path)
        if fut is None:
            fut = self._making[path] = asyncio.ensure_future(asyncio.to_thread(self._compress, path))
        try:
            return await asyncio.shield(fut)
        except OSError:
            return None
        finally:
            self._making.pop(path, None)

    def _compress(self, path: str) -> bytes:
        body = gzip.compress(self.files[path].read_bytes(), LEVEL, mtime=0)
        self._ready[path] = body
        return body

    def warm(self, cancelled=lambda: False) -> int:
        """Compress every file not compressed yet (on the caller's thread); the number made."""
        made = 0
        for path in self.files:
            if cancelled():
                break
            if path not in self._ready:
                try:
                    self._compress(path)
                    made += 1
                except OSError:
                    pass
        return made


def warm(cancelled=lambda: False) -> int:
    """Compress the frontend files of this process's middleware (the server's warm-up calls this,
    at nice 19, before any student has asked); 0 where serve.py's middleware is not in use."""
    return sum(m.warm(cancelled) for m in list(_MIDDLEWARES))
