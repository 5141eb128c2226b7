"""The HTML hand-out of a chapter: what the page drew (prose, formulas, code, tables, charts with
their text twins), recorded as it is drawn (:func:`remember`, by ``ui.render`` and the question
blocks of ``ui.questions``) and written as one self-contained HTML file (:func:`export_html`:
plotly.js and, where there is a formula, KaTeX inlined; it opens from ``file://`` with no network).

The file is served by lmviz's own route (:func:`routes`, in ``st.App(routes=...)`` beside the
chapters' first paint), made from the record when the browser asks for it: the page's link names
the record by a token (:func:`url`) that lives as long as the session holds the record."""
from __future__ import annotations

import html
import re
import secrets
import threading
import weakref
from collections import OrderedDict
from functools import cache
from pathlib import Path

import streamlit as st

from ui.runtime import drawn_at

_EXPORT = "lmviz_export"          # session key: the chapter's Record
MAX_ITEMS = 400                   # a live fragment (a training's tick) adds new text every second: keep the newest
KATEX_DIR = Path(__file__).resolve().parent.parent / "assets" / "katex"
ROUTE = "/handout"                # the hand-outs' URL path: /handout/<token>/<file name>
KEEP_BUILT = 8                    # hand-outs kept made (~5 MB each: plotly.js is inlined), newest first:
                                  # a second request for an unchanged record (a press again, a flood
                                  # from one client) costs a look-up, not another build


class Record(dict):
    """A chapter's record as the page draws it: ``{"title", "items": {id: (position, kind, obj)},
    "at": {position: id}}``, and its ``token`` (the hand-out's URL names it) and ``rev`` (one more
    per item recorded: a hand-out made at one rev is the same file until the next). A dict, as the
    session's state holds it and tests read it; a weak reference can name it, so the hand-out
    route finds it while its session keeps it and not after."""

    def __init__(self, title: str = "lmviz") -> None:
        super().__init__(title=title, items={})
        self.token = secrets.token_urlsafe(16)
        self.rev = 0
        _RECORDS[self.token] = self


_RECORDS: weakref.WeakValueDictionary[str, Record] = weakref.WeakValueDictionary()
_BUILT: OrderedDict[tuple[str, int, str], bytes] = OrderedDict()     # (token, rev, language) -> file
_BUILDING = threading.Lock()      # one hand-out made at a time in this process (a made one is kept)
_SERVED: list[bool] = []          # routes() was called: this process serves the hand-out route


def start(title: str) -> None:
    """A new chapter's record (the page header calls it)."""
    st.session_state[_EXPORT] = Record(title)


def remember(kind: str, ident: str, obj) -> None:
    """Keep one drawn item: kind "h" (heading), "md" (Markdown prose), "html" (markup built by
    lmviz), "caption" (small print, Markdown), "metric" ((label, value, delta or None)), "tex" (a
    formula), "code", "table" ((data, show_index)) or "fig" ((figure, twin)).
    Called right after the item is drawn. An item recorded at the same place before (a fragment
    that redrew it with other text: a slider's caption, a section revealed by its question) is
    replaced, and the hand-out lists items in the order of their places on the page."""
    export = record()
    export.rev += 1
    items, at = export["items"], export.setdefault("at", {})
    pos = drawn_at()
    before = at.get(pos)
    if pos and before is not None and before != ident and items.get(before, ((),))[0] == pos:
        del items[before]
    at[pos] = ident
    items[ident] = (pos, kind, obj)
    while len(items) > MAX_ITEMS:
        del items[next(iter(items))]


def record() -> Record:
    """This session's record of the chapter it draws (a new one if the page header has not begun
    one). The same object takes what later fragment reruns draw (until the next whole run starts a
    new one), so a hand-out made from it when the link is followed holds the sections revealed
    since the link was drawn."""
    rec = st.session_state.get(_EXPORT)
    if not isinstance(rec, Record):
        rec = st.session_state[_EXPORT] = Record()
    return rec


def served() -> bool:
    """Whether this process serves the hand-out route (``streamlit run serve.py``; the plain
    ``streamlit run app.py`` has no routes of lmviz's own)."""
    return bool(_SERVED)


def url(rec: Record, name: str, language: str) -> str:
    """The hand-out of ``rec`` in ``language`` as the browser asks for it, saved as ``name``."""
    from urllib.parse import quote

    return f"{ROUTE}/{rec.token}/{quote(name)}?lang={quote(language)}"


