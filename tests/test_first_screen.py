"""ui/first_screen.py: a student link's first screen draws its charts' places, the next run the charts."""
from __future__ import annotations

from ui import first_screen, render


def _first_screen():
    import plotly.graph_objects as go
    import streamlit as st

    from ui import first_screen, render

    if "opened" not in st.session_state:       # a student link's first run (ui.follow)
        st.session_state["opened"] = True
        first_screen.hold()
    render.plot(go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout={"height": 321}), key="bars")
    render.plot(go.Figure(go.Bar(x=["c"], y=[3])), key="more")
    first_screen.done()


def test_a_student_links_first_screen_holds_its_charts_and_the_next_run_draws_them():
    """The first whole run draws each chart's place (a box of the chart's height, Plotly's 450 px
    where the figure names none) and its text twin, no chart, and asks the browser for the next
    run (a fragment's timer); the next run draws the charts and asks nothing."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_first_screen, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    places = [m.value for m in at.markdown if first_screen.PLACE_CLASS in m.value]
    assert len(places) == 2 and "height:321px" in places[0] and f"height:{first_screen.PLOTLY_HEIGHT}px" in places[1]
    assert len(at.get("plotly_chart")) == 0
    assert len([m for m in at.markdown if render.TWIN_CLASS in m.value]) == 2
    assert at.session_state[first_screen.STATE] == "held"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("plotly_chart")) == 2
    assert not [m for m in at.markdown if first_screen.PLACE_CLASS in m.value]
    assert first_screen.STATE not in at.session_state
