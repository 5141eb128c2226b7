"""The server's own first visit of every chapter (ui/warmup.py, issue 28): the default views are
computed once at server start, by a visitor whose runs go at nice 19."""
from __future__ import annotations

import os
import re
import threading
import time

from tests.browser_util import Server
from ui import warmup


class _Ctx:
    """The warm-up task's context, as lmviz.server.tasks.Task hands it: phases noted, never cancelled."""

    def phase(self, name):
        pass

    def cancelled(self):
        return False


def _in_a_thread(headers: dict) -> tuple[bool, int]:
    """(lower_if_warm_visit's answer, the thread's nice value after it), in a thread of its own as
    each script run has."""
    out = []

    def run() -> None:
        got = warmup.lower_if_warm_visit(headers)
        out.append((got, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))

    th = threading.Thread(target=run)
    th.start()
    th.join()
    return out[0]


def test_only_the_servers_own_visitor_is_lowered_to_nice_19(monkeypatch):
    monkeypatch.delenv("LMVIZ_TASK_NICE")           # the server's default (the suite sets 0)
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert _in_a_thread({warmup.WARM_HEADER: warmup._WARM_TOKEN}) == (True, 19)
    # a stranger's header, an empty one, none: the run keeps the priority it had
    assert _in_a_thread({warmup.WARM_HEADER: "guess"}) == (False, before)
    assert _in_a_thread({warmup.WARM_HEADER: ""}) == (False, before)
    assert _in_a_thread({}) == (False, before)
    # the main thread was never touched
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_outside_a_running_server_there_is_nothing_to_visit():
    # a test process (AppTest's stand-in Runtime, or none): no port, so no visit of another
    # process that listens on Streamlit's default port
    assert warmup._server_port() is None


def test_a_fresh_server_visits_every_chapter_in_both_languages(tmp_path):
    from ui.chapters import registered
    from ui.i18n import LANGS

    log = tmp_path / "server.log"
    srv = Server(log=log)
    try:
        deadline = time.time() + 240
        line = None
        while time.time() < deadline and line is None:
            line = next((ln for ln in log.read_text(errors="replace").splitlines()
                         if ln.startswith("lmviz warm visit:")), None)
            time.sleep(0.5)
    finally:
        srv.stop()
    assert line is not None, "the server logged no warm visit within 240 s"
    m = re.match(r"lmviz warm visit: (\d+) views in [\d.]+ s.*; failed: (.*)$", line)
    assert m, line
    assert m.group(2) == "none", line
    assert int(m.group(1)) == len(registered()) * len(LANGS), line


def test_the_visit_can_be_turned_off(monkeypatch):
    # LMVIZ_WARM_VIEWS=0: torch and the model only (bench/startup.py's baseline mode)
    monkeypatch.setenv("LMVIZ_WARM_VIEWS", "0")
    calls = []
    monkeypatch.setattr(warmup, "_visit_views", lambda ctx: calls.append(ctx))

    assert warmup._warm(_Ctx()) == "warm"
    assert calls == []
    monkeypatch.delenv("LMVIZ_WARM_VIEWS")
    assert warmup._warm(_Ctx()) == "warm"
    assert len(calls) == 1


def test_what_the_warm_up_leaves_is_set_aside_from_the_collector(monkeypatch):
    # a full collection over the whole heap held every session's run for 0.3 s: what the warm-up
    # leaves is set aside (gc.freeze) after one collection, so garbage is not set aside with it
    import gc
    import weakref

    class Node:
        pass

    monkeypatch.setattr(warmup, "_visit_views", lambda ctx: None)
    held = {"kept": [1, 2]}                       # alive: set aside
    cycle = Node()
    cycle.me = cycle                              # garbage, only a collection frees it
    gone = weakref.ref(cycle)
    del cycle
    assert gc.is_tracked(held) and any(o is held for o in gc.get_objects())

    assert warmup._warm(_Ctx()) == "warm"
    assert gone() is None                         # collected first, not set aside
    assert gc.get_freeze_count() > 0
    assert not any(o is held for o in gc.get_objects())     # the collector no longer looks at it
