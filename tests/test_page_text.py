"""What each chapter's page says, read from one AppTest run per page and language: every chart has
a computed text twin in the page's language; <html lang> follows the language; the notes' points
stand beside their chapters; the text code builds follows the glossary's checked table; the
hand-out prints each twin under its chart."""
from __future__ import annotations

import functools
import html
import re

import plotly.graph_objects as go
import pytest

from tests.apptest_util import all_text, open_page
from tests.test_glossary import rules, violations
from ui.chapters import registered
from ui.i18n import LANGS, translate
from ui.handout import export_html
from ui.render import TWIN_CLASS

PAGES = registered()
_TWIN = re.compile(rf'<p class="{TWIN_CLASS}" lang="(\w+)">(.*)</p>', re.S)


def _html_bodies(node):
    if type(node).__name__ == "Html":
        yield node.proto.body
    for child in getattr(node, "children", {}).values():
        yield from _html_bodies(child)


def _lang_script(at) -> str:
    """The body of the sidebar's html element that sets <html lang>."""
    return next(b for b in _html_bodies(at.sidebar) if "documentElement.lang" in b)


@functools.lru_cache(maxsize=None)
def _run(file: str, lang: str):
    """One run of a page per language for all the checks of this module (read only)."""
    return open_page(None if file == PAGES[0].file else file, lang)


@pytest.mark.apptest
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("chapter", PAGES, ids=[c.slug or "home" for c in PAGES])
def test_every_chart_has_a_text_twin_in_the_language(chapter, lang):
    at = _run(chapter.file, lang)
    twins = [m for m in (_TWIN.fullmatch(str(e.value)) for e in at.markdown) if m]
    charts = at.get("plotly_chart")
    assert len(twins) == len(charts), "one twin per chart"
    for m in twins:
        assert m.group(1) == lang
        text = html.unescape(m.group(2))
        assert len(text) > 20 and "{" not in text, text          # formatted, not a bare pattern
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", text), text
            assert "points" not in text and "bars" not in text, text
    if chapter.slug == "":   # AppTest runs a switched-to page alone; app.py (the shell) only here
        assert f'documentElement.lang="{lang}"' in _lang_script(at)


def test_the_handout_prints_each_twin_under_its_chart():
    fig = go.Figure(go.Bar(x=["a"], y=[1.0]))
    page = export_html("T", [("h", "S"), ("fig", (fig, "Chart: <one> bar."))], "zh")
    assert '<html lang="zh">' in page
    chart, twin = page.index('class="plotly-graph-div"'), page.index("Chart: &lt;one&gt; bar.")
    assert chart < twin


# the notes' points that lmviz lacked (issue 23, item 5), each where its chapter is
NOTES = {"chapters/tokenization.py": ("tok.note_no_loss", "tok.note_not_text"),
         "chapters/autoregression.py": ("ar.note_factorisation",),
         "chapters/generation.py": ("gen.note_many",),
         "chapters/beyond.py": ("bey.note_summary", "bey.note_post_order", "bey.note_prompt_knowledge")}


@pytest.mark.apptest
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("file", sorted(NOTES))
def test_the_notes_points_stand_beside_their_chapter(file, lang):
    shown = [str(m.value) for m in _run(file, lang).markdown]
    for key in NOTES[file]:
        assert translate(key, lang) in shown, key


# the figure's own strings a reader sees on a chart beyond its twin's: text on bars and cells,
# hover boxes, annotations (a chart is prose too: its SI suffixes and its English labels)
_CHART_STRINGS = ("text", "texttemplate", "hovertext", "hovertemplate", "name", "ticktext")


def _chart_text(spec) -> list[str]:
    """Every string under one of _CHART_STRINGS (at any depth: traces, annotations, axes,
    legends, titles), and every title's, of a figure's JSON."""
    out = []

    def walk(node, key=None):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in _CHART_STRINGS + ("title",):
            out.append(node)
    walk(spec)
    return out


def _page_text(at) -> str:
    """What a reader (or a screen reader) gets from the page: prose, captions, alerts, metrics,
    the charts' twins (which carry the figures' titles, axis titles, trace names and tick texts)
    and the charts' own strings (bar and cell labels, hover boxes, annotations: _chart_text)."""
    from tests.apptest_util import figures

    parts = [all_text(at)]
    for m in at.metric:
        parts += [str(m.label), str(m.value)]
    for spec in figures(at):
        parts += _chart_text(spec)
    text = "\n".join(parts)
    text = re.sub(r"<(style|svg)\b.*?</\1>", " ", text, flags=re.S)   # markup, not text
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


PAGE_RULES = [r for r in rules() if r.on_pages()]


