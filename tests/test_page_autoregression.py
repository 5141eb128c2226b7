"""AppTest of /autoregression in both languages: the chain-rule factors and the teacher-forcing tables come from the core,
the live chain rule follows the sentence, and the mask slider redraws a lower-triangular map."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lmviz.chapters.autoregression import toy_chain_rule
from tests.apptest_util import decode, figures, open_page, title_of
from ui.i18n import translate

PAGE = "chapters/autoregression.py"
pytestmark = pytest.mark.apptest


def _fig(at, title_key, lang, **fmt):
    want = translate(title_key, lang, **fmt)
    for f in figures(at):
        if title_of(f) == want:
            return f
    raise AssertionError(f"no figure titled {want!r}")


def _metric(at, key, lang):
    return next(m.value for m in at.metric if m.label == translate(key, lang))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_toy_chain_rule_and_teacher_forcing(lang):
    at = open_page(PAGE, lang)
    r = toy_chain_rule()
    fig = _fig(at, "ar.fig.toy_title", lang)
    assert np.allclose(decode(fig["data"][0]["y"]), [f.prob for f in r.factors])
    assert _metric(at, "ar.product", lang) == f"{r.joint:.4f}" == "0.0858"
    assert float(_metric(at, "ar.sum_logs", lang)) == pytest.approx(math.log(0.5 * 0.6 * 0.65 * 0.55 * 0.8), abs=1e-4)
    # teacher-forcing example: five English pairs, four Chinese pairs, labels shifted by one
    pair_tables = [d.value for d in at.dataframe if translate("ar.col.label", lang) in d.value.columns]
    assert [len(t) for t in pair_tables[:2]] == [5, 4]
    assert list(pair_tables[1][translate("ar.col.label", lang)]) == ["我", "喜欢", "学习", "<结束>"]
    assert translate("ar.made_up", lang) in " ".join(i.value for i in at.info)  # says the numbers are made up


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_live_chain_rule_follows_the_sentence(lang):
    at = open_page(PAGE, lang)
    at.text_input(key="ar_text").set_value("the cat sat on the mat").run()
    assert not at.exception
    fig = _fig(at, "ar.fig.live_title", lang)
    probs = decode(fig["data"][0]["y"])
    assert len(probs) == len("the cat sat on the mat") - 1
    assert float(_metric(at, "ar.total_logp", lang)) == pytest.approx(np.log(probs).sum(), abs=0.01)
    assert int(_metric(at, "ar.n_factors", lang)) == len(probs)
    # one pass equals the prefix passes; changing the future does not move the past
    assert float(_metric(at, "ar.par_diff", lang)) < 1e-3
    assert float(_metric(at, "ar.par_future", lang)) == 0.0


def test_unknown_and_too_short_text_warn_instead_of_failing():
    at = open_page(PAGE, "en")
    at.text_input(key="ar_text").set_value("ab\u2603c").run()   # a snowman is in no corpus
    assert not at.exception
    assert any("\u2603" in w.value for w in at.warning)
    at.text_input(key="ar_text").set_value("\u2603").run()
    assert not at.exception
    assert any(w.value == translate("ar.too_short", "en") for w in at.warning)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_mask_slider_redraws_a_lower_triangular_map(lang):
    at = open_page(PAGE, lang)
    at.slider(key="ar_mask_T").set_value(3).run()
    assert not at.exception
    mask = next(f for f in figures(at) if len(f["data"]) == 4)    # scores, grey cells, masked, weights
    w = decode(mask["data"][3]["z"])
    assert w.shape == (3, 3)
    assert np.allclose(np.triu(w, 1), 0) and np.allclose(w.sum(1), 1)
    live = _fig(at, "ar.fig.live_attn", lang, layer=1, head=1,   # counted from 1
                name=translate("model.name_default", lang))
    lw = decode(live["data"][0]["z"])
    assert np.allclose(np.triu(lw, 1), 0) and np.allclose(lw.sum(1), 1, atol=1e-5)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_loss_is_shown_beside_uniform_and_unigram_baselines(lang):
    """The sentence's mean loss is quoted with the uniform guess and, for the default model, its
    held-out loss and the unigram baseline from the model's metadata (computed, never typed)."""
    from lmviz.baselines import language_report, uniform_baseline
    from tests.apptest_util import all_text
    from ui.session import default_bundle

    b = default_bundle()
    at = open_page(PAGE, lang)
    assert not at.exception
    loss = float(_metric(at, "ar.mean_loss", lang))
    V = b.tokenizer.vocab_size
    u = uniform_baseline(V)
    text = all_text(at)
    assert translate("ar.base_uniform", lang, loss=f"{loss:.3f}", ppl=f"{math.exp(loss):,.1f}", v=f"{V:,}",
                     uniform=f"{u:.3f}", uppl=f"{math.exp(u):,.0f}") in text
    if "languages" in b.meta:
        rep = language_report(b.meta, lang)
        assert rep.heldout_loss < rep.unigram < rep.uniform
        assert translate("ar.base_default", lang, held=f"{rep.heldout_loss:.3f}", hppl=f"{rep.heldout_ppl:,.1f}",
                         uni=f"{rep.unigram:.3f}", unippl=f"{rep.unigram_ppl:,.1f}") in text


def _said(text: str, key: str, lang: str) -> list[dict]:
    """The numbers of each place ``text`` says the catalogue sentence ``key`` (its {fields} read back)."""
    import re

    template = translate(key, lang, **{f: f"\0{f}\0" for f in ("n", "k", "total", "cap")})
    pattern = re.escape(template)
    for f in ("n", "k", "total", "cap"):
        pattern = pattern.replace(re.escape(f"\0{f}\0"), f"(?P<{f}>\\d+)", 1).replace(re.escape(f"\0{f}\0"), f"(?P={f})")
    return [{k: int(v) for k, v in m.groupdict().items()} for m in re.finditer(pattern, text)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_cut_is_said_only_when_something_is_cut(lang):
    """Issue 56 item 3: "只取前 12 个" / "12 个 token 中的前 12 个" was printed for a sentence of 12
    tokens. The teacher-forcing table (12 tokens), the one-pass check (32) and the attention map
    (24) each say the cut when the sentence is longer, and say "all" when it fits."""
    from tests.apptest_util import all_text

    at = open_page(PAGE, lang)
    families = (("ar.tf_live", "ar.tf_live_all", "k"), ("ar.par_cut", "ar.par_all", "n"),
                ("ar.attn_cut", "ar.attn_all", "k"))
    seen = {False: 0, True: 0}
    for text in ("the cat", "the cat sat on the mat", "Return the number of items in the list, and more."):
        at.text_input(key="ar_text").set_value(text).run()
        assert not at.exception
        page = all_text(at)
        for cut_key, all_key, shown in families:
            cut, whole = _said(page, cut_key, lang), _said(page, all_key, lang)
            assert len(cut) + len(whole) == 1, (text, cut_key, cut, whole)
            for m in cut:
                assert m[shown] < m["total"], (text, cut_key, m)   # a cut names fewer than the whole
            seen[bool(cut)] += 1
    assert seen[True] >= 3 and seen[False] >= 3   # both sides of each sentence were drawn
