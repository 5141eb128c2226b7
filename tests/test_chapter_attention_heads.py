"""Multi-head concatenation and output projection (lmviz.chapters.attention_heads) on real models."""
import numpy as np
import pytest
import torch

from lmviz.checkpoint import load_default
from lmviz.chapters.attention_heads import multi_head, sublayer_output
from lmviz.model import GPT, GPTConfig


def _small(**kw):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=4, d_model=32, **kw)).eval()


@pytest.mark.parametrize("kw", [{}, {"n_kv_head": 2, "pos": "rope"}, {"norm": "rmsnorm", "pos": "sinusoidal"}])
def test_concat_projection_equals_sublayer_random_small(kw):
    model = _small(**kw)
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    for layer in range(model.cfg.n_layer):
        mh = multi_head(model, ids, layer)
        ref = sublayer_output(model, ids, layer)
        assert torch.allclose(mh.projected, ref, atol=1e-5, rtol=1e-4)


def test_shapes_and_head_columns_random_small():
    model = _small()
    mh = multi_head(model, [1, 2, 3, 4, 5], layer=1)
    T, H, dh, d = 5, 4, 8, 32
    assert [(s.name, s.shape) for s in mh.shapes] == [
        ("input", (T, d)), ("heads", (H, T, dh)), ("concat", (T, d)), ("projected", (T, d))]
    assert mh.weights.shape == (H, T, T) and mh.per_head.shape == (H, T, d)
    # head h occupies columns [h*dh, (h+1)*dh) of the concatenation, unchanged
    for h in range(H):
        a, b = mh.head_columns(h)
        assert torch.equal(mh.concat[:, a:b], mh.head_out[h])
    # the projection is a sum of per-head contributions through slices of W_O
    assert torch.allclose(mh.per_head.sum(0), mh.projected, atol=1e-6)
    # causal: no head looks ahead
    assert float(mh.weights.triu(1).abs().max()) == 0.0


def test_concat_projection_equals_sublayer_default_model():
    model, tok, _ = load_default()
    ids = tok.encode("The cat sat on the mat. 我们")
    for layer in range(model.cfg.n_layer):
        mh = multi_head(model, ids, layer)
        ref = sublayer_output(model, ids, layer)
        assert mh.shapes[1].shape == (model.cfg.n_head, len(ids), model.cfg.head_dim)
        assert torch.allclose(mh.projected, ref, atol=1e-5, rtol=1e-4)


def test_bad_input():
    model = _small()
    with pytest.raises(ValueError):
        multi_head(model, [], 0)
    with pytest.raises(ValueError):
        multi_head(model, [1, 2], 5)
    with pytest.raises(ValueError):
        multi_head(model, list(range(11)) * 2, 0)  # 22 tokens > block_size 16


def test_doctests():
    import doctest

    from lmviz.chapters import attention_heads as heads
    assert doctest.testmod(heads).failed == 0


def test_catalogue_strings_format_with_computed_values():
    from ui.i18n import translate

    model = _small()
    mh = multi_head(model, [1, 2, 3, 4], 0)
    err = float((mh.projected - sublayer_output(model, [1, 2, 3, 4], 0)).abs().max())
    for lang in ("en", "zh"):
        out = translate("att.mh_caption", lang, layer=mh.layer, t=len(mh.ids), h=mh.n_head, dh=mh.d_head,
                        d=mh.d_model, dh_last=mh.d_head - 1)
        assert f"[{len(mh.ids)} × {mh.d_head}]" in out
        translate("att.mh_check", lang, err=err)
        translate("att.mh_mix", lang, h=mh.n_head, dh=mh.d_head)
        for step in mh.shapes:
            translate("att.mh_shape", lang, name=translate(f"att.mh_step_{step.name}", lang),
                      shape=" × ".join(map(str, step.shape)))