@pytest.mark.apptest
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("chapter", PAGES, ids=[c.slug or "home" for c in PAGES])
def test_text_built_by_code_follows_the_glossary(chapter, lang):
    text = _page_text(_run(chapter.file, lang))
    found = [f"{r.preferred}: …{hit}…" for r in PAGE_RULES if lang in r.langs()
             for hit in violations(r, text, catalogue_string=False)]
    assert found == [], "\n".join(found)


def test_streamlits_uploader_button_speaks_the_page_language():
    from ui.render import uploader_css

    assert uploader_css("en") == ""                       # Streamlit's own English stays
    css = uploader_css("zh")
    assert f'content:"{translate("common.upload_button", "zh")}"' in css
    assert "stFileUploaderDropzoneInstructions]{display:none}" in css   # "64MB per file" hidden
    assert css.startswith("<style>") and css.endswith("</style>") and css.count("<") == 2


def _handout_text(doc: str) -> str:
    """A hand-out's text as a reader sees it once KaTeX has run: its formulas (``.tex`` elements,
    typeset when the file opens), scripts (plotly.js, each chart's data) and markup removed."""
    body = doc.split("</head>", 1)[1]
    body = re.sub(r"<script\b.*?</script>", " ", body, flags=re.S)
    body = re.sub(r'<(span|div) class="tex"[^>]*>.*?</\1>', " ", body, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


@pytest.mark.apptest
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("chapter", PAGES, ids=[c.slug or "home" for c in PAGES])
def test_the_handout_typesets_every_formula(chapter, lang):
    """Issue 56 item 11: a formula in prose ($…$, the notes' temperature formula on /generation)
    was printed as raw, half-escaped TeX in the hand-out. Every chapter's hand-out (from the same
    run as the checks above) leaves no TeX outside its formula elements, and carries KaTeX when
    it has one."""
    from ui.handout import current

    at = _run(chapter.file, lang)
    doc = export_html(*current(at.session_state["lmviz_export"]), lang)
    text = _handout_text(doc)
    for tex in ("$", r"\frac", r"\tau", r"\exp", r"\sum"):
        assert tex not in text, (tex, text[max(0, text.find(tex) - 80):text.find(tex) + 80])
    if 'class="tex"' in doc:
        assert "katex.render" in doc
    if chapter.file == "chapters/generation.py":     # the notes' temperature formula, inline
        assert r'data-display="0" data-tex="p_i = \exp(z_i/\tau)\,/\,\sum_j \exp(z_j/\tau)"' in doc


def test_the_glossary_reads_a_charts_own_strings():
    """What _page_text adds beyond the twins: bar labels, hover boxes and annotations, where an SI
    suffix on a Chinese page or an English label would otherwise pass unseen."""
    fig = go.Figure(go.Bar(x=["参数"], y=[1.34e8], text=["134M"], hovertemplate="%{x}：262k<extra></extra>"))
    fig.add_annotation(text="sum", x=0, y=0)
    strings = _chart_text(fig.to_plotly_json())
    assert {"134M", "%{x}：262k<extra></extra>", "sum"} <= set(strings)
    found = {hit for r in PAGE_RULES if "zh" in r.langs() for s in strings
             for hit in violations(r, s, catalogue_string=False)}
    assert any("134M" in h for h in found) and any("262k" in h for h in found) and any("sum" in h for h in found)


# a cut that cuts nothing, a share of nothing (issue 56 item 3 and 4): "12 个 token 中的前 12 个",
# "the first 12 of 12", "（共 0 句）"
_EMPTY_WORDS = {"zh": (re.compile(r"(\d[\d,]*) ?个[^。\n]{0,12}中的前 ?\1 ?个"), re.compile(r"（共 ?0 ?[^\d.]")),
                "en": (re.compile(r"\bfirst (\d[\d,]*) of (?:the |its )?\1\b"), re.compile(r"\((?:of|out of) 0\b"))}


@pytest.mark.apptest
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("chapter", PAGES, ids=[c.slug or "home" for c in PAGES])
def test_no_sentence_cuts_nothing_or_counts_a_share_of_nothing(chapter, lang):
    text = _page_text(_run(chapter.file, lang))
    found = [m.group(0) for pat in _EMPTY_WORDS[lang] for m in pat.finditer(text)]
    assert found == [], found


def test_the_empty_words_patterns_match_what_they_look_for():
    said = {"zh": ("12 个 token 中的前 12 个", "这个比例是 0%（共 0 句）"),
            "en": ("the first 12 of 12 tokens", "0% (of 0 sentences)")}
    for lang, (cut, share) in said.items():
        assert [bool(p.search(x)) for p, x in zip(_EMPTY_WORDS[lang], (cut, share))] == [True, True]
    assert not _EMPTY_WORDS["zh"][0].search("24 个 token 中的前 12 个")          # a real cut is fine
