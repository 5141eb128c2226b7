"""The first paint of a chapter link: its title and a "loading" line, in the HTML page itself.

A browser shows nothing of a Streamlit page until the frontend's JavaScript (about 2 MB here) is
loaded and run, its websocket is open and the script's first elements have arrived: 0.8-1.0 s on
the 2-core server for an empty app, 1.3-1.6 s for a chapter (``bench/startup.py``). ``serve.py``
therefore answers each chapter's URL with Streamlit's own ``index.html`` plus a small block of
ours: the chapter's title and the "loading the model" line, in the link's language, painted as
soon as the HTML arrives, above the page while Streamlit starts underneath. The block removes
itself the moment the real page's title is in the document (a MutationObserver), when the script
shows an error instead, or after ``GIVE_UP_MS`` whatever happens, so it can never hide the page.

A student link (``/?follow=CODE``) of a live class whose lecturer shows a chapter is answered with
a redirect to that chapter's URL (:func:`follow_target`), so that the student's browser starts on
the lecturer's chapter: without it the link painted the home page's title, and Streamlit ran the
home page's script before switching to the chapter (a run for every student who joins).

The page's HTML also hands out the cookies a session needs before its websocket opens
(:func:`handed_out`): classroom mode's signed browser id, and the lecture cookie to a page opened in
presenter mode, by which nginx sends a lecturer to the lecture replica (deploy/).

Everything in the block comes from the catalogue (``ui.i18n``) and the chapter list
(``ui.chapters``), escaped; a link's own text never reaches it (``lang`` is one of ``LANGS`` or
ignored). Nothing here needs a session (``serve.py`` builds the routes when the server starts);
streamlit is imported to find its ``index.html``, and a student link's class is looked up in the
sessions' own class store (``ui.follow.store``).
"""
from __future__ import annotations

import functools
import html
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, urlencode

from ui.chapters import Chapter, registered
from ui.i18n import LANGS, translate

GIVE_UP_MS = 20_000          # the block goes away after this even if no title ever arrives
BLOCK_ID = "lmviz-first-paint"
MARK = '<div id="root"></div>'
HTML_TAG = '<html lang="en">'   # Streamlit's index.html, whatever the language

# Streamlit 1.67's wide layout, sidebar and h1 (theme font "sans-serif"; the config's [theme] makes
# it a light theme whatever the system's dark mode says), so that the real title
# lands where the first one was; the sidebar column only where Streamlit shows it expanded (wide
# screens, not in presenter mode, whose type is larger: app.py's html{font-size:21px}).
_CSS = (
    "{font_face}"
    "#{id}{{position:fixed;inset:0;z-index:999990;display:flex;background:#fff;"
    "color:rgb(47,45,43);font-family:{family}sans-serif;font-size:{size}}}"
    "#{id} aside{{display:none;width:300px;flex:none;background:rgb(248,248,247);"
    "border-right:1px solid rgb(231,229,226)}}"
    "@media (min-width:768px){{#{id}.sidebar aside{{display:block}}}}"
    "#{id} main{{padding:6rem 5rem 0 5rem}}"
    "@media (max-width:767px){{#{id} main{{padding:6rem 1rem 0 1rem}}}}"
    "#{id} h1{{font-size:2.75rem;font-weight:700;line-height:1.2;margin:0;padding:1.25rem 0 1rem 0}}"
    "#{id} p{{font-size:1rem;line-height:1.6;margin:0;color:rgba(47,45,43,0.6)}}"
)
_SCRIPT = (
    "(function(){var b=document.getElementById('%s');if(!b)return;"
    "function done(){return document.querySelector("
    "'[data-testid=stMain] h1,[data-testid=stException],[data-testid=stMain] [role=alert]');}"
    "function gone(o){b.remove();if(o)o.disconnect();}"
    "var o=new MutationObserver(function(){if(done())gone(o);});"
    "o.observe(document.documentElement,{childList:true,subtree:true});"
    "setTimeout(function(){gone(o);},%d);})();"
)


def chapter_at(path: str) -> Chapter | None:
    """The chapter whose URL path is ``path`` ("/" or "/attention"), None for any other path."""
    slug = path.strip("/")
    return next((c for c in registered() if c.slug == slug), None)


def block(chapter: Chapter, query_string: str) -> str:
    """The HTML block painted first for ``chapter`` opened with ``query_string`` (no "?")."""
    query = parse_qs(query_string, keep_blank_values=True)
    lang = query.get("lang", ["en"])[-1]
    lang = lang if lang in LANGS else "en"
    present = query.get("present", [""])[-1] == "1"
    title = html.escape(translate(chapter.heading_key, lang))
    loading = html.escape(translate("common.loading_model", lang))
    font = _font_file()
    css = _CSS.format(id=BLOCK_ID, size="21px" if present else "16px",
                      family=f"{_FAMILY}," if font else "",
                      font_face=(f"@font-face{{font-family:{_FAMILY};font-display:swap;"
                                 f"src:url({font})format('woff2')}}") if font else "")
    return (f"<style>{css}</style>"
            f'<div id="{BLOCK_ID}" class="{"" if present else "sidebar"}" lang="{lang}" aria-busy="true">'
            f"<aside></aside><main><h1>{title}</h1><p>{loading}</p></main></div>"
            f"<script>{_SCRIPT % (BLOCK_ID, GIVE_UP_MS)}</script>")


