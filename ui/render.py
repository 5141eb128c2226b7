"""Rendering helpers shared by every page (Streamlit side).

Besides drawing, these helpers remember what a chapter showed in the current run (its title,
prose and figures) so that "download as HTML" can hand out exactly that, offline, in the current
language; and they implement presenter mode (larger type, one section at a time, PageUp /
PageDown to step, folded secondary controls).
"""
from __future__ import annotations

import collections
import html
import json
import re
import threading
import weakref
from contextlib import contextmanager
from typing import NoReturn

import streamlit as st

from ui import handout
from ui.i18n import lang, t, translate

PRESENT_FONT = 20                 # smallest figure font size in presenter mode (14 otherwise)
PRESENT_MAX_H = 500               # tallest figure in presenter mode (px): fits 1280x720 with a slider
PRESENT_LEGEND_ROW = 4            # a horizontal legend of more entries goes beside the plot in presenter mode
_SLIDES_JS = "assets/js/slides.js"
# The buttons a clicker presses (assets/js/slides.js): on a slide that shows one of them, PageDown
# presses it once, and the next PageDown moves on. Each is a pattern over the button's key as the
# page's class names carry it (Streamlit writes ``st-key-`` + the key, every character other than
# a letter, digit, ``_`` or ``-`` as ``-``). A question slide: "Ask the room", then "Reveal" (in
# a class; the room's own questions too) or "Show the answer" (the lecturer alone); a demo that
# needs a press: start the training, take a step (of the merges, of generation), run a measurement
# ("Play" is left to the mouse: its ticks redraw the slide under the lecturer).
CLICKER_KEYS = (
    r"class_ask-.+", r"class_reveal-.+", r"class_solo-.+-skip", r"room_ask-.+", r"room_reveal-.+",
    r"train_start", r"tok_next", r"gen_greedy_next", r"gen_step", r"kv_measure", r"cost_measure",
    r"loss_noise_go", r"loss_line_go", r"bey_w_train", r"bey_r_train",
)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "lmviz"


def presenting() -> bool:
    """True in presenter mode (sidebar toggle or ``?present=1``)."""
    return bool(st.session_state.get("present", False))


def _font_floor(node, floor: int) -> None:
    """Raise every font size in a figure's JSON (layout and traces) to at least ``floor``."""
    if isinstance(node, dict):
        for k, v in node.items():
            if (k.endswith("font") or k == "font") and isinstance(v, dict):
                if isinstance(v.get("size"), (int, float)) and v["size"] < floor:
                    v["size"] = floor
            _font_floor(v, floor)
    elif isinstance(node, list):
        for v in node:
            _font_floor(v, floor)


def on_phone() -> bool:
    """True when the browser says it is a phone: "Mobi" in its User-Agent (what phone browsers
    send) or the client hint ``Sec-CH-UA-Mobile: ?1``. Read once per session."""
    if "lmviz_phone" not in st.session_state:
        try:
            headers = st.context.headers
            ua = headers.get("User-Agent") or ""
            st.session_state["lmviz_phone"] = "Mobi" in ua or headers.get("Sec-CH-UA-Mobile") == "?1"
        except Exception:  # noqa: BLE001 - no request (AppTest, a bare run): not a phone
            st.session_state["lmviz_phone"] = False
    return st.session_state["lmviz_phone"]


