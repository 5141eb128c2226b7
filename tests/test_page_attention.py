"""The Attention page through AppTest: the five stages on the live model, layer/head sliders,
all heads, weighted-sum example, √d_k-scaling example and causal-mask example, bad input, both languages."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page
from ui.i18n import translate

PAGE = "pages/attention.py"
pytestmark = pytest.mark.apptest


@pytest.fixture(autouse=True, scope="session")
def live_model():
    """The shipped default model; when the file is not there (yet), a small random stand-in so
    the pages' mechanics are still tested (numbers from a random model, same shapes)."""
    import lmviz.checkpoint as ck

    if ck.DEFAULT_PATH.exists():
        yield
        return
    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.tokenizer import CharTokenizer

    text = "".join((ck.DEFAULT_PATH.parent.parent / "corpora" / f"{n}.txt").read_text(encoding="utf-8")
                   for n in ("english", "chinese"))
    tok = CharTokenizer(text)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=4,
                          n_kv_head=4, d_model=64)).eval()
    original = ck.load_default
    ck.load_default = lambda: (model, tok, {"stand_in": True})
    yield
    ck.load_default = original


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def set_stage(at, stage: str):
    """Choose a stage through session state (the option labels are translated by format_func,
    which AppTest's selectbox helpers re-run outside the session, in English)."""
    at.session_state["att_stage"] = stage
    return at


def stage_z(at) -> np.ndarray:
    """The stage heatmap's matrix (NaN where masked)."""
    fig = figures(at)[0]
    return decode(fig["data"][0]["z"]).astype(float)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_stages_layers_heads(lang):
    at = open_page(PAGE, lang)
    no_errors(at)
    assert at.title[0].value == translate("att.title", lang)
    raw = stage_z(at)
    T = raw.shape[0]
    assert raw.shape == (T, T) and T > 5 and np.isfinite(raw).all()  # QK^T: every pair scored
    set_stage(at, "scaled").run()
    no_errors(at)
    scaled = stage_z(at)
    ratio = raw[np.abs(scaled) > 1e-6] / scaled[np.abs(scaled) > 1e-6]
    assert np.allclose(ratio, ratio[0], rtol=1e-3) and ratio[0] > 1       # divided by one sqrt(d_k)
    set_stage(at, "masked").run()
    masked = stage_z(at)
    assert np.isnan(masked[np.triu_indices(T, 1)]).all()                  # future = -inf (drawn grey)
    set_stage(at, "weights").run()
    w = stage_z(at)
    assert np.allclose(w.sum(1), 1, atol=1e-5) and (w[np.triu_indices(T, 1)] == 0).all()
    # a different layer gives a different weight matrix
    at.slider(key="att_layer").set_value(2).run()
    no_errors(at)
    assert not np.allclose(stage_z(at), w)
    assert translate("att.heads_title", lang, layer=2) in all_text(at)
    # all heads of the layer side by side, one heatmap each, rows summing to 1
    heads = figures(at)[1]
    assert len(heads["data"]) == at.slider(key="att_head").max
    for tr in heads["data"]:
        assert np.allclose(decode(tr["z"]).astype(float).sum(1), 1, atol=1e-5)
    at.slider(key="att_head").set_value(2).run()
    no_errors(at)
    assert np.allclose(stage_z(at), decode(figures(at)[1]["data"][1]["z"]).astype(float), atol=1e-6)
    # the head output: [T, d_head]
    set_stage(at, "out").run()
    assert stage_z(at).shape[0] == T and stage_z(at).shape[1] < T * 4


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_worked_examples(lang):
    at = open_page(PAGE, lang)
    codes = " ".join(c.value for c in at.code)
    assert "[1.2, 1.6]" in codes                                        # weighted-sum example
    table = at.dataframe[0].value                                       # √d_k-scaling example
    var = table[translate("att.col.var_raw", lang)].to_numpy()
    dks = table["d_k"].to_numpy()
    assert np.all(np.abs(var / dks - 1) < 0.15)
    assert np.all(np.abs(table[translate("att.col.var_scaled", lang)].to_numpy() - 1) < 0.15)
    text = all_text(at)
    assert translate("att.mask_caption", lang, zeros=10, future=10, n=5) in text  # causal-mask example
    one = [f for f in figures(at) if f["data"] and f["data"][0]["type"] == "bar"][-1]
    raw, scaled = (decode(tr["y"]).astype(float) for tr in one["data"])
    assert raw.max() > scaled.max()
    at.select_slider(key="att_dk").set_value(4).run()
    no_errors(at)


def test_bad_and_long_input():
    at = open_page(PAGE, "en")
    at.text_input(key="att_text").input("☃☃☃").run()
    no_errors(at)
    assert at.warning and translate("att.empty", "en") in [w.value for w in at.warning]
    at.text_input(key="att_text").input("<b>x</b> ☃ " + "abc " * 40).run()
    no_errors(at)
    assert any("☃" in w.value for w in at.warning)
    assert stage_z(at).shape[0] <= 64
