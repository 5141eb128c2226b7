"""The HTML hand-out (ui.handout.export_html): prose keeps its Markdown (bold, code, tables, code
blocks), text is escaped exactly once, and raw HTML in prose never becomes markup."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest

from ui.handout import export_html


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _parse(doc: str) -> _Text:
    p = _Text()
    p.feed(doc.split("</head>", 1)[1])
    return p


def test_prose_keeps_markdown_and_is_escaped_once():
    prose = ('He said "no" & left: **bold** `x<y`\n\n| τ | p(A) |\n|---|---|\n| 0.5 | 0.879 |\n\n'
             "```\nfor t in range(3):\n    pass\n```\n\n<script>alert(1)</script>")
    doc = export_html('A "title"', [("h", "计算如下"), ("md", prose)], "zh")
    p = _parse(doc)
    text = "".join(p.text)
    assert 'He said "no" & left: bold x<y' in text          # decoded once by the browser: no &quot;
    assert "&quot;" not in text and "&amp;" not in text
    assert {"table", "th", "td", "pre", "strong", "code"} <= set(p.tags)
    assert "0.879" in text and "for t in range(3):" in text
    assert "<script>alert(1)</script>" in text and "script" not in p.tags[p.tags.index("h2"):]
    assert '<html lang="zh">' in doc


def test_formulas_code_and_tables_are_kept_and_formulas_typeset_offline():
    """Issue 24, hand-outs: formulas (KaTeX inlined, fonts as data URIs: no file or network
    fetch), code blocks and tables are kept, in the hand-out as on the page."""
    tex = r"p_i=\frac{e^{z_i}}{\sum_j e^{z_j}} \quad <b>"
    rows = [{"token": "<BOS>", "p": 0.5}, {"token": "我", "p": 0.25}]
    doc = export_html("t", [("tex", tex), ("code", "ids = [1, 2]\n<x>"), ("table", (rows, False))], "en")
    p = _parse(doc)
    text = "".join(p.text)
    assert {"pre", "table", "th", "td"} <= set(p.tags)
    assert "ids = [1, 2]\n<x>" in text and "<BOS>" in text and "0.25" in text and "我" in text
    assert 'data-tex="p_i=\\frac{e^{z_i}}{\\sum_j e^{z_j}} \\quad &lt;b&gt;"' in doc
    head = doc.split("</head>", 1)[0]
    assert "katex.render" in doc and "KaTeX_Main" in head
    assert "url(fonts/" not in head and "data:font/woff2;base64," in head      # nothing to fetch
    assert "katex" not in export_html("t", [("md", "no formula")], "en").split("</head>", 1)[0].lower()


def test_a_table_from_columns_or_a_dataframe_is_escaped_once():
    import pandas as pd

    from ui.handout import _table_html

    cols = _table_html({"a": [1, 2], "b": ["<x>", None]}, False)
    assert cols.count("<tr>") == 3 and "<td>&lt;x&gt;</td>" in cols and "<td></td>" in cols
    frame = _table_html(pd.DataFrame({"p": [0.5]}, index=["我"]), True)
    assert "<th>我</th>" in frame and "<td>0.5</td>" in frame


def _drawn_out_of_order():
    """A page whose items are recorded in another order than they stand (a container filled after
    what follows it, as a fragment's rerun fills its section), and a placeholder redrawn."""
    import streamlit as st

    from ui import handout, render

    handout.start("t")
    render.md("first")
    later = st.container()
    render.md("third")
    with later:
        render.md("second")
    slot = st.empty()
    with slot:
        render.caption("old caption")
    with slot:
        render.caption("new caption")
    st.session_state["out"] = handout.current()


def test_items_come_in_page_order_and_a_redrawn_place_keeps_its_newest():
    """A section revealed by its question in a fragment is recorded after everything below it;
    the hand-out still reads in the page's order, and an item redrawn in the same place (a
    slider's caption) replaces the old one instead of piling up."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_drawn_out_of_order, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    title, items = at.session_state["out"]
    assert [obj for _, obj in items] == ["first", "second", "third", "new caption"]


def _fragment(key: str, lang: str) -> str:
    """The longest literal piece of a catalogue sentence (between its placeholders and bold)."""
    import re

    from ui.i18n import translate

    return max((p.strip() for p in re.split(r"\{[^}]*\}|\*\*", translate(key, lang))), key=len)


def _handout_of(page: str, lang: str, wrong: str | None = None, drawn: str | None = None) -> str:
    """The hand-out a student alone would download from ``page`` in ``lang`` (every question
    skipped, or ``wrong``: that question answered with a wrong option), as its text; with
    ``drawn``, once the page shows that text (a task's result drawn by its poll: a busy machine
    takes longer than the page's own wait, as a student's page polls until it is there)."""
    from tests.apptest_util import TIMEOUT, all_text, open_page, poll_until

    from lmviz.chapters.questions import QUESTIONS
    from ui.handout import current

    extra = {}
    if wrong:
        q = next(q for q in QUESTIONS if q.id == wrong)
        s = q.solve()
        extra[f"class_solo:{q.id}:done"] = next(o.id for o in s.options if o.id != s.correct)
    at = open_page(None, lang=lang)
    for k, v in extra.items():
        at.session_state[k] = v
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    if drawn is not None and drawn not in all_text(at):
        assert poll_until(at, lambda a: drawn in all_text(a), TIMEOUT), drawn
    return export_html(*current(at.session_state["lmviz_export"]), lang)


@pytest.mark.apptest
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_metrics_answers_heads_map_and_stepper_state_reach_the_handout(lang):
    """Issue 52 item 10: a hand-out holds every st.metric's label and value, the revealed answer
    in the page's language (the answer, not the reader's verdict on it), the heads map's prose
    and the cost chapter's tile-stepper state line."""
    from ui.i18n import translate

    colon = "：" if lang == "zh" else ": "
    att = _handout_of("chapters/attention.py", lang, wrong="att_scale", drawn=_fragment("att.hm_most", lang))
    assert f"{translate('att.m.shape', lang)}{colon}<strong>[" in att           # a metric: label and value
    for key in ("att.hm_sentence", "att.hm_most", "att.hm_solo"):               # the heads map's prose
        assert _fragment(key, lang) in att, key
    answer = translate("class.answer_is", lang, answer="").rstrip("。. ")
    assert att.count(answer) >= 2, answer                  # both questions' answers, skipped or not
    assert _fragment("class.wrong", lang) not in att        # ("Not quite": the reader's verdict)

    cost = _handout_of("chapters/cost.py", lang)
    for key in ("cost.max_err", "cost.n_opt", "cost.c_metric"):
        assert f"{translate(key, lang)}{colon}<strong>" in cost, key
    assert _fragment("cost.row_waiting", lang) in cost                          # the stepper's state
    assert answer in cost


