import doctest

import pytest
import torch

import lmviz.kv_cache as K
from lmviz.kv_cache import (DTYPE_BYTES, KVCache, generate_cached, generate_uncached, kv_cache_bytes,
                            max_tokens_for_budget)
from tests.model_util import tiny_gpt

torch.set_num_threads(1)

V = 29


def tiny(**kw):
    return tiny_gpt(V, 24, **kw)


def test_doctests():
    assert doctest.testmod(K).failed == 0


def test_w27_kv_bytes():
    # KV-cache-size example: B=1, L=32, n=16384, H_kv=8, d_h=128, FP16 -> 2 GiB
    assert kv_cache_bytes(1, 32, 16384, 8, 128, DTYPE_BYTES["FP16"]) == 2147483648 == 2 * 1024**3
    assert kv_cache_bytes(1, 32, 16384, 8, 128, DTYPE_BYTES["FP4"]) == 2**29
    # GQA shrinks the cache in proportion to kv heads (32 -> 8 heads is 4x smaller)
    assert kv_cache_bytes(1, 32, 1000, 32, 128, 2) == 4 * kv_cache_bytes(1, 32, 1000, 8, 128, 2)
    assert max_tokens_for_budget(2 * 1024**3, 1, 32, 8, 128, 2) == 16384
    assert max_tokens_for_budget(2 * 1024**3 - 1, 1, 32, 8, 128, 2) == 16383


@pytest.mark.parametrize("pos,kv", [("learned", 4), ("learned", 2), ("rope", 4), ("rope", 1), ("sinusoidal", 2)])
def test_w26_cached_equals_uncached(pos, kv):
    m = tiny(pos=pos, n_kv_head=kv)
    prompt = [3, 1, 4, 1, 5]
    a = generate_cached(m, prompt, 12)
    b = generate_uncached(m, prompt, 12)
    assert a.tokens == b.tokens
    assert a.step_logits.shape == (12, V)
    assert torch.allclose(a.step_logits, b.step_logits, atol=1e-5)
    assert a.cache.length == len(prompt) + 11          # the last token is chosen, never fed back


def test_forward_cached_prefill_in_chunks_matches_forward():
    m = tiny(pos="rope", n_kv_head=2)
    idx = torch.randint(0, V, (2, 14), generator=torch.Generator().manual_seed(1))
    full, _ = m(idx)
    cache = KVCache.for_model(m, batch=2)
    parts = [m.forward_cached(idx[:, :5], cache), m.forward_cached(idx[:, 5:6], cache),
             m.forward_cached(idx[:, 6:], cache)]
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-5)
    assert cache.length == 14


def test_truncate_is_the_edit_rule():
    m = tiny()
    idx = torch.randint(0, V, (1, 10), generator=torch.Generator().manual_seed(2))
    cache = KVCache.for_model(m)
    m.forward_cached(idx, cache)
    keep = cache.k[0][:, :, :4].clone()
    edited = idx.clone()
    edited[0, 4] = (idx[0, 4] + 1) % V                  # edit token 4: rows 0..3 stay valid
    cache.truncate(4)
    assert cache.length == 4
    tail = m.forward_cached(edited[:, 4:], cache)
    full, _ = m(edited)
    assert torch.allclose(tail, full[:, 4:], atol=1e-5)
    assert torch.equal(cache.k[0][:, :, :4], keep)
    cache.reset()
    assert cache.length == 0


def test_nbytes_and_capacity():
    m = tiny(n_kv_head=2)
    cache = KVCache.for_model(m, max_len=20)
    # preallocated: 2 (K,V) x 2 layers x 1 x 2 heads x 20 rows x 8 dims x 4 bytes
    assert cache.nbytes() == kv_cache_bytes(1, 2, 20, 2, 8, 4) == 2 * 2 * 2 * 20 * 8 * 4
    m.forward_cached(torch.zeros(1, 5, dtype=torch.long), cache)
    assert cache.used_nbytes() == kv_cache_bytes(1, 2, 5, 2, 8, 4)
    with pytest.raises(ValueError, match="fit"):
        m.forward_cached(torch.zeros(1, 16, dtype=torch.long), cache)


def test_w25_record_prefill_then_decode():
    # KV-cache walk-through shape: a 2-token prompt (我 喜欢), then two decode steps (学习, 数学)
    m = tiny(n_kv_head=2)
    cache = KVCache.for_model(m, record=True)
    m.forward_cached(torch.tensor([[7, 8]]), cache)
    m.forward_cached(torch.tensor([[9]]), cache)
    m.forward_cached(torch.tensor([[10]]), cache)
    s0, s1, s2 = cache.snapshots
    assert [list(s.rows_added) for s in cache.snapshots] == [[0, 1], [2], [3]]
    assert s0.tokens == [7, 8] and s2.tokens == [10]
    assert s0.q.shape == (2, 4, 2, 8) and s2.q.shape == (2, 4, 1, 8)     # [L,H,n_new,dh]
    assert s2.k_new.shape == (2, 2, 1, 8)                                 # [L,Hkv,n_new,dh]
    assert s2.weights.shape == (2, 4, 1, 4)                               # over all 4 cached rows
    assert torch.allclose(s2.weights.sum(-1), torch.ones(2, 4, 1), atol=1e-6)
    assert torch.all(s0.weights[:, :, 0, 1] == 0)                        # causal inside the prefill
    # the cache rows are exactly the recorded new keys
    assert torch.equal(cache.k[1][0, :, 2:3], s1.k_new[1])
    # the decode step's weights are the last row of the full trace's attention
    tr = m.forward_trace(torch.tensor([7, 8, 9, 10]))
    assert torch.allclose(s2.weights[:, :, 0], torch.stack([L.weights[:, 3] for L in tr.layers]), atol=1e-5)


def test_generate_cached_too_long_for_learned_positions():
    with pytest.raises(ValueError):
        generate_cached(tiny(), list(range(20)), 10)
