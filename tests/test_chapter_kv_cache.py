"""The KV-cache chapter's computations: the walk-through, cached equals uncached, the cache's size in bytes, the GQA/MQA saving,
the edit (invalidation) rule and the timing record."""
from __future__ import annotations

import doctest

import pytest
import torch

from lmviz.chapters import kv_cache as kv_demo
from lmviz.kv_cache import DTYPE_BYTES, kv_cache_bytes, max_tokens_for_budget
from lmviz.chapters.kv_cache import (MODEL_SHAPES, TOY_PROMPT, attention_variants, edit_effect, invalid_rows,
                           load_toy, measure_decode, recompute_plan, slope, walkthrough)
from lmviz.model import GPT, GPTConfig


@pytest.fixture(scope="module")
def toy():
    return load_toy()


@pytest.fixture(scope="module")
def walk(toy):
    return walkthrough(toy.model, toy.tokenizer.encode(TOY_PROMPT), 3)


def test_doctests():
    assert doctest.testmod(kv_demo).failed == 0


def test_w25_toy_model_continues_with_xuexi_then_shuxue(toy, walk):
    words = [toy.tokenizer.token(i) for i in walk.generated]
    assert words[:2] == ["学习", "数学"]
    assert words[2] == "<结束>"


def test_w25_cache_rows_per_step(toy, walk):
    # prefill writes the 3 prompt rows; each decode step adds exactly one row, in every layer
    assert [(s.snap.start, s.snap.end) for s in walk.steps] == [(0, 3), (3, 4), (4, 5)]
    assert [s.is_prefill for s in walk.steps] == [True, False, False]
    L, H, dh = toy.model.cfg.n_layer, toy.model.cfg.n_head, toy.model.cfg.head_dim
    s1 = walk.steps[1]
    assert s1.inputs == [toy.tokenizer.stoi["学习"]]     # 学习 gets its K, V only when fed back in
    assert tuple(s1.snap.k_new.shape) == (L, H, 1, dh)         # one new K row per layer (MHA: Hkv = H)
    assert tuple(s1.snap.q.shape) == (L, H, 1, dh)      # one new q per layer and head: Q never cached
    assert tuple(s1.snap.weights.shape) == (L, H, 1, 4)  # ...attending over all 4 cached rows
    assert torch.allclose(s1.snap.weights.sum(-1), torch.ones(L, H, 1))
    assert walk.tokens_at(1) == toy.tokenizer.encode("<开始> 我 喜欢 学习")


def test_w26_cached_logits_equal_uncached(walk):
    assert all(s.uncached_max_diff < 1e-5 for s in walk.steps)


def test_recompute_plan_counts():
    with_cache = recompute_plan(5, 1, cached=True)
    without = recompute_plan(5, 1, cached=False)
    assert sum(r["q"] == "compute" for r in with_cache) == 1       # only the new q
    assert sum(r["k"] == "reuse" for r in with_cache) == 4         # old keys come from the cache
    assert all(r == {"q": "compute", "k": "compute", "v": "compute"} for r in without)


def test_edit_rule_rows_from_the_edit_on_change(toy, walk):
    ids = walk.tokens_at(2)                              # <开始> 我 喜欢 学习 数学
    e = edit_effect(toy.model, ids, 1, toy.tokenizer.stoi["你"])   # 我 -> 你
    assert e.changed_rows() == list(invalid_rows(len(ids), 1)) == [1, 2, 3, 4]
    assert float(torch.maximum(e.k_diff, e.v_diff)[:, 0].max()) == 0.0   # row before: unchanged
    # layer 0 reads only its own token: only the edited row moves; deeper layers move after it
    assert float(e.k_diff[0, 2:].max()) == 0.0 and float(e.k_diff[0, 1]) > 0
    assert float(e.k_diff[1, 2:].min()) > 0


def test_invalid_rows_rejects_out_of_range():
    with pytest.raises(ValueError):
        invalid_rows(3, 3)


