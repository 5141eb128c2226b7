"""The first visitor of a freshly started server lands on the chapter the link names.

Each case starts its own server (a free port) and opens ONE link in a new browser: the chapter's
title must show in the link's language, with no "Page not found" dialog (``[role=dialog]``) and no
exception. Most cases run ``streamlit run serve.py`` (README's command); two run the plain
``streamlit run app.py``, which serves the same app without the first paint. Through ``serve.py``
the HTML page itself already holds the chapter's title and the "loading" line in the link's
language (``ui/first_paint.py``), and that block is gone once the real page is drawn. Paths whose
name differs from their file's stem (``/kv-cache`` is ``chapters/kv_cache.py``) used to show the
dialog, and paths equal to a stem (``/attention``) used to run the page without the app around it
(English, no sidebar): see ``app.py`` and ``ui/chapters.py``. A hostile link value is checked in
the real page too: the "not valid here" note shows it as text, with no link and no image.
"""
from __future__ import annotations

import html
from urllib.parse import quote, urlparse

import pytest

from tests.browser_util import skip_questions, Server, exceptions, wait_idle
from ui import first_paint
from ui.chapters import by_slug
from ui.i18n import translate

pytestmark = pytest.mark.browser

PHISH = "[click](https://x.example/phish)"
PIXEL = "![x](http://h.example/x.png)"
# (path, query) of the first visit: a path unlike its file's stem, one equal to its stem, the
# home page, and the two hostile values (each case is a fresh server, ~12 s of CI: two more paths
# like /kv-cache, /loss-and-gradients and /transformer-block, repeated what it shows)
CASES = [
    ("kv-cache", {"lang": "zh", "tau": "0.5"}),
    ("attention", {"lang": "zh", "sec": "2"}),
    ("generation", {"lang": "zh", "tau": quote(PHISH)}),
    ("autoregression", {"lang": "en", "T": quote(PIXEL)}),
    ("", {"lang": "zh"}),
]


@pytest.mark.parametrize("path,query", CASES, ids=[p or "home" for p, _ in CASES])
def test_first_visit_of_a_fresh_server(chromium, path, query):
    first_visit(chromium, path, query, "serve.py")


@pytest.mark.parametrize("path,query", [("kv-cache", {"lang": "zh", "tau": "0.5"}), ("attention", {"lang": "en"})],
                         ids=["kv-cache", "attention"])
def test_first_visit_of_the_plain_streamlit_run_app_py(chromium, path, query):
    """``streamlit run app.py`` serves the same app (the warm-up starts with the first visit)."""
    first_visit(chromium, path, query, "app.py")


def first_visit(chromium, path: str, query: dict, script: str) -> None:
    server = Server(script)
    try:
        ctx = chromium.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.set_default_timeout(90_000)
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        encodings = {}      # Streamlit's frontend files: compressed by serve.py, not by Streamlit
        page.on("response", lambda r: encodings.__setitem__(urlparse(r.url).path, r.headers.get("content-encoding"))
                if urlparse(r.url).path.endswith(".js") else None)
        lang = query["lang"]
        title = translate(by_slug(path).heading_key, lang)
        response = page.goto(server.url(path, **query), wait_until="domcontentloaded")
        if script == "serve.py":
            # the page as it arrives: the title and the loading line, painted before the frontend runs
            sent = response.text()
            assert first_paint.BLOCK_ID in sent and f'lang="{lang}"' in sent
            assert html.escape(title) in sent and html.escape(translate("common.loading_model", lang)) in sent
        wait_idle(page)
        page.wait_for_selector("[data-testid=stMain] h1", timeout=90_000)
        page.wait_for_timeout(1500)                     # a late dialog would have come by now
        assert page.locator(f"#{first_paint.BLOCK_ID}").count() == 0      # it gave way to the page
        assert page.locator("[role=dialog]").count() == 0, page.locator("[role=dialog]").all_inner_texts()
        assert title in page.locator("[data-testid=stMain] h1").first.inner_text()
        assert exceptions(page) == []
        assert f"/{path}" in page.url and f"lang={lang}" in page.url
        assert "model=default" in page.url              # the sidebar's model, so a link reproduces it
        # the app around the page ran: its sidebar holds the language switch
        assert page.locator("[data-testid=stSidebar]").get_by_text("Language / 语言").count() == 1
        # every text box shows the text the page computes with (a fresh server's first visitor
        # used to see empty boxes while the page used the defaults)
        values = page.eval_on_selector_all("[data-testid=stTextInput] input", "els => els.map(e => e.value)")
        assert all(v.strip() for v in values), values
        # nothing is fetched from anywhere but this server (no CDN: the tab icon is ours too)
        outside = [u for u in requests if urlparse(u).scheme in ("http", "https", "ws", "wss")
                   and urlparse(u).hostname not in ("127.0.0.1", "localhost")]
        assert outside == [], outside
        js = [p for p in encodings if p.startswith("/static/js/")]
        assert len(js) > 20
        assert all(encodings[p] == ("gzip" if script == "serve.py" else None) for p in js), encodings
        if path in ("generation", "autoregression"):
            assert page.locator("a[href*='x.example']").count() == 0
            assert page.locator("img[src*='h.example']").count() == 0
            assert not [u for u in requests if urlparse(u).hostname in ("h.example", "x.example")]
            shown = PHISH if path == "generation" else PIXEL
            # the note stands beside its widget, which a predict-then-reveal question may hold back
            skip_questions(page, lang)
            assert page.locator("code").filter(has_text=shown).count() >= 1
        ctx.close()
    finally:
        server.stop()
