"""The Transformer-block page through AppTest: shapes [n, d] -> [n, |V|], the residual stream of
one token, LayerNorm vs RMSNorm (LayerNorm/RMSNorm example) and the same word in two sentences (contextual-vector example), both languages."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page
from tests.test_page_attention import live_model  # noqa: F401  (default model or a stand-in)
from ui.i18n import translate

PAGE = "pages/transformer_block.py"
pytestmark = pytest.mark.apptest


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def fig_titled(at, text: str) -> dict:
    return next(f for f in figures(at) if text in f["layout"].get("title", {}).get("text", ""))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_shapes_stream_norms_context(lang):
    from ui.session import default_bundle

    cfg = default_bundle().model.cfg
    at = open_page(PAGE, lang)
    no_errors(at)
    shapes = at.code[0].value
    n = len("The capital of France is Paris.") if lang == "en" else len("我喜欢学习数学。")
    assert f"x0          [{n}, {cfg.d_model}]" in shapes
    assert f"logits      [{n}, {cfg.vocab_size}]" in shapes
    # the residual stream of one token: 1 + 2 per layer + final points
    stream = figures(at)[1]
    assert len(decode(stream["data"][0]["y"])) == 2 + 2 * cfg.n_layer
    before = decode(stream["data"][0]["y"]).astype(float)
    at.slider(key="blk_pos").set_value(1).run()
    no_errors(at)
    assert not np.allclose(decode(figures(at)[1]["data"][0]["y"]).astype(float), before)
    # LayerNorm/RMSNorm example on the default vector
    codes = " ".join(c.value for c in at.code)
    assert "mean        = 1.2500" in codes and "var         = 2.8125" in codes
    assert "mean(h²)         = 4.3750" in codes
    # contextual-vector example: the same token row (cosine 1), different final vectors (cosine < 1)
    cos = decode(figures(at)[-1]["data"][0]["y"]).astype(float)
    assert len(cos) == 3 + cfg.n_layer
    assert abs(cos[0] - 1) < 1e-5 and cos[-1] < 0.999
    if lang == "zh":
        assert "苹果" in all_text(at) or "果" in figures(at)[-1]["layout"]["title"]["text"]


def test_bad_inputs_warn():
    at = open_page(PAGE, "en")
    at.text_input(key="blk_vec").input("1, two, 3").run()
    no_errors(at)
    assert translate("blk.bad_vector", "en", n=16) in [w.value for w in at.warning]
    at.text_input(key="blk_vec").input("1, 2, 3").run()
    at.text_input(key="blk_w").input("zebra").run()
    no_errors(at)
    assert translate("blk.ctx_missing", "en", word="zebra") in [w.value for w in at.warning]
    at.text_input(key="blk_text").input("☃").run()
    no_errors(at)
    assert translate("blk.empty", "en") in [w.value for w in at.warning]
