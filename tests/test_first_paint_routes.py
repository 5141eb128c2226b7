"""The first-paint routes (ui/first_paint.py, served by serve.py) against a hostile client, over
real HTTP on a running ``streamlit run serve.py``: no reflection of the link's text, no path
traversal, no redirect, no header injection, and a 240 kB or 1 MB request refused while the
server stays healthy (the hostile probe's held findings, kept as tests)."""
from __future__ import annotations

import socket
import urllib.request

import pytest

from ui.chapters import registered
from ui.i18n import translate

PASSWD = b"root:x:0:0"
PAYLOAD = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def srv():
    from tests.browser_util import Server

    s = Server("serve.py")
    yield s
    s.stop()


def raw(srv, request_line: str, headers: str = "", body: bytes = b"", timeout: float = 30) -> tuple[int, bytes, bytes]:
    """Send ``request_line`` exactly as written (no client-side normalisation of the path);
    (status, raw headers, body); status 0 when the server closed the connection unanswered."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=timeout) as s:
        s.sendall(f"{request_line}\r\nHost: 127.0.0.1:{srv.port}\r\nConnection: close\r\n{headers}\r\n"
                  .encode("latin-1") + body)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    if not data.startswith(b"HTTP/"):
        return 0, b"", data
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head, rest


def healthy(srv) -> bool:
    with urllib.request.urlopen(srv.url("_stcore/health"), timeout=10) as r:
        return r.read().decode().strip() == "ok"


def test_a_chapter_link_is_painted_and_its_text_never_reflected(srv):
    status, head, body = raw(srv, "GET /attention?lang=zh&s=%3Cscript%3Ealert(1)%3C%2Fscript%3E HTTP/1.1")
    assert status == 200 and translate("att.title", "zh").encode() in body
    assert PAYLOAD.encode() not in body and b"alert(1)" not in body
    status, _, body = raw(srv, 'GET /attention?lang=%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E HTTP/1.1')
    assert status == 200 and b"<img src=x" not in body and b'lang="en"' in body


@pytest.mark.parametrize("path", ["/attention/../../../../etc/passwd", "/attention/%2e%2e/%2e%2e/etc/passwd",
                                  "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2f..%2fetc%2fpasswd",
                                  "/static/../../../../etc/passwd", "/app/static/..%2f..%2f..%2fetc%2fpasswd",
                                  "/attention%00.html", "/attention/..%5c..%5cserve.py"])
def test_no_path_reaches_a_file_outside_the_app(srv, path):
    status, _, body = raw(srv, f"GET {path} HTTP/1.1")
    assert PASSWD not in body and b"st.App(" not in body, (path, status)
    assert status in (0, 200, 400, 403, 404, 405, 414), (path, status)


@pytest.mark.parametrize("path", ["//evil.example/", "/attention?next=//evil.example",
                                  "/attention?lang=en&redirect=https://evil.example", "/%2F%2Fevil.example",
                                  "/?follow=//evil.example", "/?follow=ABCDEFG&lang=//evil.example",
                                  "/?follow=https%3A%2F%2Fevil.example"])
def test_no_link_redirects_elsewhere(srv, path):
    status, head, _ = raw(srv, f"GET {path} HTTP/1.1")
    assert not 300 <= status < 400 or b"evil.example" not in head, (path, status, head)


def test_no_header_can_be_injected_through_the_link(srv):
    for path in ("/attention?lang=en%0d%0aSet-Cookie:%20pwned=1", "/attention?lang=%0aX-Injected:%201",
                 "/attention%0d%0aX-Injected:%201", "/?follow=ABCDEFG%0d%0aX-Injected:%201",
                 "/?follow=ABCDEFG&lang=en%0d%0aSet-Cookie:%20pwned=1"):
        status, head, _ = raw(srv, f"GET {path} HTTP/1.1")
        assert b"pwned" not in head.lower() and b"x-injected" not in head.lower(), (path, head)


@pytest.mark.parametrize("kb", [240, 1024])
def test_a_huge_request_is_refused_and_costs_the_server_nothing(srv, kb):
    chapter = next(c for c in registered() if c.slug)
    query = "lang=en&s=" + "a" * (kb * 1024)
    status, _, body = raw(srv, f"GET /{chapter.slug}?{query} HTTP/1.1")
    assert status == 0 or 400 <= status < 500, status               # refused, not served
    assert b"a" * 1000 not in body                                  # and not echoed back
    big_header = "X-Fill: " + "b" * (kb * 1024) + "\r\n"
    status, _, _ = raw(srv, f"GET /{chapter.slug} HTTP/1.1", headers=big_header)
    assert status == 0 or 400 <= status < 500, status
    assert healthy(srv)                                             # the next student is served
    status, _, body = raw(srv, f"GET /{chapter.slug}?lang=en HTTP/1.1")
    assert status == 200 and translate(chapter.heading_key, "en").encode() in body
