"""lmviz's charts as Streamlit's theme would draw them, drawn once (viz.theme.flat, ui.render).

A one-page Streamlit app (written to a temporary folder, run with this project's
.streamlit/config.toml) draws the same figure twice in each of three columns: as Streamlit draws
it (theme="streamlit") and as ``ui.render.plot`` hands it over (flat, theme=None). Plotly's
resolved layouts (``gd._fullLayout``) of the two must agree on every property that Streamlit's
theme sets, and Streamlit's theme must still be ``viz.theme.STREAMLIT_LOOK`` (a Streamlit upgrade
that changes it fails here, not silently on the page).
"""
from __future__ import annotations

import json

import pytest

from tests.browser_util import ROOT, Server, wait_idle

pytestmark = pytest.mark.browser

APP = '''
import sys
sys.path.insert(0, {root!r})
import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from ui.render import CHART_CSS, _flat_figure
from viz import theme

st.set_page_config(layout="wide")
st.html(CHART_CSS)
fig = make_subplots(rows=1, cols=2, subplot_titles=("a", "b"))
fig.add_trace(go.Scatter(x=np.arange(50.), y=np.sin(np.arange(50.)), name="sin"), 1, 1)
fig.add_trace(go.Heatmap(z=np.arange(12.).reshape(3, 4), coloraxis="coloraxis"), 1, 2)
theme.apply(fig, title="A title", coloraxis=dict(colorscale="Viridis"))
fig.update_yaxes(type="log", row=1, col=1)
for i, col in enumerate(st.columns(3)):
    with col:
        st.plotly_chart(fig, key=f"themed{{i}}")
        st.plotly_chart(_flat_figure(fig), key=f"flat{{i}}", theme=None)
'''

# resolved properties Streamlit's theme decides (or would decide wrongly if the look were baked
# into the layout naively: a layout's line colour draws the axis line, its minor colour the grid)
PROPS = ["title.text", "font", "paper_bgcolor", "plot_bgcolor", "colorway", "margin", "legend.font", "legend.bordercolor",
         "legend.valign", "title.font", "title.x", "title.xanchor", "title.pad", "hoverlabel.font",
         "hoverlabel.bgcolor", "hoverlabel.bordercolor", "coloraxis.colorbar.thickness",
         "coloraxis.colorbar.len", "coloraxis.colorbar.tickfont", "coloraxis.colorbar.outlinewidth"]
AXIS_PROPS = ["gridcolor", "showgrid", "showline", "linecolor", "zeroline", "zerolinecolor", "tickfont", "ticks",
              "title.font", "title.standoff", "ticklabelposition", "minor.showgrid"]

READ = """([keys, axisKeys]) => {
  const get = (o, path) => path.split('.').reduce((v, k) => v == null ? v : v[k], o);
  const out = {};
  for (const box of document.querySelectorAll('[class*=st-key-]')) {
    const key = [...box.classList].find(c => c.startsWith('st-key-')).slice(7);
    const gd = box.querySelector('.js-plotly-plot');
    if (!gd || !gd._fullLayout) continue;
    const L = gd._fullLayout, r = {width: L.width, template: gd.layout.template || null};
    for (const k of keys) r[k] = get(L, k);
    for (const ax of ['xaxis', 'xaxis2', 'yaxis', 'yaxis2']) for (const k of axisKeys) r[ax + '.' + k] = get(L[ax], k);
    out[key] = JSON.parse(JSON.stringify(r));
  }
  return out; }"""


def _drawn(chromium, app, source: str, n_charts: int, read: str, arg=None):
    """Run the one-page app ``source`` (written to ``app``) and return ``read`` evaluated in the
    page once its ``n_charts`` Plotly charts are drawn."""
    app.write_text(source.format(root=str(ROOT)))
    srv = Server(script=str(app))
    try:
        page = chromium.new_page(viewport={"width": 1400, "height": 900})
        page.goto(srv.url())
        wait_idle(page)
        page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length === {n_charts} && "
                               "[...document.querySelectorAll('.js-plotly-plot')].every(g => g._fullLayout)")
        page.wait_for_timeout(500)
        got = page.evaluate(read, arg)
        page.close()
    finally:
        srv.stop()
    return got


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    else:
        yield path, node


def test_flat_charts_look_as_streamlit_draws_them(chromium, tmp_path):
    from viz.theme import STREAMLIT_LOOK

    got = _drawn(chromium, tmp_path / "flat_app.py", APP, 6, READ, [PROPS, AXIS_PROPS])
    assert sorted(got) == sorted([f"themed{i}" for i in range(3)] + [f"flat{i}" for i in range(3)])
    # Streamlit's theme is still the look lmviz bakes in ("transparent" is written rgba(0,0,0,0))
    themed = got["themed0"]["template"]["layout"]
    for path, want in _leaves(STREAMLIT_LOOK):
        have = themed
        for k in path:
            have = have[k]
        assert have == want or (have == "transparent" and want == "rgba(0,0,0,0)"), (path, have, want)
    for i in range(3):
        flat, ref = got[f"flat{i}"], got[f"themed{i}"]
        assert flat["template"] is None                              # nothing for Plotly to compare again
        assert flat["width"] == int(flat["width"])                   # a whole number of pixels (CHART_CSS)
        for k in PROPS + [f"{ax}.{p}" for ax in ("xaxis", "xaxis2", "yaxis", "yaxis2") for p in AXIS_PROPS]:
            a, b = flat.get(k), ref.get(k)
            if k == "legend.bordercolor" and {a, b} <= {"transparent", "rgba(0,0,0,0)", "rgba(0, 0, 0, 0)"}:
                continue
            if k == "title.text":            # Streamlit bolds the title with markup, lmviz with its font
                # (Streamlit themes a chart twice as it mounts it: "<b><b>A title</b></b>")
                assert b.startswith("<b>") and b.replace("<b>", "").replace("</b>", "") == a, (a, b)
                assert flat["title.font"]["weight"] == "bold"
                continue
            if k == "title.font":
                a, b = dict(a, weight=None), dict(b, weight=None)
            assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True), (k, a, b)


