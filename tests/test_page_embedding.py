"""The Embedding page through AppTest: lookup by ID (toy embedding table, the filled <EOS> row), robot + P3 (position-vector example),
two orders (word-order example), the live table [V, d] (embedding-table example) and the three position schemes, both languages."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page, title_of
from tests.test_page_attention import live_model  # noqa: F401  (default model or a stand-in)
from ui.i18n import translate

PAGE = "chapters/embedding.py"
pytestmark = pytest.mark.apptest


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def framed_row(at) -> float:
    """Centre row of the frame drawn on the toy table."""
    shape = figures(at)[0]["layout"]["shapes"][0]
    return (shape["y0"] + shape["y1"]) / 2


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_toy_table_lookup_and_positions(lang):
    at = open_page(PAGE, lang)
    no_errors(at)
    E = decode(figures(at)[0]["data"][0]["z"]).astype(float)
    assert E.shape == (6, 3) and np.allclose(E[3], [0.80, 0.10, -0.40])        # toy embedding table
    assert framed_row(at) == 3
    codes = " ".join(c.value for c in at.code)
    total = {"en": "sum   = ", "zh": "和    = "}[lang]                             # the page's word, aligned
    assert total + "[0.85, 0.00, -0.20]" in codes                               # position-vector example
    assert translate("emb.w3_result", lang, same=translate("emb.yes", lang),   # word-order example
                     order=translate("emb.no", lang), withpos=translate("emb.no", lang)) in all_text(at)
    at.slider(key="emb_id").set_value(5).run()                                 # the filled row
    no_errors(at)
    assert framed_row(at) == 5
    assert translate("emb.eos_filled", lang) in all_text(at)                 # says the row is made up
    assert "E[5]" in " ".join(c.value for c in at.code)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_live_table_and_schemes(lang):
    from ui.session import default_bundle

    at = open_page(PAGE, lang)
    cfg = default_bundle().model.cfg
    assert f"[{cfg.vocab_size}, {cfg.d_model}]" in [m.value for m in at.metric]  # embedding-table example
    at.text_input(key="emb_text").input("abba").run()
    no_errors(at)
    ids = [int(x) for x in next(c.value for c in at.code if c.value.startswith("ids = "))[7:-1].split(",")]
    assert len(ids) == 4 and ids[0] == ids[3] and ids[1] == ids[2]
    rows = decode(figures(at)[3]["data"][0]["z"]).astype(float)
    assert rows.shape == (4, cfg.d_model) and np.allclose(rows[0], rows[3])    # same ID, same row
    n_figs = len(figures(at))
    for scheme in ("sinusoidal", "rope"):
        at.session_state["emb_scheme"] = scheme
        at.run()
        no_errors(at)
        assert len(figures(at)) == n_figs
    assert translate("emb.rope_plane", lang) in title_of(figures(at)[-2])
    scores = decode(figures(at)[-1]["data"][0]["z"]).astype(float)
    assert np.allclose(np.diag(scores), scores[0, 0])                          # offset 0 everywhere


def test_unknown_and_empty_text():
    at = open_page(PAGE, "en")
    at.text_input(key="emb_text").input("☃").run()
    no_errors(at)
    assert translate("emb.empty", "en") in [w.value for w in at.warning]
