import doctest
import math

import pytest
import torch
import torch.nn.functional as F

import lmviz.model as M
from lmviz.model import (GPTConfig, causal_mask, layer_norm, rms_norm, rope_cache, rope_rotate,
                         sinusoidal_positions)
from tests.model_util import tiny_gpt

torch.set_num_threads(1)

V = 37


def tiny(**kw):
    return tiny_gpt(V, 16, **kw)


VARIANTS = [dict(pos=p, norm=n, n_kv_head=h) for p in ("learned", "sinusoidal", "rope")
            for n in ("layernorm", "rmsnorm") for h in (4, 2, 1)]


def randomize_norms(model):
    # the init sets norm weights to 1 and biases to 0; perturb them so the tests see them used
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, M.Norm):
                m.weight.add_(0.3 * torch.randn(m.weight.shape, generator=g))
                if m.bias is not None:
                    m.bias.add_(0.3 * torch.randn(m.bias.shape, generator=g))
    return model


def test_doctests():
    assert doctest.testmod(M).failed == 0


def test_config_validate():
    assert GPTConfig(vocab_size=10).validate() == []
    assert GPTConfig(vocab_size=10).head_dim == 32
    with pytest.raises(ValueError, match="must divide n_head"):
        GPTConfig(vocab_size=10, n_head=4, n_kv_head=3)
    with pytest.raises(ValueError, match="pos must be one of"):
        GPTConfig(vocab_size=10, pos="alibi")
    with pytest.raises(ValueError, match="divisible by n_head"):
        GPTConfig(vocab_size=10, d_model=30, n_head=4)
    with pytest.raises(ValueError, match="vocab_size"):
        GPTConfig(vocab_size=0)
    c = GPTConfig(vocab_size=10, pos="rope", n_kv_head=2)
    assert GPTConfig.from_dict(c.to_dict()) == c


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: f"{kw['pos']}-{kw['norm']}-kv{kw['n_kv_head']}")
def test_trace_matches_forward(kw):
    m = randomize_norms(tiny(**kw))
    idx = torch.randint(0, V, (1, 12), generator=torch.Generator().manual_seed(2))
    logits, _ = m(idx)
    tr = m.forward_trace(idx)
    assert torch.allclose(tr.logits, logits[0], atol=1e-5)
    L = tr.layers[0]
    H, T, dh = 4, 12, 8
    assert L.q.shape == L.k.shape == L.v.shape == L.head_out.shape == (H, T, dh)
    assert L.weights.shape == L.scores.shape == (H, T, T)
    assert L.n_kv_head == kw["n_kv_head"]
    assert torch.allclose(L.scaled, L.scores / math.sqrt(dh))
    assert (tr.pos_emb is None) == (kw["pos"] == "rope")
    assert torch.equal(tr.x0, L.resid_in)
    assert torch.allclose(tr.layers[1].resid_in, L.resid_out)
    assert torch.allclose(L.resid_mid, L.resid_in + L.attn_out)
    assert torch.allclose(L.resid_out, L.resid_mid + L.mlp_out)
    # GQA: query heads in a group share the same repeated key head
    rep = 4 // kw["n_kv_head"]
    assert torch.equal(L.k[0], L.k[rep - 1])


def test_attention_weights_rows_sum_to_one_and_zero_future():
    tr = tiny().forward_trace(torch.arange(10))
    w = tr.layers[1].weights                                   # [H,T,T]
    assert torch.allclose(w.sum(-1), torch.ones(4, 10), atol=1e-6)
    upper = ~causal_mask(10)
    assert torch.all(w[:, upper] == 0.0)                      # exactly zero, not just small
    assert torch.all(torch.isinf(tr.layers[1].masked[:, upper]))
    assert torch.all(w[:, ~upper] > 0)


@pytest.mark.parametrize("pos", ["learned", "sinusoidal", "rope"])
def test_causality(pos):
    m = tiny(pos=pos, n_kv_head=2)
    a = torch.randint(0, V, (1, 12), generator=torch.Generator().manual_seed(3))
    b = a.clone()
    t = 6
    b[0, t + 1] = (a[0, t + 1] + 1) % V                       # change token t+1
    la, _ = m(a)
    lb, _ = m(b)
    assert torch.allclose(la[0, : t + 1], lb[0, : t + 1], atol=1e-6)
    assert not torch.allclose(la[0, t + 1], lb[0, t + 1], atol=1e-4)


