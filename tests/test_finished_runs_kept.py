"""ui/runtime.py's kept finished runs, on Streamlit's real ``ForwardMsgQueue``: when a fragment's
run starts, the queue still holds the unsent messages of a whole run of the page that finished
just before; Streamlit's clear drops that run's deltas drawn in the fragment and keeps its
"finished successfully", so the browser pruned the fragment's block and the next fragment run
wrote over another element (the lecturer's blank page, "'setIn' cannot be called on an
ElementNode"). Ours keeps them; a fragment's own unsent run after it is still cleared."""
import pytest

pytest.importorskip("streamlit")

import streamlit  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue  # noqa: E402

from ui import runtime  # noqa: E402

F = "fragment-of-the-bar"


def _plain():
    """Streamlit's own clear, whether or not this process has installed ours."""
    return getattr(ForwardMsgQueue.clear, "lmviz_plain", ForwardMsgQueue.clear)


def _delta(path, fragment_id: str = "", text: str = "x") -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    msg.delta.new_element.markdown.body = text
    if fragment_id:
        msg.delta.fragment_id = fragment_id
    return msg


def _new_session() -> ForwardMsg:
    msg = ForwardMsg()
    msg.new_session.page_script_hash = "page"
    return msg


def _finished(status) -> ForwardMsg:
    msg = ForwardMsg()
    msg.script_finished = status
    return msg


def _whole_run_unsent() -> ForwardMsgQueue:
    """A whole run of a page: a heading, a fragment's element (the class bar), another element,
    finished successfully; none of it sent yet."""
    q = ForwardMsgQueue()
    for msg in (_new_session(), _delta([0, 0], text="heading"), _delta([0, 1], F, "bar"),
                _delta([0, 2], text="after"),
                _finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY)):
        q.enqueue(msg)
    return q


def _bodies(q: ForwardMsgQueue) -> list[str]:
    return [m.delta.new_element.markdown.body for m in q._queue if m.WhichOneof("type") == "delta"]


def test_streamlits_clear_drops_a_finished_runs_part_of_the_fragment():
    """The upstream behaviour ours corrects (when Streamlit fixes it, this fails: drop ours)."""
    q = _whole_run_unsent()
    _plain()(q, retain_lifecycle_msgs=True, fragment_ids_this_run=[F])
    assert _bodies(q) == ["heading", "after"]
    assert q._queue[-1].script_finished == ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY


def test_a_fragments_run_keeps_the_finished_run_whole():
    q = _whole_run_unsent()
    runtime.keeping_finished_runs(_plain())(q, retain_lifecycle_msgs=True, fragment_ids_this_run=[F])
    assert _bodies(q) == ["heading", "bar", "after"]
    assert [m.WhichOneof("type") for m in q._queue] == ["new_session", "delta", "delta", "delta", "script_finished"]
    assert q._queue[-1].script_finished == ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY


def test_what_came_after_the_finished_run_is_cleared_as_before():
    """An unsent fragment run after the finished one is cleared as Streamlit clears it: its
    deltas in the fragment go, its end is marked "finished early for a rerun"."""
    q = _whole_run_unsent()
    clear = runtime.keeping_finished_runs(_plain())
    clear(q, retain_lifecycle_msgs=True, fragment_ids_this_run=[F])     # the fragment's run starts
    for msg in (_new_session(), _delta([0, 1], F, "bar again"),
                _finished(ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)):
        q.enqueue(msg)
    assert _bodies(q) == ["heading", "bar", "after", "bar again"]
    clear(q, retain_lifecycle_msgs=True, fragment_ids_this_run=[F])     # and its next one
    assert _bodies(q) == ["heading", "bar", "after"]
    assert q._queue[-1].script_finished == ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN


def test_a_whole_run_or_a_flush_clears_everything_as_before():
    for kwargs in ({"retain_lifecycle_msgs": True}, {}):
        q = _whole_run_unsent()
        runtime.keeping_finished_runs(_plain())(q, **kwargs)
        assert _bodies(q) == []
    q = _whole_run_unsent()
    ForwardMsgQueue.clear, plain = runtime.keeping_finished_runs(_plain()), ForwardMsgQueue.clear
    try:
        assert len(q.flush()) == 5 and len(q) == 0
    finally:
        ForwardMsgQueue.clear = plain


def test_installed_once():
    plain = ForwardMsgQueue.clear
    try:
        runtime.finished_runs_kept()
        runtime.finished_runs_kept()
        assert ForwardMsgQueue.clear.lmviz_keeping
        assert ForwardMsgQueue.clear.lmviz_plain is _plain()
        assert not getattr(ForwardMsgQueue.clear.lmviz_plain, "lmviz_keeping", False)
    finally:
        ForwardMsgQueue.clear = plain


def test_on_another_streamlit_nothing_is_installed_and_one_line_says_so(monkeypatch, caplog):
    import logging

    plain = ForwardMsgQueue.clear
    monkeypatch.setattr(streamlit, "__version__", "9.9.9")
    monkeypatch.setattr(runtime, "_WARNED", [])
    monkeypatch.setattr(ForwardMsgQueue, "clear", _plain())
    with caplog.at_level(logging.WARNING, logger="lmviz"):
        runtime.finished_runs_kept()
        runtime.finished_runs_kept()
    assert ForwardMsgQueue.clear is _plain()
    assert [r.getMessage() for r in caplog.records].count(
        "Streamlit 9.9.9 is not 1.67.0, which ui/runtime.py was read against: its changes are not installed") == 1
    monkeypatch.setattr(ForwardMsgQueue, "clear", plain)
