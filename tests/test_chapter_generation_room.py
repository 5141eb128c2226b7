"""Be the language model (lmviz.chapters.generation_room, ui.room): the room's guesses against
the model, pinned on a synthetic room; the activity's questions through the class store; the
section in a student's page."""
from __future__ import annotations

import math

import pytest
import torch

from lmviz.chapters import generation_room as gr
from lmviz.server.classroom import ClassStore, MemoryBackend
from tests.conftest import Clock


def _room():
    """A synthetic room of 20 on a model that puts 0.5, 0.3, 0.1 on three tokens (0.1 elsewhere)."""
    ch = gr.Choices((4, 7, 2), (0.5, 0.3, 0.1), 0.1, 1.0, ("学", "习", "们"))
    a, b, c, o = ch.options
    return ch, {a: 6, b: 12, c: 0, o: 2}


def test_compare_pins_the_measures_on_a_synthetic_room():
    ch, counts = _room()
    r = gr.compare(ch, counts)
    assert r.n == 20 and r.room == (0.3, 0.6, 0.0, 0.1) and not r.weak
    # H(room) = −(.3 log .3 + .6 log .6 + .1 log .1)
    assert r.room_entropy == pytest.approx(-(0.3 * math.log2(0.3) + 0.6 * math.log2(0.6) + 0.1 * math.log2(0.1)))
    assert r.model_entropy == pytest.approx(1.6854752972273346)
    # the model's loss on the room's answers: −(.3 log .5 + .6 log .3 + .1 log .1)
    assert r.model_on_room == pytest.approx(0.3 + 0.6 * -math.log2(0.3) + 0.1 * -math.log2(0.1))
    # the room smoothed add-one: (7, 13, 1, 3) / 24
    sm = (7 / 24, 13 / 24, 1 / 24, 3 / 24)
    assert r.room_on_model == pytest.approx(-sum(m * math.log2(s) for m, s in zip(ch.model, sm)))
    a, b, c, o = ch.options
    assert (r.room_tops, r.model_top) == ((b,), a) and r.floored == ()
    assert r.room_finds == (b,) and r.model_finds == (a,)      # +0.30 on 习; −0.20 on 学


def test_a_small_room_is_weak_evidence_and_an_empty_one_has_no_favourite():
    ch, _ = _room()
    assert gr.compare(ch, {ch.options[0]: 3}).weak
    empty = gr.compare(ch, {})
    assert empty.n == 0 and empty.room_tops == () and math.isnan(empty.model_on_room)
    assert gr.compare(ch, {"t99.1.00": 5, "forged": 3}).n == 0   # unknown options are not counted


def test_a_choice_the_model_rounds_to_zero_costs_a_finite_floored_surprise():
    """A room that picks what the model gave 0.000 (its thousandths) would cost infinitely many
    bits: the probability is counted at FLOOR, and the choice is named as floored."""
    ch = gr.from_options(gr.Choices((4, 7), (0.9995, 0.0004), 0.0001, 1.0, ("a", "b")).options, 1.0)
    a, b, o = ch.options
    assert ch.probs == (1.0, 0.0) and ch.other == 0.0            # as the room receives them
    r = gr.compare(ch, {a: 1, b: 2, o: 1})
    assert r.floored == (b, o) and math.isfinite(r.model_on_room)
    assert r.model_on_room == pytest.approx(0.75 * -math.log2(gr.FLOOR))
    ok = gr.compare(ch, {a: 3})
    assert ok.floored == () and ok.model_on_room == 0.0


def test_other_is_in_thousandths_as_the_choices_are():
    """1 − 0.7 − 0.2 − 0.1 is 2.8e-17 in floating point, which would cost 55 bits as a probability."""
    ch = gr.from_options(gr.Choices((1, 2, 3), (0.7, 0.2, 0.1), 0.0, 1.0, ("x", "y", "z")).options, 1.0)
    assert ch.other == 0.0
    assert gr.compare(ch, {ch.options[-1]: 1}).floored == (gr.OTHER,)


def test_a_tie_is_every_option_with_the_most_answers():
    ch, _ = _room()
    a, b, c, o = ch.options
    assert gr.compare(ch, {a: 2, b: 2, c: 2, o: 1}).room_tops == (a, b, c)
    assert gr.compare(ch, {b: 3, o: 3}).room_tops == (b, o)


