"""Widgets whose value is mirrored in the URL query string, so a link reproduces a view.

On a session's first run the value comes from the URL when it is valid; a hand-edited URL with a
bad value falls back to the default with a note shown just above the widget, never an error.
After each run the current value is written back to the URL.

A value from a link is shown only as literal text (``literal``: a Markdown code span), never as
Markdown or HTML: ``?tau=[click](https://x)`` must not plant a live link, nor
``?tau=![x](http://host/x.png)`` make every visitor's browser fetch an image.

    temperature = urlstate.slider(label, 0.0, 5.0, 1.0, 0.05, param="tau", key="gen_tau")
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import streamlit as st

from ui.i18n import literal, t

URL_VALUE_CHARS = 40   # a bad link value is shown up to this many characters


def bad_value_note(param: str, raw: str) -> None:
    """The note above a widget whose link value was not valid here (the value shown literally)."""
    st.info(t("common.url_bad", param=param, value=literal(raw[:URL_VALUE_CHARS])), icon=":material/link_off:")


def seed_from_url(param: str, key: str, default: Any, parse: Callable[[str], Any],
              valid: Callable[[Any], bool]) -> None:
    """Seed ``st.session_state[key]`` from ``?param=`` once per session (for widgets built by hand,
    e.g. a preset that fills several sliders)."""
    # The note stays above the widget on later runs (a rerun of the whole app, e.g. when the
    # model finishes loading, must not make it vanish) until the widget's value is changed.
    notes = st.session_state.setdefault("lmviz_url_notes", {})
    from ui import follow

    if _take_followed(follow.pending(param), param, key, parse, valid):
        return
    if key in st.session_state:
        if key in notes:
            note_param, note_raw, seeded = notes[key]
            if st.session_state[key] == seeded:
                bad_value_note(note_param, note_raw)
            else:
                del notes[key]
        # Re-assert the value before the widget is made: a widget's value reaches the browser
        # only on a run that set it, and a run interrupted by a rerun (a fresh server's first
        # visit: the model finishing loading) could set it and end before the widget was sent;
        # the browser then showed an empty box while the page computed with the real text.
        st.session_state[key] = st.session_state[key]
        return
    # A link's value applies once per session: a widget whose key changes later (say, the merge
    # count of another corpus) starts from its default, not from a value meant for another view.
    used = st.session_state.setdefault("lmviz_url_used", set())
    raw = None if param in used else st.query_params.get(param)
    used.add(param)
    value = default
    if raw is not None:
        try:
            parsed = parse(raw)
            if not valid(parsed):
                raise ValueError(raw)
            value = parsed
        except (ValueError, TypeError):
            bad_value_note(param, raw)
            notes[key] = (param, raw, value)
    st.session_state[key] = value


def _take_followed(raw: str | None, param: str, key: str, parse: Callable[[str], Any],
                   valid: Callable[[Any], bool]) -> bool:
    """Classroom mode: a follower takes the lecturer's value ``raw`` for ``?param=`` (the second
    path besides a link's value, which applies once per session): written into the widget's
    session-state key before the widget is drawn. True when a valid value was applied; an
    invalid one (another app version, say) is ignored and the widget keeps its value."""
    if raw is None:
        return False
    try:
        value = parse(raw)
    except (ValueError, TypeError):
        return False
    if not valid(value):
        return False
    st.session_state.setdefault("lmviz_url_used", set()).add(param)
    st.session_state.get("lmviz_url_notes", {}).pop(key, None)
    st.session_state[key] = value
    return True


def to_url(param: str, value: Any) -> None:
    """Write ``value`` to ``?param=`` (numbers without trailing zeros). In a class, a lecturer's
    change is published to the followers at once."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if st.query_params.get(param) != text:
        st.query_params[param] = text
        from ui import follow

        follow.published(param)


def drop(param: str) -> None:
    """Remove ``?param=`` (a value no link can carry); in a class, published at once as ``to_url``."""
    if param in st.query_params:
        del st.query_params[param]
        from ui import follow

        follow.published(param)


def slider(label: str, min_value, max_value, value, step=None, *, param: str, key: str, **kwargs):
    """``st.slider`` (single number) mirrored in ``?param=``."""
    kind = float if isinstance(value, float) or isinstance(step, float) else int
    seed_from_url(param, key, kind(value), kind, lambda v: min_value <= v <= max_value)
    out = st.slider(label, min_value, max_value, step=step, key=key, **kwargs)
    to_url(param, out)
    return out


def selectbox(label: str, options: Sequence, index: int = 0, *, param: str, key: str, **kwargs):
    """``st.selectbox`` over str/int options mirrored in ``?param=``."""
    opts = list(options)
    kind = type(opts[index])
    seed_from_url(param, key, opts[index], kind, lambda v: v in opts)
    out = st.selectbox(label, opts, key=key, **kwargs)
    to_url(param, out)
    return out


def text(label: str, value: str = "", *, param: str, key: str, max_chars: int = 500,
         area: bool = False, **kwargs) -> str:
    """``st.text_input`` (or ``st.text_area``) mirrored in ``?param=`` (URLs hold up to 500 chars)."""
    seed_from_url(param, key, value, str, lambda v: len(v) <= max_chars)
    widget = st.text_area if area else st.text_input
    out = widget(label, key=key, max_chars=max_chars, **kwargs)
    to_url(param, out[:500])
    return out
