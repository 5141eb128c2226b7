"""The /generation page (AppTest, both languages): the temperature, top-k and top-p figures follow their sliders, the
greedy stepper walks the greedy-decoding example, the live stepper is reproducible under a seed and re-applies filters to
cached logits, bad prompts get messages, and the greedy-vs-best tree shows both paths.

The live model is a tiny random GPT injected as this session's model, so the tests do not depend
on the shipped default (and stay fast).
"""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_util import APP, TIMEOUT, all_text, decode, fig_by_key, figures, skip_questions
from ui.i18n import listed, translate

pytestmark = pytest.mark.apptest
PAGE = "chapters/generation.py"
TEXT = "The cat sat on the mat. 我喜欢学习数学。\n"


@pytest.fixture(scope="module")
def bundle():
    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.tokenizer import CharTokenizer
    from ui.session import Bundle

    torch.manual_seed(0)
    tok = CharTokenizer(TEXT)
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_kv_head=2,
                    d_model=16)
    model = GPT(cfg).eval()
    with torch.no_grad():  # sharpen the random logits so top-k/top-p visibly matter
        model.lm_head.weight.mul_(20.0)
    return Bundle(model, tok, {}, "session")


def open_gen(bundle, lang: str = "en", **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    for k, v in params.items():
        at.query_params[k] = v
    at.session_state["lmviz_session_bundle"] = bundle
    skip_questions(at)      # the sections that answer the chapter's questions are drawn
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def bars(spec: dict, i: int = 0) -> np.ndarray:
    return decode(spec["data"][i]["y"]).astype(float)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_temperature_slider_is_first_and_moves_the_bars(bundle, lang):
    at = open_gen(bundle, lang)
    assert at.slider[0].key == "gen_tau"
    p1 = bars(fig_by_key(at, "gen_temp_bars"))
    assert np.round(p1, 3).tolist() == [0.705, 0.259, 0.035]  # softmax example at τ = 1
    at.slider(key="gen_tau").set_value(2.0).run()
    p2 = bars(fig_by_key(at, "gen_temp_bars"))
    assert p2[0] < p1[0] and p2[2] > p1[2]  # hotter: flatter
    assert not at.exception
    # the table shows the three temperatures of the notes, computed live (temperature example)
    df = at.dataframe[0].value
    assert [str(x).split(" ")[0] for x in df["τ"]] == ["0.5", "1", "2"]
    assert [round(float(x), 3) for x in df["p(A)"]] == [0.879, 0.705, 0.547]
    assert [round(float(x), 3) for x in df["p(C)"]] == [0.002, 0.035, 0.122]
    if lang == "zh":
        assert translate("gen.sec_temp", "zh") in all_text(at)


def test_tau_zero_is_greedy_by_convention(bundle):
    at = open_gen(bundle)
    at.slider(key="gen_tau").set_value(0.0).run()
    assert bars(fig_by_key(at, "gen_temp_bars")).tolist() == [1.0, 0.0, 0.0]
    assert any(translate("gen.tau_zero", "en") == i.value for i in at.info)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_top_p_and_top_k_sliders_change_the_kept_set(bundle, lang):
    at = open_gen(bundle, lang)
    final = bars(fig_by_key(at, "gen_filter"), 1)  # p = 0.9 by default: keeps three (top-k/top-p example)
    assert (final > 0).sum() == 3 and final.sum() == pytest.approx(1.0)
    at.slider(key="gen_p").set_value(0.8).run()
    assert (bars(fig_by_key(at, "gen_filter"), 1) > 0).sum() == 2
    at.slider(key="gen_p").set_value(1.0)
    at.slider(key="gen_k").set_value(2).run()
    final = bars(fig_by_key(at, "gen_filter"), 1)  # k = 2 keeps two: 0.625, 0.375
    assert np.round(final, 3).tolist() == [0.625, 0.375, 0.0, 0.0]
    at.slider(key="gen_k").set_value(0)
    at.slider(key="gen_p").set_value(0.0).run()
    assert (bars(fig_by_key(at, "gen_filter"), 1) > 0).sum() == 1   # p = 0 keeps the top one
    assert translate("gen.p_zero", lang) in all_text(at)
    assert not at.exception


def test_greedy_stepper_walks_the_toy_sentence(bundle):
    at = open_gen(bundle)
    for _ in range(5):
        at.button(key="gen_greedy_next").click().run()
    assert not at.exception
    spec = fig_by_key(at, "gen_greedy_fig")
    chosen = []
    for tr in spec["data"]:  # one bar chart per step; the chosen bar has the chosen colour
        colours = tr["marker"]["color"]
        chosen.append(tr["x"][[i for i, c in enumerate(colours) if c == "#D55E00"][0]])
    assert chosen == ["I", "love", "robot", "s", "<EOS>"]
    assert at.button(key="gen_greedy_next").disabled


def _live_text(at) -> str:
    return at.session_state["gen_live"]["stepper"].ids


def test_live_steps_are_reproducible_under_a_seed(bundle):
    at = open_gen(bundle)
    for _ in range(6):
        at.button(key="gen_step").click().run()
    first = list(_live_text(at))
    at.button(key="gen_reset").click().run()
    for _ in range(6):
        at.button(key="gen_step").click().run()
    assert list(_live_text(at)) == first
    at.number_input(key="gen_seed").set_value(7).run()
    for _ in range(6):
        at.button(key="gen_step").click().run()
    assert not at.exception
    assert len(_live_text(at)) == len(first)


def test_live_sliders_reuse_cached_logits(bundle, monkeypatch):
    at = open_gen(bundle)
    before = bars(fig_by_key(at, "gen_live_fig"), 2)
    logits = at.session_state["gen_live"]["logits"]
    at.slider(key="gen_live_tau").set_value(0.3).run()
    at.slider(key="gen_live_k").set_value(3).run()
    assert at.session_state["gen_live"]["logits"] is logits  # not recomputed
    after = bars(fig_by_key(at, "gen_live_fig"), 2)
    assert (before > 0).sum() > 3 and 1 <= (after > 0).sum() <= 3
    at.button(key="gen_spread").click().run()
    assert not at.exception
    setting, outs = at.session_state["gen_live"]["spread"]
    assert len(outs) == 5 and "k=3" in setting


@pytest.mark.parametrize("prompt,key", [("", "gen.err_empty"), ("§§¶", "gen.err_all_unknown")])
def test_bad_prompts_get_a_message(bundle, prompt, key):
    at = open_gen(bundle, "zh")
    at.text_input(key="gen_prompt").set_value(prompt).run()
    assert not at.exception
    head = translate(key, "zh").split("{")[0][:8]
    assert head in all_text(at)


def test_long_prompt_is_truncated_visibly(bundle):
    at = open_gen(bundle)
    at.text_input(key="gen_prompt").set_value("the cat sat on the mat " * 3).run()
    assert not at.exception
    assert "16" in " ".join(i.value for i in at.info)
    at.button(key="gen_step").click().run()
    assert not at.exception


def test_w22_tree_greedy_is_not_best(bundle):
    at = open_gen(bundle)
    spec = fig_by_key(at, "gen_tree_fig")
    texts = " ".join(str(x) for tr in spec["data"] for x in (tr.get("text") or []))
    assert "0.36" in texts and "0.3" in texts  # joint probabilities of best and greedy paths
    at.radio(key="gen_tree_src").set_value("live").run()
    assert not at.exception
    assert fig_by_key(at, "gen_tree_fig")["data"]


def test_live_tree_search_on_a_bpe_trained_session_model():
    """A session model trained with a BPE tokenizer has no .chars/.stoi: the tree search goes
    through the tokenizer's public interface (ids in, token labels out)."""
    from lmviz.train import Trainer, make_config
    from ui.session import Bundle

    text = "the cat sat on the mat. the dog sat on the log. " * 30
    tr = Trainer(text, make_config("tiny", n_layer=1, n_head=2, d_model=16, block_size=16, batch_size=4,
                                   max_steps=20, tokenizer="bpe", bpe_merges=20), device="cpu")
    tr.step(20)
    model = tr.model.eval()
    assert not hasattr(tr.tokenizer, "stoi")
    at = open_gen(Bundle(model, tr.tokenizer, {}, "session"))
    at.text_input(key="gen_prompt").set_value("the cat").run()
    at.radio(key="gen_tree_src").set_value("live").run()
    assert not at.exception, [e.value for e in at.exception]
    spec = fig_by_key(at, "gen_tree_fig")
    assert spec["data"]
    res = at.session_state["gen_tree_cache"][1]
    assert len(res.best) == 3 and all(isinstance(i, int) for i in res.best)
    assert all(isinstance(tr.tokenizer.token(i), str) for i in res.best + res.greedy)


# ---------------------------------------------------------------- real browser -------------
def _chart_y(page, index: int, trace: int = 0) -> list[float]:
    """y of one trace of the index-th Plotly chart on the page (as drawn: _fullData)."""
    return page.evaluate(
        "([i, k]) => Array.from(document.querySelectorAll('.js-plotly-plot'))[i]._fullData[k].y"
        ".map(Number)", [index, trace])


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en"])
def test_browser_temperature_and_top_p_sliders_redraw(server, browser, lang):
    """Streamlit 1.67 sliders are <input type=range>: focus one, press a key, the chart follows.
    In English: tests/test_browser.py draws /generation in Chinese, and the sliders are the same
    widgets in either language (the Chinese run repeated this one, 13 s of CI)."""
    from tests.browser_util import exceptions, skip_questions, wait_charts, wait_idle

    srv = server  # the shared server and browser of tests/conftest.py
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = ctx.new_page()
        page.set_default_timeout(90_000)
        page.goto(srv.url("", lang=lang), wait_until="domcontentloaded")  # navigation first
        wait_idle(page)
        page.goto(srv.url("generation", lang=lang), wait_until="domcontentloaded")
        wait_idle(page)
        skip_questions(page, lang)              # the temperature section waits behind a question
        wait_charts(page, at_least=3)
        sliders = page.locator("[data-testid=stSlider] input[type=range]")
        assert sliders.nth(0).get_attribute("step") == "0.05"          # τ is the first slider
        bars0 = _chart_y(page, 0)
        assert [round(v, 3) for v in bars0] == [0.705, 0.259, 0.035]  # softmax example
        for _ in range(4):                                            # τ 1.00 -> 1.20
            sliders.nth(0).focus()
            page.keyboard.press("ArrowRight")
        page.wait_for_timeout(800)
        wait_idle(page)
        bars1 = _chart_y(page, 0)
        assert bars1[0] < bars0[0] and bars1[2] > bars0[2]
        top_p = sliders.nth(2)                                        # k, then p
        assert top_p.get_attribute("aria-valuetext") == "0.90"
        kept0 = sum(v > 0 for v in _chart_y(page, 2, 1))             # top-k/top-p example: p = 0.9 keeps 3
        top_p.focus()
        for _ in range(2):                                            # 0.90 -> 0.80
            page.keyboard.press("ArrowLeft")
        page.wait_for_timeout(800)
        wait_idle(page)
        assert (kept0, sum(v > 0 for v in _chart_y(page, 2, 1))) == (3, 2)
        assert exceptions(page) == []
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kept_message_reports_the_kept_sets_own_mass(bundle, lang):
    at = open_gen(bundle, lang)                    # p = 0.9 keeps A, B, C: 0.50 + 0.30 + 0.15
    want = translate("gen.kept_msg", lang, n=3, kept=listed("ABC", lang), mass="0.95",
                     probs="A=0.526, B=0.316, C=0.158")
    assert want in [m.value for m in at.markdown]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_non_finite_logits_are_explained_not_raised(lang):
    import math

    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.tokenizer import CharTokenizer
    from ui.session import Bundle

    tok = CharTokenizer(TEXT)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_kv_head=2,
                          d_model=16)).eval()
    with torch.no_grad():
        model.lm_head.weight.fill_(math.nan)
    at = open_gen(Bundle(model, tok, {}, "session"), lang, prompt="The")
    assert not at.exception
    assert translate("gen.nonfinite", lang) in [w.value for w in at.warning]


