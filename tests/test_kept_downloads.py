"""ui/runtime.py's kept downloads: a file that a deferred download makes when pressed lives until
its session's next full run, however many other sessions' runs end (each sweeps unreferenced
files) before the browser fetches it. Without it, two runs ending elsewhere in that moment left
the press a 404 (seen in CI: test_browser_handout's presses while another student moves a slider)."""
import pytest

pytest.importorskip("streamlit")

from streamlit.runtime.media_file_manager import MediaFileManager  # noqa: E402
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage  # noqa: E402
from streamlit.runtime.media_file_storage import MediaFileStorageError  # noqa: E402

from ui import runtime  # noqa: E402


def _made(manager, execute):
    """Register a deferred hand-out as a script run would (outside a run its session id is
    "dontcare") and press it: the made file's id and the url the browser is sent."""
    pressed = manager.add_deferred(lambda: "<html>hand-out</html>", "text/html", "1.2.3", file_name="h.html")
    url = execute(manager, pressed)
    return url.rsplit("/", 1)[-1].split(".")[0], url


def _there(manager, made) -> bool:
    try:
        manager._storage.get_file(made)
    except MediaFileStorageError:
        return False
    return True


def test_without_it_two_runs_ending_elsewhere_sweep_the_made_file():
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    made, _ = _made(manager, _plain())
    manager.remove_orphaned_files()
    manager.remove_orphaned_files()
    assert not _there(manager, made)


def _plain():
    """Streamlit's own execute_deferred, whether or not this process has installed ours."""
    fn = MediaFileManager.execute_deferred
    return fn.lmviz_plain if getattr(fn, "lmviz_kept", False) else fn


def test_the_made_file_lives_until_its_sessions_next_full_run():
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    made, url = _made(manager, runtime.kept(_plain()))
    assert url == f"/media/{made}.html"
    for _ in range(5):                             # other sessions' runs end
        manager.remove_orphaned_files()
    assert _there(manager, made)
    assert manager._storage.get_file(made).content == b"<html>hand-out</html>"
    manager.clear_session_refs("dontcare")         # the session's next full run
    manager.remove_orphaned_files()
    manager.remove_orphaned_files()
    assert not _there(manager, made)


def test_a_second_press_replaces_the_first_and_the_press_can_repeat():
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    execute = runtime.kept(_plain())
    pressed = manager.add_deferred(lambda: "a", "text/html", "1.2.3", file_name="h.html")
    first = execute(manager, pressed).rsplit("/", 1)[-1].split(".")[0]
    manager.remove_orphaned_files()
    pressed_again = manager.add_deferred(lambda: "b", "text/html", "1.2.3", file_name="h.html")
    second = execute(manager, pressed_again).rsplit("/", 1)[-1].split(".")[0]
    assert first != second
    manager.remove_orphaned_files()
    manager.remove_orphaned_files()
    assert _there(manager, second) and not _there(manager, first)   # one file per button, not one per press