ROOM_APP = '''
import sys
sys.path.insert(0, {root!r})
import numpy as np
import streamlit as st

from ui.render import CHART_CSS, _flat_figure
from viz import replay as vr
from viz.tokenization import visible

st.set_page_config(layout="wide")
st.html(CHART_CSS)
rng = np.random.default_rng(0)
tokens = {{"zh": list("白日依山尽黄河入海流"), "en": ["The", " capital", " of", " France", " is", " Paris", ".", "\\n", " Ber", "lin"]}}
classes = ["lower", "upper", "digit", "space", "punct", "cjk"]
for name, toks in tokens.items():
    P = 400
    figs = {{"emb": vr.embedding_figure(rng.normal(size=(P, 2)), [f"t{{i}}" for i in range(P)], rng.choice(classes, P).tolist(),
                                      {{c: c for c in classes}}),
            "dist": vr.distribution_figure([visible(t) for t in toks], np.sort(rng.random(10))[::-1] / 2,
                                           y_title="p" if name == "en" else "概率")}}
    for n_cols in (3, 4):                       # two widths of chart
        for col, (k, fig) in zip(st.columns(n_cols), figs.items()):
            with col:
                st.plotly_chart(_flat_figure(fig), key=f"given_{{name}}_{{k}}_{{n_cols}}", theme=None)
                own = _flat_figure(fig)
                own.update_layout(margin=dict(l=10, r=10, t=20, b=10))      # lmviz's usual margins
                st.plotly_chart(own, key=f"own_{{name}}_{{k}}_{{n_cols}}", theme=None)
'''

SIZES = """() => Object.fromEntries([...document.querySelectorAll('[class*=st-key-]')].filter(b => b.querySelector('.js-plotly-plot'))
  .map(b => { const gd = b.querySelector('.js-plotly-plot'), s = gd._fullLayout._size, m = gd.layout.margin;
    return [[...b.classList].find(c => c.startsWith('st-key-')).slice(7),
            {width: gd._fullLayout.width, drawn: [s.l, s.r, s.t, s.b], given: [m.l, m.r, m.t, m.b]}]; }))"""


def test_replay_charts_are_given_the_room_plotly_makes(chromium, tmp_path):
    """The replay's embedding map and next-token bars are given the margins Plotly's automargin
    makes for their axes (viz.replay.EMBEDDING_MARGIN, DISTRIBUTION_MARGIN), so Plotly draws them
    once: drawn, the axes' sides (left and bottom; the bars' right, where a long last tick label
    reaches) are exactly the margins given, at two widths, in both languages; and within 2 px of
    the margins Plotly makes from lmviz's usual 10 px (the look unchanged)."""
    got = _drawn(chromium, tmp_path / "room_app.py", ROOM_APP, 16, SIZES)
    assert len(got) == 16, sorted(got)
    sides = {"emb": (0, 3), "dist": (0, 1, 3)}                 # l, r, t, b: the sides an axis pushes
    for key, g in got.items():
        if not key.startswith("given_"):
            continue
        _, name, kind, n_cols = key.split("_")
        own = got[f"own_{name}_{kind}_{n_cols}"]
        for i in sides[kind]:
            assert round(g["drawn"][i]) == g["given"][i], (key, "lrtb"[i], g)          # no room added
            assert abs(g["drawn"][i] - own["drawn"][i]) <= 2 or (kind, i) == ("dist", 1), (key, g, own)
        assert g["drawn"][2] == own["drawn"][2], (key, g, own)                         # the legend's top


TAU_APP = '''
import sys
sys.path.insert(0, {root!r})
import streamlit as st

from chapters.generation import temperature_figures
from ui.render import CHART_CSS, _flat_figure

st.set_page_config(layout="wide")
st.html(CHART_CSS)
for lang in ("en", "zh"):
    figs = dict(zip(("bars", "curves"), temperature_figures(0.5, lang)))     # as the chapter draws them
    for n_cols in (2, 3):                       # the chapter's two columns, and narrower
        for k, fig in figs.items():
            cols = st.columns(n_cols)
            with cols[0]:
                st.plotly_chart(_flat_figure(fig), key=f"given_{{lang}}_{{k}}_{{n_cols}}", theme=None)
            with cols[1]:
                own = _flat_figure(fig)
                own.update_layout(margin=dict(l=10, r=10, b=10))             # lmviz's usual sides
                st.plotly_chart(own, key=f"own_{{lang}}_{{k}}_{{n_cols}}", theme=None)
'''


def test_temperature_charts_are_given_the_room_plotly_makes(chromium, tmp_path):
    """The temperature section's bars and curves (redrawn at every move of τ, on every
    follower's screen) are given the sides Plotly's automargin makes for their axes
    (viz.generation.BARS_MARGIN, CURVES_MARGIN), so Plotly draws them once: drawn, every side is
    the margin given, at two widths, in both languages, and within 2 px of what Plotly makes
    from lmviz's usual 10 px (the look unchanged)."""
    got = _drawn(chromium, tmp_path / "tau_app.py", TAU_APP, 16, SIZES)
    assert len(got) == 16, sorted(got)
    for key, g in got.items():
        if key.startswith("given_"):
            own = got["own_" + key[len("given_"):]]
            assert [round(x) for x in g["drawn"]] == g["given"], (key, g)          # no room added
            assert all(abs(a - b) <= 2 for a, b in zip(g["drawn"], own["drawn"])), (key, g, own)
