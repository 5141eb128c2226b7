"""Real-browser tests: every registered page in both languages, in headless Chromium.

The server runs the real app (``streamlit run``) on a free port. Each page is opened once, in
the language the phone's visit (tests/test_browser_phone.py, every chapter, English and Chinese in
turn) does not use: between them every chapter is drawn in Chromium in both languages, once at a
desktop's size and once at a phone's, without a second visit of one chapter in one language (24
desktop visits were 260 s of CI). The visit checks what a first look shows (no exception box, a
heading in the page's language), then skips the predict-then-reveal questions for the whole
chapter, waits for every chart, runs axe-core (no serious or critical WCAG 2 A/AA violation),
moves the first slider when there is one (and checks the page survives), and saves a screenshot
to the folder printed at the end (``screenshots/`` unless LMVIZ_SCREENSHOTS says otherwise).
One visit does all of it: a page visit is the slow part of the suite.
"""
from __future__ import annotations

import pytest

from tests.browser_util import (axe_source, axe_violations, exceptions, move_first_slider, shot,
                                skip_questions, wait_charts, wait_idle)
from ui.chapters import registered

pytestmark = pytest.mark.browser
PAGES = registered()


@pytest.fixture(scope="module")
def axe_js() -> str:
    return axe_source()


@pytest.fixture()
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, locale="en-US")
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    yield pg
    ctx.close()


# the phone's visit takes English at even places of the chapters' order, so this one Chinese there
VISITS = [(c, "zh" if i % 2 == 0 else "en") for i, c in enumerate(PAGES)]


@pytest.mark.parametrize("chapter,lang", VISITS, ids=[f"{c.slug or 'home'}-{lang}" for c, lang in VISITS])
def test_page_in_browser(server, page, axe_js, chapter, lang):
    page.goto(server.url(chapter.slug, lang=lang), wait_until="domcontentloaded")
    wait_idle(page)
    assert exceptions(page) == []
    assert page.locator("h1").count() >= 1
    if lang == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in page.locator("h1").first.inner_text())
    skip_questions(page, lang)          # the whole chapter, answers included
    wait_charts(page, every=True)
    assert exceptions(page) == []
    assert axe_violations(page, axe_js) == []
    if move_first_slider(page) is not None:
        assert exceptions(page) == []
    shot(page, f"{chapter.slug or 'home'}-{lang}")


def test_language_survives_page_change(server, page):
    pages = [c for c in PAGES if c.slug]
    page.goto(server.url("", lang="zh"), wait_until="domcontentloaded")
    wait_idle(page)
    assert "lang=zh" in page.url
    if not pages:
        pytest.skip("no chapter registered yet")
    page.locator("[data-testid=stSidebarNav] a").nth(1).click()
    wait_idle(page)
    assert "lang=zh" in page.url
    assert any("\u4e00" <= ch <= "\u9fff" for ch in page.locator("h1").first.inner_text())


def test_language_toggle_switches_and_updates_url(server, page):
    page.goto(server.url("", lang="en"), wait_until="domcontentloaded")
    wait_idle(page)
    page.locator("[data-testid=stSidebar] label").filter(has_text="中文").click()
    page.wait_for_timeout(500)
    wait_idle(page)
    assert "lang=zh" in page.url
    assert any("\u4e00" <= ch <= "\u9fff" for ch in page.locator("h1").first.inner_text())
