"""The shipped default model against its metadata: per-language held-out losses and baselines
recomputed on fixed samples, the goals of issue 13 (each language at least 1 nat below its
unigram baseline, train - held-out gap at most 0.3 nats), and its vocabulary."""
import json
import math

import pytest

from lmviz.checkpoint import DEFAULT_PATH, load_default

pytestmark = pytest.mark.skipif(not DEFAULT_PATH.is_file(), reason="default model not trained yet")

SAMPLE_TOKENS = 8192        # the test's sample: the first tokens of each text (metadata: 65,536)
TOL = 0.15                  # nats between the sample's loss and the stored one


def texts():
    from lmviz.data import paragraph_split
    from lmviz.poetry import load_poetry

    c = load_poetry()
    return {"en": paragraph_split("english", 0.1, 0),  # as scripts/train_default.py
            "zh": (c.train_text, c.heldout_text)}


@pytest.fixture(scope="module")
def shipped():
    return load_default()


def test_metadata_files_agree_and_hold_every_number(shipped):
    _, tok, meta = shipped
    record = json.loads(DEFAULT_PATH.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["languages"] == meta["languages"]
    assert set(meta["languages"]) == {"en", "zh"}
    for lang, m in meta["languages"].items():
        for key in ("heldout_loss", "train_loss", "gap", "unigram_baseline", "uniform_baseline"):
            assert math.isfinite(m[key]), (lang, key)
        assert m["uniform_baseline"] == pytest.approx(math.log(tok.vocab_size))
        assert m["gap"] == pytest.approx(m["heldout_loss"] - m["train_loss"])


def test_vocabulary_is_the_poetry_vocabulary(shipped):
    from lmviz.poetry import poetry_tokenizer

    _, tok, _ = shipped
    assert tok.chars == poetry_tokenizer().chars and tok.unk == "□"   # else: retrain the model


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_losses_and_baselines_recomputed(shipped, lang):
    from lmviz.baselines import heldout_loss, unigram_baseline

    model, tok, meta = shipped
    m = meta["languages"][lang]
    tr, va = texts()[lang]
    tr_ids, va_ids = tok.encode(tr), tok.encode(va)
    b = unigram_baseline(tr_ids, va_ids, tok.vocab_size)
    assert b.unigram == pytest.approx(m["unigram_baseline"], abs=1e-9)
    assert b.uniform == pytest.approx(m["uniform_baseline"], abs=1e-9)
    held = heldout_loss(model, va_ids, SAMPLE_TOKENS)
    train = heldout_loss(model, tr_ids, SAMPLE_TOKENS)
    assert abs(held - m["heldout_loss"]) < TOL and abs(train - m["train_loss"]) < TOL
    # the goals: it generalises, and memorises nothing
    assert m["unigram_baseline"] - m["heldout_loss"] >= 1.0
    assert b.unigram - held >= 1.0 - TOL
    assert m["gap"] <= 0.3


def test_language_report_reads_the_metadata(shipped):
    from lmviz.baselines import language_report

    _, tok, meta = shipped
    r = language_report(meta, "zh")
    assert r.corpus == "poetry" and r.uniform_ppl == pytest.approx(tok.vocab_size)
    assert r.heldout_ppl < r.unigram_ppl < r.uniform_ppl
    assert language_report(meta, "en").heldout_loss == meta["languages"]["en"]["heldout_loss"]
    with pytest.raises(ValueError):
        language_report({}, "zh")
