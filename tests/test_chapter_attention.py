"""The attention chapter's worked examples (the causal mask, the weighted sum, √d_k scaling and
its saturation without it), computed by lmviz.chapters.attention and lmviz.attention."""
from __future__ import annotations

import math

import torch

from lmviz.attention import score_variance_experiment
from lmviz.chapters import attention, embedding


def test_w6_causal_mask_lower_triangular():
    d = attention.causal_demo(embedding.toy_embedding().E[:5])
    assert torch.isinf(d.masked.triu(1)[d.masked.triu(1) != 0]).all()
    assert (d.weights.triu(1) == 0).all()
    assert torch.allclose(d.weights.sum(-1), torch.ones(5, dtype=torch.float64))
    assert d.weights[0, 0] == 1.0                       # the first query can only read itself


def test_w17_weighted_sum():
    w = attention.weighted_sum_terms([0.2, 0.3, 0.5], [[1, 0], [0, 2], [2, 2]])
    assert w.output.tolist() == [1.2, 1.6]
    assert w.terms.tolist() == [[0.2, 0.0], [0.0, 0.6], [1.0, 1.0]]


def test_w18_variance_grows_like_dk():
    rows = score_variance_experiment([4, 64, 256], n_samples=3000)
    for r in rows:
        assert 0.85 * r.d_k < r.var_raw < 1.15 * r.d_k
        assert 0.85 < r.var_scaled < 1.15
    assert rows[-1].max_weight_raw > rows[-1].max_weight_scaled


def test_w18_one_query_saturates_without_scaling():
    small, big = attention.softmax_example(4), attention.softmax_example(1024)
    for p in (small, big):
        assert math.isclose(float(p.raw.sum()), 1.0) and math.isclose(float(p.scaled.sum()), 1.0)
    assert float(big.raw.max()) > 0.99                  # raw scores with spread ~32: one-hot
    assert float(big.scaled.max()) < 0.9                # scaled: still a real mixture
