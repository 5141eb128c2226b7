import json
import math
import struct

import pytest
import torch

from lmviz.checkpoint import DEFAULT_PATH, load_checkpoint, load_default, save_checkpoint
from lmviz.model import GPT, GPTConfig
from lmviz.tokenizer import CharTokenizer, toy_tokenizer

torch.set_num_threads(1)


def make(pos="rope", n_kv_head=2, norm="rmsnorm"):
    tok = CharTokenizer("hello 世界, abc")
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=2, n_head=4, n_kv_head=n_kv_head,
                    d_model=32, pos=pos, norm=norm)
    return GPT(cfg).eval(), tok


@pytest.mark.parametrize("kw", [dict(), dict(pos="learned", n_kv_head=4, norm="layernorm")])
def test_round_trip_reproduces_logits_exactly(kw, tmp_path):
    m, tok = make(**kw)
    blob = save_checkpoint(m, tok, {"steps": 7, "corpus": "中文"})
    idx = torch.tensor([tok.encode("hello 世界")])
    for src in (blob, tmp_path / "m.safetensors"):
        if not isinstance(src, bytes):
            src.write_bytes(blob)
        m2, tok2, meta = load_checkpoint(src)
        assert m2.cfg == m.cfg
        assert tok2.to_dict() == tok.to_dict()
        assert meta == {"steps": 7, "corpus": "中文"}
        assert m2.lm_head.weight is m2.wte.weight          # tying survives the round trip
        assert not m2.training
        assert torch.equal(m2(idx)[0], m(idx)[0])


def test_half_precision_is_close_and_smaller():
    m, tok = make()
    full, half = save_checkpoint(m, tok), save_checkpoint(m, tok, half=True)
    assert len(half) < 0.6 * len(full)
    m2, _, _ = load_checkpoint(half)
    idx = torch.tensor([tok.encode("abc")])
    assert torch.allclose(m2(idx)[0], m(idx)[0], atol=1e-2)
    assert m2.wte.weight.dtype == torch.float32


def test_word_tokenizer_checkpoint():
    tok = toy_tokenizer("zh")
    m = GPT(GPTConfig(vocab_size=6, block_size=8, n_layer=1, n_head=2, n_kv_head=2, d_model=8))
    _, tok2, _ = load_checkpoint(save_checkpoint(m, tok))
    assert tok2.decode(tok2.encode("我喜欢数学")) == "我喜欢数学"


def _with_metadata(blob, **changes):
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    header["__metadata__"].update(changes)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + blob[8 + n:]


def test_bad_files_give_clear_value_errors(tmp_path):
    m, tok = make()
    blob = save_checkpoint(m, tok)
    cases = {
        "too short": b"abc",
        "bad header length": struct.pack("<Q", 10**9) + b"{}",
        "not JSON": struct.pack("<Q", 4) + b"\xff\xfe{{",
        "not an lmviz checkpoint": _with_metadata(blob, format="other"),
        "config is invalid": _with_metadata(blob, config=json.dumps({**m.cfg.to_dict(), "n_kv_head": 3})),
        "unknown GPTConfig fields": _with_metadata(blob, config=json.dumps({**m.cfg.to_dict(), "zz": 1})),
        "tokenizer has": _with_metadata(blob, tokenizer=json.dumps({"type": "char", "chars": ["a", "b"]})),
        "shape": _with_metadata(blob, config=json.dumps({**m.cfg.to_dict(), "d_model": 64})),
        "not JSON ": _with_metadata(blob, meta="{oops"),
    }
    for msg, data in cases.items():
        with pytest.raises(ValueError, match=msg.strip()):
            load_checkpoint(data)
    with pytest.raises(ValueError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError):
        load_checkpoint(12)


@pytest.mark.skipif(not DEFAULT_PATH.is_file(), reason="default model not trained yet")
def test_default_model_loads_and_knows_both_languages():
    model, tok, meta = load_default()
    assert load_default()[0] is model                      # cached
    assert not model.training
    assert tok.vocab_size == model.cfg.vocab_size
    ids = tok.encode("The 我喜欢学习")                      # English and Chinese characters are in the vocab
    assert len(ids) == 9
    assert "final_val_loss" in meta
    assert DEFAULT_PATH.stat().st_size < 4_500_000


@pytest.mark.skipif(not DEFAULT_PATH.is_file(), reason="default model not trained yet")
def test_default_model_has_learned_something():
    from lmviz.poetry import load_poetry

    model, tok, meta = load_default()
    # English: one sentence, far below chance. Chinese: five held-out Tang poems (the model trains
    # on poems, not on modern prose; a poem character is far less predictable than a letter, so
    # the bar is the unigram baseline, 1 nat down, not a share of ln V)
    zh_losses = []
    for text in ("The function returns a new list of the items.", *load_poetry().heldout[:5]):
        ids = torch.tensor(tok.encode(text))
        with torch.no_grad():
            tr = model.forward_trace(ids)
        loss = float(torch.nn.functional.cross_entropy(tr.logits[:-1], ids[1:].to(tr.logits.device)))
        if text.isascii():
            assert loss < 0.6 * math.log(tok.vocab_size)   # far below chance
        else:
            zh_losses.append(loss)
        # real attention structure: some head looks at the previous character far more than a
        # uniform spread over the visible prefix would (mean 1/(i+1) over rows i >= 1)
        T = len(ids)
        prev = max(float(torch.stack([L.weights[h, i, i - 1] for i in range(1, T)]).mean())
                   for L in tr.layers for h in range(model.cfg.n_head))
        uniform = sum(1 / (i + 1) for i in range(1, T)) / (T - 1)
        assert prev > 1.8 * uniform          # an untrained model gives about 1.0x
    assert sum(zh_losses) / len(zh_losses) < meta["languages"]["zh"]["unigram_baseline"] - 1.0
