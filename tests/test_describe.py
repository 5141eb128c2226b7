"""viz/describe.py: a chart's text twin, read from the figure's own data, in both languages."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from lmviz.numfmt import magnitude, short
from ui.i18n import LANGS, translate
from viz.describe import describe, plain, spaced


def _tr(lang):
    return lambda key, **fmt: translate(key, lang, **fmt)


def _twin(fig, lang="en"):
    return describe(fig, _tr(lang), lang)


@pytest.mark.parametrize("lang", LANGS)
def test_a_line_is_described_by_its_ends_extremes_and_trend(lang):
    fig = go.Figure(go.Scatter(x=[0, 1, 2, 3], y=[4.0, 1.5, 2.5, 3.0], name="loss", mode="lines"))
    fig.update_layout(title="Training <b>loss</b>", xaxis_title="step", yaxis_title="nat")
    text = _twin(fig, lang)
    assert "Training loss" in text and "<b>" not in text and "step" in text and "nat" in text
    # first point, lowest point (1.5 at step 1), highest (4 at step 0)
    assert translate("twin.trend.falls", lang) in text
    for v in ("4", "1.5", "3"):
        assert v in text


@pytest.mark.parametrize("ys,key", [([1, 2, 3], "twin.trend.rises_always"), ([3, 2, 1], "twin.trend.falls_always"),
                                    ([1, 3, 2, 2.5], "twin.trend.rises"), ([3, 1, 2, 1.5], "twin.trend.falls"),
                                    ([1, 3, 1.05], "twin.trend.same"), ([2, 2, 2], "twin.trend.flat")])
def test_the_trend_word_follows_the_data(ys, key):
    fig = go.Figure(go.Scatter(y=ys, name="s", mode="lines"))
    text = _twin(fig)
    assert translate(key, "en") in text
    others = [k for k in ("twin.trend.rises_always", "twin.trend.falls_always", "twin.trend.rises",
                          "twin.trend.falls", "twin.trend.same", "twin.trend.flat") if k != key]
    assert not any(f"; {translate(k, 'en')}." in text for k in others)


def test_few_bars_are_all_listed_many_by_their_extremes():
    few = go.Figure(go.Bar(x=["a", "b", "c"], y=[0.2, 0.5, 0.3], name="p"))
    assert "a = 0.2, b = 0.5, c = 0.3" in _twin(few)
    cats = [f"t{i}" for i in range(20)]
    vals = np.linspace(0.1, 0.9, 20)
    vals[7] = 5.0
    many = _twin(go.Figure(go.Bar(x=cats, y=vals, name="p")))
    assert "t7 (5)" in many and "t0 (0.1)" in many and "t3" not in many


def test_horizontal_bars_read_categories_from_y():
    fig = go.Figure(go.Bar(y=["x", "y"], x=[1.0, 2.0], orientation="h", name="h"))
    assert "x = 1, y = 2" in _twin(fig)


def test_tick_texts_replace_positions():
    fig = go.Figure(go.Bar(x=[0, 1, 2], y=[1, 3, 2], name="p"))
    fig.update_xaxes(tickvals=[0, 1, 2], ticktext=["<BOS>", "I", "love"])
    assert "<BOS> = 1, I = 3, love = 2" in _twin(fig)     # "<BOS>" is a token, not a tag


@pytest.mark.parametrize("lang", LANGS)
def test_a_heatmap_names_its_size_and_extreme_cells(lang):
    z = [[0.1, 0.9, None], [0.4, -0.2, 0.3]]
    fig = go.Figure(go.Heatmap(z=z, x=["k1", "k2", "k3"], y=["q1", "q2"], name="w"))
    text = _twin(fig, lang)
    assert "0.9" in text and "k2" in text and "q1" in text          # largest cell
    assert "−0.2" in text and "q2" in text                           # smallest, with a true minus
    empty = translate("twin.heatmap_empty", lang, n=1).strip()
    assert (spaced(empty) if lang == "zh" else empty) in text          # the masked cell is counted


def test_subplot_titles_name_unnamed_traces():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("scores", "weights"))
    fig.add_trace(go.Heatmap(z=[[1, 2], [3, 4]]), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[0.5, 0.5], [0.1, 0.9]]), row=1, col=2)
    text = _twin(fig)
    assert text.index("scores:") < text.index("weights:")


def test_a_picture_on_hidden_axes_is_read_by_its_labels():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 0], mode="text", text=["tokens", "logits"]))
    fig.add_annotation(x=0.5, y=0.5, text="<b>softmax</b>", showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    text = _twin(fig)
    assert "tokens, logits, softmax" in text and "0 at" not in text


@pytest.mark.parametrize("lang", LANGS)
def test_an_empty_figure_still_has_a_twin(lang):
    text = _twin(go.Figure(), lang)
    assert text == translate("twin.untitled", lang) + ("" if lang == "zh" else " ") + translate("twin.empty", lang)


def test_many_traces_are_counted_not_listed():
    fig = go.Figure([go.Scatter(y=[i, i + 1], name=f"s{i}") for i in range(9)])
    text = _twin(fig)
    assert "s5" in text and "s6" not in text and translate("twin.more_series", "en", n=3) in text


def test_chinese_twin_uses_chinese_magnitudes_and_punctuation():
    fig = go.Figure(go.Bar(x=["甲", "乙"], y=[6.92e10, 1.38e12], name="参数"))
    text = _twin(fig, "zh")
    assert "692 亿" in text and "1.38 万亿" in text and "、" in text and " B" not in text


def test_plain_drops_plotly_markup_only():
    assert plain("a<br>b <sup>2</sup> &amp; <BOS>") == "a b 2 & <BOS>"


def test_number_formats():
    assert magnitude(4.29e9, "zh") == "42.9 亿" and magnitude(4.29e9) == "4.29 B"
    assert short(-0.25) == "−0.25" and short(1e-7) == "1 × 10⁻⁷"


def test_chinese_twin_spaces_latin_and_numbers_from_han():
    fig = go.Figure(go.Bar(x=["我", "robot"], y=[3, 4], name="次数"))
    assert "次数，共 2 根柱：我 = 3、robot = 4。" in _twin(fig, "zh")


@pytest.mark.parametrize("lang", LANGS)
def test_a_shaded_band_is_described_by_its_span_and_its_edges(lang):
    """A band drawn as one closed outline (its top, then its bottom back: beyond's context-use
    chart) is one band, not 2n points whose "last" sits where the first does."""
    x = [1, 2, 3, 4]
    fig = go.Figure(go.Scatter(x=x + x[::-1], y=[1.5, 1.4, 1.45, 1.4] + [0.9, 0.95, 1.0, 1.1], fill="toself",
                               mode="none", name="band"))
    assert _twin(fig, lang).endswith(translate("twin.band", lang, name="band", x0="1", x1="4", lo="0.9", hi="1.5"))


def test_a_wrapped_title_reads_as_written():
    """viz.theme wraps a long title with <br>; its twin reads the title as the page wrote it (a
    Chinese title broken between two characters gets no space there)."""
    from viz.theme import apply

    title = "窗口中各位置的损失：唐诗（留出部分）以及更多的说明文字在这里"
    fig = apply(go.Figure(go.Scatter(x=[0, 1], y=[1, 2])), title=title)
    assert "<br>" in fig.layout.title.text
    assert _twin(fig, "zh").startswith(translate("twin.figure", "zh", title=title))
