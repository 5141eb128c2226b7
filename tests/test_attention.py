"""lmviz.attention: the weighted sum, the variance that √d_k scaling undoes, FlashAttention (tiled == dense) and the traffic model."""
import doctest
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from lmviz import attention
from lmviz.attention import (dense_attention, score_variance_experiment, tile_size,
                             tiled_attention, traffic_bytes_dense, traffic_bytes_tiled,
                             weighted_sum)


def test_docstring_examples():
    assert doctest.testmod(attention).failed == 0


def test_w17_weighted_sum_of_values():
    assert weighted_sum([0.2, 0.3, 0.5], [[1, 0], [0, 2], [2, 2]]).tolist() == [1.2, 1.6]


def test_w18_variance_grows_like_d_k_and_scaling_fixes_it():
    rows = score_variance_experiment([4, 16, 64, 256], n_samples=3000, seed=0)
    for r in rows:
        assert r.var_raw == pytest.approx(r.d_k, rel=0.10)
        assert r.var_scaled == pytest.approx(1.0, rel=0.10)
    # unscaled softmax saturates as d_k grows; scaled stays about where it is
    assert rows[-1].max_weight_raw > 0.9
    assert rows[-1].max_weight_raw > rows[0].max_weight_raw
    assert all(r.max_weight_scaled < 0.5 for r in rows)


def _qkv(shape_q, n_k, d_v, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    *lead, n_q, d = shape_q
    q = torch.randn(*lead, n_q, d, generator=g, dtype=dtype)
    k = torch.randn(*lead, n_k, d, generator=g, dtype=dtype)
    v = torch.randn(*lead, n_k, d_v, generator=g, dtype=dtype)
    return q, k, v


def test_dense_matches_the_formula_and_torch():
    q, k, v = _qkv((2, 3, 7, 8), 7, 5)
    s = q @ k.transpose(-2, -1) / math.sqrt(8)
    s = s.masked_fill(torch.triu(torch.ones(7, 7, dtype=torch.bool), 1), float("-inf"))
    assert torch.allclose(dense_attention(q, k, v), torch.softmax(s, -1) @ v)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(dense_attention(q, k, v), ref, atol=1e-10)


@pytest.mark.parametrize("n,bq,bk", [(1, 1, 1), (5, 2, 3), (16, 4, 4), (17, 5, 3), (33, 64, 8), (40, 7, 40)])
@pytest.mark.parametrize("causal", [True, False])
def test_w24_tiled_equals_dense_grid(n, bq, bk, causal):
    q, k, v = _qkv((2, n, 6), n, 4, seed=n, dtype=torch.float32)
    assert torch.allclose(tiled_attention(q, k, v, bq, bk, causal=causal),
                          dense_attention(q, k, v, causal=causal), atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(n_q=st.integers(1, 24), extra_k=st.integers(0, 10), d=st.integers(1, 9),
       bq=st.integers(1, 12), bk=st.integers(1, 12), causal=st.booleans(), seed=st.integers(0, 99))
def test_w24_tiled_equals_dense_property(n_q, extra_k, d, bq, bk, causal, seed):
    # more keys than queries (a decode step over a cache) included; large score spread too
    q, k, v = _qkv((n_q, d), n_q + extra_k, 3, seed=seed, dtype=torch.float32)
    q = q * 4
    assert torch.allclose(tiled_attention(q, k, v, bq, bk, causal=causal),
                          dense_attention(q, k, v, causal=causal), atol=1e-5)


def test_tiled_trace_visits_skips_and_running_row():
    n, b = 10, 4
    q, k, v = _qkv((n, 3), n, 2)
    out, tr = tiled_attention(q, k, v, b, b, causal=True, trace=True, trace_row=9)
    # 3 x 3 tiles visited row-major; the 3 above the diagonal are skipped
    assert [(t.qi, t.kj) for t in tr.visits] == [(i, j) for i in range(3) for j in range(3)]
    assert sorted((t.qi, t.kj) for t in tr.visits if t.skipped) == [(0, 1), (0, 2), (1, 2)]
    assert [(t.qi, t.kj) for t in tr.visits if t.partial] == [(0, 0), (1, 1), (2, 2)]
    assert tr.max_block_elems <= b * b                       # never an [n, n] matrix
    # the traced row meets all three key tiles; its running stats end at the dense values
    s = (q[9] @ k.T) / math.sqrt(3)
    assert [u.kj for u in tr.row_updates] == [0, 1, 2]
    assert tr.row_updates[-1].m == pytest.approx(float(s.max()))
    assert tr.row_updates[-1].l == pytest.approx(float(torch.exp(s - s.max()).sum()))
    assert tr.row_updates[-1].out == pytest.approx(out[9].tolist())
    assert tr.row_updates[-1].out == pytest.approx(dense_attention(q, k, v)[9].tolist())
    ms = [u.m for u in tr.row_updates]
    assert ms == sorted(ms)                                   # running max never decreases
    assert all(0 < u.rescale <= 1 for u in tr.row_updates[1:])


def test_tiled_rejects_bad_blocks():
    q, k, v = _qkv((4, 2), 4, 2)
    with pytest.raises(ValueError):
        tiled_attention(q, k, v, 0, 2)


def test_traffic_hand_worked_case():
    # n=4, d=2, fp32. Dense: Q,K read 16, S written 16, S read 16, P written 16,
    # P read 16, V read 8, O written 8 -> 96 elements = 384 bytes.
    assert traffic_bytes_dense(4, 2, 4) == 384
    # SRAM 80 B = 20 floats: tile B=2 (4*2*2 + 2*2 = 20). Two query tiles: Q read 8, O written 8,
    # each query tile streams all of K and V (16 each) -> 48 elements = 192 bytes.
    assert tile_size(2, 80, 4) == 2
    assert traffic_bytes_tiled(4, 2, 80, 4) == 192
    # causal: tile 0 reads K,V rows 0-1 (8), tile 1 rows 0-3 (16) -> 8 + 8 + 24 = 40 elements
    assert traffic_bytes_tiled(4, 2, 80, 4, causal=True) == 160


def test_traffic_scaling_laws():
    d, sram, bp = 64, 100 * 1024, 2   # an A100-like 100 KB per SM, fp16
    dense = [traffic_bytes_dense(n, d, bp) for n in (2048, 4096)]
    tiled = [traffic_bytes_tiled(n, d, sram, bp) for n in (2048, 4096)]
    assert dense[1] / dense[0] == pytest.approx(4, rel=0.05)     # N^2 term dominates
    assert tiled[1] / tiled[0] == pytest.approx(4, rel=0.05)     # still quadratic in N ...
    assert tiled[0] < dense[0] / 3                               # ... but fewer bytes (B=128)
    # more SRAM -> proportionally less traffic (the 1/M in N^2 d^2 / M)
    assert traffic_bytes_tiled(4096, d, 4 * sram, bp) < traffic_bytes_tiled(4096, d, sram, bp) / 2.5
    with pytest.raises(ValueError):
        tile_size(64, 100, 2)