def presented(fig):
    """A copy of ``fig`` for presenter mode (the original may be a cached, shared figure): every
    text at least PRESENT_FONT px, and no taller than PRESENT_MAX_H px so that one chart and its
    controls fit one screen at 1280x720."""
    import plotly.graph_objects as go

    spec = fig.to_plotly_json()
    layout = spec.setdefault("layout", {})
    layout.setdefault("font", {})["size"] = max(PRESENT_FONT, layout.get("font", {}).get("size") or 0)
    _font_floor(spec, PRESENT_FONT)
    for k, axis in layout.items():
        # a log axis writes its minor labels (2, 5 between decades) at 3/4 of its tick font
        if k[1:5] == "axis" and isinstance(axis, dict) and axis.get("type") == "log":
            tick = axis.setdefault("tickfont", {})
            tick["size"] = max(tick.get("size") or 0, -(-PRESENT_FONT * 4 // 3))
    # a horizontal legend of many entries wraps into rows at the projector's type and takes the
    # plot's height (the induction chart's 7 entries: 4 rows, a third of its 500 px): beside the
    # plot instead, where a 1280 px wide screen has the room
    legend = layout.get("legend") or {}
    named = [tr for tr in spec.get("data", []) if tr.get("showlegend", True) and tr.get("name")]
    if legend.get("orientation") == "h" and len(named) > PRESENT_LEGEND_ROW and layout.get("showlegend", True):
        layout["legend"] = {**legend, "orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
    # text inside bars is shrunk to fit them unless told otherwise
    layout["uniformtext"] = {"minsize": PRESENT_FONT, "mode": "show"}
    if layout.get("height"):
        layout["height"] = min(int(layout["height"] * 1.25), PRESENT_MAX_H)
    else:
        layout["height"] = PRESENT_MAX_H
    return go.Figure(spec, skip_invalid=True)


def figure(builder, *args, **kwargs):
    """``builder(*args, **kwargs)``, built once per process for the same inputs and shared by every
    session (the viz/ builders are pure, and a shown figure is never changed: presenter mode and
    phones draw copies). A chapter's default view then costs its students no figure building:
    Plotly's property validation was most of a warm rerun of /beyond (AppTest, profiled: 1.42 s
    before, 0.22 s with its figures shared).
    Inputs Streamlit cannot hash are built each time, and counted in ``UNSHARED`` (by builder)."""
    from streamlit.runtime.caching.cache_errors import UnhashableParamError

    from viz.theme import minus_labels

    name = f"{builder.__module__}.{builder.__qualname__}"
    try:
        return _built(name, builder, args, kwargs)
    except UnhashableParamError:
        with _PER_FIGURE_LOCK:
            UNSHARED[name] += 1
        return minus_labels(builder(*args, **kwargs))


UNSHARED: collections.Counter = collections.Counter()   # builder -> figures built unshared


def _array_digest(a) -> str:
    """The whole array's content, shape and dtype as a digest: Streamlit's own hash samples an
    array of 500,000 elements or more (two such inputs could share a figure), and refuses a
    torch tensor (a chapter's records hold them: the figure was then built in every session)."""
    import hashlib

    import numpy as np

    head = f"{tuple(a.shape)}{a.dtype}"
    if not isinstance(a, np.ndarray):                 # a torch tensor: its bytes, any dtype
        import torch

        a = a.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
    data = repr(a.tolist()).encode() if a.dtype == object else np.ascontiguousarray(a).reshape(-1).view(np.uint8).data
    return head + hashlib.blake2b(data, digest_size=16).hexdigest()


@st.cache_resource(max_entries=256, show_spinner=False,
                   hash_funcs={"numpy.ndarray": _array_digest, "torch.Tensor": _array_digest,
                               "torch.nn.parameter.Parameter": _array_digest})
def _built(name: str, _builder, args: tuple, kwargs: dict):
    from viz.theme import minus_labels

    return minus_labels(_builder(*args, **kwargs))   # negative labels with a true minus, as the axes


def plot(fig, *, key: str | None = None, filename: str = "lmviz") -> None:
    """Show a Plotly figure with its PNG download button named ``lmviz-<filename>-<lang>.png``."""
    twin = text_twin(fig)                    # of the original: a cached figure's twin is kept
    if presenting():
        fig = presented(fig)
    elif on_phone():                         # side-by-side panels are crushed at 390 px
        fig = _per_figure(fig, "phone", lambda: _stacked(fig)) or fig   # made once for a shared figure
    _plotly(fig, key, filename)
    # the chart's text twin, computed from its data (viz/describe.py): read by a screen reader
    # right after the chart, kept out of sight (TWIN_CSS), printed under the chart in the hand-out
    st.markdown(f'<p class="{TWIN_CLASS}" lang="{lang()}">{escape(twin)}</p>', unsafe_allow_html=True)
    handout.remember("fig", f"fig:{key or filename}", (fig, twin))


def _plotly(fig, key: str | None, filename: str) -> None:
    config = {
        "displaylogo": False,
        # the PNG export only: zoom, pan, select and autoscale buttons were ~7 Tab stops a chart
        "modeBarButtons": [["toImage"]],
        "toImageButtonOptions": {"format": "png", "filename": f"lmviz-{_safe_name(filename)}-{lang()}",
                                 "scale": 2},
    }
    # Streamlit's theme sizes its chart text in rem, and presenter mode sizes the page's type by
    # the window (html font-size, _PRESENT_CSS): there the theme is Streamlit's own, as it is for a
    # figure viz.theme.flat leaves alone (a template with trace defaults)
    drawn = None if presenting() else _per_figure(fig, "flat", lambda: _flat_figure(fig))
    if drawn is None:
        st.plotly_chart(fig, key=key, config=config, width="stretch")
    else:
        st.plotly_chart(drawn, key=key, config=config, width="stretch", theme=None)


TWIN_CLASS = "lmviz-twin"
# visually hidden, still read by assistive technology; its element container is taken out of the
# page's flow, so the chart keeps its spacing
TWIN_CSS = (f"<style>[data-testid=stElementContainer]:has(.{TWIN_CLASS}){{position:absolute!important;"
            "width:1px!important;min-width:0!important;height:1px!important;margin:-1px;padding:0;"
            "overflow:hidden;clip-path:inset(50%);white-space:nowrap;border:0}</style>")


_PER_FIGURE: dict[int, dict] = {}   # id(figure) -> {what: value}, while the figure lives
_PER_FIGURE_LOCK = threading.Lock()

# A chart whose box is a fraction of a pixel wide (a third of the page: 302.671875 px) is drawn
# twice: Streamlit sizes it first at 302.672 and then at its exact width, a new size that Plotly
# redraws in full. A whole number of pixels is the same for both.
CHART_CSS = ("<style>[data-testid=stFullScreenFrame]:has(> [data-testid=stPlotlyChart])"
             "{width:round(down,100%,1px)!important}</style>")


def _per_figure(fig, what, make):
    """``make()``, kept with ``fig`` under ``what``: a figure shared between reruns (a chapter's
    cached figures, never mutated) keeps what was made from it. The entry goes with the figure
    (weakref.finalize), so an id is never reused for another figure's value."""
    key = id(fig)
    with _PER_FIGURE_LOCK:
        hit = _PER_FIGURE.get(key, {})
        if what in hit:
            return hit[what]
    value = make()
    with _PER_FIGURE_LOCK:
        if key not in _PER_FIGURE:
            weakref.finalize(fig, _forget_figure, key)
        _PER_FIGURE.setdefault(key, {})[what] = value
    return value


def _forget_figure(key: int) -> None:
    with _PER_FIGURE_LOCK:
        _PER_FIGURE.pop(key, None)


def _stacked(fig):
    """viz.theme.stacked(fig), or None when it is ``fig`` itself (kept with the figure, a value
    that is the figure would keep it alive)."""
    from viz.theme import stacked

    out = stacked(fig)
    return None if out is fig else out


def _flat_figure(fig):
    """The figure Streamlit is handed (viz.theme.flat: drawn once in the browser, not twice), or
    None where it cannot be flattened."""
    import plotly.graph_objects as go

    from viz.theme import flat

    spec = flat(fig)
    if spec is None:
        return None
    spec["layout"]["template"] = {}         # not plotly's default template, which a Figure adds
    out = go.Figure(spec)
    out.layout.template = None              # ... and none at all in what the browser gets
    return out


def text_twin(fig) -> str:
    """The figure's text twin in the current language (viz.describe over the catalogue), kept
    with the figure: describing one reads many Plotly properties, which cost ~5 ms a chart."""
    from viz.describe import describe

    code = lang()
    return _per_figure(fig, f"twin:{code}", lambda: describe(fig, t, code))


_DROPZONE = "[data-testid=stFileUploaderDropzone]"


def uploader_css(code: str) -> str:
    """Streamlit 1.67 writes its file uploader's button ("Upload") and its size line ("64MB per file
    • TXT") in English whatever the page's language, with no option to change them. Outside English
    the button's text is replaced by the catalogue's (CSS generated content, which a screen reader
    also reads) and the size line is hidden: every lmviz uploader's label already gives the file
    type and the limit in the page's language."""
    if code == "en":
        return ""
    import json

    label = json.dumps(translate("common.upload_button", code), ensure_ascii=False)
    p = f"{_DROPZONE} button [data-testid=stMarkdownContainer] p"
    return (f"<style>{p}{{font-size:0}}{p}::after{{content:{label};font-size:1rem}}"
            "[data-testid=stFileUploaderDropzoneInstructions]{display:none}</style>")


def page_language() -> None:
    """The page's ``<html lang>`` and the twins' style: once per run (app.py). A screen reader
    picks its voice from ``lang``; Streamlit's own page says "en" whatever the language."""
    code = lang()
    st.html(TWIN_CSS + CHART_CSS + uploader_css(code))   # style only: Streamlit puts it in the event container
    with st.sidebar:
        st.html(f'<script>document.documentElement.lang="{code}";</script>',
                unsafe_allow_javascript=True)


def svg(markup: str, *, key: str) -> None:
    """An inline SVG built by a ``viz`` function (its text already escaped there)."""
    st.markdown(markup, unsafe_allow_html=True)
    handout.remember("html", f"html:{key}", markup)


def unknown_chars(unknown, *, limit: int = 12) -> None:
    """The one message for characters the model's vocabulary lacks (they were left out of its
    input); whitespace made visible, user text escaped. Nothing when ``unknown`` is empty."""
    if not unknown:
        return
    from viz.tokenization import visible

    shown = " ".join(visible(u) for u in unknown[:limit]) + (" …" if len(unknown) > limit else "")
    st.warning(t("common.unknown_chars", n=len(unknown), chars=escape(shown)))


def context_cut(fit) -> None:
    """The one sentence for a text cut to the model's context (``lmviz.tokenizer.fit_context``'s
    record): how many tokens it has, how many the model reads, which end was left out. Nothing
    when the model reads the whole text."""
    if fit.cut > 0:
        st.info(t(f"common.context_cut_{fit.keep}", total=fit.total, limit=fit.limit, cut=fit.cut))


def upload_too_big(up, max_bytes: int, message: str) -> bool:
    """True (and ``message`` shown as an error) when the uploaded file ``up`` exceeds max_bytes."""
    if up.size > max_bytes:
        st.error(message)
        return True
    return False


def upload_text(up, max_bytes: int, messages: dict[str, str], *, nul_ok: bool = False) -> str | None:
    """The uploaded .txt ``up`` as text, or None with a message on the page: the ONE upload check
    (size, then lmviz.bpe.text_from_bytes). ``messages`` maps "too_big", "utf8" and (unless
    ``nul_ok``) "binary" to the sentence shown."""
    from lmviz.bpe import text_from_bytes

    if upload_too_big(up, max_bytes, messages["too_big"]):
        return None
    text, why = text_from_bytes(up.getvalue(), max_bytes, nul_ok=nul_ok)
    if text is None:
        st.error(messages[why])
    return text


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(\[*`$])|(?<=[。！？])(?=\S)")


def _balanced(text: str) -> bool:
    """No Markdown span (bold, code, math) left open in ``text``."""
    return text.count("**") % 2 == 0 and text.count("`") % 2 == 0 and text.count("$") % 2 == 0


def slide_chunks(text: str, per: int = 2) -> list[str]:
    """Prose cut into blocks of at most ``per`` sentences (presenter mode: one block a step).
    Lists, tables, code, headings and quotes stay whole; a cut never falls inside a Markdown span.

    >>> slide_chunks("One. Two. Three.")
    ['One. Two.', 'Three.']
    >>> slide_chunks("第一句。第二句。第三句。")
    ['第一句。第二句。', '第三句。']
    """
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip()):
        if not para.strip():
            continue
        if re.match(r"\s*([-*+]\s|[|>#]|\d+\.\s|```|\$\$)", para) or "\n" in para.strip():
            out.append(para)
            continue
        sentences: list[str] = []
        for piece in _SENTENCE_END.split(para.strip()):
            if sentences and not _balanced(sentences[-1]):
                sentences[-1] += " " + piece
            else:
                sentences.append(piece)
        for i in range(0, len(sentences), per):
            out.append(" ".join(sentences[i:i + per]).replace("。 ", "。").replace("？ ", "？")
                       .replace("！ ", "！"))
    return out or [text]


def md(text: str) -> None:
    """``st.markdown`` for chapter prose (kept for the HTML hand-out). Never pass raw user text.
    In presenter mode the prose is cut into blocks of two sentences, one per step."""
    if lang() == "zh":
        from lmviz.numfmt import tidy_zh

        text = tidy_zh(text)
    if presenting():
        for chunk in slide_chunks(text):
            st.markdown(chunk)
    else:
        st.markdown(text)
    handout.remember("md", f"md:{hash(text)}", text)


def end_page() -> NoReturn:
    """End this page's run here: what the page drew so far is the page (a chapter waiting for its
    text, its task or the room's sentences). Use it, never ``st.stop()``: app.py's end of a page
    run (a follower leaving the gate) then still runs (``ui.runtime.page_run``)."""
    from ui.runtime import PageEnd

    raise PageEnd


def caption(text: str, **kwargs) -> None:
    """``st.caption``, kept for the hand-out (small print: a model's provenance, a measurement's
    conditions). Never pass raw user text."""
    st.caption(text, **kwargs)
    handout.remember("caption", f"caption:{hash(text)}", text)


def latex(expr: str) -> None:
    """``st.latex``, kept for the hand-out (where the KaTeX copy in assets/katex renders it offline)."""
    st.latex(expr)
    handout.remember("tex", f"tex:{hash(expr)}", expr)


def code(text: str, **kwargs) -> None:
    """``st.code``, kept for the hand-out as a code block."""
    st.code(text, **kwargs)
    handout.remember("code", f"code:{hash(text)}", text)


def metric(label: str, value, *, at=None, **kwargs) -> None:
    """``st.metric`` (in the column ``at``, or where the page is drawing), kept for the hand-out as
    "label: value" with its ``delta``. Never pass raw user text."""
    with at if at is not None else _nothing():
        st.metric(label, value, **kwargs)
        delta = kwargs.get("delta")
        shown = (label, str(value), None if delta is None else str(delta))
        handout.remember("metric", f"metric:{hash(shown)}", shown)


def info(text: str, **kwargs) -> None:
    """``st.info`` for a line of the lesson (a stepper's state), kept for the hand-out as prose.
    A notice about the app itself (no model yet, press a button) stays ``st.info``: it has no
    place in a hand-out. Never pass raw user text."""
    st.info(text, **kwargs)
    handout.remember("md", f"info:{hash(text)}", text)


def table(data, **kwargs) -> None:
    """``st.dataframe``, kept for the hand-out as an HTML table (built only when it is downloaded)."""
    st.dataframe(data, **kwargs)
    handout.remember("table", f"table:{hash(repr(data)[:4000])}", (data, not kwargs.get("hide_index", False)))


_NUMBERED = re.compile(r"^\s*\d+\s*·\s*")
_SECTIONS = "lmviz_sections"       # session key: the section keys of the chapter being drawn


def section(key: str, level: int = 2) -> None:
    """A section header from the i18n key ``key``. A title written "N · …" in the catalogue gets
    its number from its place in the chapter's section list (:func:`section_number`), not from
    the catalogue."""
    title = t(key)
    if _NUMBERED.match(title) and section_number(key):
        title = f"{section_number(key)} · {_NUMBERED.sub('', title)}"
    st.markdown(f"{'#' * level} {html.escape(title)}")
    handout.remember("h", f"h:{key}", title)


def page_header(title_key: str, intro_key: str | None = None) -> None:
    """The chapter's title and its one-paragraph introduction (starts a new hand-out record)."""
    from ui import follow, questions

    # classroom mode (ui/follow.py): the lecturer's class bar, the follow banner and its poll;
    # then the room's open question (ui/questions.py); drawn above every chapter, so no page
    # knows about classes
    follow.top()
    questions.room_question()
    title = t(title_key)
    handout.start(title)
    st.title(title)
    if intro_key:
        md(t(intro_key))


def section_number(key: str) -> int | None:
    """The 1-based place of section ``key`` in the chapter being drawn (None when it is not one
    of its sections): what a sentence such as "section 5 shows why" prints, computed."""
    keys = st.session_state.get(_SECTIONS) or []
    return keys.index(key) + 1 if key in keys else None


def claim(c, **extra) -> str:
    """The sentence of ``c`` (an :class:`lmviz.chapters.claims.Claim`) in the current language, formatted
    with the numbers behind it (and ``extra``, e.g. names the page supplies)."""
    return t(c.key, **{**dict(c.values), **extra})


def escape(text: str) -> str:
    """Escape user text before it goes into HTML."""
    return html.escape(text, quote=True)


@contextmanager
def controls():
    """Secondary controls: shown normally, folded into an expander in presenter mode."""
    if presenting():
        with st.expander(t("common.more_controls"), expanded=False):
            yield
    else:
        yield


# ------------------------------------------------------------------------ sections -------
def _next_chapter_file() -> str | None:
    from ui.chapters import registered

    here = st.session_state.get("lmviz_page_file")
    files = [c.file for c in registered()]
    if here in files and files.index(here) + 1 < len(files):
        return files[files.index(here) + 1]
    return None


def _step(key: str, delta: int, n: int) -> None:
    i = st.session_state.get(key, 0) + delta
    if i >= n:
        st.session_state["lmviz_goto_next"] = True
        i = n - 1
    st.session_state[key] = max(0, i)


def run_sections(sections) -> None:
    """Render a chapter made of ``[(title_key, function), ...]`` sections.

    Normally every section is drawn in order. In presenter mode one section is shown at a time,
    with previous / next buttons (PageUp / PageDown, as sent by presentation clickers); "next"
    on the last section moves on to the next chapter. The section number is kept in ``?sec=``.
    """
    from ui import follow

    st.session_state[_SECTIONS] = [k for k, _ in sections]
    followed = follow.followed_section(len(sections)) if follow.following() else None
    if followed is not None:
        # a follower sees the section the lecturer shows (all of them once stepped away)
        shown = [sections[followed]]
    elif presenting():
        n = len(sections)
        idx_key = f"lmviz_sec:{sections[0][0].split('.')[0]}"
        if idx_key not in st.session_state:
            raw = st.query_params.get("sec", "1")
            ok = raw.isdigit() and 1 <= int(raw) <= n
            if not ok:
                st.info(t("common.url_bad", param="sec", value=raw[:40]))
            st.session_state[idx_key] = int(raw) - 1 if ok else 0
        if st.session_state.pop("lmviz_goto_next", False):
            nxt = _next_chapter_file()
            if nxt:
                st.query_params["sec"] = "1"
                st.switch_page(nxt)
        i = st.session_state[idx_key]
        left, mid, right = st.columns([2, 4, 2], vertical_alignment="center")
        left.button(t("common.prev"), key="lmviz_prev", shortcut="PageUp", disabled=i == 0,
                    on_click=_step, args=(idx_key, -1, n), width="stretch")
        mid.progress((i + 1) / n, text=t("common.section_of", i=i + 1, n=n))
        right.button(t("common.next") if i + 1 < n else t("common.next_chapter"), key="lmviz_next",
                     shortcut="PageDown", on_click=_step, args=(idx_key, 1, n), width="stretch",
                     type="primary")
        st.query_params["sec"] = str(i + 1)
        follow.publish_now()
        shown = [sections[i]]
    else:
        shown = sections
    with st.container(key="lmviz-slides") if presenting() and followed is None else _nothing():
        _draw_sections(sections, shown)
    _download_html()


@contextmanager
def _nothing():
    yield


_PAGE_CSS = (
    # a focus ring every control shows when reached from the keyboard (Streamlit's own is faint
    # on links and missing on some buttons)
    ":is(a,button,input,select,textarea,summary,[role=slider],[role=radio],[role=checkbox],"
    "[role=switch],[role=tab],[tabindex]):focus-visible"
    "{outline:3px solid #0B5CAD!important;outline-offset:2px!important}"
    # a disabled control's text stays readable (Streamlit's light grey is 2.6:1)
    ":is(button,label,[role=slider])[disabled],:is(button,label)[disabled] *,"
    "[data-disabled=true],[data-disabled=true] *,[aria-disabled=true],[aria-disabled=true] *"
    "{color:#6B6A69!important}"
    # code wraps instead of scrolling sideways (a scrolling box must be reachable by keyboard)
    "[data-testid=stMain] pre{overflow:visible!important}"
    "[data-testid=stMain] pre code{white-space:pre-wrap!important;overflow-wrap:anywhere}"
    # phones and tablets: Plotly's toolbar would sit over every chart's title, and a heading's link
    # icon is shown on hover only: an invisible 16 px target a finger lands on (no hover on touch)
    "@media (pointer:coarse){.modebar-container,[data-testid=stHeaderActionElements]{display:none!important}}"
    # narrow screens: columns stack, nothing wider than the screen, touch targets of 44 x 44 px
    # (tests/test_browser_phone.py measures every chapter): every button (a number input's -/+,
    # a select's arrow, a label's help icon, a table's toolbar, the sidebar's >>), link, text,
    # number and select field, expander summary, radio or checkbox label, and a slider's track
    "@media (max-width:480px){"
    "[data-testid=stHorizontalBlock]{flex-direction:column!important;flex-wrap:wrap!important}"
    "[data-testid=stHorizontalBlock]>[data-testid=stColumn]{width:100%!important;flex:1 1 100%!important;min-width:0!important}"
    ":is([data-testid=stMain],[data-testid=stSidebar],[data-testid=stHeader]) button{min-height:44px;min-width:44px}"
    "[data-testid=stSidebarNav] a,[data-testid=stPageLink-NavLink]{min-height:44px;align-items:center}"
    "[data-testid=stLinkButton] a{min-height:44px;min-width:44px;align-items:center}"   # the hand-out's link
    ":is([data-testid=stMain],[data-testid=stSidebar]) :is(label:has(input[type=radio]),label:has(input[type=checkbox]))"
    "{min-height:44px;min-width:44px;align-items:center}"
    ":is([data-testid=stNumberInputContainer],[data-testid=stTextInputRootElement],[data-testid=stSelectbox] [role=group],"
    "[data-testid=stSlider] [role=group]>div,[data-testid=stExpander] summary,"
    ":is([data-testid=stMain],[data-testid=stSidebar]) input:not([type=radio],[type=checkbox],[type=range]))"
    "{min-height:44px}"
    # a chapter link's label wraps instead of being cut at the screen's edge
    "[data-testid=stPageLink-NavLink] :is(span,div,p){white-space:normal!important}"
    # clip, not hidden: a hidden overflow-x made the block a second scroller inside the page's own
    "[data-testid=stMainBlockContainer]{overflow-x:clip}"
    "}"
)


def page_chrome() -> None:
    """Styles every page carries (app.py draws them on every run): focus rings, the phone layout."""
    st.html(f"<style>{_PAGE_CSS}</style>")


_PRESENT_CSS = (
    # text for the back of a room: body text 3 % of the window's height (32 px at 1080p), never
    # under 28 px (a 720p projector is as big as a 1080p one); a row of columns that then runs
    # past the slide's bottom is drawn smaller by assets/js/slides.js
    "html{font-size:max(28px,min(3.0vh,1.6875vw))}"
    "[data-testid=stMainBlockContainer]{padding-top:3rem}"
    "h1{font-size:2rem!important}h2{font-size:1.6rem!important}"
    "[data-testid=stHeader]{height:2.5rem}"
    "[data-testid=stMetricValue]{font-size:1.5rem}"
    "[data-lmviz-off]{opacity:0!important;pointer-events:none}"
    # where the lecturer is, on every slide (slides.js writes it): the section bar is on a
    # section's first step only
    ".lmviz-where{position:fixed;right:1rem;bottom:.3rem;z-index:999990;font-size:.6rem;color:#5C5B5A;"
    "background:rgba(255,255,255,.9);padding:0 .4rem;border-radius:.3rem;pointer-events:none}"
    # the slides are the lecture: the hand-out button (the chapter's view without presenter mode
    # has it) and the sidebar's opener stay out of the way (the opener shows on hover)
    ".st-key-lmviz_download_html,[data-testid=stMain] :has(+ .st-key-lmviz_download_html){display:none}"
    "[data-testid=stExpandSidebarButton],[data-testid=stSidebarCollapsedControl]{opacity:.15}"
    "[data-testid=stExpandSidebarButton]:hover,[data-testid=stSidebarCollapsedControl]:hover,"
    "[data-testid=stExpandSidebarButton]:focus-visible{opacity:1}"
)


def present_chrome() -> None:
    """Presenter mode's type sizes and the step-by-step script (assets/js/slides.js, our own
    constant code: nothing from a user or a link goes into it)."""
    from ui.chapters import ROOT

    js = (ROOT / _SLIDES_JS).read_text(encoding="utf-8")
    acts = json.dumps([f"^st-key-{k}$" for k in CLICKER_KEYS])
    st.html(f"<style>{_PRESENT_CSS}</style><script>window.lmvizActs = {acts};{js}</script>",
            unsafe_allow_javascript=True)


def _draw_sections(sections, shown) -> None:
    from ui import follow, questions

    for j, (key, body) in enumerate(shown):
        # predict, then reveal: a chapter's questions come just before the section that answers
        # them, and that section is not drawn at all (its numbers never reach the browser) until
        # the answer is revealed (ui.questions.revealed)
        asked = questions.questions_for(key, first=(j == 0 and key == sections[0][0]))
        if asked and follow.alone() and not presenting() and not all(map(questions.revealed, asked)):
            _answered_here(key, body, asked)
        else:
            _asked_section(key, body, asked)


def _asked_section(key: str, body, asked) -> None:
    """The section ``key`` after its questions ``asked``: ``body`` once every one is revealed."""
    from ui import questions

    for q in asked:
        questions.question_block(q)
    section(key)
    if all(questions.revealed(q) for q in asked):
        body()
    else:
        questions.hidden_note()


@st.fragment
def _answered_here(key: str, body, asked) -> None:
    """A student alone answers a section's questions in a fragment: a pick, Check or Skip reruns
    this section (and draws it once revealed), not the whole chapter. Only while a question is
    open: once every one is revealed, the page's next run draws the section in that run, so
    whatever its body starts (a training and its buttons) follows the page; a body that polls a
    task asks for that run at once (``ui.session.poll``). In a class the reveal comes from the
    lecturer's side, so a class draws its sections in the page's own run; so does presenter mode,
    whose slides (assets/js/slides.js) mark the page's own elements as steps: a lecturer who
    starts a class there found the reused nodes of the fragment left inert."""
    _asked_section(key, body, asked)


# ------------------------------------------------------------------------ hand-out -------
def _download_html() -> None:
    # a link to lmviz's own route (ui.handout.routes): the file is made from this session's record
    # when the browser asks for it. (It was Streamlit's deferred download button, whose made file
    # any session's next run could sweep before the browser fetched it: half the presses with
    # another session busy, until a patch of Streamlit's media manager kept it.)
    st.divider()
    if not handout.served():
        st.caption(t("common.handout_needs_serve"))
        return
    language = lang()
    slug = _safe_name(st.session_state.get("lmviz_page_file", "chapter").split("/")[-1].removesuffix(".py"))
    st.link_button(t("common.download_html"), handout.url(handout.record(), f"lmviz-{slug}-{language}.html", language),
                   icon=":material/download:", key="lmviz_download_html")
