"""The tokenization chapter's corpus "the room's sentences" (ui.room.room_corpus): students send
one sentence each, nothing reaches the projector before the lecturer accepts it, and BPE is
learned on the accepted sentences with each language's cost per token."""
from __future__ import annotations

import pytest

from tests.apptest_util import all_text, open_page
from tests.test_page_classroom import join, keys, start_class
from ui.i18n import translate

pytestmark = pytest.mark.apptest
PAGE = "chapters/tokenization.py"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_alone_the_sentences_typed_are_the_corpus(lang):
    at = open_page(PAGE, lang, corpus="room")
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_area(key="tok_room_solo").value == translate("tok.room_solo_default", lang)
    langs = [r for r in at.dataframe if translate("tok.room_col_cpt", lang) in r.value.columns]
    assert langs and list(langs[0].value[translate("tok.room_col_lang", lang)]) == [
        translate("tok.room_lang_zh", lang), translate("tok.room_lang_en", lang)]
    text = all_text(at)
    assert any(translate(k, lang).split("{")[0] in text for k in ("tok.room_costs_both", "tok.room_costs_same"))


def test_a_sentence_waits_for_the_lecturer_then_joins_the_corpus():
    lec = open_page(PAGE, "en", present="1", corpus="room")
    code = start_class(lec)
    assert translate("tok.room_none_yet", "en") in all_text(lec)
    fol = join(code, lang="zh")
    fol.run()
    assert not fol.exception, [e.value for e in fol.exception]
    secret = "<img src=x onerror=alert(1)> 我喜欢学习语言模型"
    fol.text_input(key="tok_room_sentence").set_value(secret).run()
    fol.button(key="tok_room_send").click().run()
    assert translate("tok.room_state_pending", "zh") in all_text(fol)
    lec.run()
    assert "onerror" not in all_text(lec) and "我喜欢" not in all_text(lec)    # hidden on the projector
    ok = next(k for k in keys(lec) if k.startswith("tok_room_ok:"))
    lec.button(key=ok).click().run()
    lec.run()
    assert not lec.exception, [e.value for e in lec.exception]
    assert translate("tok.room_corpus", "en", n=1, chars=len(secret)) in all_text(lec)
    assert "tok_room_train" in keys(lec)
    # one sentence is too few to fine-tune the model on: said before the press, the press disabled
    from lmviz.checkpoint import load_default
    from lmviz.train import tokens_needed

    model, tokenizer, _ = load_default()
    n, need = len(tokenizer.encode_lossy(secret)[0]), tokens_needed(model.cfg.block_size)
    assert n < need and translate("tok.room_short", "en", n=n, need=need) in all_text(lec)
    assert lec.button(key="tok_room_train").disabled
    fol.run()
    assert translate("tok.room_state_accepted", "zh") in all_text(fol)


def test_an_accept_in_the_queue_reruns_the_whole_page(monkeypatch):
    """Issue 52: the queue is a fragment, so in a browser its Accept reruns the queue alone, and the
    corpus, its merges and the fine-tune button (drawn by the whole page) stayed at "no sentence
    accepted yet". AppTest always runs the whole page: here the Accept's run is told it is the
    fragment's own (as in a browser), and the queue must ask for a whole run then."""
    import streamlit

    import ui.room

    lec = open_page(PAGE, "en", present="1", corpus="room")
    code = start_class(lec)
    fol = join(code, lang="en")
    fol.run()
    fol.text_input(key="tok_room_sentence").set_value("the cat sat on the mat").run()
    fol.button(key="tok_room_send").click().run()
    lec.run()
    assert translate("tok.room_none_yet", "en") in all_text(lec)

    fragment_run = iter([True])           # the Accept's run only; the whole run it asks for is not
    monkeypatch.setattr(ui.room, "in_fragment_rerun", lambda: next(fragment_run, False))
    scopes, rerun = [], streamlit.rerun
    monkeypatch.setattr(streamlit, "rerun", lambda *a, **kw: (scopes.append(kw.get("scope")), rerun(*a, **kw)))
    ok = next(k for k in keys(lec) if k.startswith("tok_room_ok:"))
    lec.button(key=ok).click().run()
    assert not lec.exception, [e.value for e in lec.exception]
    assert scopes == ["app"]
    assert translate("tok.room_none_yet", "en") not in all_text(lec)
    assert translate("tok.room_corpus", "en", n=1, chars=len("the cat sat on the mat")) in all_text(lec)
    assert "tok_room_train" in keys(lec)
