"""The Cost page through AppTest, both languages: the FlashAttention tile stepper (FlashAttention example) ends on
the dense row, block sizes and the causal switch change the tiles, the traffic and FLOP figures
follow the core formulas, and the Chinchilla slider reproduces Chinchilla at Gopher's budget
(compute-budget example). Plus the pure pieces of viz.cost."""
from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import viz.cost as vc
from lmviz.attention import traffic_bytes_dense, traffic_bytes_tiled
from lmviz.chapters.cost import chinchilla_optimal, decode_step_flops, layer_flops
from lmviz.numfmt import magnitude
from tests.apptest_util import TASK_TIMEOUT, all_text, decode, figures, open_page
from ui.i18n import catalogue, translate

PAGE = "chapters/cost.py"


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def grid(at) -> np.ndarray:
    """The tile grid's cell states [n, n]."""
    fig = next(f for f in figures(at) if f["data"] and f["data"][0]["type"] == "heatmap")
    return decode(fig["data"][0]["z"]).astype(int)


def traces(at, lang: str, name_key: str, which: int = 0) -> dict:
    """The trace named translate(name_key) (the `which`-th such trace on the page)."""
    name = translate(name_key, lang)
    return [tr for f in figures(at) for tr in f["data"] if tr.get("name") == name][which]


def metric(at, key: str, lang: str) -> str:
    label = translate(key, lang)
    return next(m.value for m in at.metric if m.label == label)


# ---------------------------------------------------------------- pure pieces --------------
def test_viz_doctests():
    assert doctest.testmod(vc).failed == 0


def test_tile_states_cover_the_square_exactly_once():
    import torch

    from lmviz.attention import tiled_attention

    q = k = v = torch.zeros(10, 4)
    _, tr = tiled_attention(q, k, v, 4, 3, causal=True, trace=True)
    z = vc.tile_states(10, 10, tr.visits, len(tr.visits), causal=True)
    lower = np.tril(np.ones((10, 10), bool))
    # every allowed (past/present) cell was computed; every future cell is masked or skipped
    assert np.isin(z[lower], [vc.DONE, vc.CURRENT]).all()
    assert np.isin(z[~lower], [vc.MASKED, vc.SKIPPED]).all()
    assert (vc.tile_states(10, 10, tr.visits, 1) == vc.PENDING).sum() == 100 - 4 * 3


# ---------------------------------------------------------------- the page -----------------
@pytest.mark.apptest
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_tile_stepper_ends_on_the_dense_row(lang):
    at = open_page(PAGE, lang)
    step = at.slider(key="cost_step")
    assert step.label == translate("cost.step", lang, n=int(step.max))
    z = grid(at)
    n = z.shape[0]
    assert step.value == 1 and (z == vc.CURRENT).sum() + (z == vc.MASKED).sum() == 8 * 8
    assert int(step.max) == math.ceil(n / 8) ** 2                  # default 8 x 8 tiles
    # the traced (last) row has not been reached yet
    assert translate("cost.row_waiting", lang, row=n - 1) in [i.value for i in at.info]

    step.set_value(step.max).run()
    no_errors(at)
    z = grid(at)
    assert (z == vc.PENDING).sum() == 0
    lower = np.tril(np.ones((n, n), bool))
    assert np.isin(z[lower], [vc.DONE, vc.CURRENT]).all()     # all n(n+1)/2 allowed scores
    tiled = decode(traces(at, lang, "cost.fig.tiled_row")["y"])
    dense = decode(traces(at, lang, "cost.fig.dense_row")["y"])
    np.testing.assert_allclose(tiled, dense, atol=1e-9)
    assert float(metric(at, "cost.max_err", lang)) < 1e-5
    text = all_text(at)
    assert catalogue(lang)["cost.row_exact"].split("{gap}")[0].format(row=n - 1) in text
    # the online softmax: the running max never decreases and ends at the row's true max
    m = decode(traces(at, lang, "cost.fig.m")["y"])
    assert (np.diff(m) >= 0).all()
    # the largest score block held is one tile, not the n x n matrix
    assert metric(at, "cost.largest_block", lang) == "64"
    assert metric(at, "cost.full_matrix", lang) == f"{n * n:,}"


@pytest.mark.apptest
def test_block_sizes_and_causal_switch_change_the_tiles():
    at = open_page(PAGE, "en")
    n = grid(at).shape[0]
    at.slider(key="cost_bq").set_value(16).run()
    at.slider(key="cost_bk").set_value(5).run()
    no_errors(at)
    step = at.slider(key="cost_step")
    assert step.max == math.ceil(n / 16) * math.ceil(n / 5)
    step.set_value(step.max).run()
    assert (grid(at) == vc.SKIPPED).sum() > 0
    at.checkbox(key="cost_causal").uncheck().run()
    no_errors(at)
    step = at.slider(key="cost_step")
    step.set_value(step.max).run()
    z = grid(at)
    assert not np.isin(z, [vc.SKIPPED, vc.MASKED, vc.PENDING]).any()
    assert translate("cost.noncausal_read", "en") in all_text(at)
    assert float(metric(at, "cost.max_err", "en")) < 1e-5   # exact without the mask too


