"""A student link's first screen: the lecturer's chapter and setting first, its charts a moment later.

Streamlit loads its chart code (a 4.7 MB module, one task of ~0.8 s on the 2-core server) when
the first chart of a page arrives, and that task ran before React showed the text and the slider
that had arrived with it: a student who opened the class's link saw the lecturer's setting only
together with the charts (``bench/follow.py``). So the first whole run of a student link's session
(:func:`hold`, from ``ui.follow``) draws each chart's place, a box of the chart's height
(``ui.render.plot``), and ends by asking the browser for the next run (:func:`done`, from app.py:
a fragment's timer, which the browser starts as the run's elements arrive); that run draws the
charts. Meanwhile the page loads the chart module itself once a place is drawn
(``ui.first_paint``), so the charts are drawn as soon as they arrive.

Only whole runs hold charts: a fragment's own rerun (a follower's section taking the lecturer's
move) draws them at once, and any whole run after the first screen draws them (and the browser's
timer, which a whole run ends, is then not needed).
"""
from __future__ import annotations

import html
import os

import streamlit as st

from ui.i18n import t
from ui.runtime import in_fragment_rerun

STATE = "lmviz_first_screen"   # session key: "hold" (the next whole run draws charts' places),
                               # "placed" (this run drew one), "held" (the run that drew them ended)
CHARTS_AFTER_S = 0.6     # the browser asks for the charts this long after the first screen arrives
PLACE_CLASS = "lmviz-chart-place"
PLOTLY_HEIGHT = 450      # Plotly's height for a figure whose layout names none


def hold() -> None:
    """Draw this session's first screen without its charts (``LMVIZ_FIRST_SCREEN=0``: with them,
    as any other page run; bench/follow.py measures a room both ways)."""
    if os.environ.get("LMVIZ_FIRST_SCREEN") != "0":
        st.session_state[STATE] = "hold"


def holding() -> bool:
    """True while a whole run of the first screen draws charts' places instead of charts."""
    return st.session_state.get(STATE) in ("hold", "placed") and not in_fragment_rerun()


def place(fig) -> None:
    """A chart's place: a box of the figure's height saying the chart is coming."""
    st.session_state[STATE] = "placed"
    height = int(fig.layout.height or PLOTLY_HEIGHT)
    st.markdown(f'<div class="{PLACE_CLASS}" style="height:{height}px">'
                f'{html.escape(t("common.chart_coming"))}</div>', unsafe_allow_html=True)


def done() -> None:
    """The end of a whole page run (app.py): a run that drew charts' places asks the browser for
    a whole rerun in CHARTS_AFTER_S; the first screen is over either way."""
    if st.session_state.pop(STATE, None) == "placed":     # else the first screen had no chart
        st.session_state[STATE] = "held"
        st.fragment(run_every=CHARTS_AFTER_S)(_charts_now)()


def _charts_now() -> None:
    if in_fragment_rerun() and st.session_state.get(STATE) == "held":
        del st.session_state[STATE]
        st.rerun(scope="app")
