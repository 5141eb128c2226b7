"""lmviz.chapters.cost: the n² attention-cost example, the compute-budget example (6ND, Chinchilla) and the FLOP/byte formulas."""
import doctest

import pytest

from lmviz.chapters import cost as costs
from lmviz.chapters.cost import (MEMORY_RECIPES, activation_bytes, attention_dominates_from,
                         attention_flops, chinchilla_loss, chinchilla_optimal,
                         chinchilla_optimal_fit, decode_step_flops, layer_flops,
                         measure_attention_time, mlp_flops, projection_flops, training_flops,
                         training_memory_bytes)


def test_docstring_examples():
    assert doctest.testmod(costs).failed == 0


def test_w23_doubling_n_is_exactly_4x_attention_flops():
    for n in (128, 256, 1024):
        assert attention_flops(2 * n, 64) == 4 * attention_flops(n, 64)
    # the n d^2 parts only double, so the whole layer grows between 2x and 4x
    a, b = layer_flops(1024, 256), layer_flops(2048, 256)
    assert b.projections == 2 * a.projections and b.mlp == 2 * a.mlp
    assert 2 < b.total / a.total < 4


def test_flop_formulas_hand_worked():
    # n=3, d=2: QK^T is [3,2]@[2,3] = 2*3*2*3 = 36 FLOPs, PV is [3,3]@[3,2] = 36 -> 72
    assert attention_flops(3, 2) == 72
    assert attention_flops(3, 2, causal=True) == 4 * 6 * 2        # 6 of the 9 pairs
    # 4 projections [3,2]@[2,2] = 2*3*2*2 = 24 each -> 96; MLP 2->8->2: 2*3*2*8 * 2 = 192
    assert projection_flops(3, 2) == 96 and mlp_flops(3, 2) == 192
    # MQA with 4 heads: K, V projections shrink to a quarter: 24+24+6+6 = 60
    assert projection_flops(3, 2, kv_ratio=0.25) == 60
    f = layer_flops(3, 2)
    assert f.total == 72 + 96 + 192 and f.attention_share == pytest.approx(72 / 360)


def test_attention_dominates_beyond_6d():
    d = 64
    n0 = attention_dominates_from(d)
    assert n0 == 6 * d
    assert layer_flops(int(n0) // 2, d).attention_share < 0.5 < layer_flops(int(n0) * 2, d).attention_share


def test_decode_step_is_linear_in_the_cache():
    a, b = decode_step_flops(1000, 64), decode_step_flops(2000, 64)
    assert b.attention == 2 * a.attention and b.mlp == a.mlp
    # a decode step is far cheaper than re-running the whole prefix
    assert decode_step_flops(1000, 64).total < layer_flops(1000, 64).total / 100


def test_w30_six_n_d():
    assert training_flops(1e6, 1e9) == 6e15
    assert training_flops(70e9, 1.4e12) == pytest.approx(5.88e23)


# Hoffmann et al. 2022, Table 3 (approach 1 estimates): parameters, FLOPs, tokens
CHINCHILLA_TABLE3 = [(400e6, 1.92e19, 8.0e9), (1e9, 1.21e20, 20.2e9), (10e9, 1.23e22, 205.1e9),
                     (67e9, 5.76e23, 1.5e12), (175e9, 3.85e24, 3.7e12), (1e12, 1.27e26, 21.2e12)]


@pytest.mark.parametrize("n,c,d", CHINCHILLA_TABLE3)
def test_w30_chinchilla_calculator_against_table3(n, c, d):
    p = chinchilla_optimal(c)
    assert p.n_params == pytest.approx(n, rel=0.06)
    assert p.n_tokens == pytest.approx(d, rel=0.10)
    assert p.tokens_per_param == 20.0
    assert training_flops(p.n_params, p.n_tokens) == pytest.approx(c)


def test_w30_chinchilla_model_itself_at_gophers_budget():
    # Gopher (280B, 300B tokens) and Chinchilla (70B, 1.4T tokens) used about the same compute
    p = chinchilla_optimal(5.76e23)
    assert p.n_params == pytest.approx(70e9, rel=0.02)
    assert p.n_tokens == pytest.approx(1.4e12, rel=0.02)
    assert training_flops(280e9, 300e9) == pytest.approx(5.76e23, rel=0.15)
    with pytest.raises(ValueError):
        chinchilla_optimal(0)


def test_chinchilla_fit_minimises_the_loss_on_the_iso_flop_line():
    c = 5.76e23
    opt = chinchilla_optimal_fit(c)
    assert opt.n_params * opt.n_tokens * 6 == pytest.approx(c)
    best = chinchilla_loss(opt.n_params, opt.n_tokens)
    for f in (0.5, 0.8, 1.25, 2.0):
        n = opt.n_params * f
        assert chinchilla_loss(n, c / (6 * n)) > best
    # Chinchilla (70B, 1.4T) beats Gopher (280B, 300B) at the same budget under the fit
    assert chinchilla_loss(70e9, 1.4e12) < chinchilla_loss(280e9, 300e9)


def test_training_memory_per_parameter():
    assert MEMORY_RECIPES["fp32 + AdamW"].per_param == 16
    assert MEMORY_RECIPES["mixed fp16/bf16 + AdamW"].per_param == 16
    assert MEMORY_RECIPES["mixed, fp32 grads + AdamW"].per_param == 18
    assert MEMORY_RECIPES["inference fp16"].per_param == 2
    m = training_memory_bytes(7e9, "mixed fp16/bf16 + AdamW")
    assert m["total"] == 16 * 7e9 == m["weights"] + m["master"] + m["grads"] + m["optimizer"]
    assert all(r.source for r in MEMORY_RECIPES.values())


def test_activation_bytes_hand_worked():
    # s=2048, b=1, h=4096, a=32: 2048*4096*(34 + 5*32*2048/4096) = 2048*4096*114 per layer
    assert activation_bytes(2048, 1, 4096, 32, 1) == 2048 * 4096 * 114
    assert activation_bytes(2048, 1, 4096, 32, 2) == 2 * 2048 * 4096 * 114


def test_measure_attention_time_records():
    recs = measure_attention_time(ns=(32, 64, 128), d=16, device="cpu", repeats=2)
    assert [r.n for r in recs] == [32, 64, 128]
    assert recs[0].ratio_full is None
    assert recs[1].ratio_full == pytest.approx(recs[1].t_full / recs[0].t_full)
    assert recs[2].matrix_bytes == 128 * 128 * 4
    assert recs[2].flops == 4 * 128 * 128 * 16
    assert all(r.t_scores > 0 and r.t_full > 0 for r in recs)


def test_flash_steps_follow_the_traced_row_to_the_dense_answer():
    """The tile stepper's record: the traced row gains an update at each of its own tiles, and
    is exact (to rounding) only once all of them are in."""
    import numpy as np

    from lmviz.chapters.cost import flash_step, flash_tiles

    x = np.random.default_rng(1).standard_normal((7, 4))
    f = flash_tiles(x, x[::-1].copy(), x, 3, 2, True, row=6)
    steps = [flash_step(f, i) for i in range(1, len(f.trace.visits) + 1)]
    counts = [len(s.updates) for s in steps]
    assert counts == sorted(counts) and counts[-1] == len(f.trace.row_updates)
    assert [s.row_done for s in steps].index(True) == counts.index(counts[-1])
    assert steps[-1].gap < 1e-12 and steps[0].gap > 1e-3
    assert all(s.max_err < 1e-12 and s.skipped == sum(v.skipped for v in f.trace.visits) for s in steps)
