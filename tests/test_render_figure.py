"""ui.render.figure: a figure built once per process for the same inputs and shared (issue 28)."""
from __future__ import annotations

import threading

import numpy as np
import plotly.graph_objects as go

from ui import render

CALLS: list = []


def bars(ys, title: str = "") -> go.Figure:
    CALLS.append(title)
    return go.Figure(go.Bar(y=list(ys)), layout={"title": {"text": title}})


def test_the_same_inputs_give_the_same_figure_built_once():
    CALLS.clear()
    a = render.figure(bars, np.arange(3), title="en")
    b = render.figure(bars, np.arange(3), title="en")
    assert a is b and CALLS == ["en"]
    # another language's label or other data: another figure
    c = render.figure(bars, np.arange(3), title="中文")
    d = render.figure(bars, np.arange(4), title="en")
    assert c is not a and d is not a and CALLS == ["en", "中文", "en"]
    assert list(d.data[0].y) == [0, 1, 2, 3] and c.layout.title.text == "中文"


def test_inputs_that_cannot_be_hashed_are_built_each_time():
    CALLS.clear()
    lock = threading.Lock()          # Streamlit's hasher refuses a lock

    def with_lock(_lock, title):
        return bars([1], title)

    a = render.figure(with_lock, lock, "x")
    b = render.figure(with_lock, lock, "x")
    assert a is not b and CALLS == ["x", "x"]


def test_presenter_mode_moves_a_long_horizontal_legend_beside_the_plot():
    """At the projector's type a horizontal legend of many entries wraps into rows that take the
    plot's height: beside the plot instead; a short one stays where its figure put it."""
    def fig(n):
        f = go.Figure([go.Scatter(x=[0, 1], y=[i, i], name=f"line {i}") for i in range(n)])
        f.add_trace(go.Scatter(x=[0, 1], y=[0, 0], name="hidden twin", showlegend=False))
        return f.update_layout(legend=dict(orientation="h", y=-0.14, x=0), height=520)

    long, short = render.presented(fig(render.PRESENT_LEGEND_ROW + 3)), render.presented(fig(render.PRESENT_LEGEND_ROW))
    assert long.layout.legend.orientation == "v" and long.layout.legend.x == 1.02 and long.layout.legend.yanchor == "top"
    assert short.layout.legend.orientation == "h" and short.layout.legend.y == -0.14
    assert long.layout.height == render.PRESENT_MAX_H and long.layout.font.size >= render.PRESENT_FONT
