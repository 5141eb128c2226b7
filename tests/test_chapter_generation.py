"""lmviz.chapters.generation: the live stepper is a record; the seed decides every draw."""
import torch

from lmviz.chapters.generation import finite, live_search, start
from lmviz.model import GPT, GPTConfig
from lmviz.sampling import next_logits


def _model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=7, block_size=8, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()


def test_a_step_returns_a_new_record_and_peek_shows_its_draw():
    m = _model()
    s = start([1, 2, 3], seed=4)
    u = s.peek_u()
    s2 = s.step(next_logits(m, s.ids), 0.8, 3, 0.9)
    assert s.ids == (1, 2, 3) and s.draws == ()                     # the old record did not move
    assert s2.ids[:3] == (1, 2, 3) and s2.n_new == 1 and s2.draws[0].u == u
    d = s2.draws[0]
    assert (d.temperature, d.top_k, d.top_p) == (0.8, 3, 0.9) and 1 <= d.kept <= 3
    assert d.token == s2.ids[-1] and len(d.top3) == 3 and d.top3[0][1] >= d.top3[1][1] >= d.top3[2][1]


def test_the_same_seed_gives_the_same_text_and_another_seed_its_own_draws():
    m = _model()

    def run(seed):
        s = start([1, 2], seed)
        for _ in range(10):
            s = s.step(next_logits(m, s.ids), 1.0, 0, 1.0)
        return s

    a, b, c = run(0), run(0), run(1)
    assert a.ids == b.ids and [d.u for d in a.draws] == [d.u for d in b.draws]
    assert [d.u for d in a.draws] != [d.u for d in c.draws]


def test_a_spread_is_reproducible_and_leaves_the_stepper_where_it_was():
    m = _model()
    s = start([1, 2], seed=3)
    rows = s.spread(m, 1.0, 0, 1.0, n=4, length=6)
    assert len(rows) == 4 and all(len(r) == 6 for r in rows)
    assert rows == s.spread(m, 1.0, 0, 1.0, n=4, length=6)
    assert s.peek_u() == start([1, 2], seed=3).peek_u()
    greedy = s.spread(m, 0.0, 0, 1.0, n=3, length=5)             # τ = 0: every row is greedy's
    assert len(set(greedy)) == 1


def test_finite_and_the_live_search():
    assert finite([0.0, 1.0]) and not finite([0.0, float("nan")]) and not finite([float("inf"), 0.0])
    res = live_search(_model(), [1, 2], depth=2, branch=2)
    assert len(res.best) == 2 and res.best_joint >= res.greedy_joint
