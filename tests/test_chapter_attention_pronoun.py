"""The attention chapter's pronoun test and its toy (lmviz.chapters.attention_pronoun): the
generated corpus, the shipped toy's pronouns, and the control that separates reference from a
head that looks at whatever stands in the referent's place."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from lmviz.chapters import attention_pronoun as ap
from lmviz.chapters.claims import pronoun

DEFAULTS = {"en": ("I gave the book to Anna because she needs it.", "Anna", "she"),
            "zh": ("把书交给小李，因为他需要参考", "小李", "他")}


@pytest.fixture(scope="module")
def toy():
    return ap.load_toy()


def _trace(model):
    def trace(ids):
        with torch.no_grad():
            return model.forward_trace(torch.tensor(ids, dtype=torch.long))
    return trace


def _case(toy, text, ref, pron, ctrl):
    tok = toy.tokenizer
    return ap.pronoun_case(_trace(toy.model), tok.encode(text), tok.encode(ref), tok.encode(pron),
                           tok.encode(ctrl), toy.model.cfg.block_size)


def test_every_generated_sentence_is_one_person_and_an_agreeing_pronoun():
    tok = ap.toy_tokenizer()
    longest = 0
    for s, person, pron in ap.toy_corpus(300, seed=4):
        lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in s) else "en"
        ids = tok.encode(s)                                   # every word is in the vocabulary
        assert person in ap.NAMES[lang][pron]
        names = [w for w in (tok.token(i) for i in ids) if any(w in v for v in ap.NAMES[lang].values())]
        assert names == [person]                              # exactly one named person
        longest = max(longest, len(ids))
    assert longest <= ap.ToyTrainConfig().block_size


def test_the_person_stands_in_many_places():
    """A head that looks a fixed distance back could not find the name: its distance from the
    position that writes the pronoun varies."""
    tok = ap.toy_tokenizer()
    dist = Counter()
    for s, person, pron in ap.toy_corpus(300, seed=5):
        ids = tok.encode(s)
        dist[ids.index(tok.encode(pron)[0]) - 1 - ids.index(tok.encode(person)[0])] += 1
    assert len(dist) >= 4 and max(dist.values()) < 0.5 * sum(dist.values())


def test_the_shipped_toy_is_what_the_script_writes(toy):
    fresh = ap.toy_tokenizer()
    assert toy.tokenizer.words == fresh.words
    cfg = ap.ToyTrainConfig()
    assert (toy.model.cfg.n_layer, toy.model.cfg.n_head, toy.model.cfg.d_model) == (cfg.n_layer, cfg.n_head, cfg.d_model)
    assert toy.losses and toy.losses[-1] < toy.losses[0] / 3


def test_the_toy_writes_the_pronoun_that_agrees_with_the_person(toy):
    acc = ap.pronoun_accuracy(toy.model, toy.tokenizer, n=60, seed=7)
    assert acc["en"] >= 0.95 and acc["zh"] >= 0.95, acc


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_the_notes_sentence_the_toy_beats_the_control_and_the_look_back(toy, lang):
    text, ref, pron = DEFAULTS[lang]
    case = _case(toy, text, ref, pron, {"en": "the cup", "zh": "杯子"}[lang])
    assert case.query_pos == case.pron_span[0] - 1 and case.p_pronoun > 0.9
    c = case.control
    assert pronoun(c.referent, c.control, c.recency, c.uniform).statement == "referent", c


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_object_in_the_persons_place_is_a_control_a_name_is_not(toy, lang):
    """Over fresh sentences: with an object in the person's place the head's share falls (the claim
    holds in most sentences); with another name it stays (the head looks at any name, since it
    must read one to choose he or she), so the claim says "control"."""
    rng = random.Random(11)
    obj, name = {"en": ("cup", "Paul"), "zh": ("杯子", "小明")}[lang]
    by = {obj: Counter(), name: Counter()}
    for _ in range(40):
        s, person, pron = ap.toy_sentence(lang, rng)
        for ctrl in by:
            c = _case(toy, s, person, pron, ctrl).control
            by[ctrl][pronoun(c.referent, c.control, c.recency, c.uniform).statement] += 1
    assert by[obj]["referent"] >= 30, by
    assert by[name]["control"] >= 30, by


def test_a_case_needs_the_referent_before_the_pronoun(toy):
    tok = toy.tokenizer
    trace = _trace(toy.model)
    ids = tok.encode("Anna said she was busy .")
    assert ap.pronoun_case(trace, ids, tok.encode("Tom"), tok.encode("she"), [], 24) is None   # no referent
    assert ap.pronoun_case(trace, ids, tok.encode("busy"), tok.encode("she"), [], 24) is None  # pronoun first
    case = ap.pronoun_case(trace, ids, tok.encode("Anna"), tok.encode("she"), [], 24)
    assert case.control is None and case.query_pos == 1                 # referent right before: allowed
