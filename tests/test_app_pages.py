"""Every registered page runs without an exception in both languages (AppTest)."""
from __future__ import annotations

import pytest

from tests.apptest_util import all_text, open_page
from ui.chapters import registered
from ui.i18n import translate

PAGES = [c for c in registered()]


@pytest.mark.apptest
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("chapter", PAGES, ids=[c.slug or "home" for c in PAGES])
def test_page_runs(chapter, lang):
    from ui import render

    render.UNSHARED.clear()
    at = open_page(None if chapter.slug == "" else chapter.file, lang)
    assert at.title, "each chapter starts with a title"
    # a first visit's figures are shared by the room (ui.render.figure): none built per session
    assert not render.UNSHARED, f"built in every session (inputs it cannot hash): {dict(render.UNSHARED)}"
    if lang == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in all_text(at)), "Chinese page shows Chinese"


@pytest.mark.apptest
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_home_shows_the_pipeline_in_the_language(lang):
    at = open_page(None, lang)
    svg = next(m.value for m in at.markdown if str(m.value).startswith("<svg"))
    for key in ("home.stage.tokens", "home.stage.embed", "home.stage.softmax"):
        assert translate(key, lang) in svg
    assert at.query_params["lang"] == [lang] or at.query_params["lang"] == lang


def test_bad_lang_in_url_falls_back_to_english():
    at = open_page(None, "xx")
    assert translate("home.title", "en") in [t.value for t in at.title]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_home_tour_reads_the_chapters_defaults(lang):
    """The tour names the preset the training chapter selects first, the number of questions
    the autoregression chapter's toy sentence gives and the block chapter's word, per language."""
    from lmviz.chapters.autoregression import toy_teacher_forcing
    from lmviz.chapters.examples import CONTEXTS, DEFAULT_SETUP

    at = open_page("chapters/home.py", lang)
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert translate("home.tour.training", lang,
                     preset=translate(f"train.preset_{DEFAULT_SETUP[lang][1]}", lang)) in text
    assert translate("home.tour.autoregression", lang, n=len(toy_teacher_forcing(lang).pairs)) in text
    assert translate("home.tour.transformer-block", lang, word=CONTEXTS[lang][2]) in text
