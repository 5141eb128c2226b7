"""Lecture mode in the real browser: presenter stepper, shareable state, HTML hand-outs."""
from __future__ import annotations

import pytest

from tests.browser_util import SHOTS, exceptions, shot, skip_questions, wait_charts, wait_idle
from ui.i18n import translate

pytestmark = pytest.mark.browser


def _page(browser, width=1280, height=720):
    ctx = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    return ctx, pg


def _progress_text(pg) -> str:
    return pg.locator("[data-testid=stProgress]").first.inner_text()


@pytest.mark.parametrize("lang,slug", [("zh", "generation"), ("en", "")])
def test_presenter_mode_steps_through_sections(server, browser, lang, slug):
    ctx, pg = _page(browser)
    pg.goto(server.url(slug, present=1, lang=lang), wait_until="domcontentloaded")
    wait_idle(pg)
    wait_charts(pg)
    assert exceptions(pg) == []
    first = _progress_text(pg)
    assert "1" in first
    shot(pg, f"present-{slug or 'home'}-{lang}")
    pg.get_by_role("button", name="下一节" if lang == "zh" else "Next").click()
    wait_idle(pg)
    assert _progress_text(pg) != first
    assert "sec=2" in pg.url and "present=1" in pg.url and f"lang={lang}" in pg.url
    pg.keyboard.press("PageUp")  # the keyboard shortcut goes back
    pg.wait_for_timeout(500)
    wait_idle(pg)
    assert _progress_text(pg) == first
    ctx.close()


def test_garbage_section_in_url_falls_back_with_a_note(server, browser):
    ctx, pg = _page(browser)
    pg.goto(server.url("", present=1, sec="banana", lang="en"), wait_until="domcontentloaded")
    wait_idle(pg)
    assert exceptions(pg) == []
    assert "banana" in pg.locator("[data-testid=stAlert]").first.inner_text()
    assert "1" in _progress_text(pg)
    ctx.close()


def test_html_handout_opens_offline_with_figures(server, browser, tmp_path):
    ctx, pg = _page(browser, 1400, 900)
    pg.goto(server.url("generation", lang="zh"), wait_until="domcontentloaded")
    wait_idle(pg)
    wait_charts(pg)
    button = pg.get_by_role("link", name=translate("common.download_html", "zh")).last   # lmviz's own route
    button.scroll_into_view_if_needed()
    with pg.expect_download() as dl:
        button.click()
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    assert path.name.endswith("-zh.html")
    ctx.close()
    # open it with the network off: plotly.js must be embedded
    ctx2 = browser.new_context(offline=True)
    pg2 = ctx2.new_page()
    pg2.goto(path.as_uri())
    pg2.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    assert "温度" in pg2.content()   # the chapter's Chinese text came along
    pg2.screenshot(path=str(SHOTS / "handout-generation-zh.png"), full_page=False)
    ctx2.close()


def _first_slider_value(pg) -> float:
    return float(pg.locator("[data-testid=stSlider] input[type=range]").first.input_value())


def test_url_settings_are_restored_and_written_back(server, browser):
    ctx, pg = _page(browser, 1400, 900)
    pg.goto(server.url("generation", lang="zh", tau="2.5", p="0.6"), wait_until="domcontentloaded")
    wait_idle(pg)
    skip_questions(pg, "zh")     # the τ slider's section answers a question
    assert exceptions(pg) == []
    assert _first_slider_value(pg) == 2.5
    assert "p=0.6" in pg.url  # the top-p slider took 0.6 from the link and wrote it back
    # moving the slider writes the new value back into the URL
    slider = pg.locator("[data-testid=stSlider] input[type=range]").first
    slider.focus()
    pg.keyboard.press("ArrowRight")
    pg.wait_for_timeout(800)
    wait_idle(pg)
    assert "tau=2.55" in pg.url
    ctx.close()


def test_garbage_url_values_fall_back_with_a_note(server, browser):
    ctx, pg = _page(browser, 1400, 900)
    pg.goto(server.url("generation", lang="en", tau="banana", p="7"), wait_until="domcontentloaded")
    wait_idle(pg)
    skip_questions(pg, "en")
    assert exceptions(pg) == []
    notes = " ".join(pg.locator("[data-testid=stAlert]").all_inner_texts())
    assert "banana" in notes and "“p”" in notes
    assert _first_slider_value(pg) == 1.0
    ctx.close()
