"""Beyond, where knowledge lives: the reader toy (lmviz.chapters.beyond_reader) can only know what
its context tells it, so retrieval visibly changes its answer, and a wrong passage does not."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from lmviz.chapters import beyond_reader as br


@pytest.fixture(scope="module")
def toy():
    return br.load_reader()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_templates_are_the_passages_sentences_with_the_names_taken_out(lang):
    temps = br.passage_templates(lang)
    assert all("{C}" in t and "{K}" in t for t in temps)
    assert len(temps) > len(br.PLAIN[lang])                       # some come from assets/docs
    names = {n for p in br.pairs(lang) for n in p}
    assert not any(n in t for t in temps for n in names)               # only the placeholders name anyone


def test_pairs_are_drawn_at_random_so_no_fact_can_live_in_the_weights():
    exs = br.reader_corpus(2000, seed=3)[:2000]                   # English
    real = dict(br.pairs("en"))
    about = [e for e in exs if e.about and e.question.startswith("The capital of")]
    cities = Counter(e.answer for e in about)
    assert len(cities) > 50 and max(cities.values()) < 0.05 * len(about)
    kinds = Counter("none" if not e.passage else ("about" if e.about else "other") for e in exs)
    assert 0.5 < kinds["about"] / len(exs) < 0.7 and kinds["none"] > 0.15 * len(exs) and kinds["other"] > 0.15 * len(exs)
    agree = sum(real.get(e.answer) and e.question == f"The capital of {real[e.answer]} is" for e in about)
    assert agree < 0.05 * len(about)                              # the true pairs are not the training pairs


def test_the_shipped_toy_has_the_scripts_vocabulary_and_learned(toy):
    assert toy.tokenizer.words == br.reader_tokenizer().words
    assert toy.losses and toy.losses[-1] < toy.losses[0] / 2


def test_the_toy_answers_from_the_right_passage_and_not_from_a_wrong_one(toy):
    acc = br.answer_accuracy(toy.model, toy.tokenizer, n=50, seed=9)
    for lang in ("en", "zh"):
        assert acc[lang]["about"] >= 0.95, acc
        assert acc[lang]["other"] <= 0.2 and acc[lang]["none"] <= 0.1, acc


def test_an_example_is_a_question_about_its_own_pair():
    rng = random.Random(0)
    cities, countries = (sorted({p[i] for p in br.pairs("zh")}) for i in (0, 1))
    for _ in range(50):
        e = br.reader_example("zh", rng, br.passage_templates("zh"), cities, countries)
        asked_city = e.question.endswith("的首都是")
        assert (e.answer in cities) if asked_city else (e.answer in countries)
        if e.about:
            assert e.answer in e.passage