def test_sessions_sharing_one_model_get_their_own_sublayer_output():
    """Pages of several sessions call it on the one shared default model at once (a forward hook
    once caught another thread's sequence: a size-mismatch error under bench/load.py)."""
    import threading

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, n_layer=2, n_head=2, n_kv_head=2, d_model=16, block_size=32)).eval()
    seqs = [list(range(1, n + 1)) for n in (3, 7, 11, 12)]
    want = [sublayer_output(model, ids, 1) for ids in seqs]
    bad = []

    def work(i):
        for _ in range(40):
            got = sublayer_output(model, seqs[i], 1)
            model(torch.tensor([seqs[-1 - i]]))               # someone else's forward meanwhile
            if got.shape != want[i].shape or not torch.allclose(got, want[i]):
                bad.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(seqs))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert bad == []


def test_a_removed_head_matches_a_model_whose_w_o_ignores_it():
    """Removing head h of layer l (its output zeroed before W_O) is the same as a copy of the
    model whose W_O columns for that head are zero: a hand-made reference."""
    import copy

    from lmviz.chapters.attention_heads import forward_without_head, head_effects
    from lmviz.model import GPT, GPTConfig

    torch.manual_seed(3)
    m = GPT(GPTConfig(vocab_size=11, block_size=12, n_layer=3, n_head=4, n_kv_head=2, d_model=16,
                      pos="rope", norm="rmsnorm")).eval()
    idx = torch.randint(0, 11, (2, 9))
    dh = m.cfg.head_dim
    for layer, head in ((0, 0), (1, 3), (2, 1)):
        ref = copy.deepcopy(m)
        with torch.no_grad():
            ref.blocks[layer].attn.c_proj.weight[:, head * dh:(head + 1) * dh] = 0
            want, _ = ref(idx)
        assert torch.allclose(forward_without_head(m, idx, layer, head), want, atol=1e-5)
        assert not torch.allclose(m(idx)[0], want, atol=1e-3)            # the head did something
    fx = head_effects(m, idx[0].tolist())
    assert len(fx) == 12 and all(e.base_loss == fx[0].base_loss for e in fx)
    ref = copy.deepcopy(m)
    with torch.no_grad():
        ref.blocks[1].attn.c_proj.weight[:, 2 * dh:3 * dh] = 0
        logits, _ = ref(idx[:1])
    loss = torch.nn.functional.cross_entropy(logits[0, :-1], idx[0, 1:])
    e = next(e for e in fx if (e.layer, e.head) == (1, 2))
    # the loss of predicting each next token of the text, and the guess after the whole text
    # (issue 56: it was the guess of the text's own last token)
    assert abs(e.loss - float(loss)) < 1e-5 and e.top == int(logits[0, -1].argmax())
    # every head of the batched map equals the head removed on its own (one pass per head)
    for e in fx:
        with torch.no_grad():
            lg = forward_without_head(m, idx[:1], e.layer, e.head)[0]
        p = torch.softmax(lg[-1], -1)
        assert abs(e.loss - float(torch.nn.functional.cross_entropy(lg[:-1], idx[0, 1:]))) < 1e-5
        assert e.top == int(p.argmax()) and abs(e.p_base_top - float(p[e.base_top])) < 1e-6


def test_the_room_covers_every_head_and_the_map_shows_only_reported_ones():
    from lmviz.chapters.attention_heads import HeadEffect, activity_id, head_map, heads_each

    assert [heads_each(16, n) for n in (1, 2, 3, 8, 16, 17, 300)] == [16, 8, 6, 2, 1, 1, 1]
    assert heads_each(100, 1) == 16                     # the store's bound per student
    fx = [HeadEffect(l, h, 2.0 + 0.1 * (4 * l + h), 2.0, 0, 0, 0.5, 0.5) for l in range(2) for h in range(4)]
    grid = head_map(fx, 2, 4, {5: 1})
    assert int(np.isfinite(grid).sum()) == 1 and grid[1, 1] == pytest.approx(0.5)
    assert activity_id("m", [1, 2]).startswith("heads.") and len(activity_id("m", [1, 2])) <= 64