def test_sentence_perplexity_against_the_model():
    ch, counts = _room()
    a, b, _, o = ch.options
    s = gr.sentence_score([(gr.compare(ch, counts), b, 0.3), (gr.compare(ch, counts), o, 0.02)])
    assert s.room_p == pytest.approx((13 / 24, 3 / 24))
    assert s.model_perplexity == pytest.approx((1 / (0.3 * 0.02)) ** 0.5)
    assert s.room_perplexity == pytest.approx((1 / (13 / 24 * 3 / 24)) ** 0.5) and not s.weak
    with pytest.raises(ValueError):
        gr.sentence_score([])


def test_choices_of_a_real_model_travel_through_the_class_store():
    """The options carry each token's text and probability within the store's id rules; a
    follower rebuilds the lecturer's choices from them; answers count once per voter."""
    from lmviz.checkpoint import load_default
    from lmviz.sampling import next_logits

    model, tok, _ = load_default()
    ids, _ = tok.encode_lossy("白日依山尽，黄河入海")
    with torch.no_grad():
        ch = gr.choices(next_logits(model, ids), 1.0, text_of=tok.token)
    assert len(ch.options) == 7 and all(len(o) <= 32 for o in ch.options)
    back = gr.from_options(ch.options, 1.0)
    assert back.texts == ch.texts and back.token_ids == ch.token_ids
    assert all(abs(p - q) <= 0.0005 for p, q in zip(back.probs, ch.probs))
    qid = gr.question_id(tok.decode(ids), 1.0)
    assert gr.parse_question(qid) == ("…依山尽，黄河入海", 1.0)     # the end the next token follows
    store = ClassStore(MemoryBackend(Clock()), clock=Clock())
    cls = store.create_class()
    assert store.open_question(cls.code, cls.secret, qid, list(ch.options)).ok
    picks = [ch.options[0]] * 5 + [ch.options[1]] * 3 + [gr.OTHER] * 2
    for i, opt in enumerate(picks):
        assert store.answer(cls.code, f"b:voter{i}", qid, opt).ok
    assert store.answer(cls.code, "b:voter0", qid, ch.options[1]).reason == "already_answered"
    assert store.answer(cls.code, "b:voter99", qid, "<b>x</b>").reason == "bad_option"
    h = store.histogram(cls.code, cls.secret, qid)
    r = gr.compare(back, h.counts)
    assert r.n == 10 and r.room[0] == 0.5 and r.room[-1] == 0.2 and not r.weak


def test_hostile_question_and_option_ids_are_refused():
    assert gr.parse_question("room.100.0.zz") is None and gr.parse_question("room.1e3.0.00") is None
    assert gr.parse_question("room.100.2.61") is None and gr.parse_question("room.100.61") is None
    assert gr.parse_question("x" * 200) is None and gr.parse_question(None) is None
    assert gr.parse_option("t1.2000.61") is None and gr.parse_option("t1.5.ff") is None   # not UTF-8
    assert gr.from_options(["t1.5.61", "t2.5.62"], 1.0) is None                          # no "other"
    long = gr.option_id(12345, "x" * 100, 0.5)
    assert len(long) <= 32 and gr.parse_option(long)[2] == "x" * 10


def _solo_guess(at, option: str) -> str:
    """Pick ``option`` in the room section's radio and press Check; returns the question id."""
    radio = next(r for r in at.radio if (r.key or "").startswith("room_solo:"))
    qid = radio.key.split(":", 1)[1]
    radio.set_value(option).run()
    at.button(key=f"room_solo:{qid}:check").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return qid