@functools.lru_cache(maxsize=1)
def _index() -> str:
    """Streamlit's own index.html (its frontend's entry page)."""
    from streamlit import file_util

    return (Path(file_util.get_static_dir()) / "index.html").read_text(encoding="utf-8")


_FAMILY = "lmviz-first-paint-sans"


@functools.lru_cache(maxsize=1)
def _font_file() -> str | None:
    """The URL of Streamlit's own text font, which its index.html preloads (the frontend declares
    the font only once it runs), or None: the block then uses the system's sans-serif."""
    import re

    m = re.search(r'href="(\./static/media/SourceSans[^"]*\.woff2)"', _index())
    return m.group(1) if m else None


def page(path: str, query_string: str) -> str:
    """Streamlit's index.html with the first-paint block of the chapter at ``path`` right after
    the frontend's root element (the page unchanged for any other path, or should a later
    Streamlit write its root element differently)."""
    chapter = chapter_at(path)
    index = _index()
    if chapter is None:
        return index
    lang = parse_qs(query_string).get("lang", ["en"])[-1]
    if lang in LANGS:   # a screen reader picks its voice from <html lang> (app.py keeps it after)
        index = index.replace(HTML_TAG, f'<html lang="{lang}">', 1)
    return index.replace(MARK, MARK + block(chapter, query_string), 1)


def follow_target(path: str, query_string: str, chapter_of: Callable[[str], str]) -> str | None:
    """Where a student link sends its browser: ``/<chapter>?follow=CODE[&lang=..][&model=..]``
    when ``path`` is the home page, the query names a class (``follow``) and ``chapter_of(code)``
    says its lecturer shows a chapter of ours; else None (the link opens as it is). The new URL is
    built from the code as the store normalised it, a known language and a model id of the ids'
    shape (``lmviz.hf.id_shaped``; the session checks it is listed), never from other link text."""
    if path != "/":
        return None
    query = parse_qs(query_string)
    raw = query.get("follow", [""])[-1]
    if not raw:
        return None
    from lmviz.server.classroom import normalise_code

    code = normalise_code(raw)
    slug = chapter_of(code) if code else ""
    if not slug or chapter_at("/" + slug) is None:
        return None
    from lmviz.hf import MODEL_PARAM, id_shaped

    lang = query.get("lang", [""])[-1]
    model = query.get(MODEL_PARAM, [""])[-1]
    return f"/{slug}?" + urlencode({"follow": code, **({"lang": lang} if lang in LANGS else {}),
                                    **({MODEL_PARAM: model} if id_shaped(model) else {})})


def handed_out(query_string: str, cookies: dict, ids, secure: bool = False) -> list[str]:
    """The ``Set-Cookie`` values a page's HTML carries: classroom mode's signed browser id (one
    answer per browser, a few classes per browser), handed out with the page so that the
    websocket that follows carries it (``st.context.cookies``), when the browser has no valid one;
    and the lecture cookie (``lmviz.server.classroom.LECTURE_COOKIE``) to a page opened in
    presenter mode, which behind nginx takes the browser's websocket to the lecture replica."""
    from lmviz.server.classroom import LECTURE_COOKIE, BrowserIds, lecture_cookie_header

    out = []
    if ids.verify(cookies.get(BrowserIds.COOKIE)) is None:
        out.append(ids.set_cookie_header(secure=secure))
    if parse_qs(query_string).get("present", [""])[-1] == "1" and cookies.get(LECTURE_COOKIE) != "1":
        out.append(lecture_cookie_header(secure=secure))
    return out


def routes() -> list:
    """Starlette routes for ``st.App(routes=...)``: GET and HEAD of every chapter's URL path."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import HTMLResponse, RedirectResponse
    from starlette.routing import Route

    from lmviz.server.classroom import BrowserIds, client_address

    ids = BrowserIds()

    def chapter_of(request) -> Callable[[str], str]:
        def look_up(code: str) -> str:
            from ui.follow import store    # the sessions' own store (Streamlit's resource cache)

            address = client_address(request.client.host if request.client else None,
                                     request.headers.getlist("x-forwarded-for"))
            return store().chapter_of(code, address)
        return look_up

    async def endpoint(request):
        https = "https" in (request.url.scheme, request.headers.get("x-forwarded-proto", ""))
        cookies = handed_out(request.url.query, request.cookies, ids, secure=https)
        response = None
        if request.url.path == "/" and "follow=" in request.url.query:
            # on a worker thread: a Redis store's look-up blocks (a chapter's URL, the redirect's
            # own target among them, is never looked up)
            target = await run_in_threadpool(follow_target, request.url.path, request.url.query,
                                             chapter_of(request))
            if target is not None:
                response = RedirectResponse(target, status_code=302, headers={"Cache-Control": "no-cache"})
        if response is None:
            response = HTMLResponse(page(request.url.path, request.url.query), headers={"Cache-Control": "no-cache"})
        for cookie in cookies:
            response.headers.append("Set-Cookie", cookie)
        return response

    return [Route("/" + c.slug, endpoint, methods=["GET", "HEAD"]) for c in registered()]
