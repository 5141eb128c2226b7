"""The training page in a real browser: start a tiny run, watch the loss curve grow, move a
slider on another chapter in a second tab while it trains, then stop it."""
from __future__ import annotations

import pytest

from tests.browser_util import skip_questions, SLIDER, exceptions, move_first_slider, shot, wait_idle
from ui.chapters import registered
from ui.i18n import translate

pytestmark = pytest.mark.browser

# the loss chart: trace 0 the training loss (lines), trace 1 the validation loss (lines+markers).
# Returns the last step drawn (the curve is downsampled to at most 400 points, so the number of
# points stops growing while the step keeps growing).
LOSS_POINTS = """() => { for (const p of document.querySelectorAll('.js-plotly-plot')) {
    const d = p._fullData;
    if (d && d.length >= 2 && d[0].mode === 'lines' && d[1].mode === 'lines+markers')
      return d[0].x.length ? Number(d[0].x[d[0].x.length - 1]) : 0;
  } return 0; }"""


def wait_points(page, more_than: float, timeout_ms: int = 60_000) -> float:
    """The last step drawn, once it is past ``more_than`` (read in the same check: a chart that
    is being redrawn between two reads must not count as 0)."""
    h = page.wait_for_function(f"() => {{ const n = ({LOSS_POINTS})(); return n > {more_than} ? n : false; }}",
                               timeout=timeout_ms, polling=250)
    return float(h.json_value())


def stop(page) -> None:
    """Press Stop unless the run already finished (a loaded machine may be slow elsewhere)."""
    if page.locator(".st-key-train_stop button:not([disabled])").count():
        page.locator(".st-key-train_stop button").click()
    page.wait_for_selector(".st-key-train_start button:not([disabled])", timeout=120_000)


# in Chinese, the lecture's language (the English run repeated it, 32 s of CI; the training
# chapter is drawn in English by tests/test_browser.py and the replay test below)
@pytest.mark.parametrize("lang", ["zh"])
def test_train_watch_stop_while_another_page_answers(server, browser, lang):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    page.goto(server.url("", lang=lang), wait_until="domcontentloaded")   # the app registers its pages
    wait_idle(page)
    # the default preset: long enough (2,000 steps) to be still running when the other tab is done
    page.goto(server.url("training", lang=lang, corpus="english", preset="default"), wait_until="domcontentloaded")
    wait_idle(page)
    skip_questions(page, lang)                 # the whole chapter (predict, then reveal)
    assert exceptions(page) == []
    page.locator(".st-key-train_start button").click()
    n1 = wait_points(page, 0)
    n2 = wait_points(page, n1)                                   # the curve grows while we watch
    assert n2 > n1
    # README's server (serve.py) trains in a process of its own, and the page says so
    page.get_by_text(translate("train.own_process", lang).strip(" ()（）"), exact=False).first.wait_for(timeout=30_000)

    # a second tab on a chapter with a slider: it must answer while the training runs
    slider_pages = [c for c in registered() if c.slug == "tokenization"]  # needs no trained model
    if slider_pages:
        ctx2 = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
        other = ctx2.new_page()
        other.bring_to_front()        # a background tab gets no animation frames: nothing would paint
        other.set_default_timeout(90_000)
        other.goto(server.url("", lang=lang), wait_until="domcontentloaded")
        wait_idle(other)
        other.goto(server.url(slider_pages[0].slug, lang=lang), wait_until="domcontentloaded")
        wait_idle(other)
        skip_questions(other, lang)
        other.wait_for_selector(SLIDER, timeout=120_000, state="attached")
        assert move_first_slider(other) is not None
        shot(other, f"training-other-tab-{lang}")
        assert exceptions(other) == []
        ctx2.close()
        page.bring_to_front()

    n3 = wait_points(page, n2, 120_000)                          # still training meanwhile (a loaded CI is slow)
    # one copy of each live chart: with two polling fragments on the page, Streamlit 1.67 left a
    # hidden copy of every chart of one of them in the page on each tick (~3 charts a second)
    # (a second copy may stand for a moment while a tick redraws the chart)
    page.wait_for_function("""() => ['train_loss', 'train_ppl_lr', 'train_att'].every(
        k => document.querySelectorAll('.st-key-' + k + ' .js-plotly-plot').length === 1)""",
                           timeout=15_000, polling=200)
    shot(page, f"training-live-{lang}")
    stop(page)
    wait_idle(page)
    final = page.evaluate(LOSS_POINTS)
    assert final >= n3
    page.wait_for_timeout(2500)
    assert page.evaluate(LOSS_POINTS) == final                   # stopped: the curve stays put
    assert exceptions(page) == []
    ctx.close()


def test_a_reload_reattaches_to_the_running_training(server, browser):
    """Reloading /training while a model trains shows the same run, further on (?run=<secret>)."""
    from ui.i18n import translate

    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    page.goto(server.url("", lang="en"), wait_until="domcontentloaded")
    wait_idle(page)
    page.goto(server.url("training", lang="en", corpus="toy", preset="default"), wait_until="domcontentloaded")
    wait_idle(page)
    skip_questions(page, "en")
    page.locator(".st-key-train_start button").click()
    n1 = wait_points(page, 0)
    page.wait_for_function("() => location.search.includes('run=')", timeout=30_000)
    secret = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    assert secret and len(secret) >= 40
    page.reload(wait_until="domcontentloaded")
    wait_idle(page)
    page.get_by_text(translate("train.run_attached", "en")).wait_for(timeout=60_000)
    skip_questions(page, "en")                  # a reload is a new session: its questions again
    n2 = wait_points(page, n1)                                   # the same run, further on
    assert n2 > n1
    assert page.evaluate("() => new URLSearchParams(location.search).get('run')") == secret
    assert exceptions(page) == []
    stop(page)
    ctx.close()
