"""What lmviz asks of Streamlit's private runtime, in one place (Streamlit 1.67)."""
from __future__ import annotations

from contextlib import contextmanager


def in_fragment_rerun() -> bool:
    """True while a fragment reruns on its own (its timer or a widget inside it), False in a full
    run of the app. A fragment that wants a full rerun asks for it only then: a full rerun started
    in the middle of an app run would swallow a button click of that run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)


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


@contextmanager
def page_run(done):
    """Run the page inside; call ``done()`` when it has drawn all it will: at its end, where it
    stopped itself (``st.stop``: a chapter waiting for its text or its task) or failed. Not when
    the run was cut short for another one (``st.rerun``, ``st.switch_page``): that one calls it."""
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

    try:
        yield
    except RerunException:
        raise
    except BaseException:
        done()
        raise
    done()
