"""Rendering helpers shared by every page (Streamlit side).

Besides drawing, these helpers remember what a chapter showed in the current run (its title,
prose and figures) so that "download as HTML" can hand out exactly that, offline, in the current
language; and they implement presenter mode (larger type, one section at a time, PageUp /
PageDown to step, folded secondary controls).
"""
from __future__ import annotations

import html
import re
from contextlib import contextmanager

import streamlit as st

from ui.i18n import lang, t

_EXPORT = "lmviz_export"          # session key: {"title": str, "items": {id: ("md"|"fig", obj)}}
PRESENT_FONT = 20                 # figure font size in presenter mode (14 otherwise)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "lmviz"


def presenting() -> bool:
    """True in presenter mode (sidebar toggle or ``?present=1``)."""
    return bool(st.session_state.get("present", False))


def _remember(kind: str, ident: str, obj) -> None:
    export = st.session_state.setdefault(_EXPORT, {"title": "", "items": {}})
    export["items"][ident] = (kind, obj)


def plot(fig, *, key: str | None = None, filename: str = "lmviz") -> None:
    """Show a Plotly figure with its PNG download button named ``lmviz-<filename>-<lang>.png``."""
    if presenting():
        fig.update_layout(font_size=PRESENT_FONT)
        if fig.layout.height:
            fig.update_layout(height=int(fig.layout.height * 1.25))
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": f"lmviz-{_safe_name(filename)}-{lang()}",
                                 "scale": 2},
    }
    st.plotly_chart(fig, key=key, config=config, width="stretch")
    _remember("fig", f"fig:{key or filename}", fig)


def svg(markup: str, *, key: str) -> None:
    """An inline SVG built by a ``viz`` function (its text already escaped there)."""
    st.markdown(markup, unsafe_allow_html=True)
    _remember("html", f"html:{key}", markup)


def unknown_chars(unknown, *, limit: int = 12) -> None:
    """The one message for characters the model's vocabulary lacks (they were left out of its
    input); whitespace made visible, user text escaped. Nothing when ``unknown`` is empty."""
    if not unknown:
        return
    from viz.tokenization import visible

    shown = " ".join(visible(u) for u in unknown[:limit]) + (" …" if len(unknown) > limit else "")
    st.warning(t("common.unknown_chars", n=len(unknown), chars=escape(shown)))


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


def md(text: str) -> None:
    """``st.markdown`` for chapter prose (kept for the HTML hand-out). Never pass raw user text."""
    st.markdown(text)
    _remember("md", f"md:{hash(text)}", text)


def section(key: str, level: int = 2) -> None:
    """A section header from the i18n key ``key``."""
    title = t(key)
    st.markdown(f"{'#' * level} {html.escape(title)}")
    _remember("h", f"h:{key}", title)


def page_header(title_key: str, intro_key: str | None = None) -> None:
    """The chapter's title and its one-paragraph introduction (starts a new hand-out record)."""
    from ui import classroom

    # classroom mode (ui/classroom.py): the lecturer's class bar, the follow banner and its poll,
    # the room's open question; drawn above every chapter, so no page knows about classes
    classroom.top()
    title = t(title_key)
    st.session_state[_EXPORT] = {"title": title, "items": {}}
    st.title(title)
    if intro_key:
        md(t(intro_key))


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
    from ui import classroom

    followed = classroom.followed_section(len(sections)) if classroom.following() else None
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
        classroom.publish_now()
        shown = [sections[i]]
    else:
        shown = sections
    for j, (key, body) in enumerate(shown):
        # predict, then reveal: a chapter's questions come just before the section that answers
        for q in classroom.questions_for(key, first=(j == 0 and key == sections[0][0])):
            classroom.question_block(q)
        section(key)
        body()
    _download_html()


# ------------------------------------------------------------------------ hand-out -------
def export_html(title: str, items, language: str) -> str:
    """One self-contained HTML page (plotly.js embedded, no network) of a chapter's content."""
    import plotly.offline

    parts = [f"<h1>{html.escape(title)}</h1>"]
    for kind, obj in items:
        if kind == "h":
            parts.append(f"<h2>{html.escape(obj)}</h2>")
        elif kind == "md":
            for para in str(obj).split("\n\n"):
                text = html.escape(para.strip())
                text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
                text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
                parts.append(f"<p>{text}</p>")
        elif kind == "html":  # markup built by lmviz (text escaped where it was built)
            parts.append(f"<div>{obj}</div>")
        elif kind == "fig":
            parts.append(obj.to_html(full_html=False, include_plotlyjs=False,
                                     config={"displaylogo": False}))
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="{language}"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)} - lmviz</title>"
            "<style>body{font-family:'Noto Sans','Noto Sans CJK SC',sans-serif;max-width:1100px;"
            "margin:2em auto;padding:0 1em;line-height:1.6}code{background:#f3f3f3;padding:0 .2em}"
            "</style>"
            f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script></head>'
            f"<body>\n{body}\n<hr><p><small>lmviz</small></p></body></html>\n")


def _download_html() -> None:
    export = st.session_state.get(_EXPORT) or {"title": "lmviz", "items": {}}
    title, items, language = export["title"], list(export["items"].values()), lang()
    slug = _safe_name(st.session_state.get("lmviz_page_file", "chapter").split("/")[-1].removesuffix(".py"))
    st.divider()
    st.download_button(t("common.download_html"), data=lambda: export_html(title, items, language),
                       file_name=f"lmviz-{slug}-{language}.html", mime="text/html",
                       icon=":material/download:", key="lmviz_download_html")