# ---------------------------------------------------------------- branch on another token
def _metric_values(at, lang: str, n: int) -> list[str]:
    label = translate("gen.branch_sum", lang, n=n)
    return [m.value for m in at.metric if m.label == label]


def _expected_branch(model, tok, prompt: str, step: int, pick: int):
    from lmviz.chapters.generation_branch import branch_from, greedy_run

    run = greedy_run(model, tok.encode_lossy(prompt)[0])
    return run, branch_from(model, run, step, run.top[step][pick])


def _check_branch_section(at, lang, model, tok, prompt, step=0, pick=1):
    """The section shows the core record's two sums, the branch's forced token and the sentence
    its margin picks (computed again here from the same model)."""
    from lmviz.chapters.generation_branch import BRANCH_LEN

    run, br = _expected_branch(model, tok, prompt, step, pick)
    assert at.radio(key=f"gen_branch_pick_{step}").value == run.top[step][pick]
    shown = _metric_values(at, lang, BRANCH_LEN)
    assert shown == [f"{br.greedy.total:.3f}".replace("-", "−"), f"{br.branch.total:.3f}".replace("-", "−")]
    key = "gen.branch_wins" if br.margin > 0 else "gen.branch_loses"
    head = translate(key, lang, tok="", step=step + 1, gtok="", p="", pg="", b="", g="", x="", n=BRANCH_LEN)
    assert head.split("**")[0][:12] in all_text(at)
    spec = fig_by_key(at, "gen_branch_fig")
    assert [len(decode(tr["y"])) for tr in spec["data"]] == [BRANCH_LEN, BRANCH_LEN]
    assert decode(spec["data"][1]["y"])[-1] == pytest.approx(br.branch.total)
    return run, br


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_branch_on_another_token_with_the_shipped_model(lang):
    from lmviz.checkpoint import load_default

    model, tok, _ = load_default()
    from tests.apptest_util import open_page

    at = open_page(PAGE, lang)
    prompt = translate("gen.prompt_default", lang)
    run, br = _check_branch_section(at, lang, model, tok, prompt)
    # pick greedy's own token: both continuations are the same
    at.radio(key="gen_branch_pick_0").set_value(run.top[0][0]).run()
    assert not at.exception
    assert translate("gen.branch_same", lang, tok="", step=1).split("”")[-1][:10] in all_text(at)
    # a later step: the branch shares greedy's first tokens
    at.select_slider(key="gen_branch_step").set_value(3).run()
    assert not at.exception
    _check_branch_section(at, lang, model, tok, prompt, step=3)


