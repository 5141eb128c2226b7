"""Session state, cached models and background jobs: the one place pages get shared objects from.

- ``device_info()`` reports the compute device without blocking the first paint: torch is
  imported in a background thread started after the first script run (the import takes 3-7 s
  here), which also warms torch up for the chapter pages.
- ``default_bundle()`` is the shipped default model, shared by all users (read-only, eval mode,
  used under ``no_grad``: thread-safe).
- ``live_bundle()`` is the model the chapters show: the one trained in this session when there
  is one, else the default.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import streamlit as st


# ---------------------------------------------------------------- device (non-blocking) ----
class _DeviceProbe:
    """Imports torch in a background thread and records the device name."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.cuda: bool = False
        self._thread = threading.Thread(target=self._run, name="lmviz-device-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import lmviz

        self.name = lmviz.device_name()
        self.cuda = lmviz.device().type == "cuda"


_PROBE: _DeviceProbe | None = None
_PROBE_LOCK = threading.Lock()


def device_info() -> str | None:
    """The device's name ("CPU" or the GPU's name), or None while torch is still loading."""
    return _PROBE.name if _PROBE is not None else None


def start_warmup() -> None:
    """Start importing torch in the background, once per server (called after the first paint)."""
    global _PROBE
    with _PROBE_LOCK:
        if _PROBE is None:
            _PROBE = _DeviceProbe()


# ---------------------------------------------------------------- models ----------------
@dataclass(frozen=True)
class Bundle:
    """A model with what the pages need beside it."""

    model: Any        # lmviz.model.GPT, eval mode
    tokenizer: Any    # lmviz.tokenizer tokenizer
    meta: dict        # training record: corpus, steps, losses, ...
    source: str       # "default" or "session"


@st.cache_resource(show_spinner=False)
def default_bundle() -> Bundle:
    """The shipped default model (loaded once per server, shared read-only)."""
    from lmviz.checkpoint import load_default

    model, tokenizer, meta = load_default()
    return Bundle(model, tokenizer, meta, "default")


def live_bundle() -> Bundle:
    """The model the chapters show: this session's trained model if any, else the default."""
    bundle = st.session_state.get("lmviz_session_bundle")
    return bundle if bundle is not None else default_bundle()


def set_session_bundle(bundle: Bundle | None) -> None:
    """Make ``bundle`` the model every chapter shows in this session (None: back to default)."""
    st.session_state["lmviz_session_bundle"] = bundle
