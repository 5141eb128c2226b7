"""The /training page in AppTest: start a tiny training, poll it a few times, stop it."""
from __future__ import annotations

import time

import pytest

from tests.apptest_util import all_text, decode, figures, open_page, poll_until
from ui.i18n import translate

pytestmark = pytest.mark.apptest
PAGE = "pages/training.py"


def button(at, key):
    return next(b for b in at.button if b.key == key)


def loss_points(at) -> int:
    figs = [f for f in figures(at) if f["data"] and f["data"][0].get("mode") == "lines"
            and len(f["data"]) >= 2 and f["data"][1].get("mode") == "lines+markers"]
    return len(decode(figs[0]["data"][0]["x"])) if figs else 0


def poll(at, until, timeout=40.0):
    return poll_until(at, until, timeout, interval=0.7)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_start_poll_stop_tiny(lang):
    at = open_page(PAGE, lang, corpus="toy", preset="tiny")
    assert translate("train.title", lang) in [x.value for x in at.title]
    assert button(at, "train_stop").disabled and not button(at, "train_start").disabled
    button(at, "train_start").click().run()
    assert not at.exception
    assert poll(at, lambda a: loss_points(a) > 0)
    n1 = loss_points(at)
    assert poll(at, lambda a: loss_points(a) > n1)              # the curve grows between polls
    text = all_text(at)
    assert translate("train.published", lang, step=0).split("0")[0][:6] in text
    # the trained model is what every chapter now shows
    assert at.session_state["lmviz_session_bundle"].source == "session"
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: button(a, "train_start").disabled is False)
    progress = at.get("progress")[0].proto.text
    assert progress.startswith(translate("train.state_stopped", lang)) or \
        progress.startswith(translate("train.state_done", lang))
    n_final = loss_points(at)
    time.sleep(1.0)
    at.run()
    assert loss_points(at) == n_final                           # stopped: no more steps
    button(at, "train_reset").click().run()
    assert "lmviz_session_bundle" not in at.session_state or at.session_state["lmviz_session_bundle"] is None


def test_bad_custom_value_gets_a_message_not_a_traceback():
    at = open_page(PAGE, "en", preset="tiny")
    at.number_input(key="train_n_head_tiny").set_value(3).run()   # 64 is not divisible by 3
    assert not at.exception
    assert any("divisible by n_head" in e.value for e in at.error)
    assert button(at, "train_start").disabled


def test_own_text_needs_text():
    at = open_page(PAGE, "zh", corpus="own")
    assert not at.exception
    assert translate("train.need_text", "zh") in all_text(at)
    assert button(at, "train_start").disabled


# -- Chinese live training: the poetry corpus, both baselines, the form metric -----------------

def loss_figure_spec(at):
    figs = [f for f in figures(at) if f["data"] and f["data"][0].get("mode") == "lines"
            and len(f["data"]) >= 2 and f["data"][1].get("mode") == "lines+markers"]
    return figs[0] if figs else None


def test_chinese_defaults_to_poetry_and_draws_both_baselines_and_the_form():
    from lmviz.baselines import unigram_baseline
    from lmviz.poetry import form_share, poetry_tokenizer, training_text, vocab_facts

    at = open_page(PAGE, "zh")
    assert at.selectbox(key="train_corpus").value == "poetry"
    assert at.selectbox(key="train_preset").value == "poetry"
    assert at.selectbox(key="train_tok").disabled
    assert translate("train.vocab_reason", "zh", **vocab_facts()) in all_text(at)
    button(at, "train_start").click().run()
    assert poll(at, lambda a: (f := loss_figure_spec(a)) is not None and len(f["layout"].get("shapes", [])) >= 2
                and any(m.label == translate("train.m_form", "zh") for m in a.metric), timeout=90)
    # the two lines sit at the uniform and unigram baselines of the run's own split
    tok = poetry_tokenizer()
    text, vf = training_text()
    ids = tok.encode(text)
    n_val = int(len(ids) * vf)
    b = unigram_baseline(ids[:-n_val], ids[-n_val:], tok.vocab_size)
    ys = sorted(s["y0"] for s in loss_figure_spec(at)["layout"]["shapes"])
    assert ys == pytest.approx(sorted([b.uniform, b.unigram]), abs=1e-6)
    labels = [a["text"] for a in loss_figure_spec(at)["layout"]["annotations"]]
    assert translate("train.f_unigram", "zh", x=b.unigram) in labels
    assert translate("train.f_uniform", "zh", v=tok.vocab_size) in labels
    # the form metric is form_share of the newest sample (prompt included), and the prose says it
    newest = at.get("code")[0].value                           # samples are drawn newest first
    f = form_share(newest)
    metric = next(m for m in at.metric if m.label == translate("train.m_form", "zh"))
    assert metric.value == (f"{f.share:.0%}" if f.n_lines else "—")
    text = all_text(at)
    assert translate("train.form_note", "zh") in text
    # a perplexity is never shown without the uniform and unigram perplexities beside it
    assert translate("train.ppl_beside", "zh", ppl=0, uniform_ppl=b.uniform_ppl, unigram_ppl=0).split("。")[0][:5] in text
    assert f"{b.uniform_ppl:,.0f}" in text and f"{b.unigram_ppl:,.1f}" in text
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: not button(a, "train_start").disabled)


def test_english_default_is_unchanged():
    at = open_page(PAGE, "en")
    assert at.selectbox(key="train_corpus").value == "english"
    assert at.selectbox(key="train_preset").value == "tiny"
