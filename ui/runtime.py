"""What lmviz asks of Streamlit's private runtime, in one place (Streamlit 1.67).

Each change of Streamlit's classes is installed only on the Streamlit it was read against
(:data:`STREAMLIT`, pinned in requirements.txt); on another, the server runs as Streamlit
ships it, and tests/test_streamlit_contract.py fails until this module is read again."""
from __future__ import annotations

import asyncio
from contextlib import contextmanager
from functools import partial
from typing import Callable

STREAMLIT = "1.67.0"    # the version every private use below was read against


def _read_against() -> bool:
    """True on the Streamlit this module was read against; on another, one log line says that
    the server runs as Streamlit ships it."""
    import streamlit

    same = streamlit.__version__ == STREAMLIT
    if not same and not _WARNED:
        _WARNED.append(True)
        import logging

        logging.getLogger("lmviz").warning("Streamlit %s is not %s, which ui/runtime.py was read against: "
                                           "its changes are not installed", streamlit.__version__, STREAMLIT)
    return same


_WARNED: list[bool] = []


def in_fragment_rerun() -> bool:
    """True while a fragment reruns on its own (its timer or a widget inside it), False in a full
    run of the app. A fragment that wants a full rerun asks for it only then: a full rerun started
    in the middle of an app run would swallow a button click of that run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)


def asked_for_this_fragment() -> bool:
    """True when this run was asked for the fragment now running (a widget inside it, or its
    own timer), not for the whole page or an enclosing fragment that draws it on its way."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    here = current_fragment_id()
    return bool(ctx and here and here in (ctx.fragment_ids_this_run or ()))


def drawn_at() -> tuple[int, ...]:
    """Where the element just drawn stands: its delta path (root container, blocks, index); ()
    outside a script run. A fragment's rerun draws at the places it had in the whole run, so
    things sorted by it read in page order however they were drawn (ui.handout)."""
    from streamlit.delta_generator_singletons import context_dg_stack

    cursor = context_dg_stack.get()[-1]._cursor
    if cursor is None:
        return ()
    path = list(cursor.delta_path)
    if not cursor.is_locked:     # a running cursor already points past the element it drew
        path[-1] -= 1
    return tuple(path)


class PageEnd(Exception):
    """Raised by ``ui.render.end_page``: the page has drawn all it will this run."""


@contextmanager
def page_run(done):
    """Run the page inside; call ``done()`` when it has drawn all it will: at its end, where it
    ended itself (:class:`PageEnd`: a chapter waiting for its text or its task) or failed. Not
    when the run was cut short for another one (``st.rerun``, ``st.switch_page``): that one calls
    it. A page never calls ``st.stop()``: after it, every read of the session's state raises
    Streamlit's stop again, so ``done()`` could not read who the session is (a follower whose
    page stopped never left the gate and applied the class again at every check, and the next
    follower waited: tests/test_browser_room_train.py)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

    try:
        yield
    except PageEnd:
        done()
        return
    except RerunException:
        raise
    except BaseException:
        done()
        raise
    done()


def current_fragment_id() -> str | None:
    """The id of the innermost fragment now running (in a whole run too), None outside one."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    try:
        return ThreadState.get().fragment_id
    except RuntimeError:     # no script run on this thread
        return None


def rerun_fragments_here(fragment_ids) -> bool:
    """Rerun these fragments of this session's page, ending this run at once: what
    ``st.rerun(scope="fragment")`` does for the running fragment, built the same way, for others
    (Streamlit names other fragments only from a widget callback). Fragments no longer on the page
    are left out; with none left nothing happens and this returns False."""
    import streamlit as st
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or ctx.script_requests is None:
        return False
    queue = [fid for fid in dict.fromkeys(fragment_ids) if fid and ctx.fragment_storage.contains(fid)]
    if not queue:
        return False
    ctx.script_requests.request_rerun(RerunData(
        query_string=ctx.query_string, page_script_hash=ctx.page_script_hash,
        fragment_id_queue=queue, is_fragment_scoped_rerun=True,
        cached_message_hashes=ctx.cached_message_hashes, context_info=ctx.context_info))
    st.empty()          # a yield point: the runner takes the request here (st.rerun's own way)
    return True


def fragment_target() -> tuple[str, str, str] | None:
    """The fragment now running, as :func:`rerun_fragment` takes it: (session id, fragment id,
    query string); None outside a fragment or a server. (AppTest's runtime is a mock: a target
    made there names no session, and :func:`rerun_fragment` answers False for it.)"""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    fragment_id = current_fragment_id()
    return (ctx.session_id, fragment_id, ctx.query_string) if fragment_id else None


