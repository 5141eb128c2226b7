"""What pages share: the compute device, the models (shipped default and this session's), the
background tasks (the server-wide cap, this session's training, the polling fragment).
The one place pages get shared objects from.

- ``device_info()`` reports the compute device without blocking the first paint: torch is
  imported in a background thread started after the first script run (the import takes 3-7 s
  here), which also warms torch up for the chapter pages.
- ``default_bundle()`` is the shipped default model, shared by all users (read-only, eval mode,
  used under ``no_grad``: thread-safe).
- ``live_bundle()`` is the model the chapters show: the one chosen in the sidebar's model menu
  (``model_menu``: the shipped model, this session's trained one, or a pretrained folder of
  ``LMVIZ_MODEL_DIR`` or the Hugging Face cache, see ``lmviz.hf``), else the default.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import streamlit as st


# ---------------------------------------------------------------- device (non-blocking) ----
def _probe_device(ctx) -> str:
    import lmviz

    return lmviz.device_name()


_PROBE = None            # lmviz.tasks.Task that imports torch and names the device
_PROBE_LOCK = threading.Lock()


def device_info() -> str | None:
    """The device's name ("CPU" or the GPU's name), or None while torch is still loading."""
    return _PROBE.snapshot().result if _PROBE is not None else None


def start_warmup() -> None:
    """Start importing torch in the background, once per server (called after the first paint)."""
    global _PROBE
    with _PROBE_LOCK:
        if _PROBE is None:
            from lmviz.tasks import Task

            _PROBE = Task(_probe_device, name="lmviz-device-probe").start()


# ---------------------------------------------------------------- models ----------------
@dataclass(frozen=True)
class Bundle:
    """A model with what the pages need beside it."""

    model: Any        # lmviz.model.GPT, eval mode
    tokenizer: Any    # lmviz.tokenizer tokenizer
    meta: dict        # training record: corpus, steps, losses, ... (pretrained: family, name, path)
    source: str       # "default", "session" (trained or uploaded here) or "pretrained" (lmviz.hf)


@st.cache_resource(show_spinner=False)
def default_bundle() -> Bundle:
    """The shipped default model (loaded once per server, shared read-only)."""
    global _DEFAULT_READY
    from lmviz.checkpoint import load_default

    model, tokenizer, meta = load_default()
    _DEFAULT_READY = True
    return Bundle(model, tokenizer, meta, "default")


_DEFAULT_READY = False      # True once default_bundle() has returned in this process


def live_bundle() -> Bundle:
    """The model the chapters show: this session's trained model if any, else the default.
    On a fresh server the first page that needs it says so while it loads (below the chapter's
    title, which is already drawn)."""
    bundle = st.session_state.get("lmviz_session_bundle")
    if bundle is not None:
        return bundle
    if not _DEFAULT_READY:
        from ui.i18n import t

        with st.spinner(t("common.loading_model")):
            return default_bundle()
    return default_bundle()


def try_live_bundle(message_key: str | None = None) -> Bundle | None:
    """``live_bundle()``, or None when no model can be loaded (a missing or unreadable default
    checkpoint must not crash a page); with ``message_key`` the page says why (``{err}``)."""
    try:
        return live_bundle()
    except Exception as e:  # noqa: BLE001 - shown to the user instead of a traceback
        if message_key:
            import html

            from ui.i18n import t

            from lmviz.tasks import human_message

            st.warning(t(message_key, err=html.escape(human_message(e)[:200])))
        return None


def model_key(bundle: Bundle) -> str:
    """A cache key that changes when the live model changes (default vs this session's)."""
    return f"{bundle.source}:{id(bundle.model)}"


def set_session_bundle(bundle: Bundle | None) -> None:
    """Make ``bundle`` the model every chapter shows in this session (None: back to default).
    A trained or uploaded one is also kept as the menu's "trained" entry."""
    st.session_state["lmviz_session_bundle"] = bundle
    if bundle is not None and bundle.source == "session":
        st.session_state["lmviz_trained_bundle"] = bundle


# ---------------------------------------------------------------- pretrained models -----------
@st.cache_data(ttl=30, show_spinner=False)
def pretrained_models() -> list:
    """The pretrained model folders on this machine (lmviz.hf.find_models; config.json only)."""
    from lmviz.hf import find_models

    return find_models()


@st.cache_resource(max_entries=1, show_spinner=False)
def pretrained_bundle(path: str) -> Bundle:
    """A pretrained folder loaded once per server and shared read-only (eval mode, no_grad, like
    the default). One at a time: choosing another releases it once no session shows it.
    Raises lmviz.checkpoint.CheckpointError (a sentence) when refused, the budget included."""
    from lmviz.hf import load

    model, tok, meta = load(path)
    return Bundle(model, tok, {**meta, "path": path}, "pretrained")


def _picked() -> None:
    st.session_state["lmviz_model_pick"] = st.session_state["lmviz_model_choice"]


def model_menu() -> None:
    """The sidebar's model menu: the shipped model, this session's trained one (when there is one)
    and every pretrained folder found; the choice is the model every chapter shows (applied here,
    before the page draws). With no pretrained folder, one sentence says how to add one."""
    from ui.i18n import t

    from lmviz.hf import FAMILIES

    found = pretrained_models()
    trained = st.session_state.get("lmviz_trained_bundle")
    options = ["default"] + (["session"] if trained is not None else []) + [str(f.path) for f in found]
    labels = {"default": t("model.default"), "session": t("model.session"),
              **{str(f.path): f"{f.label} · {FAMILIES[f.family]}" for f in found}}

    def now() -> str:
        b = st.session_state.get("lmviz_session_bundle")
        return "default" if b is None else ("session" if b.source == "session" else b.meta.get("path", "default"))

    pick = st.session_state.pop("lmviz_model_pick", None)
    if pick is not None and pick != now() and pick in options:
        if pick == "default":
            set_session_bundle(None)
        elif pick == "session":
            set_session_bundle(trained)
        else:
            from lmviz.checkpoint import CheckpointError

            try:
                with st.spinner(t("model.loading", name=labels[pick])):
                    set_session_bundle(pretrained_bundle(pick))
            except CheckpointError as e:
                from ui.render import escape

                st.error(t("model.refused", name=escape(labels[pick]), why=escape(t(e.key, **e.params))))
    current = now()
    if current not in options:                      # e.g. a folder removed since it was chosen
        options.append(current)
        b = st.session_state.get("lmviz_session_bundle")
        labels[current] = b.meta.get("name", current) if b is not None else current
    st.session_state["lmviz_model_choice"] = current   # the menu follows the model (a training publishes one)
    st.selectbox(t("model.menu"), options, format_func=labels.get, key="lmviz_model_choice", on_change=_picked,
                 help=t("model.menu_help"))
    if not found:
        st.caption(t("model.none_found"))


def forget_trained_model() -> None:
    """Back to the shipped default model in every chapter."""
    set_session_bundle(None)
    st.session_state.pop("lmviz_job_published", None)
    st.session_state.pop("lmviz_trained_bundle", None)