def test_rope_score_depends_only_on_offset():
    g = torch.Generator().manual_seed(4)
    q, k = torch.randn(16, generator=g), torch.randn(16, generator=g)

    def score(pq, pk):
        qr = rope_rotate(q[None], torch.tensor([pq]))[0]
        kr = rope_rotate(k[None], torch.tensor([pk]))[0]
        return float(qr @ kr)

    assert score(3, 1) == pytest.approx(score(10, 8), abs=1e-5)
    assert score(3, 1) != pytest.approx(score(3, 2), abs=1e-3)
    # rotation keeps lengths
    x = torch.randn(5, 16, generator=g)
    assert torch.allclose(rope_rotate(x, 7).norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    # rope_cache gives the angles rope_rotate uses
    cos, sin = rope_cache(5, 16, offset=7)
    x1, x2 = x[:, :8], x[:, 8:]
    assert torch.allclose(rope_rotate(x, 7), torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1))


def test_norm_helpers_match_torch():
    g = torch.Generator().manual_seed(5)
    h = torch.randn(3, 8, generator=g)
    gamma, beta = torch.randn(8, generator=g), torch.randn(8, generator=g)
    ref = F.layer_norm(h, (8,), gamma, beta, 1e-5)
    assert torch.allclose(layer_norm(h, gamma, beta, 1e-5), ref, atol=1e-6)
    rms = torch.nn.RMSNorm(8, eps=1e-5)
    with torch.no_grad():
        rms.weight.copy_(gamma)
    assert torch.allclose(rms_norm(h, gamma, 1e-5), rms(h), atol=1e-6)
    # RMSNorm keeps the mean, LayerNorm removes it
    assert abs(float(layer_norm(h, torch.ones(8), torch.zeros(8)).mean())) < 1e-6


def test_sinusoidal_positions():
    P = sinusoidal_positions(10, 16)
    assert P.shape == (10, 16)
    assert torch.allclose(P[3, 0], torch.tensor(math.sin(3.0)))
    assert torch.allclose(P[3, 1], torch.tensor(math.cos(3.0)))
    assert torch.allclose(sinusoidal_positions(4, 16, offset=6), P[6:10])


def test_untrained_loss_is_ln_vocab():
    m = tiny()
    g = torch.Generator().manual_seed(6)
    idx = torch.randint(0, V, (4, 16), generator=g)
    targets = torch.randint(0, V, (4, 16), generator=g)  # not idx: tied weights favour the input token
    with torch.no_grad():
        _, loss = m(idx, targets)
    assert abs(float(loss) - math.log(V)) < 0.3


@pytest.mark.parametrize("kw", [dict(), dict(pos="rope", n_kv_head=1, norm="rmsnorm")])
def test_sdpa_matches_manual_attention(kw):
    m = tiny(**kw)
    x = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(7))
    a = m.blocks[0].attn
    pos = torch.arange(9)
    fast = a(x, pos)
    q, k, v = a.qkv(x, pos)
    rep = 4 // m.cfg.n_kv_head
    k, v = M.repeat_kv(k, rep), M.repeat_kv(v, rep)
    att = (q @ k.transpose(-1, -2)) / math.sqrt(8)
    att = att.masked_fill(~causal_mask(9), float("-inf")).softmax(-1)
    slow = a.merge(att @ v)
    assert torch.allclose(fast, slow, atol=1e-6)


def test_weight_tying_and_params():
    m = tiny()
    assert m.lm_head.weight is m.wte.weight
    assert m.num_params() == sum(p.numel() for p in m.parameters())
    assert m.num_params(non_embedding=True) == m.num_params() - V * 32 - 16 * 32


def test_learned_positions_beyond_block_size_is_a_clear_error():
    with pytest.raises(ValueError, match="block_size"):
        tiny()(torch.zeros(1, 17, dtype=torch.long))


def test_training_step_reduces_loss():
    m = tiny().train()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    x = torch.arange(16).remainder(5)[None]                    # a repeating pattern
    losses = []
    for _ in range(15):
        _, loss = m(x[:, :-1], x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 1.0


def test_trace_accepts_1d_or_single_batch_and_rejects_batches():
    m = tiny()
    a, b = m.forward_trace(torch.tensor([1, 2, 3])), m.forward_trace(torch.tensor([[1, 2, 3]]))
    assert torch.equal(a.logits, b.logits)
    assert a.logits.shape == (3, V) and a.hidden.shape == (3, 32)
    assert torch.allclose(a.probs.sum(-1), torch.ones(3))
    one = m.forward_trace(torch.tensor([5]))
    assert torch.equal(one.layers[0].weights, torch.ones(4, 1, 1))    # a lone token attends to itself
    with pytest.raises(ValueError, match="one sequence"):
        m.forward_trace(torch.zeros(2, 3, dtype=torch.long))


def test_trace_restores_training_mode():
    m = tiny(dropout=0.1).train()
    tr = m.forward_trace(torch.arange(8))
    assert m.training
    assert torch.allclose(tr.logits, m.eval()(torch.arange(8)[None])[0][0], atol=1e-5)  # no dropout in trace