@pytest.mark.apptest
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_traffic_flops_and_budgets_follow_the_core(lang):
    at = open_page(PAGE, lang)
    # memory traffic: dense moves more bytes than tiled; FLOPs are one curve for both
    dense = traces(at, lang, "cost.fig.dense_bytes")
    tiled = traces(at, lang, "cost.fig.tiled_bytes")
    ns = decode(dense["x"]).astype(int).tolist()
    i = ns.index(4096)
    assert decode(dense["y"])[i] * 2 ** 20 == pytest.approx(traffic_bytes_dense(4096, 64, 2))
    assert decode(tiled["y"])[i] * 2 ** 20 == pytest.approx(traffic_bytes_tiled(4096, 64, 192 * 1024, 2))
    assert (decode(dense["y"]) > decode(tiled["y"])).all()
    before = decode(tiled["y"])[i]
    at.selectbox(key="cost_sram").set_value(16).run()      # a smaller chip: smaller tiles, more traffic
    no_errors(at)
    assert decode(traces(at, lang, "cost.fig.tiled_bytes")["y"])[i] > before

    # prefill vs decode: the bars are the core's counts for the live model's width
    at.slider(key="cost_pn").set_value(1024).run()
    no_errors(at)
    att = traces(at, lang, "cost.part.attention", which=1)   # 0 is the share chart
    d = 128  # the live model's width (default config)
    assert decode(att["y"]).tolist() == [layer_flops(1024, d).attention, decode_step_flops(1024, d).attention]

    # compute-budget example: at Gopher's budget the 20-tokens rule gives Chinchilla, 70B on 1.4T tokens
    at.slider(key="cost_logc").set_value(23.76).run()
    no_errors(at)
    p = chinchilla_optimal(10 ** 23.76)
    assert round(p.n_params / 1e9) == 69
    assert metric(at, "cost.n_opt", lang) == magnitude(p.n_params, lang)   # 69.2 B / 692 亿
    assert metric(at, "cost.d_opt", lang) == magnitude(p.n_tokens, lang)
    # 6ND: 7B parameters on 140B tokens
    at.number_input(key="cost_nb").set_value(7.0).run()
    assert float(metric(at, "cost.c_metric", lang)) == pytest.approx(6 * 7e9 * 140e9, rel=1e-3)


@pytest.mark.apptest
def test_measured_timing_and_bad_prompt():
    """The O(n²) timing is measured on request, per session, in the background: >= 5 lengths,
    repeated rounds, the slope sentence chosen by lmviz.chapters.claims.power_law from those rounds."""
    from lmviz.chapters.claims import STATEMENTS, power_law
    from chapters.cost import BENCH_NS

    at = open_page(PAGE, "zh")
    assert translate("cost.measure_hint", "zh") in [i.value for i in at.info]
    assert not any(any(tr.get("name") == translate("cost.fig.n2_guide", "zh") for tr in f["data"])
                   for f in figures(at))
    at.button(key="cost_measure").click().run()
    task = at.session_state["cost_bench"]
    assert task.join(TASK_TIMEOUT)
    at.run()
    no_errors(at)
    fig = next(f for f in figures(at) if any(tr.get("name") == translate("cost.fig.n2_guide", "zh")
                                             for tr in f["data"]))
    ns = decode(fig["data"][0]["x"]).astype(int).tolist()
    assert ns == list(BENCH_NS) and len(ns) >= 5
    t_full = decode(fig["data"][1]["y"])
    guide = decode(fig["data"][2]["y"])
    assert guide[-1] == pytest.approx(t_full[-1]) and guide[0] == pytest.approx(t_full[-1] / 256)
    assert (t_full > 0).all()
    series = task.snapshot().result
    assert len(series.rounds) >= 3
    c = power_law(series.ns, series.full_times())
    assert translate(c.key, "zh", **c.values) in all_text(at)
    assert c.statement in STATEMENTS["power_law"]
    # the memory recipes are labelled in the page's language
    mem = traces(at, "zh", "cost.mem.optimizer")
    assert translate("cost.recipe.mixed_fp16_bf16_adamw", "zh") in list(mem["y"])
    assert mem["x"] and decode(mem["x"]).max() == 8     # AdamW: m and v in fp32
    box = [x for x in at.text_input if x.key == "cost_prompt"]
    if not box:           # the default model is not there yet: random q, k, v, said so
        assert translate("cost.no_model", "zh") in [i.value for i in at.info]
        return
    box[0].set_value("☃☃").run()
    no_errors(at)
    assert translate("cost.empty_prompt", "zh") in [w.value for w in at.warning]
    at.text_input(key="cost_prompt").set_value("<b>").run()
    no_errors(at)
    assert not any("<b>" in w.value for w in at.warning)


@pytest.mark.apptest
def test_presenter_mode_steps_to_the_tiles():
    at = open_page(PAGE, "en", present="1", sec="2")
    no_errors(at)
    assert grid(at).shape[0] >= 2
    assert at.slider(key="cost_step").value == 1
