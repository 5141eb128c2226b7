"""What lmviz asks of Streamlit's private runtime, in one place (Streamlit 1.67)."""
from __future__ import annotations


def in_fragment_rerun() -> bool:
    """True while a fragment reruns on its own (its timer or a widget inside it), False in a full
    run of the app. A fragment that wants a full rerun asks for it only then: a full rerun started
    in the middle of an app run would swallow a button click of that run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)