@pytest.mark.apptest
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_student_alone_is_a_room_of_one(lang):
    """The section in a student's page: the choices are the model's top tokens and "another
    token"; a guess is drawn beside the model's probabilities with the measures; a second
    position of the same sentence adds the perplexity comparison."""
    from tests.apptest_util import fig_by_key, open_page
    from tests.test_page_generation import bars
    from ui.i18n import translate

    at = open_page("chapters/generation.py", lang)
    assert not at.exception, [e.value for e in at.exception]
    radio = next(r for r in at.radio if (r.key or "").startswith("room_solo:"))
    assert len(radio.options) == 7 and radio.options[-1] == translate("gen.room_other", lang)
    qid = _solo_guess(at, gr.OTHER)
    assert gr.parse_question(qid)[0].lstrip("…") in translate("gen.room_sentence_default", lang)
    spec = fig_by_key(at, "room_fig:")
    assert list(bars(spec, 0)) == [0.0] * 6 + [1.0]           # a room of one chose "another token"
    model = bars(spec, 1)
    assert 0.99 <= model.sum() <= 1.01 and list(model[:6]) == sorted(model[:6], reverse=True)
    captions = " ".join(c.value for c in at.caption)
    assert translate("gen.room_weak", lang, n=1, few=gr.FEW_ANSWERS) in captions
    assert translate("gen.room_more", lang) in captions
    # a second position of the same sentence: the room's perplexity beside the model's
    pos = at.slider(key="gen_room_pos")
    pos.set_value(pos.value - 1).run()
    assert _solo_guess(at, gr.OTHER) != qid
    shown = " ".join(m.value for m in at.markdown)
    heads = [translate(k, lang).split("{")[0] for k in ("gen.room_ppl_room", "gen.room_ppl_model")]
    assert any(h in shown for h in heads)


@pytest.mark.apptest
def test_the_lecturer_asks_the_room_and_everyone_sees_the_same_figure():
    """A class on the room section: the lecturer asks, a follower (in the other language)
    answers once on the lecturer's choices, the lecturer reveals, and both pages draw the room's
    share beside the model's probabilities from the same option ids."""
    from tests.apptest_util import fig_by_key, open_page
    from tests.test_page_classroom import join, keys, start_class
    from tests.test_page_generation import bars
    from ui.follow import store

    lec = open_page("chapters/generation.py", present="1")
    code = start_class(lec)
    for _ in range(40):                       # the lecturer steps to the room section
        ask = next((k for k in keys(lec) if k.startswith("room_ask:")), None)
        if ask:
            break
        lec.button(key="lmviz_next").click().run()
    assert ask, sorted(keys(lec))
    qid = ask.split(":", 1)[1]
    lec.button(key=ask).click().run()
    assert not lec.exception, [e.value for e in lec.exception]
    fol = join(code, lang="zh")
    fol.run()
    assert not fol.exception, [e.value for e in fol.exception]
    radio = fol.radio(key=f"room_ans:{qid}")
    assert len(radio.options) == 7
    radio.set_value(gr.OTHER).run()
    fol.button(key=f"room_ans:{qid}:send").click().run()
    secret = lec.session_state["class_lect"]["secret"]
    assert store().histogram(code, secret, qid).counts[gr.OTHER] == 1
    lec.run()
    lec.button(key=f"room_reveal:{qid}").click().run()
    lec.run()
    fol.run()
    for at in (lec, fol):
        assert not at.exception, [e.value for e in at.exception]
        spec = fig_by_key(at, "room_fig:")
        assert list(bars(spec, 0)) == [0.0] * 6 + [1.0]
    assert list(bars(fig_by_key(lec, "room_fig:"), 1)) == list(bars(fig_by_key(fol, "room_fig:"), 1))


@pytest.mark.apptest
def test_the_room_maps_the_heads_and_the_projector_fills_as_reports_arrive():
    """The attention chapter's map: a lecturer (English) on the section, two followers (English
    and Chinese) each dealt heads (of the shipped model's 16) of the lecturer's sentence, whatever
    their language; one sends and the projector's map shows exactly its heads; the other sends
    and the map is full, by 2 students."""
    import math

    from tests.apptest_util import decode, fig_by_key, open_page
    from tests.test_page_classroom import join, keys, start_class

    lec = open_page("chapters/attention.py", present="1")
    code = start_class(lec)
    for _ in range(40):                                   # the lecturer steps to the map
        if any(k.startswith("att_hm_fill:") for k in keys(lec)):
            break
        lec.button(key="lmviz_next").click().run()
    assert any(k.startswith("att_hm_fill:") for k in keys(lec)), sorted(keys(lec))
    fols = [join(code), join(code, lang="zh")]
    for f in fols:
        f.run()
        assert not f.exception, [e.value for e in f.exception]
        assert "The capital of France is Paris." in " ".join(m.value for m in f.markdown)

    def filled():
        lec.run()
        z = fig_by_key(lec, "att_heads_map")["data"][0]["z"]
        grid = decode(z) if isinstance(z, dict) else z
        return sum(1 for row in grid for v in row if v is not None and not math.isnan(float(v)))

    sends = [next(k for k in keys(f) if k.startswith("att_hm_sent:")) for f in fols]
    assert sends[0] == sends[1]                            # one activity for the whole room
    fols[0].button(key=sends[0]).click().run()
    assert not fols[0].exception and filled() in (8, 16)   # 16 each when it joined alone
    assert "heads mapped so far, by 1 student (2 students have taken heads)." in " ".join(m.value for m in lec.markdown)
    fols[1].button(key=sends[1]).click().run()
    assert not fols[1].exception and filled() == 16
    assert "heads mapped so far, by 2 students (2 students have taken heads)." in " ".join(m.value for m in lec.markdown)


