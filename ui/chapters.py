"""The chapters of lmviz, in teaching order. ``app.py`` registers those whose page file exists.

A fresh server's first visitor (Streamlit 1.67): the first script run of a server process with a
``pages/`` folder is run by Streamlit's legacy ``pages/`` mode (``PagesManager.
uses_pages_directory`` is decided once per process, before ``app.py`` has run, and only
``st.navigation`` turns it off). That mode knows a page only by its file stem, so a link to
``/kv-cache`` (``pages/kv_cache.py``) got a "Page not found" dialog before ``app.py`` could
resolve it. Every chapter whose URL path differs from its file's stem therefore has an **alias**
``pages/<url path>.py`` that only calls :func:`run_app`: the legacy lookup finds it, and
``app.py``'s navigation, run from there, resolves the same URL path (a page's identity is its URL
path) to the real chapter. ``st.navigation`` never lists the aliases. (Paths equal to a stem are
handled by ``ui.render``: the legacy mode runs the chapter itself, which reruns through app.py.)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Chapter:
    slug: str       # URL path ("" for the home page at /)
    file: str       # page script, relative to the repo root
    title_key: str  # i18n key of the chapter's title
    icon: str       # Material icon shown in the navigation

    @property
    def heading_key(self) -> str:
        """i18n key of the chapter's page title (its h1): "att.nav" -> "att.title"."""
        return self.title_key.split(".", 1)[0] + ".title"

    @property
    def exists(self) -> bool:
        return (ROOT / self.file).exists()


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("", "pages/home.py", "home.nav", ":material/home:"),
    Chapter("tokenization", "pages/tokenization.py", "tok.nav", ":material/text_fields:"),
    Chapter("embedding", "pages/embedding.py", "emb.nav", ":material/grid_on:"),
    Chapter("autoregression", "pages/autoregression.py", "ar.nav", ":material/link:"),
    Chapter("attention", "pages/attention.py", "att.nav", ":material/visibility:"),
    Chapter("transformer-block", "pages/transformer_block.py", "blk.nav", ":material/view_agenda:"),
    Chapter("loss-and-gradients", "pages/loss_and_gradients.py", "loss.nav", ":material/trending_down:"),
    Chapter("training", "pages/training.py", "train.nav", ":material/model_training:"),
    Chapter("generation", "pages/generation.py", "gen.nav", ":material/auto_awesome:"),
    Chapter("kv-cache", "pages/kv_cache.py", "kv.nav", ":material/memory:"),
    Chapter("cost", "pages/cost.py", "cost.nav", ":material/speed:"),
    Chapter("beyond", "pages/beyond.py", "bey.nav", ":material/explore:"),
)


def alias_file(c: Chapter) -> str | None:
    """``pages/<slug>.py`` when the chapter's URL path is not its file's stem (else None)."""
    if not c.slug or Path(c.file).stem == c.slug:
        return None
    return f"pages/{c.slug}.py"


def run_app() -> None:
    """Run ``app.py`` inside this script run: what an alias page does when Streamlit's legacy
    ``pages/`` mode picked it (a fresh server's first run, or any AppTest run, which resets that
    mode before each run). ``app.py``'s ``st.navigation`` then switches the mode off for the
    server and resolves the same URL path to the real chapter, in this same run: no rerun (a
    rerun would drop the click that started it) and no "Page not found"."""
    import runpy

    import streamlit as st
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and "lmviz_page_file" not in st.session_state:
        # A fresh session's first run (no click to lose): leave the legacy mode and rerun, so
        # that the chapter's widgets are made once, by app.py's navigation. Drawing them here
        # first left a fresh server's first visitor with empty text boxes (the legacy run's
        # widgets are other widgets to Streamlit; their values did not carry over).
        PagesManager.uses_pages_directory = False
        st.rerun()
    runpy.run_path(str(ROOT / "app.py"), run_name="__main__")


def registered() -> list[Chapter]:
    """Chapters that have a page file (a chapter is registered once it has real content)."""
    return [c for c in CHAPTERS if c.exists]


def by_slug(slug: str) -> Chapter:
    return next(c for c in CHAPTERS if c.slug == slug)