def _smol_page(page: str, lang: str) -> AppTest:
    from tests.apptest_util import smollm2_page

    at = smollm2_page(page, lang)
    assert at.session_state["lmviz_session_bundle"].meta["name"] == "SmolLM2-135M-Instruct"
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_branch_on_another_token_with_smollm2(lang):
    from tests.apptest_util import poll_until

    at = _smol_page(PAGE, lang)
    # English: a prompt where a branch wins (tests/test_chapter_generation_branch.py); Chinese: the
    # default prompt, whose continuation is byte pieces of characters
    prompt = "The sky is" if lang == "en" else translate("gen.prompt_default", lang)
    at.text_input(key="gen_prompt").set_value(prompt).run()
    assert poll_until(at, lambda a: len(_metric_values(a, lang, 12)) == 2, timeout=240), all_text(at)[-400:]
    b = at.session_state["lmviz_session_bundle"]
    _check_branch_section(at, lang, b.model, b.tokenizer, prompt)
    spec = fig_by_key(at, "gen_branch_fig")
    assert "SmolLM2-135M-Instruct" in spec["layout"]["title"]["text"]
    shown = " ".join(h.proto.body for h in at.get("html"))
    assert "\ufffd" not in shown                          # a piece of a character is shown as its bytes
    if lang == "zh":
        assert "&lt;E" in shown
