"""Small rendering helpers shared by every page (Streamlit side)."""
from __future__ import annotations

import html
import re

import streamlit as st

from ui.i18n import lang, t


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "lmviz"


def plot(fig, *, key: str | None = None, filename: str = "lmviz") -> None:
    """Show a Plotly figure with its PNG download button named ``lmviz-<filename>-<lang>.png``."""
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": f"lmviz-{_safe_name(filename)}-{lang()}",
                                 "scale": 2},
    }
    st.plotly_chart(fig, key=key, config=config, width="stretch")


def section(key: str, level: int = 2) -> None:
    """A section header from the i18n key ``key``."""
    st.markdown(f"{'#' * level} {html.escape(t(key))}")


def page_header(title_key: str, intro_key: str | None = None) -> None:
    """The chapter's title and its one-paragraph introduction."""
    st.title(t(title_key))
    if intro_key:
        st.markdown(t(intro_key))


def escape(text: str) -> str:
    """Escape user text before it goes into HTML."""
    return html.escape(text, quote=True)


def run_sections(sections) -> None:
    """Render a chapter made of ``[(title_key, function), ...]`` sections, in order.

    Every chapter is a sequence of sections so that presenter mode can step through them; each
    function draws one section's body (its header is drawn here).
    """
    from ui.urlstate import url_notes

    for note in url_notes():
        st.info(note)
    for key, body in sections:
        section(key)
        body()