def test_the_route_serves_a_held_record_and_a_sentence_for_a_gone_one():
    """The hand-out's own route (ui.handout.routes, served by serve.py): a record a session holds
    comes back as an attachment in the link's language, made once per state of the record; a
    token no session holds any more gets a 404 with a sentence in the link's language, not a
    traceback; a hostile file name is made safe."""
    import gc
    from urllib.parse import unquote

    from starlette.requests import Request

    from tests.conftest import run_async
    from ui import handout
    from ui.i18n import translate

    served = handout._SERVED[:]
    route = next(r for r in handout.routes() if r.path.startswith(handout.ROUTE))
    handout._SERVED[:] = served          # this process's pages keep the way they were served

    def get(url: str):
        path, _, query = url.partition("?")
        scope = {"type": "http", "method": "GET", "path": unquote(path), "query_string": query.encode(),
                 "headers": [(b"host", b"127.0.0.1")], "scheme": "http", "server": ("127.0.0.1", 80)}
        _, child = route.matches(scope)
        scope.update(child)
        return run_async(route.endpoint(Request(scope)))

    rec = handout.Record("Tokens")
    rec["items"]["md:1"] = ((0, 1), "md", "A **token** is a piece of text.")
    rec.rev += 1
    got = get(handout.url(rec, 'x"; evil.html', "zh"))
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
    assert got.headers["content-disposition"] == 'attachment; filename="x-evil.html"'
    assert '<html lang="zh">' in got.body.decode() and "<strong>token</strong>" in got.body.decode()
    assert handout.made(rec.token, "zh") is got.body          # the same state: made once, kept
    rec["items"]["md:2"] = ((0, 2), "md", "Another line.")
    rec.rev += 1
    assert "Another line." in get(handout.url(rec, "a.html", "zh")).body.decode()

    gone = handout.url(rec, "a.html", "en")
    del rec
    gc.collect()
    missing = get(gone)
    assert missing.status_code == 404
    assert missing.body.decode() == translate("common.handout_gone", "en")
    assert get(gone.replace("lang=en", "lang=%3Cb%3E")).body.decode() == translate("common.handout_gone", "en")