@pytest.mark.apptest
def test_a_model_only_the_lecturer_holds_is_not_mapped_by_the_room():
    """A model trained in the lecturer's own session cannot be loaded by the students' pages: the
    lecturer is told so (and publishes no model), and a student waits instead of mapping heads of
    its own model under another activity."""
    from tests.apptest_util import open_page
    from tests.test_page_classroom import join, keys, start_class
    from ui import session
    from ui.i18n import translate

    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import APP, TIMEOUT, skip_questions

    lec = skip_questions(AppTest.from_file(APP, default_timeout=TIMEOUT))
    d = session.default_bundle()
    # before the first run: AppTest runs app.py (the sidebar's menu, which drops ?model= for it) once
    lec.session_state["lmviz_session_bundle"] = session.Bundle(d.model, d.tokenizer, d.meta, "session")
    lec.query_params["present"] = "1"
    lec.run()
    lec.switch_page("chapters/attention.py").run()
    code = start_class(lec)
    assert translate("class.own_model", "en") in [c.value for c in lec.caption]    # the projector says so
    own = translate("att.hm_own_model", "en")
    for _ in range(40):                                   # the lecturer steps to the map
        if any(w.value == own for w in lec.warning):
            break
        lec.button(key="lmviz_next").click().run()
    assert any(w.value == own for w in lec.warning), [w.value for w in lec.warning]
    assert not any(k.startswith("att_hm_fill:") for k in keys(lec)) and "model" not in lec.query_params
    fol = join(code, lang="zh")
    fol.run()
    assert not fol.exception, [e.value for e in fol.exception]
    assert translate("att.hm_wait", "zh") in [c.value for c in fol.caption]
    assert fol.session_state["lmviz_model_url"] == "default"           # the follower draws the shipped model
    assert not any(k.startswith("att_hm_sent:") for k in keys(fol))


@pytest.mark.parametrize("lang,seen,nxt", [("zh", "白日依山尽，黄", "河"), ("en", "Return ", "t")])
def test_the_default_question_is_an_open_one_on_the_shipped_model(lang, seen, nxt):
    """#56 item 5: at the default sentence's end the shipped model is near-certain (。 at 1.00)
    and offered "p" and "f" to a Chinese room. The default position is where its six choices are
    the page's own characters, the sentence's next token among them, and the spread highest."""
    from lmviz.tokenizer import fit_context
    from ui.i18n import translate
    from ui.session import default_bundle

    b = default_bundle()
    ids = fit_context(b.tokenizer, translate("gen.room_sentence_default", lang), b.model.cfg.block_size + 1,
                      keep="start").ids
    q = gr.open_question(b.model, ids, b.tokenizer.token, lang)
    assert q.chosen and b.tokenizer.decode(ids[:q.pos]) == seen and b.tokenizer.token(ids[q.pos]) == nxt
    assert q.entropy_bits > 1.5
    other = "en" if lang == "zh" else "zh"                   # no choice is a word of the other language
    last = gr.open_question(b.model, ids[:q.pos + 1], b.tokenizer.token, other)
    assert not last.chosen and last.pos == q.pos


def test_of_language_is_the_pages_words():
    assert gr.of_language("黄河", "zh") and not gr.of_language("，", "zh") and not gr.of_language(" ", "en")
    assert gr.of_language("Value", "en") and not gr.of_language("é", "en") and not gr.of_language("3", "en")
