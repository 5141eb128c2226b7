"""ui/first_paint.py: the chapter's title and loading line in the HTML page serve.py sends."""
from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pytest

from ui import first_paint
from ui.chapters import ROOT, registered
from ui.i18n import LANGS, catalogue, translate


@pytest.mark.parametrize("chapter", registered(), ids=lambda c: c.slug or "home")
def test_the_first_title_is_the_title_the_page_draws(chapter):
    """The block's title is the chapter's heading key, the key its page script draws."""
    source = (ROOT / chapter.file).read_text(encoding="utf-8")
    assert f'page_header("{chapter.heading_key}"' in source
    for lang in LANGS:
        assert chapter.heading_key in catalogue(lang)
        html = first_paint.page("/" + chapter.slug, f"lang={lang}")
        assert escape(translate(chapter.heading_key, lang)) in html
        assert html.count(f'id="{first_paint.BLOCK_ID}"') == 1
        assert html.index(first_paint.MARK) < html.index(first_paint.BLOCK_ID)


def test_language_and_presenter_mode_come_from_the_link_and_nothing_else_does():
    zh = first_paint.page("/attention", "lang=zh&present=1&s=%3Cscript%3Ealert(1)%3C/script%3E")
    assert translate("att.title", "zh") in zh and translate("common.loading_model", "zh") in zh
    assert 'lang="zh"' in zh and "font-size:21px" in zh and 'class=""' in zh   # no sidebar column
    assert "alert(1)" not in zh
    # an unknown or hostile language is English, never echoed
    bad = first_paint.page("/attention", "lang=%22%3E%3Cimg%20src=x%3E")
    assert 'lang="en"' in bad and "<img src=x>" not in bad and translate("att.title", "en") in bad
    assert 'class="sidebar"' in bad and "font-size:16px" in bad


def test_other_paths_get_streamlits_page_unchanged():
    index = first_paint._index()
    assert first_paint.MARK in index            # Streamlit's page still has the element we follow
    for path in ("/nope", "/_stcore/x", "/attention/extra"):
        assert first_paint.page(path, "") == index


def test_the_block_is_escaped_html_with_one_script_that_removes_it():
    html = first_paint.block(registered()[0], "lang=en")
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    assert f"getElementById('{first_paint.BLOCK_ID}')" in scripts[0]
    assert "[data-testid=stMain] h1" in scripts[0] and str(first_paint.GIVE_UP_MS) in scripts[0]


def test_serve_py_routes_every_chapter():
    paths = sorted(r.path for r in first_paint.routes())
    assert paths == sorted("/" + c.slug for c in registered())
    assert "first_paint.routes()" in Path(ROOT / "serve.py").read_text(encoding="utf-8")


def test_a_page_hands_out_a_signed_browser_id_once():
    """Classroom mode's one answer per browser: the page's response sets the signed cookie
    ``lmviz_id`` when the browser has no valid one (a forged value gets a fresh one)."""
    from starlette.requests import Request

    from lmviz.server.classroom import BrowserIds
    from tests.conftest import run_async

    route = next(r for r in first_paint.routes() if r.path == "/")

    def get(cookie: str | None, proto: str = "http"):
        headers = [(b"host", b"127.0.0.1"), (b"x-forwarded-proto", proto.encode())]
        if cookie is not None:
            headers.append((b"cookie", f"{BrowserIds.COOKIE}={cookie}".encode()))
        scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"follow=ABCDEFG",
                 "headers": headers, "scheme": "http", "server": ("127.0.0.1", 80)}
        return run_async(route.endpoint(Request(scope)))   # a browser test may own the loop

    first = get(None)
    set_cookie = first.headers["set-cookie"]
    value = set_cookie.split(";")[0].split("=", 1)[1]
    assert BrowserIds().verify(value) and "HttpOnly" in set_cookie and "Secure" not in set_cookie
    assert "set-cookie" not in get(value).headers                 # a valid id is kept
    forged = get(value[:-2] + "xx").headers["set-cookie"]
    assert forged.split(";")[0] != f"{BrowserIds.COOKIE}={value}"
    assert "Secure" in get(None, proto="https").headers["set-cookie"]