def test_w27_notes_preset_is_2_gib():
    s = MODEL_SHAPES["notes"]
    b = kv_cache_bytes(1, s.n_layer, s.n_tokens, s.n_kv_head, s.head_dim, DTYPE_BYTES[s.dtype])
    assert b == 2_147_483_648 == 2 * 2**30
    assert max_tokens_for_budget(b, 1, s.n_layer, s.n_kv_head, s.head_dim, 2) == 16384


def test_w28_gqa_saving():
    s = MODEL_SHAPES["Llama-3-8B"]
    mha, gqa, mqa = attention_variants(1, s.n_layer, 8192, s.n_head, s.n_kv_head, s.head_dim, 2)
    assert mha.bytes == 4 * gqa.bytes == 32 * mqa.bytes
    assert (gqa.saving, mqa.saving) == (4.0, 32.0)
    l2 = MODEL_SHAPES["Llama-2-7B"]                      # MHA: no saving
    assert attention_variants(1, 32, 4096, l2.n_head, l2.n_kv_head, 128, 2)[1].saving == 1.0


def test_measure_decode_record():
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=11, block_size=32, n_layer=1, n_head=2, n_kv_head=1, d_model=16)).eval()
    r = measure_decode(m, [1, 2, 3], 6)
    assert r.cache_len == [4, 5, 6, 7, 8]                # one timed step per new token after the first
    assert len(r.cached_ms) == len(r.uncached_ms) == 5 and min(r.cached_ms) > 0
    assert r.total_cached_s == pytest.approx(sum(r.cached_ms) / 1e3)
    with pytest.raises(ValueError):
        measure_decode(m, [1] * 30, 6)


def test_slope_of_a_line():
    assert slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2.0)


def test_cache_rows_stack_every_step(toy, walk):
    K, V = kv_demo.cache_rows(walk)
    cfg = toy.model.cfg
    assert tuple(K.shape) == tuple(V.shape) == (cfg.n_layer, 5, cfg.n_kv_head * cfg.head_dim)
    # row 3 (学习) is the k that decode step 1 appended to layer 1, heads side by side
    assert torch.equal(K[1, 3], walk.steps[1].snap.k_new[1, :, 0].reshape(-1))


def test_growth_drops_warm_up_and_says_when_noise_wins():
    from lmviz.chapters.kv_cache import growth

    lens = list(range(8, 108))
    flat = [50.0] * 8 + [1.0 + (0.3 if i % 2 else -0.3) for i in range(100)]   # warm-up spikes, then flat
    g = growth(lens, flat, warmup=8)
    assert g.dropped == 8 and g.lens[0] == 16 and not g.measurable
    rising = [1.0 + 0.01 * n + (0.05 if n % 2 else -0.05) for n in lens]
    assert growth(lens, rising, warmup=8).measurable
    falling = [2.0 - 0.01 * n for n in lens]                  # a negative slope is never growth
    assert not growth(lens, falling, warmup=8).measurable


def test_step_flops_line():
    from lmviz.chapters.cost import decode_step_flops
    from lmviz.chapters.kv_cache import SPEED_CONFIG as c, step_flops

    # a cached step grows by 4 d per layer per token of context; an uncached one superlinearly
    assert step_flops(c, 200, True) - step_flops(c, 100, True) == c.n_layer * 4 * c.d_model * 100
    assert step_flops(c, 100, True) == c.n_layer * decode_step_flops(100, c.d_model).total + 2 * c.d_model * c.vocab_size
    assert step_flops(c, 400, False) > 4 * step_flops(c, 200, False) / 2
    assert c.block_size >= 256


# ---------------------------------------------------------------- the current model's cache and timing
SMOL_SHAPE = GPTConfig(vocab_size=49152, block_size=2048, n_layer=30, n_head=9, n_kv_head=3, d_model=576,
                       pos="rope", norm="rmsnorm", mlp="swiglu", d_ff=1536)   # SmolLM2-135M's config.json


@pytest.fixture(scope="module")
def smol():
    from tests.model_util import smollm2

    return smollm2()


