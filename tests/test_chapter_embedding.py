"""The embedding chapter's worked examples (the toy embedding table and its lookup, a position
vector added, word order without positions, the table's shape) and the RoPE offset property,
computed by lmviz.chapters.embedding."""
from __future__ import annotations

import pytest
import torch

from lmviz.chapters import embedding
from lmviz.model import rope_rotate


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


def test_w12_table_shape_and_row_lookup():
    E = torch.randn(50000, 768)
    ids = [17, 356, 82]
    rows = embedding.lookup(E, ids)
    assert tuple(rows.shape) == (3, 768)
    assert torch.equal(rows[1], E[356])


def test_rope_score_depends_only_on_offset():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)
    d = embedding.rope_offset_demo(q, k, n_pos=10)
    assert d.max_spread < 1e-9
    # same rotation as the model's rope_rotate
    assert torch.allclose(d.q_rot.float(), rope_rotate(q.expand(10, -1).clone(), 0), atol=1e-5)
    assert torch.allclose(d.q_rot.norm(dim=-1), q.double().norm().expand(10))  # rotations keep length
