"""ui.session.publish_trained_model: a job's model is published once, and a checkpoint uploaded
after the job's last publish stays the one every chapter shows; the replay slider of
ui.replay_section follows a live run."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script():
    import types

    import streamlit as st

    from ui import session

    job_model, uploaded = object(), object()
    snap = types.SimpleNamespace(model=job_model, tokenizer=None, step=40, evals=[])
    first = session.publish_trained_model(snap)
    again = session.publish_trained_model(snap)                 # the next poll: nothing new
    session.set_session_bundle(session.Bundle(uploaded, None, {}, "session"))   # an upload
    after_upload = session.publish_trained_model(snap)          # the finished job's model again
    shown = st.session_state["lmviz_session_bundle"].model
    newer = types.SimpleNamespace(model=object(), tokenizer=None, step=80, evals=[])
    published_newer = session.publish_trained_model(newer)      # a new run's model replaces it
    st.write(f"{first} {again} {after_upload} {shown is uploaded} {published_newer}")


def test_an_upload_after_the_job_published_stays_shown():
    at = AppTest.from_function(_script, default_timeout=30).run()
    assert not at.exception
    assert at.markdown[0].value == "True False False True True"


def _follow_script():
    import types

    import streamlit as st

    from ui import replay_section as rs

    def snaps(*steps):
        return [types.SimpleNamespace(step=k) for k in steps]

    out = [rs._choose_step(snaps(0, 1))]                       # follows: the newest
    out.append(rs._choose_step(snaps(0, 1, 2)))                # still on the newest: follows
    st.session_state[rs.STEP_KEY] = 1                          # a late tick echoes the step before
    out.append(rs._choose_step(snaps(0, 1, 2, 4)))             # not a choice: follows to 4
    st.session_state[rs.STEP_KEY] = 0                          # the student drags to the start
    out.append(rs._choose_step(snaps(0, 1, 2, 4, 8)))          # a choice: it stays
    st.session_state[rs.STEP_KEY] = 8                          # back on the newest (following)
    out.append(rs._choose_step(snaps(0, 1, 2, 4, 8, 16)))      # follows to 16 (the step before: 8)
    st.session_state[rs.STEP_KEY] = 16                         # the browser drew 16: tick with it
    out.append(rs._choose_step(snaps(0, 1, 2, 4, 8, 16)))
    st.session_state[rs.STEP_KEY] = 8                          # the student steps one back: a choice
    out.append(rs._choose_step(snaps(0, 1, 2, 4, 8, 16)))
    st.write(" ".join(map(str, out)))


def test_the_replay_slider_follows_a_live_run_through_a_stale_echo_but_keeps_a_choice():
    """Also one step back from the newest once the browser has drawn it: before, that move was
    taken for a late echo and the slider jumped back to the newest (a paused run could not be
    scrubbed one snapshot back with the arrow key; bench/live_page.py found it)."""
    at = AppTest.from_function(_follow_script, default_timeout=30).run()
    assert not at.exception
    assert at.markdown[0].value == "1 2 4 0 16 16 8"


def test_the_perplexity_panel_has_a_given_log_range_and_its_line_labels_sit_on_their_lines():
    """Autorange on the log axis with labelled lines kept Chromium laying the live training
    page out ~100 times a second; and Plotly places an annotation on a log axis in log10 units."""
    import math

    from viz.training import ppl_lr_figure

    fig = ppl_lr_figure([0, 50, 100], [3900.0, 800.0, 470.0], [1, 2, 3], [1e-3] * 3,
                        lines=[(3951.0, "uniform"), (637.0, "unigram")])
    lo, hi = fig.layout.yaxis.range
    assert lo < math.log10(470) and hi > math.log10(3951)
    labels = {a.text: a.y for a in fig.layout.annotations if a.text in ("uniform", "unigram")}
    assert labels == {"uniform": math.log10(3951.0), "unigram": math.log10(637.0)}
    assert list(fig.layout.yaxis.tickvals) == [500.0, 1000.0, 2000.0, 5000.0]


def test_the_top_line_label_of_the_perplexity_panel_stays_below_the_panel_title():
    """The label sits above its line; with the top line (the uniform guess) at the top of the
    range it rose into the subplot's title at 1280 px. Even with the whole figure's height as the
    plot area (an overestimate), the room above the line must hold one line of label text."""
    import math

    from viz.training import ppl_lr_figure

    fig = ppl_lr_figure([0, 50, 100], [83.0, 30.0, 12.0], [1, 2, 3], [1e-3] * 3,
                        lines=[(83.0, "uniform guess: 83"), (40.0, "unigram guess: 40")])
    lo, hi = fig.layout.yaxis.range
    room_px = (hi - math.log10(83.0)) / (hi - lo) * (fig.layout.height - fig.layout.margin.t - fig.layout.margin.b)
    assert room_px >= 1.3 * fig.layout.font.size, room_px
