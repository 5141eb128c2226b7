"""Every page that feeds a prompt to the current model cuts it to that model's context, with a
sentence saying so (lmviz.tokenizer.fit_context, ui.render.context_cut).

The reproduction (hostile probe, fault 1): train the preset "tiny" (context 32) on /training, open
/cost: its default 56-character prompt was capped at 64 characters, not at the model's context, and
the page showed "sequence reaches position 55 but learned positions stop at 31".
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmviz.tokenizer import CharTokenizer, ContextIds, WordTokenizer, fit_context
from tests.apptest_util import APP, TIMEOUT, all_text
from ui.i18n import translate

ROOT = Path(__file__).resolve().parent.parent
LONG = {"en": "the cat sat on the mat and then the dog ran to the door.",     # /cost's default, 56
        "zh": "我喜欢学习数学，也喜欢在周末去公园散步。白日依山尽，黄河入海流。"}


# ---------------------------------------------------------------- the core helper ----------
def test_fit_context_keeps_the_start_or_the_end_and_says_how_much_was_cut():
    tok = CharTokenizer("abcd ")
    f = fit_context(tok, "abcd abcdx", 4)
    assert (f.ids, f.unknown, f.total, f.limit, f.cut) == (tok.encode("abcd"), ["x"], 9, 4, 5)
    e = fit_context(tok, "abcd abcdx", 4, keep="end")
    assert e.ids == tok.encode("abcd") and e.cut == 5 and e.keep == "end"
    whole = fit_context(tok, "ab", 32)
    assert whole.ids == tok.encode("ab") and whole.cut == 0
    assert fit_context(WordTokenizer(["a", "b"]), "a b a b", 3).ids == [0, 1, 0]
    with pytest.raises(ValueError):
        fit_context(tok, "ab", 0)
    with pytest.raises(ValueError):
        fit_context(tok, "ab", 4, keep="middle")


def test_the_chapter_encoders_cut_through_fit_context():
    import torch

    from lmviz.chapters.autoregression import sequence_log_probs
    from lmviz.chapters.embedding import encode_for_model
    from tests.model_util import tiny_gpt

    tok = CharTokenizer(LONG["en"])
    enc = encode_for_model(tok, LONG["en"], 32)
    assert isinstance(enc.context, ContextIds) and enc.truncated and enc.context.cut == 56 - 32
    model = tiny_gpt(tok.vocab_size, 32)
    r = sequence_log_probs(model, tok, LONG["en"])        # 56 tokens on a 32-token context: no error
    assert len(r.tokens) == 32 and r.truncated and r.context.cut == 24
    with torch.no_grad():
        tr = model.forward_trace(torch.tensor(fit_context(tok, LONG["en"], 32).ids))
    assert tr.layers[0].q.shape[1] == 32


def test_the_sentence_says_how_many_tokens_and_which_end_in_both_languages():
    for lang in ("en", "zh"):
        for keep in ("start", "end"):
            s = translate(f"common.context_cut_{keep}", lang, total=56, limit=32, cut=24)
            assert "56" in s and "32" in s and "24" in s and "{" not in s


def test_no_page_cuts_ids_to_a_context_by_hand():
    """The cut lives in fit_context: no page slices token ids by a block size itself (the same
    slice in eight places is how /cost came to cap at 64 characters instead)."""
    import re

    hand = re.compile(r"\[[^\]\n]*block_size[^\]\n]*\]")
    found = {p.name: hand.findall(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "chapters").glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


# ---------------------------------------------------------------- the pages --------------
def _bundle(block: int, n_layer: int = 2, n_head: int = 2):
    """A small model of context ``block`` whose characters cover every catalogue string."""
    from lmviz.chapters.examples import CONDITIONS
    from lmviz.model import GPT, GPTConfig
    from ui.session import Bundle

    import torch

    text = "".join(json.loads((ROOT / "assets" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))[k]
                   for lang in ("en", "zh") for k in ("cost.prompt_default", "kv.default_prompt",
                                                      "ar.live_default", "gen.prompt_default"))
    text += "".join("".join(ex) for exs in CONDITIONS.values() for ex in exs)     # /beyond's prompt examples
    tok = CharTokenizer(text + LONG["en"] + LONG["zh"] + "The capital of France is Paris.床前明月光，疑是地上霜。")
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=block, n_layer=n_layer, n_head=n_head, n_kv_head=n_head,
                          d_model=16)).eval()
    return Bundle(model, tok, {}, "session")


def _open(page: str, lang: str, block: int, n_layer: int = 2, n_head: int = 2, **params):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    for k, v in params.items():
        at.query_params[k] = v
    at.session_state["lmviz_session_bundle"] = _bundle(block, n_layer, n_head)
    at.run()
    at.switch_page(page).run()
    return at


def _cut_sentences(lang: str, total: int, limit: int) -> set[str]:
    return {translate(f"common.context_cut_{keep}", lang, total=total, limit=limit, cut=total - limit)
            for keep in ("start", "end")}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cost_reads_its_default_prompt_on_a_context_32_model(lang):
    """The reproduction: /cost's default prompt on a model with 32 learned positions."""
    at = _open("chapters/cost.py", lang, 32)
    assert not at.exception, [e.value for e in at.exception]
    n = len(translate("cost.prompt_default", lang))
    infos = [i.value for i in at.info]
    if n > 32:                                          # the English default (56 characters) is cut
        assert translate("common.context_cut_start", lang, total=n, limit=32, cut=n - 32) in infos
    assert "learned positions" not in all_text(at)


# page, the URL parameter of its prompt box
PAGES = [("chapters/cost.py", "fp"), ("chapters/attention.py", "s"), ("chapters/transformer_block.py", "bs"),
         ("chapters/autoregression.py", "s"), ("chapters/kv_cache.py", "prompt"), ("chapters/beyond.py", "ps")]


def _cuts(at, lang: str) -> list[tuple[int, int, int]]:
    """(total, limit, cut) of every context-cut sentence on the page."""
    import re

    found = []
    for keep in ("start", "end"):
        pat = re.escape(translate(f"common.context_cut_{keep}", lang, total="@T@", limit="@L@", cut="@C@"))
        pat = pat.replace("@T@", r"(?P<total>\d+)").replace("@L@", r"(?P<limit>\d+)", 1)
        pat = pat.replace("@L@", r"(?P=limit)").replace("@C@", r"(?P<cut>\d+)")
        for info in at.info:
            m = re.fullmatch(pat, info.value)
            if m:
                found.append((int(m["total"]), int(m["limit"]), int(m["cut"])))
    return found


@pytest.mark.parametrize("page,param", PAGES)
def test_every_page_cuts_a_long_prompt_to_the_models_context(page, param):
    lang, block = "zh", 8
    text = LONG[lang][:30]
    at = _open(page, lang, block, **{param: text})
    assert not at.exception, [e.value for e in at.exception]
    cuts = _cuts(at, lang)
    limit = block - 1 if page == "chapters/kv_cache.py" else block     # kv: room for one new token
    assert cuts, [i.value for i in at.info]
    for total, lim, cut in cuts:
        assert lim == limit and cut == total - limit > 0
    assert max(total for total, _, _ in cuts) >= len(text)        # the long prompt itself was cut


@pytest.mark.parametrize("page", [p for p, _ in PAGES])
def test_a_one_layer_one_head_model_opens_every_page(page):
    """/training lets a student train n_layer=1, n_head=1: /attention's layer and head sliders
    (1 to 1, which Streamlit refuses) crashed the page."""
    at = _open(page, "en", 32, n_layer=1, n_head=1)
    assert not at.exception, [e.value for e in at.exception]