def rerun_fragment(target: tuple[str, str, str], delay_s: float = 0.0,
                   unless: Callable[[], bool] | None = None) -> bool:
    """Rerun a fragment of a session ``delay_s`` seconds from now, from any thread, as the browser's
    timer of a ``run_every`` fragment asks for it (the server pushes, the browser need not ask).
    Returns False when the session is gone. The request is made on the server's event loop,
    where the browsers' own requests are handled, and dropped there when that session already
    has a rerun pending (the pending run draws the fragment too; a request of ours would rewrite
    the pending one's page with the page we saw, the way a stale request did in the follower's
    case of ``ui.follow``) or when the fragment is no longer on its page, or when ``unless()``
    answers True then (a run that began after the push was asked has drawn what it was for).
    Streamlit's own server-side rerun (run on save) goes through the same
    ``AppSession.request_rerun``."""
    from streamlit.runtime import Runtime

    session_id, fragment_id, query_string = target
    if not Runtime.exists():
        return False
    runtime = Runtime.instance()
    manager = getattr(runtime, "_session_mgr", None)     # AppTest's runtime is a mock without one
    info = manager.get_active_session_info(session_id) if manager is not None else None
    if info is None:
        return False
    loop = runtime._get_async_objs().eventloop
    loop.call_soon_threadsafe(loop.call_later, max(0.0, float(delay_s)), _request_fragment_rerun,
                              info.session, fragment_id, query_string, unless)
    return True


def _request_fragment_rerun(session, fragment_id: str, query_string: str, unless=None) -> None:
    """On the event loop: the browser's auto-rerun request, built on the server once the
    session's last runner has settled (:func:`_settled`), from the page it is on then."""
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    def push() -> None:
        runner = session._scriptrunner
        if runner is not None and runner._requests._state == ScriptRequestType.RERUN:
            return
        if unless is not None and unless():
            return
        current = session._client_state
        state = ClientState(query_string=query_string, page_script_hash=current.page_script_hash,
                            fragment_id=fragment_id, is_auto_rerun=True)
        if current.HasField("context_info"):
            state.context_info.CopyFrom(current.context_info)
        session.request_rerun(state)

    _settled(session, push)


def _settled(session, fn, tries: int = 0) -> None:
    """On the event loop: ``fn()`` once ``session`` (an ``AppSession``) has no runner that has
    stopped with its events still waiting on this loop, or after ``_STOPPED_TRIES`` looks.

    A fragment's rerun asked for in that window makes ``AppSession.request_rerun`` start a new
    runner, and the old one's remaining events (the end of the page run just finished: its
    deltas, its finish) are dropped as a non-current runner's, so the page never shows what that
    run drew, and a fragment's run does not draw it again (bench/room_ws.py: 8-14 of 100
    students never saw a question the server had drawn for them; the browser's own timer of a
    follower's check hits it as a pushed request does). The request waits for those events, a
    few more turns of the loop."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    runner = session._scriptrunner
    if runner is not None and runner._requests._state == ScriptRequestType.STOP:
        if tries < _STOPPED_TRIES:
            session._event_loop.call_later(_STOPPED_WAIT_S, _settled, session, fn, tries + 1)
            return
        import logging

        logging.getLogger("lmviz").warning("a fragment's rerun goes on after %.1f s before its session's "
                                           "last run ended: that run's last messages may be lost",
                                           tries * _STOPPED_WAIT_S)
    fn()


def patient(request_rerun):
    """``AppSession.request_rerun`` that lets a fragment's rerun wait until the session's runner has
    settled (:func:`_settled`); a whole run goes on at once (it draws the whole page again)."""
    def wrapped(self, client_state=None):
        if client_state is not None and client_state.fragment_id:
            go = partial(request_rerun, self, client_state)
            if _on_loop(self._event_loop):
                _settled(self, go)
            else:                                  # Streamlit's file watcher calls from its thread
                self._event_loop.call_soon_threadsafe(_settled, self, go)
            return
        request_rerun(self, client_state)

    wrapped.lmviz_patient = True
    wrapped.lmviz_plain = request_rerun
    return wrapped


def _on_loop(loop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def patient_reruns() -> None:
    """Make every session's fragment reruns :func:`patient`, the browser's own included (once per
    process; app.py calls it on every run)."""
    from streamlit.runtime.app_session import AppSession

    if _read_against() and not getattr(AppSession.request_rerun, "lmviz_patient", False):
        AppSession.request_rerun = patient(AppSession.request_rerun)


_STOPPED_WAIT_S = 0.01     # how often a request looks again for the stopped runner's end ...
_STOPPED_TRIES = 1000      # ... for at most 10 s; then it goes on as Streamlit would take it (and
                           # says so in the log). A stopped runner's events are handled within a
                           # few turns of an idle loop; a loaded one (a whole page's deltas, one
                           # event each, among a room's messages on 2 busy cores) may take longer
                           # than the 0.5 s this was. A precaution: the give-up was never seen in
                           # a log, and the follower's empty page it was first blamed for had
                           # another cause (keeping_page below)


# -- a whole run's messages outlive the fragment run after it -------------------------------
#
# When a run starts, ``AppSession`` clears its browser queue of what is still unsent
# (``ForwardMsgQueue.clear``). For a fragment's run it drops the unsent deltas drawn in that
# fragment and keeps the rest, the earlier run's "finished successfully" included. When the run
# before was a whole run of the page whose messages had not yet gone out, the browser then hears
# of a finished whole run without the fragment's part of it: it prunes the fragment's block as
# stale, every later element of its parent moves up one place, and the fragment's run writes into
# the place of another element. A page with a second fragment below then throws "'setIn' cannot
# be called on an ElementNode" in the browser, and the page goes blank (a lecturer's page with
# the class bar's timer and a live display, 1-3 of 5 classes here; seen in the browser's own
# record of the deltas: the whole run's 0.1.* missing, its heading overwritten by the bar). A
# session's messages wait for the runtime's pass over every session, so with a room the window
# is wide. Fixed here: a clear for a fragment's run
# keeps every message up to the end of a whole run that finished, as the browser needs them.

def keeping_finished_runs(clear):
    """``ForwardMsgQueue.clear`` that leaves alone every message up to and including the last
    "finished successfully" of a whole run, when it clears for a fragment's run."""
    def wrapped(self, retain_lifecycle_msgs: bool = False, fragment_ids_this_run=None):
        cut = _after_finished_run(self._queue) if fragment_ids_this_run else 0
        if not cut:
            return clear(self, retain_lifecycle_msgs, fragment_ids_this_run)
        head, self._queue = self._queue[:cut], self._queue[cut:]
        clear(self, retain_lifecycle_msgs, fragment_ids_this_run)
        self._queue = head + self._queue
        return None

    wrapped.lmviz_keeping = True
    wrapped.lmviz_plain = clear
    return wrapped


