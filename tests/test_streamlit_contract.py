"""The contract of ui/runtime.py with Streamlit's private runtime, on the real classes: every
private name it reads, calls or replaces exists with the shape it expects. A new Streamlit that
moves one fails here, by name, instead of in a lecture (ui/runtime.py then installs none of its
changes: ``_read_against``)."""
from __future__ import annotations

import inspect

import pytest

pytest.importorskip("streamlit")


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def _streamlits(owner, name: str):
    """Streamlit's own method, whether or not this process has installed ui/runtime.py's."""
    fn = getattr(owner, name)
    while hasattr(fn, "lmviz_plain"):       # a wrapper may wrap another of ui/runtime.py's
        fn = fn.lmviz_plain
    return fn


def test_written_for_this_streamlit():
    """Every private use in ui/runtime.py was read against one Streamlit: a new one is read again."""
    import streamlit

    from ui import runtime

    assert streamlit.__version__ == runtime.STREAMLIT


def _sets_in_init(cls, *names: str) -> list[str]:
    """The instance attributes among ``names`` that ``cls.__init__`` does not assign."""
    src = inspect.getsource(cls.__init__)
    return [n for n in names if f"self.{n}" not in src]


def test_the_session_runner_and_requests():
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType

    assert _params(_streamlits(AppSession, "request_rerun")) == ["self", "client_state"]
    assert _sets_in_init(AppSession, "id", "_scriptrunner", "_client_state", "_event_loop") == []
    assert _params(_streamlits(ScriptRunner, "_run_script")) == ["self", "rerun_data"]
    assert _sets_in_init(ScriptRunner, "_requests", "_session_id", "_pages_manager") == []
    from streamlit.runtime.pages_manager import PagesManager

    assert isinstance(PagesManager.current_page_script_hash, property)
    assert _sets_in_init(ScriptRequests, "_state") == []
    assert {"RERUN", "STOP", "CONTINUE"} <= set(ScriptRequestType.__members__)
    fields = set(inspect.signature(RerunData).parameters)
    assert {"query_string", "page_script_hash", "fragment_id_queue", "is_fragment_scoped_rerun",
            "cached_message_hashes", "context_info"} <= fields


def test_the_runtime_and_its_sessions():
    from streamlit.runtime import Runtime
    from streamlit.runtime.session_manager import SessionManager

    assert callable(Runtime.exists) and callable(Runtime.instance)
    assert _params(Runtime._get_async_objs) == ["self"]
    assert _sets_in_init(Runtime, "_session_mgr") == []
    assert callable(SessionManager.get_active_session_info)
    from streamlit.runtime.runtime import AsyncObjects

    assert "eventloop" in inspect.getsource(AsyncObjects)


def test_the_script_run_context_and_the_cursor():
    from streamlit.delta_generator_singletons import context_dg_stack  # noqa: F401 - imported by ui/runtime.py
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext, ThreadState

    fields = set(inspect.signature(ScriptRunContext).parameters)
    assert {"session_id", "query_string", "fragment_storage", "script_requests", "cached_message_hashes",
            "context_info"} <= fields
    assert isinstance(ScriptRunContext.page_script_hash, property)
    assert "fragment_ids_this_run" in {f for f in ScriptRunContext.__dataclass_fields__}
    assert callable(ThreadState.get)
    from streamlit.runtime.fragment import FragmentStorage

    assert callable(FragmentStorage.contains)


def test_the_queue():
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.runtime.forward_msg_queue import ForwardMsgQueue

    assert _params(_streamlits(ForwardMsgQueue, "clear")) == ["self", "retain_lifecycle_msgs", "fragment_ids_this_run"]
    assert _sets_in_init(ForwardMsgQueue, "_queue") == []
    assert {"FINISHED_SUCCESSFULLY", "FINISHED_EARLY_FOR_RERUN"} <= set(ForwardMsg.ScriptFinishedStatus.keys())
    assert {"query_string", "page_script_hash", "fragment_id", "is_auto_rerun", "context_info"} <= \
        {f.name for f in ClientState.DESCRIPTOR.fields}