def made(token: str, language: str) -> bytes | None:
    """The hand-out of the record ``token`` names, in ``language``, as a file (UTF-8); None when no
    session holds that record any more. Made once per state of the record (:data:`KEEP_BUILT`
    kept), one at a time."""
    rec = _RECORDS.get(token)
    if rec is None:
        return None
    key = (token, rec.rev, language)
    with _BUILDING:
        body = _BUILT.get(key)
        if body is None:
            body = export_html(*current(rec), language).encode("utf-8")
            _BUILT[key] = body
            while len(_BUILT) > KEEP_BUILT:
                _BUILT.popitem(last=False)
        _BUILT.move_to_end(key)
    return body


def routes() -> list:
    """Starlette routes for ``st.App(routes=...)``: GET of a hand-out (:func:`url`). A token no
    session holds answers 404 with a sentence in the link's language."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from ui.i18n import LANGS, translate

    async def endpoint(request):
        language = request.query_params.get("lang")
        language = language if language in LANGS else LANGS[0]
        body = await run_in_threadpool(made, request.path_params["token"], language)
        if body is None:
            return PlainTextResponse(translate("common.handout_gone", language), status_code=404)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.path_params["name"]) or "lmviz.html"
        return Response(body, media_type="text/html; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"',
                                 "Cache-Control": "no-store"})

    _SERVED.append(True)
    return [Route(ROUTE + "/{token}/{name}", endpoint, methods=["GET"])]


def current(rec: dict | None = None) -> tuple[str, list]:
    """(title, [(kind, obj), ...]) of ``rec`` (default: the chapter this session is drawing), in
    page order."""
    rec = record() if rec is None else rec
    # a copy first (one C call): a download's callable may read while a fragment's rerun records
    ordered = sorted(rec["items"].copy().values(), key=lambda item: item[0])   # stable: ties keep their order
    return rec["title"], [(kind, obj) for _, kind, obj in ordered]


def _math(state, silent: bool) -> bool:
    r"""markdown-it inline rule: ``$…$`` (inline) and ``$$…$$`` (display) as st.markdown reads
    them, kept whole as a formula token before Markdown's backslash escapes could eat its ``\,``
    (code spans are read first by their own rule, and ``\$`` by the escape rule)."""
    src, pos = state.src, state.pos
    if src[pos] != "$":
        return False
    delim = "$$" if src.startswith("$$", pos) else "$"
    start = pos + len(delim)
    end = src.find(delim, start)
    while end > start and src[end - 1] == "\\":
        end = src.find(delim, end + 1)
    if end <= start or end + len(delim) > state.posMax:
        return False
    body = src[start:end]
    if delim == "$" and (body[0].isspace() or body[-1].isspace() or "\n\n" in body):
        return False
    if not silent:
        token = state.push("math", "", 0)
        token.content, token.markup = body, delim
    state.pos = end + len(delim)
    return True


def tex_element(expr: str, display: bool, tag: str = "div") -> str:
    """A formula as the hand-out holds it: an element KaTeX typesets when the file opens, displayed
    or inline (the source shows, escaped, if scripts are off); ``tag`` "span" inside prose."""
    return (f'<{tag} class="tex" data-display="{int(display)}" data-tex="{html.escape(expr, quote=True)}">'
            f"{html.escape(expr)}</{tag}>")


@cache
def _markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.inline.ruler.before("escape", "math", _math)
    md.add_render_rule("math", lambda self, tokens, i, options, env:
                       tex_element(tokens[i].content, tokens[i].markup == "$$", "span"))
    return md


def _markdown_html(text: str) -> str:
    r"""Chapter prose (Markdown, as st.markdown draws it) as HTML for the hand-out: CommonMark with
    tables (markdown-it-py), formulas between ``$`` (inline) or ``$$`` (display) typeset by KaTeX as
    on the page, raw HTML in the text escaped, entities decoded once (no ``&quot;``).

    >>> print(_markdown_html(r"so $p = \exp(z/\tau)\,/\,Z$, `$x$` and \$5"), end="")
    <p>so <span class="tex" data-display="0" data-tex="p = \exp(z/\tau)\,/\,Z">p = \exp(z/\tau)\,/\,Z</span>, <code>$x$</code> and $5</p>
    """
    return _markdown().render(text)


@cache
def _katex_head() -> tuple[str, str]:
    """(for the head) KaTeX's stylesheet, its woff2 fonts inlined as data URIs and the other
    formats dropped, and its script; (for the end of the body) a call that typesets every
    ``.tex`` element (a displayed formula, or one inline in prose: ``data-display="0"``): formulas
    with no network. Built once per process (~0.8 MB)."""
    import base64

    css = (KATEX_DIR / "katex.min.css").read_text(encoding="utf-8")

    def font(m: re.Match) -> str:
        data = base64.b64encode((KATEX_DIR / "fonts" / m.group(1)).read_bytes()).decode()
        return f"url(data:font/woff2;base64,{data}) format(\"woff2\")"
    css = re.sub(r'url\(fonts/([\w-]+\.woff2)\) format\("woff2"\)', font, css)
    css = re.sub(r',url\(fonts/[\w-]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)', "", css)
    js = (KATEX_DIR / "katex.min.js").read_text(encoding="utf-8")
    run = ("document.querySelectorAll('.tex').forEach(function(e){try{katex.render(e.dataset.tex,e,"
           "{displayMode:e.dataset.display!=='0',throwOnError:false})}catch(x){}});")
    return f"<style>{css}</style><script>{js}</script>", f"<script>{run}</script>"


def _table_html(data, index: bool) -> str:
    """A table the page drew with ``st.dataframe`` (rows of dicts, a dict of columns, or a
    DataFrame) as an HTML table, every cell escaped."""
    labels = None
    if hasattr(data, "to_dict") and hasattr(data, "columns"):          # a DataFrame
        labels = [str(i) for i in data.index] if index else None
        data = data.to_dict("records")
    if isinstance(data, dict):                                         # columns
        cols = list(data)
        rows = [dict(zip(cols, vals)) for vals in zip(*(list(v) for v in data.values()))]
    else:
        rows = [dict(r) for r in data]
        cols = list(dict.fromkeys(k for r in rows for k in r))
    cell = lambda v: "" if v is None else html.escape(str(v))  # noqa: E731
    head = "".join(f"<th>{cell(c)}</th>" for c in ([""] if labels else []) + cols)
    body = "".join("<tr>" + (f"<th>{cell(labels[i])}</th>" if labels else "")
                   + "".join(f"<td>{cell(r.get(c))}</td>" for c in cols) + "</tr>" for i, r in enumerate(rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def export_html(title: str, items, language: str) -> str:
    """One self-contained HTML page (plotly.js and, where there is a formula, KaTeX embedded; no
    network) of a chapter's content: prose, formulas, code blocks, tables, charts with their twins."""
    import plotly.offline

    parts = [f"<h1>{html.escape(title)}</h1>"]
    for kind, obj in items:
        if kind == "h":
            parts.append(f"<h2>{html.escape(obj)}</h2>")
        elif kind == "md":
            parts.append(_markdown_html(str(obj)))
        elif kind == "caption":
            parts.append(f'<div class="caption">{_markdown_html(str(obj))}</div>')
        elif kind == "tex":   # typeset by KaTeX when opened; the source shows if scripts are off
            parts.append(tex_element(obj, True))
        elif kind == "code":
            parts.append(f"<pre><code>{html.escape(obj)}</code></pre>")
        elif kind == "table":
            parts.append(_table_html(*obj))
        elif kind == "metric":
            label, value, delta = obj
            colon = "：" if language == "zh" else ": "
            change = "" if delta is None else f" ({html.escape(delta)})"
            parts.append(f'<p class="metric">{html.escape(label)}{colon}<strong>{html.escape(value)}</strong>'
                         f"{change}</p>")
        elif kind == "html":  # markup built by lmviz (text escaped where it was built)
            parts.append(f"<div>{obj}</div>")
        elif kind == "fig":
            fig, twin = obj
            parts.append(fig.to_html(full_html=False, include_plotlyjs=False,
                                     config={"displaylogo": False}))
            parts.append(f'<p class="twin">{html.escape(twin)}</p>')
    body = "\n".join(parts)
    katex_head, katex_run = _katex_head() if 'class="tex"' in body else ("", "")
    return (f'<!DOCTYPE html>\n<html lang="{language}"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)} - lmviz</title>"
            "<style>body{font-family:'Noto Sans','Noto Sans CJK SC',sans-serif;max-width:1100px;"
            "margin:2em auto;padding:0 1em;line-height:1.6}code{background:#f3f3f3;padding:0 .2em}"
            ".twin,.caption{color:#555;font-size:.9em;margin-top:0}"
            "pre{background:#f3f3f3;padding:.6em;overflow-x:auto}table{border-collapse:collapse}"
            "th,td{border:1px solid #ccc;padding:.2em .5em}"
            "</style>"
            f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>{katex_head}</head>'
            f"<body>\n{body}\n<hr><p><small>lmviz</small></p>{katex_run}</body></html>\n")
