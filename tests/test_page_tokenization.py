"""The Tokenization page through AppTest: the stepper (BPE 'low lower' example), the encoder, bad input, both languages."""
from __future__ import annotations

import pytest

from tests.apptest_util import all_text, decode, figures, open_page, poll_until
from ui.i18n import translate
from viz.theme import COLORS

PAGE = "chapters/tokenization.py"
pytestmark = pytest.mark.apptest


def bars(at) -> dict[str, dict[str, int]]:
    """The pair-count chart: trace name -> {pair: count}."""
    fig = next(f for f in figures(at) if f["data"] and f["data"][0]["type"] == "bar")
    return {tr["name"]: dict(zip(tr["x"], decode(tr["y"]).tolist())) for tr in fig["data"]}


def chips(at) -> str:
    """The page's own HTML elements (token chips, tables), not the app's constant chrome
    (the <html lang> script and the style sheets every page carries)."""
    return "".join(h.value for h in at.get("html") if "documentElement.lang" not in h.value)


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_stepper_w11(lang):
    at = open_page(PAGE, lang)
    (slider,) = at.slider
    assert slider.label == translate("tok.step", lang) and (slider.min, slider.max) == (1, 2)
    b = bars(at)
    winner, tie = translate("tok.fig.winner", lang), translate("tok.fig.tie", lang)
    assert b[winner] == {"l + o": 3} and b[tie] == {"o + w": 3}
    fig = next(f for f in figures(at) if f["data"][0]["type"] == "bar")
    assert fig["data"][0]["marker"]["color"] == COLORS["chosen"]
    text = all_text(at)
    assert "3, 4" in text  # the tie message names the winning IDs
    if lang == "zh":
        assert "并列" in text and "第 1 步" in text
    # step forward with the button: (lo, w) -> low
    at.button(key="tok_next").click().run()
    no_errors(at)
    assert at.slider[0].value == 2
    assert bars(at)[winner] == {"lo + w": 3}
    table = at.dataframe[0].value
    after = translate("tok.col.after", lang)
    assert list(table[after]) == ["low", "low·e·r", "␣"]  # changed words first
    # and back with the slider
    at.slider[0].set_value(1).run()
    no_errors(at)
    assert list(at.dataframe[0].value[after]) == ["lo·w", "lo·w·e·r", "␣"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_encoder_ids_and_escaping(lang):
    at = open_page(PAGE, lang)
    box = next(x for x in at.text_area if x.key.startswith("tok_enc_"))
    text = "<script>alert(1)</script> lower"
    box.set_value(text).run()
    no_errors(at)
    html = chips(at)
    assert "<script>" not in html and "&lt;" in html
    assert "low" in html  # the learned merge applies to new text
    n_unk = sum(c not in set("low low lower") for c in text)  # characters the toy corpus lacks
    assert translate("tok.unk_warn", lang, n=n_unk) in [w.value for w in at.warning]
    ids = at.code[0].value
    assert ids.startswith("[") and ids.endswith("]")


def test_too_many_merges_stops_early_and_says_so():
    at = open_page(PAGE)
    at.number_input(key="tok_n_toy").set_value(50).run()
    no_errors(at)
    assert translate("tok.stop.min_count", "en", done=2, asked=50) in [i.value for i in at.info]


def test_bad_corpora_get_a_message_or_correct_output():
    at = open_page(PAGE)
    at.radio(key="tok_source").set_value("own").run()
    for text, key in [("", "tok.err_empty"), ("   \n\t  ", "tok.err_empty"), ("a", "tok.no_merges")]:
        at.text_area(key="tok_own").set_value(text).run()
        no_errors(at)
        assert translate(key, "en") in [w.value for w in at.warning], repr(text)
    # mixed scripts, emoji and a script tag train fine at both levels
    at.text_area(key="tok_own").set_value("<script>x</script> 我喜欢 😀😀 lower lower").run()
    no_errors(at)
    assert at.slider, "the stepper is there"
    at.radio(key="tok_level").set_value("byte").run()
    no_errors(at)
    assert "&lt;script&gt;" in chips(at) or "<script>" not in chips(at)


def test_chinese_byte_level_shows_partial_characters():
    at = open_page(PAGE, "zh")
    at.radio(key="tok_source").set_value("chinese").run()
    at.radio(key="tok_level").set_value("byte").run()
    no_errors(at)
    box = at.text_area(key="tok_enc_chinese")
    box.set_value("鑫").run()  # a character the Chinese example never uses: three byte tokens
    assert "&lt;E9&gt;" in chips(at)
    assert "\ufffd" not in chips(at)
    # the trade-off chart is measured on held-out text
    fig = next(f for f in figures(at) if f["data"][0]["type"] == "scatter")
    y = decode(fig["data"][0]["y"])
    assert y[0] > y[-1] > 0


def test_a_link_restores_corpus_level_merges_and_step():
    from tests.apptest_util import open_page

    at = open_page("chapters/tokenization.py", "zh", corpus="english", lvl="byte", merges="30", step="5")
    assert at.radio(key="tok_source").value == "english"
    assert at.radio(key="tok_level").value == "byte"
    assert at.number_input(key="tok_n_english").value == 30
    assert at.slider[0].value == 5
    assert at.query_params["step"] in ("5", ["5"])
    # a hand-edited value out of range falls back to the default with a note, no error
    at = open_page("chapters/tokenization.py", "en", merges="9999")
    assert at.number_input(key="tok_n_toy").value == 2
    assert any("9999" in i.value for i in at.info)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_special_tokens_and_rare_words(lang):
    """What the live tokenizer and the page's BPE reserve, what becomes of an unseen character,
    and a rare word cut into more pieces than a frequent one (on the English example)."""
    from lmviz.chapters.tokenization import encode_unknown, rare_vs_common, special_tokens
    from ui.session import default_bundle

    at = open_page(PAGE, lang)
    no_errors(at)
    live = default_bundle().tokenizer
    sp = special_tokens(live)
    text = all_text(at)
    if sp.reserved:
        assert translate("tok.sp_reserved", lang, n=len(sp.reserved), v=sp.vocab_size,
                         tokens=translate("common.and", lang).join(
                             translate("tok.sp_item", lang, text=r.text, id=r.id,
                                       role=translate("tok.sp_role_" + r.role, lang))
                             for r in sp.reserved)) in text
    else:
        assert translate("tok.sp_none", lang, v=sp.vocab_size) in text
    r = encode_unknown(live, at.text_input(key="tok_sp_text").value)      # the page's default sample
    assert "☃" in r.unknown
    from viz.tokenization import visible
    assert " | ".join(visible(x) for x in r.pieces) in [c.value for c in at.code]
    # the toy corpus has no rare/common pair: said so, and shown on the example of the page's
    # language instead (Chinese: runs of characters, since no spaces mark its words)
    from pathlib import Path

    from lmviz.bpe import train_bpe
    from lmviz.chapters.tokenization import rare_vs_common_han
    han = lang == "zh"
    assert translate("tok.rare_none_han" if han else "tok.rare_none", lang) in [i.value for i in at.info]
    assert translate("tok.rare_fallback_han" if han else "tok.rare_fallback", lang, n=60) in all_text(at)
    example = "chinese" if han else "english"
    corpus = (Path(__file__).resolve().parent.parent / "assets" / "examples" / f"{example}.txt").read_text(encoding="utf-8")
    rv = (rare_vs_common_han if han else rare_vs_common)(train_bpe(corpus[:10_000], 60, level="char", split_words=True), corpus[:10_000])
    assert rv.common.count > 1 and rv.rare.count == 1 and rv.rare.n_pieces > rv.common.n_pieces
    assert rv.rare.word in all_text(at) and f"“{rv.common.word}”" in all_text(at)
    at.radio(key="tok_source").set_value(example).run()
    no_errors(at)
    assert translate("tok.rare_none_han" if han else "tok.rare_none", lang) not in [i.value for i in at.info]
    assert rv.rare.word in all_text(at)


def test_a_long_bpe_run_goes_to_the_task_pool_and_the_page_polls_it(monkeypatch):
    """Issue 28, fault 9: 10,000 characters x 500 merges ran 17-55 s on the page's thread. Now a
    run longer than the page's budget is a low-priority task of this session (cancelled when the
    input changes) and the page polls it; a bundled example still finishes on the page."""
    import random
    import threading
    import time

    import lmviz.bpe as bpe
    from lmviz.server import tasks
    from ui import session

    monkeypatch.setattr(session, "_RESULTS", {})                # no run finished before this test
    threads = []
    train = bpe.train_bpe

    def slow_for_long_texts(text, *a, **k):     # a long run, whatever this machine's speed (the
        threads.append(threading.current_thread().name)   # 10,000 characters alone take 0.3-0.5 s
        if len(text) > 5_000:                   # on a fast idle core, under INLINE_S)
            time.sleep(1.0)
        return train(text, *a, **k)
    monkeypatch.setattr(bpe, "train_bpe", slow_for_long_texts)
    started = []
    start = tasks.Task.start
    monkeypatch.setattr(tasks.Task, "start", lambda self: started.append(self) or start(self))
    at = open_page(PAGE, "en")
    assert at.slider and threads and not any(n.startswith("lmviz") for n in threads)   # the toy: on the page
    rng = random.Random(0)
    words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                     for _ in range(2000))[:10_000]
    at.radio(key="tok_source").set_value("own").run()
    at.number_input(key="tok_n_own").set_value(500).run()
    at.text_area(key="tok_own").set_value(words).run()
    no_errors(at)
    waiting = {translate("tok.bg_running", "en"), translate("tok.bg_queued", "en", n=1, cap=1)}
    assert not at.slider and any(i.value in waiting for i in at.info)          # the page did not wait
    (first,) = [t for t in started if t._name == "lmviz-bpe"]
    assert first.active
    at.text_area(key="tok_own").set_value(words[:-1] + "q").run()              # the input changed
    runs = [t for t in started if t._name == "lmviz-bpe"]
    assert len(runs) == 2 and first.state == "stopped" and runs[1].active       # the old run was cancelled
    assert poll_until(at, lambda a: bool(a.slider), 300)
    no_errors(at)
    assert at.slider[0].max == 500 and "lmviz-bpe" in threads and runs[1].state == "done"
    # the trade-off section's run on the same text may have become a task too (on a slow machine it
    # outlasts INLINE_S); none starts for a bundled text
    before = len(started)
    at.radio(key="tok_source").set_value("toy").run()                           # back to a bundled one
    no_errors(at)
    assert at.slider and len(started) == before
