"""ui/runtime.py's bounded script runs: at most a few sessions' runs at once, so that a room of 300
joining does not leave a hundred threads fighting for the interpreter (the lecturer's "ask" reached
its session 6.7 s after it was sent), and the lecturer's session (served first) never waits."""
import threading
import time
from types import SimpleNamespace

from ui import runtime


def _recording_run(hold_s: float = 0.05):
    """A stand-in for ``ScriptRunner._run_script`` that records how many runs were inside at once."""
    state = {"inside": 0, "most": 0, "done": []}
    lock = threading.Lock()

    def run(runner, rerun_data):
        with lock:
            state["inside"] += 1
            state["most"] = max(state["most"], state["inside"])
        time.sleep(hold_s)
        with lock:
            state["inside"] -= 1
            state["done"].append(runner.name)
        return rerun_data

    return run, state


def test_at_most_the_places_run_at_once_and_every_run_runs():
    run, state = _recording_run()
    wrapped = runtime.bounded(run, threading.BoundedSemaphore(2))
    out = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, wrapped(SimpleNamespace(name=i), i * 10)))
               for i in range(10)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert state["most"] == 2
    assert sorted(state["done"]) == list(range(10))
    assert out == {i: i * 10 for i in range(10)}          # each run's own result comes back


def test_a_session_served_first_never_waits_for_a_place():
    run, state = _recording_run(hold_s=0.0)
    places = threading.BoundedSemaphore(1)
    wrapped = runtime.bounded(run, places, first=lambda runner: runner.name == "lecturer")
    places.acquire()                                     # every place taken by the room
    try:
        done = threading.Event()
        th = threading.Thread(target=lambda: (wrapped(SimpleNamespace(name="lecturer"), None), done.set()))
        th.start()
        assert done.wait(5)                              # ran although no place was free
        student = threading.Thread(target=wrapped, args=(SimpleNamespace(name="student"), None))
        student.start()
        student.join(0.3)
        assert student.is_alive() and "student" not in state["done"]   # waits for a place
    finally:
        places.release()
    student.join(5)
    assert state["done"] == ["lecturer", "student"]


def test_a_run_that_fails_gives_its_place_back():
    places = threading.BoundedSemaphore(1)

    def failing(runner, rerun_data):
        raise RuntimeError("the script failed")

    wrapped = runtime.bounded(failing, places)
    for _ in range(3):                                   # the second would wait forever otherwise
        try:
            wrapped(SimpleNamespace(name="x"), None)
        except RuntimeError:
            pass
    assert places.acquire(timeout=1)
    places.release()


def test_the_number_of_places_from_the_environment(monkeypatch):
    for raw, want in (("", runtime.RUN_PLACES), ("8", 8), ("0", runtime.RUN_PLACES), ("-3", runtime.RUN_PLACES),
                      ("many", runtime.RUN_PLACES), (" 2 ", 2)):
        monkeypatch.setenv("LMVIZ_RUN_PLACES", raw)
        assert runtime.run_places() == want


def test_streamlit_runs_are_bounded_once():
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    runtime.bounded_runs()
    patched = ScriptRunner._run_script
    runtime.bounded_runs()
    assert ScriptRunner._run_script is patched and patched.lmviz_bounded
