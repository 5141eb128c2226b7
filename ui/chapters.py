"""The chapters of lmviz, in teaching order: the one list (URL path, page file, title, icon).

``app.py`` builds ``st.navigation`` from it. The page files lie in a folder NOT named ``pages``:
Streamlit (1.67) puts a server whose main script has a folder of that name beside it in its legacy
multipage mode until ``st.navigation`` first runs, so a fresh server's first visitor of a chapter
link got that page run alone (no sidebar, English) or a "Page not found" dialog. Without one,
every run, the first included, goes through ``app.py``'s navigation
(``tests/test_browser_first_visit.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
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
    Chapter("", "chapters/home.py", "home.nav", ":material/home:"),
    Chapter("tokenization", "chapters/tokenization.py", "tok.nav", ":material/text_fields:"),
    Chapter("embedding", "chapters/embedding.py", "emb.nav", ":material/grid_on:"),
    Chapter("autoregression", "chapters/autoregression.py", "ar.nav", ":material/link:"),
    Chapter("attention", "chapters/attention.py", "att.nav", ":material/visibility:"),
    Chapter("transformer-block", "chapters/transformer_block.py", "blk.nav", ":material/view_agenda:"),
    Chapter("loss-and-gradients", "chapters/loss_and_gradients.py", "loss.nav", ":material/trending_down:"),
    Chapter("training", "chapters/training.py", "train.nav", ":material/model_training:"),
    Chapter("generation", "chapters/generation.py", "gen.nav", ":material/auto_awesome:"),
    Chapter("kv-cache", "chapters/kv_cache.py", "kv.nav", ":material/memory:"),
    Chapter("cost", "chapters/cost.py", "cost.nav", ":material/speed:"),
    Chapter("beyond", "chapters/beyond.py", "bey.nav", ":material/explore:"),
    Chapter("post-training", "chapters/post_training.py", "pt.nav", ":material/school:"),
)


def registered() -> list[Chapter]:
    """Chapters that have a page file (a chapter is registered once it has real content).
    The files are looked up once per process: every rerun asks (the navigation, the questions
    of the chapter being drawn), and twelve ``stat`` calls a time were ~1 ms of each rerun."""
    return list(_registered())


@cache
def _registered() -> tuple[Chapter, ...]:
    return tuple(c for c in CHAPTERS if c.exists)


def by_slug(slug: str) -> Chapter:
    return next(c for c in CHAPTERS if c.slug == slug)
