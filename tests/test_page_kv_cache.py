"""The /kv-cache page in AppTest, both languages: step the KV-cache walk-through, move the KV-cache size
calculator, edit a token, and run the live stepper and the speed measurement on a session model."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page, title_of
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


def test_live_stepper_and_speed_on_a_session_model():
    from lmviz.chapters.kv_cache import load_toy
    from ui.session import Bundle

    toy = load_toy()
    at = open_page(PAGE, "en")
    at.session_state["lmviz_session_bundle"] = Bundle(toy.model, toy.tokenizer, {}, "session")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.select_slider(key="kv_live_step").value == 0
    at.select_slider(key="kv_live_step").set_value(2).run()
    assert not at.exception
    at.button(key="kv_measure").click().run()
    task = at.session_state["kv_speed_job"]
    assert task.join(60)
    job = task.snapshot()
    assert job.state == "done" and job.error is None
    at.run()
    title = translate("kv.speed_title", "en", device=job.result.device)
    speed = next(f for f in figures(at) if title_of(f) == title)
    assert len(speed["data"]) == 6                        # measured and fitted with/without, the FLOP lines beside
    assert "faster" in all_text(at)
    from lmviz.chapters.kv_cache import WARMUP_STEPS

    assert translate("kv.speed_warmup", "en", w=WARMUP_STEPS, a="", b="").split(";")[0] in all_text(at)
    assert "grows by -" not in all_text(at)               # a negative fitted change is never printed as growth