def test_bytes_per_token_from_a_config():
    from lmviz.chapters.kv_cache import model_kv

    fp32 = model_kv(SMOL_SHAPE, "FP32", SMOL_SHAPE.block_size)
    assert fp32.per_token == 30 * 3 * 64 * 2 * 4 == 46_080
    assert fp32.at_context == 46_080 * 2048
    assert fp32.group == 3 and fp32.mha_per_token == 30 * 9 * 64 * 2 * 4
    assert model_kv(SMOL_SHAPE, "FP16", 16384).per_token == 30 * 3 * 64 * 2 * 2
    notes = MODEL_SHAPES["notes"]
    assert model_kv(notes, notes.dtype, notes.n_tokens).at_context == 2 * 2**30     # the notes' 2 GiB, reused
    mha = model_kv(GPTConfig(vocab_size=5, n_layer=2, n_head=4, n_kv_head=4, d_model=32), "FP32", 8)
    assert mha.group == 1 and mha.per_token == mha.mha_per_token == 2 * 2 * 4 * 8 * 4


def test_the_real_smollm2_config_gives_its_bytes_per_token(smol):
    from lmviz.chapters.kv_cache import dtype_name, model_kv

    model, _ = smol
    k = model_kv(model.cfg, dtype_name(model.wte.weight.dtype), model.cfg.block_size)
    assert (k.n_layer, k.n_head, k.n_kv_head, k.head_dim, k.dtype) == (30, 9, 3, 64, "FP32")
    assert k.per_token == 30 * 3 * 64 * 2 * 4
    from lmviz.kv_cache import KVCache
    cache = KVCache.for_model(model, max_len=10)     # what the cache really holds per token
    assert cache.nbytes() == 10 * k.per_token


def test_cached_decode_gives_the_uncached_tokens():
    from lmviz.kv_cache import generate_uncached

    torch.manual_seed(1)
    m = GPT(GPTConfig(vocab_size=17, block_size=64, n_layer=2, n_head=4, n_kv_head=2, d_model=32, pos="rope")).eval()
    steps = []
    r = measure_decode(m, [3, 1, 4, 1, 5], 20, on_step=steps.append)
    assert r.same_tokens and len(r.tokens) == 20 and r.asked == 20
    assert r.tokens == generate_uncached(m, [3, 1, 4, 1, 5], 20).tokens
    assert steps == list(range(1, 20))                     # progress after every timed step
    from lmviz.cancel import Cancelled
    with pytest.raises(Cancelled):
        measure_decode(m, [3, 1], 20, cancel=lambda: True)
    cut = measure_decode(m, [3, 1], 40, deadline_s=0.0)    # a server slower than estimated
    assert len(cut.tokens) == kv_demo.WARMUP_STEPS + 8 + 1 and cut.asked == 40 and cut.same_tokens


def test_smollm2_cached_decode_gives_the_uncached_tokens(smol):
    from lmviz.kv_cache import generate_uncached

    model, tok = smol
    ids = tok.encode("The capital of France is")
    r = measure_decode(model, ids, 6)
    assert r.same_tokens and r.tokens == generate_uncached(model, ids, 6).tokens


def test_the_speed_measurement_is_sized_to_the_model():
    from lmviz import limits
    from lmviz.chapters.kv_cache import SPEED_PROMPT, measure_seconds, plan_speed

    wb = 4 * 134_515_008                                   # SmolLM2's weights in fp32
    p = plan_speed(SMOL_SHAPE, wb, SPEED_PROMPT, 504, "cpu")
    assert p.cut and kv_demo.WARMUP_STEPS + 4 <= p.n_new < 504
    assert p.est_s <= limits.MEASURE_S["cpu"] < measure_seconds(SMOL_SHAPE, wb, SPEED_PROMPT, p.n_new + 1)
    assert p.est_wanted_s > 60 * limits.MEASURE_S["cpu"]  # the whole context: many minutes on a CPU
    more = plan_speed(SMOL_SHAPE, wb, SPEED_PROMPT, 504, "cpu", budget_s=4 * p.budget_s)
    assert more.n_new > p.n_new
    tiny = plan_speed(kv_demo.SPEED_CONFIG, 4 * 900_000, SPEED_PROMPT, 504, "cuda")
    assert not tiny.cut