def _after_finished_run(queue) -> int:
    """The index just past the last "finished successfully" (of a whole run) in ``queue``; 0 if
    there is none."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    done = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY
    for i in range(len(queue) - 1, -1, -1):
        msg = queue[i]
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished == done:
            return i + 1
    return 0


def finished_runs_kept() -> None:
    """Make every session's queue keep a finished whole run's messages when a fragment's run
    starts (once per process; app.py calls it on every run)."""
    from streamlit.runtime.forward_msg_queue import ForwardMsgQueue

    if _read_against() and not getattr(ForwardMsgQueue.clear, "lmviz_keeping", False):
        ForwardMsgQueue.clear = keeping_finished_runs(ForwardMsgQueue.clear)


# -- a fragment's run of the page left behind is dropped ------------------------------------
#
# A fragment's rerun request names a page (``RerunData.page_script_hash``): the browser's, as it
# stood when it sent the request, or the one ours was built with (:func:`rerun_fragment`). Asked
# while the session switches page (``st.switch_page`` in a follower's check, or a timer of the
# page it leaves), it names the page left behind and is run after the new page's run has begun.
# Streamlit then runs it as a change of page: it resets the widgets' state and tells the browser
# of a run of the old page, and the browser, whose page is the new one, clears every element
# (``App.handleNewSession``: another page hash means ``clearAppState``, for a fragment's run too)
# and draws the fragment alone: a follower of a class that moved to the next chapter saw its
# follow banner and nothing else, for good (CI, twice; 1 in 4 here under a CPU hog). Run on the
# new page instead, an old page's fragment writes to its old place there ("Bad delta path index
# 7", and the browser's connection dropped: CI once). So such a request is dropped, as Streamlit
# drops one whose fragment is gone; the new page draws its own fragments, and their timers ask
# again.

def of_another_page(rerun_data, current_page: str) -> bool:
    """Whether ``rerun_data`` asks for fragments of another page than ``current_page`` (the
    session's: its last run's); False for a whole run and before any page has run."""
    return bool(rerun_data.fragment_id_queue) and bool(current_page) and rerun_data.page_script_hash != current_page


def keeping_page(run):
    """``run(runner, rerun_data)`` (``ScriptRunner._run_script``) that drops a fragment's run of
    another page than the session's (:func:`of_another_page`); :func:`pages_kept` installs it."""
    def wrapped(self, rerun_data):
        if of_another_page(rerun_data, self._pages_manager.current_page_script_hash):
            return None
        return run(self, rerun_data)

    wrapped.lmviz_keeping_page = True
    wrapped.lmviz_plain = run
    return wrapped


def pages_kept() -> None:
    """No fragment's run of a page the session has left (:func:`keeping_page`) (once per process;
    app.py calls it on every run)."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    if not _read_against() or getattr(ScriptRunner._run_script, "lmviz_keeping_page", False):
        return
    ScriptRunner._run_script = keeping_page(ScriptRunner._run_script)
