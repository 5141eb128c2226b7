"""The capital-corpus example trained for real: the capital corpus, a bigram model and a small transformer."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lmviz.capitals import template_positions
from lmviz.chapters.beyond_structure import (BigramModel, StructureConfig, Vocab, country_attention,
    sentence_losses, tokenize, train_structure, w9_corpus)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_corpus_holds_out_cities_but_keeps_their_countries(lang):
    c = w9_corpus(lang, n_sentences=400, seed=3, n_heldout=6)
    assert len(c.sentences) == 400 and len(c.heldout_sentences) == 6
    held = {p.city for p in c.heldout_pairs}
    train_cities = {template_positions(s).city for s in c.sentences}
    train_countries = {template_positions(s).country for s in c.sentences}
    assert not held & train_cities                       # never read in training
    assert {p.country for p in c.heldout_pairs} <= train_countries   # but the country was
    assert len({template_positions(s).template.text for s in c.sentences}) >= 4   # several templates


def test_bigram_cannot_beat_the_country_floor():
    # the notes' three sentences: after "of" the three countries are equally likely -> ln 3
    sents = ["Paris is the capital of France.", "Tokyo is the capital of Japan.",
             "Ottawa is the capital of Canada."]
    v = Vocab(sents, "en")
    b = BigramModel([v.encode(s) for s in sents], len(v), alpha=0.0)
    ids = v.encode(sents[0])
    country = tokenize(sents[0], "en").index("France") + 1
    assert b.nll(ids)[country - 1] == pytest.approx(math.log(3))


@pytest.fixture(scope="module")
def tiny():
    return train_structure(StructureConfig(lang="en", n_sentences=600, steps=200, batch=32), n_eval=100)


def test_transformer_beats_bigram_at_the_country(tiny):
    s = tiny.train_summary
    assert s.transformer < s.bigram - 1.0                # reading the city pays at the country
    assert s.transformer_acc > s.bigram_acc
    assert tiny.losses[-1] < tiny.losses[0]


def test_per_position_loss_and_attention_on_one_sentence(tiny):
    sent = tiny.corpus.sentences[0]
    sl = sentence_losses(sent, tiny.vocab, tiny.bigram, tiny.model)
    assert len(sl.bigram) == len(sl.transformer) == len(sl.tokens) - 1
    assert sl.tokens[sl.country + 1] == template_positions(sent).country
    att = country_attention(sent, tiny.vocab, tiny.model)
    assert att.weights.shape[:2] == (2, 2) and len(att.tokens) == sl.country + 1
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)


def test_heldout_cities_are_unknown_tokens(tiny):
    sent = tiny.corpus.heldout_sentences[0]
    sl = sentence_losses(sent, tiny.vocab, tiny.bigram, tiny.model)
    assert "<unk>" in sl.tokens[sl.city[0]:sl.city[1]]
    assert tiny.heldout_summary is not None and tiny.heldout_summary.n == len(tiny.corpus.heldout_sentences)
