"""The /kv-cache page in AppTest, both languages: step the KV-cache walk-through, move the KV-cache size
calculator, edit a token, and run the live stepper and the speed measurement on a session model."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page, poll_until, skip_questions, title_of
from ui.i18n import listed, translate

PAGE = "chapters/kv_cache.py"
pytestmark = pytest.mark.apptest


def cache_rows_shown(at, lang) -> list[int]:
    """Rows present (not blank) in every heatmap of the first K/V cache figure."""
    k_title = translate("kv.k_cache", lang)
    for fig in figures(at):
        ann = " ".join(a.get("text", "") for a in fig["layout"].get("annotations", []))
        if k_title in ann:
            return [int((~np.isnan(decode(tr["z"]).astype(float)).all(axis=1)).sum()) for tr in fig["data"]]
    raise AssertionError("no cache figure")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_walkthrough_steps_add_one_row_per_layer(lang):
    at = open_page(PAGE, lang)
    assert at.slider[0].key == "kv_step"                 # the cheap step slider comes first
    assert set(cache_rows_shown(at, lang)) == {3}        # prefill: 3 prompt rows in every K and V
    text = all_text(at)
    assert "学习" in text and "p = " in text              # prefill predicts 学习
    at.slider(key="kv_step").set_value(1).run()
    assert not at.exception
    assert set(cache_rows_shown(at, lang)) == {4}
    at.slider(key="kv_step").set_value(2).run()
    assert set(cache_rows_shown(at, lang)) == {5}
    assert "数学" in all_text(at)
    step2 = translate("kv.step_decode", lang, step=2, token="数学", row=4, pred="<结束>", p=0.0, n=5)
    assert step2.split("**")[1] in all_text(at)         # "Step 2 — decode." in the page's language


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_calculator_w27_gqa_and_the_edit_rule(lang):
    at = open_page(PAGE, lang)
    values = [m.value for m in at.metric]
    assert "2,147,483,648" in values                    # KV-cache-size example: 2 GiB
    assert "2.000" in values
    at.slider(key="kv_hkv").set_value(32).run()          # MHA: 4x the GQA cache
    assert "8,589,934,592" in [m.value for m in at.metric]
    at.selectbox(key="kv_preset").set_value("Llama-2-70B").run()
    assert not at.exception
    assert at.slider(key="kv_L").value == 80 and at.slider(key="kv_hkv").value == 8
    assert at.select_slider(key="kv_n").value == 4096
    # 2 x 80 x 4096 x 8 x 128 x 2 bytes
    assert f"{2 * 80 * 4096 * 8 * 128 * 2:,}" in [m.value for m in at.metric]
    # the edit rule on the same page: edit position 3 of <开始> 我 喜欢 学习 数学
    at.selectbox(key="kv_edit_pos").set_value(3).run()
    assert not at.exception
    text = all_text(at)
    rows = translate("kv.edit_result", lang, kept="x", n_kept=3, n_redo=2, rows="3, 4")
    assert rows.split("x")[1][:12] in text                # "...(x). Rows to recompute: 2..."
    assert listed([3, 4], lang) in text                   # "3, 4" / "3、4"


def _measure(at, monkeypatch, lang="en", timeout=240):
    """Press Measure with a budget of nothing (the plan's fewest steps) and rerun until it is drawn."""
    from lmviz import limits

    monkeypatch.setitem(limits.MEASURE_S, "cpu", 0.0)
    monkeypatch.setitem(limits.MEASURE_S, "cuda", 0.0)
    at.run()
    at.button(key="kv_measure").click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = translate("kv.speed_caveat", lang)[:16]        # drawn under a finished measurement only
    assert poll_until(at, lambda a: done in all_text(a), timeout=timeout), all_text(at)[-600:]


def test_live_stepper_and_speed_on_a_session_model(monkeypatch):
    from lmviz.chapters.kv_cache import WARMUP_STEPS, load_toy
    from ui.session import Bundle

    toy = load_toy()
    at = open_page(PAGE, "en")
    at.session_state["lmviz_session_bundle"] = Bundle(toy.model, toy.tokenizer, {}, "session")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.select_slider(key="kv_live_step").value == 0
    at.select_slider(key="kv_live_step").set_value(2).run()
    assert not at.exception
    _measure(at, monkeypatch)
    text = all_text(at)
    n = WARMUP_STEPS + 4                                  # the fewest steps a line is fitted to
    assert f"measured on" in text and "faster" in text
    assert translate("kv.speed_same", "en", n=n) in text   # cached and uncached chose the same tokens
    assert translate("kv.speed_cut", "en", n=n, wanted=504, est="", full="", budget="0", prompt=8).split(":")[0] in text
    speed = next(f for f in figures(at) if title_of(f).startswith(translate("kv.speed_title", "en", device="")))
    assert len(speed["data"]) == 6                        # measured and fitted with/without, the FLOP lines beside
    assert translate("kv.speed_warmup", "en", w=WARMUP_STEPS, a="", b="").split(";")[0] in all_text(at)
    assert "grows by -" not in all_text(at)               # a negative fitted change is never printed as growth


def test_stop_ends_a_measurement(monkeypatch):
    """Stop cancels the task; the page says so, and Measure starts a new one."""
    at = open_page(PAGE, "en")
    at.button(key="kv_measure").click().run()
    assert not at.exception
    assert any(b.key == "kv_speed_stop" for b in at.button)   # a measurement sized to ~5 s is running
    at.button(key="kv_speed_stop").click().run()
    assert not at.exception
    assert translate("kv.speed_stopped", "en") in all_text(at)
    assert at.session_state["kv_speed_on"] is None and not any(b.key == "kv_speed_stop" for b in at.button)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_shipped_models_bytes_per_token(lang):
    from lmviz.checkpoint import load_default

    model, _, _ = load_default()
    cfg = model.cfg
    at = open_page(PAGE, lang)
    per_token = 2 * cfg.n_layer * cfg.n_kv_head * cfg.head_dim * 4       # FP32, as the cache is held here
    text = all_text(at)
    assert f"{per_token:,}" in text and translate("model.name_default_start", lang) in text
    key = "kv.model_mha" if cfg.n_kv_head == cfg.n_head else "kv.model_gqa"
    assert translate(key, lang, hq=cfg.n_head, hkv=cfg.n_kv_head, g=cfg.n_head // cfg.n_kv_head, mha="", pt="")[:12] in text
    table = next(d.value for d in at.dataframe if "L" in d.value.columns)
    assert list(table["L"]) == [cfg.n_layer, cfg.n_layer, 32]            # the notes' example beside it
    assert list(table.iloc[:, -1])[-1] == "2 GiB"


def _smol_page(lang: str):
    from tests.apptest_util import smollm2_page

    return smollm2_page(PAGE, lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_smollm2s_cache_from_its_config_and_its_decode_timed(lang, monkeypatch):
    at = _smol_page(lang)
    text = all_text(at)
    assert "SmolLM2-135M-Instruct" in text
    assert f"{30 * 3 * 64 * 2 * 4:,}" in text                         # 46,080 bytes a token in FP32
    assert translate("kv.model_gqa", lang, hq=9, hkv=3, g=3, mha=f"{30 * 9 * 64 * 2 * 4:,}",
                     pt=f"{30 * 3 * 64 * 2 * 4:,}") in text           # 9 query heads share 3 KV heads
    assert f"{30 * 3 * 64 * 2 * 2:,}" in text                         # FP16 at the notes' length, beside 2 GiB
    cut = translate("kv.speed_cut", lang, n=12345, wanted=2048 - 8, est="", full="", budget="", prompt=8)   # its context, 2,048
    assert cut.split("12,345")[0][:24] in text                        # the page says what it cut
    _measure(at, monkeypatch, lang)
    from lmviz.chapters.kv_cache import WARMUP_STEPS

    assert translate("kv.speed_same", lang, n=WARMUP_STEPS + 4) in all_text(at)