def test_a_presenter_link_hands_out_the_lecture_cookie_and_a_student_link_does_not():
    """Behind nginx the lecture cookie takes a browser's websocket to the lecture replica: a chapter
    opened in presenter mode hands it out (once, beside the browser id), any other link never."""
    from starlette.requests import Request

    from lmviz.server.classroom import LECTURE_COOKIE, BrowserIds
    from tests.conftest import run_async

    route = next(r for r in first_paint.routes() if r.path == "/generation")
    browser_id = f"{BrowserIds.COOKIE}={BrowserIds().mint()}"

    def cookies_set(query: str, cookie: str = browser_id, proto: str = "http") -> list[str]:
        scope = {"type": "http", "method": "GET", "path": "/generation", "query_string": query.encode(),
                 "headers": [(b"host", b"127.0.0.1"), (b"x-forwarded-proto", proto.encode()),
                             (b"cookie", cookie.encode())],
                 "scheme": "http", "server": ("127.0.0.1", 80)}
        r = run_async(route.endpoint(Request(scope)))
        assert r.status_code == 200
        return [v.decode() for k, v in r.raw_headers if k == b"set-cookie"]

    assert cookies_set("lang=zh&present=1") == [f"{LECTURE_COOKIE}=1; Path=/; HttpOnly; SameSite=Lax"]
    assert cookies_set("present=1", proto="https") == [f"{LECTURE_COOKIE}=1; Path=/; HttpOnly; SameSite=Lax; Secure"]
    assert cookies_set("present=1", f"{browser_id}; {LECTURE_COOKIE}=1") == []      # kept, not renewed
    both = cookies_set("present=1&start=1", "")                                   # a first visit: both
    assert [c.split("=")[0] for c in both] == [BrowserIds.COOKIE, LECTURE_COOKIE]
    for query in ("lang=zh", "follow=ABCDEFG", "present=0", "present=1x", "x=present=1"):
        assert cookies_set(query) == [], query


@pytest.mark.parametrize("lang", LANGS)
def test_the_page_says_its_language_in_html_lang(lang):
    """A screen reader picks its voice from <html lang>: the served page says the link's
    language from the first byte (app.py keeps it right afterwards, on every run)."""
    html = first_paint.page("/attention", f"lang={lang}")
    assert html.count("<html") == 1 and f'<html lang="{lang}">' in html
    assert '<html lang="en">' in first_paint.page("/attention", "lang=%22%3E")   # never echoed


def test_a_student_link_goes_to_the_lecturers_chapter_and_nowhere_else():
    """``follow_target``: the home page's student link leads to the live class's chapter, with the
    code as the store spells it and a known language; never to a path the store did not name as
    one of our chapters, never with the link's own text."""
    asked: list[str] = []

    def chapter_of(code: str) -> str:
        asked.append(code)
        return {"AB3D7KQ": "generation", "CD4E8MN": "", "EF5G9PR": "evil.example"}.get(code, "")

    target = first_paint.follow_target
    assert target("/", "follow=ab3d-7kq&lang=zh", chapter_of) == "/generation?follow=AB3D7KQ&lang=zh"
    assert target("/", "lang=xx%22%3E&follow=AB3D7KQ", chapter_of) == "/generation?follow=AB3D7KQ"
    # the lecturer's model id goes along (the QR code's link names it); other text does not
    assert target("/", "follow=AB3D7KQ&model=smollm2", chapter_of) == "/generation?follow=AB3D7KQ&model=smollm2"
    assert target("/", "follow=AB3D7KQ&model=%3Cb%3E&x=1", chapter_of) == "/generation?follow=AB3D7KQ"
    assert asked == ["AB3D7KQ"] * 4
    for query in ("follow=CD4E8MN", "follow=EF5G9PR", "follow=ZZZZZZZ", "follow=%3Cscript%3E",
                  "follow=", "lang=zh"):
        assert target("/", query, chapter_of) is None, query
    assert target("/attention", "follow=AB3D7KQ", chapter_of) is None
    assert "<script>" not in asked


def test_the_student_link_is_answered_with_a_redirect_that_keeps_the_browser_id(monkeypatch):
    """The route itself: a live class on a chapter answers 302 to it (no-cache, the browser id
    handed out as on a page); the store is asked with the client's address."""
    from starlette.requests import Request

    from tests.conftest import run_async
    from ui import follow

    calls = []

    class Store:
        def chapter_of(self, code, address=""):
            calls.append((code, address))
            return "kv-cache" if code == "AB3D7KQ" else ""

    monkeypatch.setattr(follow, "store", Store)
    route = next(r for r in first_paint.routes() if r.path == "/")

    def get(query: bytes):
        scope = {"type": "http", "method": "GET", "path": "/", "query_string": query,
                 "headers": [(b"host", b"127.0.0.1")], "scheme": "http", "server": ("127.0.0.1", 80),
                 "client": ("203.0.113.7", 50000)}
        return run_async(route.endpoint(Request(scope)))

    r = get(b"follow=AB3D7KQ&lang=en")
    assert r.status_code == 302 and r.headers["location"] == "/kv-cache?follow=AB3D7KQ&lang=en"
    assert r.headers["cache-control"] == "no-cache" and "lmviz_id=" in r.headers["set-cookie"]
    assert calls == [("AB3D7KQ", "203.0.113.7")]
    assert get(b"follow=ZZZZZZZ").status_code == 200 and get(b"lang=en").status_code == 200
    assert len(calls) == 2
