"""viz.theme.flat and ui.render's use of it: a chart handed to Streamlit with its look baked in,
no template and plain arrays, so the browser draws it once (tests/test_browser_flat_charts.py
compares the drawn look with Streamlit's own)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme


def _fig():
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Scatter(x=np.arange(4.), y=np.arange(4.) ** 2), 1, 1)
    fig.add_trace(go.Heatmap(z=np.arange(6.).reshape(2, 3), coloraxis="coloraxis"), 1, 2)
    return theme.apply(fig, title="t", coloraxis=dict(colorscale="Viridis"))


def test_every_axis_gets_the_look_under_its_own_values_and_arrays_are_lists():
    fig = _fig()
    fig.update_yaxes(gridcolor="red", row=1, col=2)
    d = theme.flat(fig)
    lay = d["layout"]
    assert "template" not in lay and lay["datarevision"] == 1
    assert d["data"][1]["z"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and d["data"][0]["y"] == [0.0, 1.0, 4.0, 9.0]
    for ax in ("xaxis", "xaxis2", "yaxis", "yaxis2"):
        assert lay[ax]["tickfont"] == {"color": "#808495", "size": 12}
        assert lay[ax]["linecolor"] == "#C8D4E3"          # the figure's own template, under the look
        assert lay[ax]["showline"] is False               # a template's line colour draws no line
        assert "domain" in lay[ax]                         # the subplot's own placement kept
    assert lay["yaxis2"]["gridcolor"] == "red" and lay["yaxis"]["gridcolor"] == "#e6eaf1"
    assert lay["xaxis"]["showgrid"] is False and lay["xaxis"]["title"]["standoff"] == 20
    assert lay["coloraxis"]["colorbar"]["thickness"] == 16 and lay["coloraxis"]["colorscale"]
    assert lay["title"]["text"] == "t" and lay["title"]["font"]["weight"] == "bold"
    assert lay["font"]["family"] == theme.FONT and lay["font"]["color"] == "#808495"   # own family, look's colour
    assert lay["margin"]["pad"] == 8 and lay["margin"]["l"] == 10


def test_an_axis_line_the_figure_asks_for_stays_and_the_original_is_untouched():
    fig = theme.apply(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))
    fig.update_xaxes(linecolor="black")
    before = fig.to_plotly_json()
    d = theme.flat(fig)
    assert d["layout"]["xaxis"]["showline"] is True and d["layout"]["yaxis"]["showline"] is False
    assert fig.to_plotly_json() == before


def test_a_figure_without_axes_gets_none_and_one_with_trace_defaults_is_left_alone():
    pie = theme.flat(theme.apply(go.Figure(go.Pie(values=[1, 2]))))
    assert not any(k.endswith("axis") for k in pie["layout"])
    assert theme.flat(go.Figure(go.Bar(y=[1]))) is None     # plotly's own template sets trace defaults


def test_render_hands_streamlit_the_flat_figure_without_any_template():
    from ui import render

    fig = _fig()
    drawn = render._flat_figure(fig)
    spec = drawn.to_dict()
    assert "template" not in spec["layout"] and spec["layout"]["datarevision"] == 1
    assert isinstance(spec["data"][0]["x"], list)             # no typed arrays for the browser to decode again
    assert render._per_figure(fig, "flat", lambda: drawn) is drawn
    assert render._per_figure(fig, "flat", lambda: 1 / 0) is drawn   # kept with the figure: made once


def test_what_is_kept_with_a_figure_goes_with_it():
    import gc

    from ui import render

    fig = _fig()
    key = id(fig)
    render._per_figure(fig, "flat", lambda: render._flat_figure(fig))
    assert render._per_figure(fig, "phone", lambda: render._stacked(fig)) is not None   # side by side
    one = theme.apply(go.Figure(go.Bar(y=[1, 2])))
    assert render._stacked(one) is None                     # one panel: nothing kept that holds it
    del fig
    gc.collect()
    assert key not in render._PER_FIGURE


def test_every_log_axis_of_these_builders_has_its_range_given():
    """In Streamlit 1.67 the attention chapter's variance chart drew its log axes over Plotly's
    empty default ([-1, 6] and [-1, 4]) while its traces kept the data's range: the ticks bunched
    in the middle, the y = d_k line off the chart. Its log axes, and those built the same way,
    now carry a range (viz.theme.log_range) around every value they draw."""
    import math
    from types import SimpleNamespace as NS

    from viz.attention import variance_figure
    from viz.cost import timing_figure
    from viz.loss_and_gradients import noise_error_figure

    rows = [NS(d_k=d, var_raw=1.05 * d, var_scaled=1.0) for d in (4, 16, 64, 256, 1024)]
    noise = [NS(batch_size=b, rel_errors=[0.9 / b ** 0.5, 1.1 / b ** 0.5]) for b in (1, 4, 16, 64)]
    figs = [variance_figure(rows, x_title="d_k", y_title="var", names=("a", "b", "c")),
            noise_error_figure(noise, x_title="B", y_title="err", measured="m", guide="g"),
            timing_figure([64, 128, 256], [0.1, 0.3, 1.0], [0.2, 0.8, 3.1], names={"scores": "s", "full": "f", "guide": "g"},
                          x_title="n", y_title="ms", full_spread=([0.15, 0.7, 3.0], [0.25, 0.9, 3.3]))]
    for fig in figs:
        for ax in (fig.layout.xaxis, fig.layout.yaxis):
            assert ax.type == "log" and ax.range is not None, fig.layout.title
            lo, hi = ax.range
            vals = [v for tr in fig.data for v in (tr.x if ax is fig.layout.xaxis else tr.y) if v and v > 0]
            assert lo < math.log10(min(vals)) and math.log10(max(vals)) < hi, (fig.layout.title, ax.range)
