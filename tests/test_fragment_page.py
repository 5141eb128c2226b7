"""A fragment's run of the page the session has left is dropped (ui.runtime.keeping_page): a rerun
request that names the page left behind (a follower's check pushed while its class switched
chapter) ran as a change of page, and the browser cleared the new page for it; run on the new
page instead, an old page's fragment wrote to its old place there."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("streamlit")


def _data(**kw):
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    return RerunData(query_string="follow=ABC", **kw)


def test_only_a_fragments_run_that_names_another_page_is_of_another_page():
    from ui.runtime import of_another_page

    assert of_another_page(_data(page_script_hash="generation", fragment_id_queue=["tick"]), "kv-cache")
    assert not of_another_page(_data(page_script_hash="kv-cache"), "generation")     # a whole run: a change of page
    assert not of_another_page(_data(page_script_hash="kv-cache", fragment_id_queue=["tick"]), "kv-cache")
    assert not of_another_page(_data(page_script_hash="generation", fragment_id_queue=["tick"]), "")   # no page yet


def test_the_runner_drops_the_old_pages_fragments_and_runs_the_rest():
    from ui.runtime import keeping_page

    ran = []
    wrapped = keeping_page(lambda runner, data: ran.append((data.page_script_hash, tuple(data.fragment_id_queue))))
    runner = SimpleNamespace(_pages_manager=SimpleNamespace(current_page_script_hash="kv-cache"))
    wrapped(runner, _data(page_script_hash="generation", fragment_id_queue=["tau", "tick"]))   # dropped
    wrapped(runner, _data(page_script_hash="kv-cache", fragment_id_queue=["tick"]))
    wrapped(runner, _data(page_script_hash="home"))
    assert ran == [("kv-cache", ("tick",)), ("home", ())]


def test_streamlits_runner_is_wrapped_once():
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    from ui.runtime import pages_kept

    pages_kept()
    patched = ScriptRunner._run_script
    pages_kept()
    assert ScriptRunner._run_script is patched and patched.lmviz_keeping_page
