"""A fragment's run stays on the page its fragment was drawn on (ui.runtime.on_its_page): a rerun
request that names the page the session just left (a follower's check pushed while its class
switched chapter) would run as a change of page, and the browser cleared the new page for it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("streamlit")


def _data(**kw):
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    return RerunData(query_string="follow=ABC", **kw)


def test_a_fragments_run_that_names_the_page_left_takes_the_sessions_page():
    from ui.runtime import on_its_page

    stale = _data(page_script_hash="generation", page_name="generation", fragment_id_queue=["tick"])
    got = on_its_page(stale, "kv-cache")
    assert (got.page_script_hash, got.page_name, got.fragment_id_queue) == ("kv-cache", "", ["tick"])
    assert got.query_string == stale.query_string


def test_whole_runs_and_fragments_of_the_page_are_left_as_they_are():
    from ui.runtime import on_its_page

    switch = _data(page_script_hash="kv-cache")                     # a whole run: a change of page
    same = _data(page_script_hash="kv-cache", fragment_id_queue=["tick"])
    first = _data(page_script_hash="generation", fragment_id_queue=["tick"])
    assert on_its_page(switch, "generation") is switch
    assert on_its_page(same, "kv-cache") is same
    assert on_its_page(first, "") is first                          # no page run yet: nothing to keep


def test_the_runner_runs_the_fragment_on_its_sessions_current_page():
    from ui.runtime import keeping_page

    ran = []
    wrapped = keeping_page(lambda runner, data: ran.append(data.page_script_hash))
    runner = SimpleNamespace(_pages_manager=SimpleNamespace(current_page_script_hash="kv-cache"))
    wrapped(runner, _data(page_script_hash="generation", fragment_id_queue=["tick"]))
    wrapped(runner, _data(page_script_hash="home"))
    assert ran == ["kv-cache", "home"]
