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
    at = open_page(None if chapter.slug == "" else chapter.file, lang)
    assert at.title, "each chapter starts with a title"
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
