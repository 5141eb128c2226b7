"""ui/runtime.py's kept downloads: a file that a deferred download makes when pressed lives for a
while (``KEEP_MADE_S``) however many other sessions' runs end (each sweeps unreferenced files)
before the browser fetches it, and then goes. Without it, two runs ending elsewhere in that moment
left the press a 404 (seen in CI: test_browser_handout's presses while another student moves a
slider)."""
import pytest

pytest.importorskip("streamlit")

from streamlit.runtime.media_file_manager import MediaFileManager  # noqa: E402
from streamlit.runtime.media_file_storage import MediaFileStorageError  # noqa: E402
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage  # noqa: E402

from ui import runtime  # noqa: E402


def _plain(name: str):
    """Streamlit's own method, whether or not this process has installed ours."""
    fn = getattr(MediaFileManager, name)
    return getattr(fn, "lmviz_plain", fn)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _manager(keep: bool, clock=None):
    """A manager with Streamlit's methods, or with ours (``keep``) bound to it."""
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    execute, sweep = _plain("execute_deferred"), _plain("remove_orphaned_files")
    if keep:
        execute, sweep = runtime.kept(execute, sweep, keep_s=60.0, clock=clock)
    return manager, (lambda file_id: execute(manager, file_id)), (lambda: sweep(manager))


def _press(manager, execute, content="<html>hand-out</html>"):
    """Register a deferred hand-out as a script run would (outside a run its session id is
    "dontcare") and press it: the made file's id and the url the browser is sent."""
    pressed = manager.add_deferred(lambda: content, "text/html", "1.2.3", file_name="h.html")
    url = execute(pressed)
    return url.rsplit("/", 1)[-1].split(".")[0], url


def _there(manager, made) -> bool:
    try:
        manager._storage.get_file(made)
    except MediaFileStorageError:
        return False
    return True


def _there_after_two_sweeps(manager, sweep, made) -> bool:
    """Two runs end (each sweeps; a downloadable file goes at the second): is ``made`` left?"""
    sweep()
    sweep()
    return _there(manager, made)


def test_without_it_two_runs_ending_elsewhere_sweep_the_made_file():
    manager, execute, sweep = _manager(keep=False)
    made, _ = _press(manager, execute)
    assert not _there_after_two_sweeps(manager, sweep, made)


def test_the_made_file_lives_for_a_while_then_goes():
    clock = Clock()
    manager, execute, sweep = _manager(keep=True, clock=clock)
    made, url = _press(manager, execute)
    assert url == f"/media/{made}.html"
    for _ in range(5):                             # other sessions' runs end
        clock.now += 10
        sweep()
    assert _there(manager, made)
    assert manager._storage.get_file(made).content == b"<html>hand-out</html>"
    clock.now += 10                                # 60 s after the press: let go, then swept
    assert not _there_after_two_sweeps(manager, sweep, made)


def test_the_sessions_next_full_run_lets_it_go_sooner():
    manager, execute, sweep = _manager(keep=True, clock=Clock())
    made, _ = _press(manager, execute)
    manager.clear_session_refs("dontcare")         # the session's next full run
    assert not _there_after_two_sweeps(manager, sweep, made)


def test_a_second_press_replaces_the_first():
    clock = Clock()
    manager, execute, sweep = _manager(keep=True, clock=clock)
    first, _ = _press(manager, execute, "a")
    sweep()
    clock.now += 30
    second, _ = _press(manager, execute, "b")
    assert first != second
    assert _there_after_two_sweeps(manager, sweep, second) and not _there(manager, first)   # one file per button, not one per press
    clock.now += 40                                # 70 s after the first press, 40 after the second
    sweep()
    assert _there(manager, second)
