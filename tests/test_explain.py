"""The worked examples behind the embedding, attention and block chapters (the toy embedding table, position vectors and word order; the causal mask, the
embedding table, the weighted sum, √d_k scaling, LayerNorm/RMSNorm and the contextual vector) and the RoPE offset property, computed by lmviz.chapters.{embedding,attention,block}."""
from __future__ import annotations

import math

import pytest
import torch

from lmviz.chapters import attention, transformer_block as block, embedding
from lmviz.attention import score_variance_experiment
from lmviz.model import GPT, GPTConfig, layer_norm, rms_norm, rope_rotate


def test_w1_toy_table_and_lookup_by_id():
    e = embedding.toy_embedding()
    assert e.tokens == ["<BOS>", "I", "love", "robot", "s", "<EOS>"]
    assert tuple(e.E.shape) == (6, 3)                   # V = 6, d = 3
    assert e.E[1].tolist() == [0.40, 0.10, -0.30]       # the notes' row for "I"
    assert e.filled == (5,)                             # only <EOS> is made up
    for i in range(6):                                  # lookup = row indexing
        assert torch.equal(embedding.lookup(e.E, [i])[0], e.E[i])
    with pytest.raises(ValueError):
        embedding.lookup(e.E, [6])


def test_w2_robot_plus_p3():
    e = embedding.toy_embedding()
    assert embedding.add_position(e.E[3], embedding.TOY_P3).tolist() == [0.85, 0.00, -0.20]


def test_w3_order_without_positions_is_a_reordering():
    e = embedding.toy_embedding()
    P = torch.tensor([[0.0, 0.0, 0.0], embedding.TOY_P3], dtype=torch.float64)
    c = embedding.order_check(e.E, [3, 2], [2, 3], P)          # robot love / love robot
    assert c.same_multiset and not c.same_sequence
    assert torch.equal(c.rows_a, c.rows_b.flip(0))
    assert not c.same_multiset_with_pos                 # positions break the tie


def test_w6_causal_mask_lower_triangular():
    d = attention.causal_demo(embedding.toy_embedding().E[:5])
    assert torch.isinf(d.masked.triu(1)[d.masked.triu(1) != 0]).all()
    assert (d.weights.triu(1) == 0).all()
    assert torch.allclose(d.weights.sum(-1), torch.ones(5, dtype=torch.float64))
    assert d.weights[0, 0] == 1.0                       # the first query can only read itself


def test_w12_table_shape_and_row_lookup():
    E = torch.randn(50000, 768)
    ids = [17, 356, 82]
    rows = embedding.lookup(E, ids)
    assert tuple(rows.shape) == (3, 768)
    assert torch.equal(rows[1], E[356])


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


def test_w19_norms_match_their_formulas_and_torch():
    h = [2.0, -1.0, 0.5, 3.5]
    s = block.norm_steps(h)
    assert s.mean == 1.25 and math.isclose(s.var, (0.75**2 + 2.25**2 + 0.75**2 + 2.25**2) / 4)
    assert math.isclose(s.mean_sq, (4 + 1 + 0.25 + 12.25) / 4)
    g, b = torch.ones(4), torch.zeros(4)
    t = torch.tensor(h)
    assert torch.allclose(s.layernorm.float(), torch.nn.functional.layer_norm(t, (4,), g, b, 1e-5), atol=1e-6)
    assert torch.allclose(s.layernorm.float(), layer_norm(t, g, b), atol=1e-6)
    assert torch.allclose(s.rmsnorm.float(), rms_norm(t, g), atol=1e-6)
    assert abs(float(s.layernorm.mean())) < 1e-9          # LayerNorm removes the mean
    assert abs(float(s.rmsnorm.mean())) > 0.1              # RMSNorm does not
    assert math.isclose(float((s.rmsnorm ** 2).mean()), 1.0, rel_tol=1e-4)


def test_rope_score_depends_only_on_offset():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)
    d = embedding.rope_offset_demo(q, k, n_pos=10)
    assert d.max_spread < 1e-9
    # same rotation as the model's rope_rotate
    assert torch.allclose(d.q_rot.float(), rope_rotate(q.expand(10, -1).clone(), 0), atol=1e-5)
    assert torch.allclose(d.q_rot.norm(dim=-1), q.double().norm().expand(10))  # rotations keep length


def test_find_word():
    assert block.find_word([1, 2, 3], [2, 3]) == 2
    assert block.find_word([1, 2, 3], [4]) is None
    assert block.find_word([1, 2, 3], []) is None


def test_w29_same_token_different_contexts():
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=12, block_size=16, n_layer=2, n_head=2, n_kv_head=2, d_model=16)).eval()
    a = m.forward_trace(torch.tensor([1, 2, 3, 7]))
    b = m.forward_trace(torch.tensor([9, 4, 5, 7]))     # token 7 at the same position, other context
    c = block.contextual_cosine(a, b, 3, 3)
    assert c.stages == ["token", "input", "block 1", "block 2", "final"]
    assert math.isclose(c.cosine[0], 1.0, rel_tol=1e-6)  # same input embedding
    assert math.isclose(c.cosine[1], 1.0, rel_tol=1e-6)  # same position too
    assert c.cosine[-1] < 0.9999                         # contexts differ after attention


def test_w18_one_query_saturates_without_scaling():
    small, big = attention.softmax_example(4), attention.softmax_example(1024)
    for p in (small, big):
        assert math.isclose(float(p.raw.sum()), 1.0) and math.isclose(float(p.scaled.sum()), 1.0)
    assert float(big.raw.max()) > 0.99                  # raw scores with spread ~32: one-hot
    assert float(big.scaled.max()) < 0.9                # scaled: still a real mixture
