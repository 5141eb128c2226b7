import json
import math
import struct

import pytest
import torch

from lmviz.checkpoint import (DEFAULT_PATH, MAX_BYTES, CheckpointError, load_checkpoint, load_default,
                              save_checkpoint)
from lmviz.limits import MAX_HEADER_BYTES, MAX_PARAMS, MAX_UPLOAD_MB, english, param_count
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


def _split(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def _join(header, body: bytes, raw_header: bytes | None = None) -> bytes:
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + body


def _with_metadata(blob, **changes):
    header, body = _split(blob)
    header["__metadata__"].update(changes)
    return _join(header, body)


def _with_config(blob, **changes):
    header, _ = _split(blob)
    return _with_metadata(blob, config=json.dumps({**json.loads(header["__metadata__"]["config"]), **changes}))


def _with_entry(blob, name, **changes):
    header, body = _split(blob)
    if changes.get("drop"):
        del header[name]
    else:
        header[name] = {**header.get(name, {}), **changes}
    return _join(header, body)


def _with_weight(blob, name, value):
    """A copy of blob whose tensor ``name`` has its first element set to value (same dtype)."""
    header, body = _split(blob)
    e = header[name]
    fmt = {"F32": "<f", "F16": "<e"}[e["dtype"]]
    b = bytearray(body)
    struct.pack_into(fmt, b, e["data_offsets"][0], value)
    return _join(header, bytes(b))


def _bpe_tokenizer(merges):
    return json.dumps({"type": "bpe", "level": "char", "split_words": True, "alphabet": ["a", "b"],
                       "merges": merges})


def _hostile_cases():
    """name -> (bytes, catalogue key it must be refused with). Every case a hostile student
    could upload; kept here so that each one stays refused with its sentence."""
    m, tok = make()
    blob = save_checkpoint(m, tok)
    half = save_checkpoint(m, tok, half=True)
    header, body = _split(blob)
    text = json.dumps(header)
    first, second = "blocks.0.attn.c_q.weight", "blocks.0.attn.c_k.weight"
    return {
        "empty file": (b"", "ckpt.err_too_short"),
        "too short": (b"abc", "ckpt.err_too_short"),
        "plain text, not safetensors": ("hello, this is a text file\n".encode() * 4, "ckpt.err_header_length"),
        "a PNG, not safetensors": (b"\x89PNG\r\n\x1a\n" + bytes(64), "ckpt.err_header_length"),
        "header length 2**63": (struct.pack("<Q", 2**63) + b"{}", "ckpt.err_header_length"),
        "header length past the end": (struct.pack("<Q", 10**9) + b"{}", "ckpt.err_header_length"),
        "header length over the bound": (struct.pack("<Q", 3 * 2**20) + bytes(3 * 2**20), "ckpt.err_header_length"),
        "header not JSON": (struct.pack("<Q", 4) + b"{{{{", "ckpt.err_header_json"),
        "header not UTF-8": (struct.pack("<Q", 4) + b"\xff\xfe{{", "ckpt.err_header_json"),
        "non-UTF-8 metadata": (_join(None, body, text.replace('"lmviz-gpt-1"', '"lmviz-\\u0000"').encode()
                                     .replace(b"lmviz-\\u0000", b"lmviz-\xc3\x28")), "ckpt.err_header_json"),
        "JSON nested 100,000 deep": (_join(None, b"", b"[" * 100_000 + b"]" * 100_000), "ckpt.err_header_json"),
        "header is a list": (_join(None, b"", b"[]"), "ckpt.err_header_json"),
        "header with a 10,000-digit number": (_join(None, b"", b'{"x": ' + b"9" * 10_000 + b"}"), "ckpt.err_header_json"),
        "no metadata": (_join({k: v for k, v in header.items() if k != "__metadata__"}, body), "ckpt.err_format"),
        "other format": (_with_metadata(blob, format="other"), "ckpt.err_format"),
        "meta not JSON": (_with_metadata(blob, meta="{oops"), "ckpt.err_metadata"),
        "meta not an object": (_with_metadata(blob, meta="[1, 2]"), "ckpt.err_metadata"),
        # the hostile probe's /cost upload: [0] * 3,000,000 * block_size took the server to 3.5 GB
        "steps a list, batch 3,000,000": (_with_metadata(blob, meta='{"steps": [0], "batch_size": 3000000}'),
                                          "ckpt.err_meta_field"),
        "batch_size 3,000,000": (_with_metadata(blob, meta='{"steps": 1, "batch_size": 3000000}'), "ckpt.err_meta_field"),
        "tokens_seen 10**300": (_with_metadata(blob, meta='{"tokens_seen": 1' + "0" * 300 + '}'), "ckpt.err_meta_field"),
        "tokens_seen a string": (_with_metadata(blob, meta='{"tokens_seen": "many"}'), "ckpt.err_meta_field"),
        "tokens_seen 1e308 (a float)": (_with_metadata(blob, meta='{"tokens_seen": 1e308}'), "ckpt.err_meta_field"),
        "steps true": (_with_metadata(blob, meta='{"steps": true}'), "ckpt.err_meta_field"),
        "negative steps": (_with_metadata(blob, meta='{"steps": -5}'), "ckpt.err_meta_field"),
        "a label of 100,000 characters": (_with_metadata(blob, meta=json.dumps({"label": "x" * 100_000})),
                                          "ckpt.err_meta_field"),
        "an infinite loss in the curve": (_with_metadata(blob, meta='{"losses": [1.0, Infinity]}'), "ckpt.err_meta_field"),
        "a language record without its numbers": (
            _with_metadata(blob, meta='{"languages": {"en": {"corpus": "english"}}}'), "ckpt.err_meta_field"),
        "a held-out loss that is a string": (_with_metadata(blob, meta=json.dumps({"languages": {"en": {
            "corpus": "english", "heldout_loss": "1", "train_loss": 1, "gap": 0, "unigram_baseline": 3,
            "uniform_baseline": 8}}})), "ckpt.err_meta_field"),
        "trainer settings nested deeply": (_with_metadata(blob, meta=json.dumps({"trainer": {"lr": [[[[1]]]]}})),
                                           "ckpt.err_meta_field"),
        "config not an object": (_with_metadata(blob, config="[1, 2]"), "ckpt.err_metadata"),
        "config missing": (_join({**header, "__metadata__": {k: v for k, v in header["__metadata__"].items()
                                                                if k != "config"}}, body), "ckpt.err_metadata"),
        "unknown config field": (_with_config(blob, zz=1), "ckpt.err_config_field"),
        "Markdown as a config field": (_with_config(blob, **{"[click](https://x.example)": 1}), "ckpt.err_config_field"),
        "config field of the wrong type": (_with_config(blob, n_layer="2"), "ckpt.err_config_field"),
        "boolean as a number": (_with_config(blob, n_layer=True), "ckpt.err_config_field"),
        "config inconsistent": (_with_config(blob, n_kv_head=3), "ckpt.err_config_invalid"),
        "a million layers": (_with_config(blob, n_layer=10**6), "ckpt.err_bound"),
        "width 2**40": (_with_config(blob, d_model=2**40), "ckpt.err_bound"),
        "context 10**9": (_with_config(blob, block_size=10**9), "ckpt.err_bound"),
        "vocabulary 10**9": (_with_config(blob, vocab_size=10**9), "ckpt.err_bound"),
        "MLP 1000x wide": (_with_config(blob, mlp_ratio=1000), "ckpt.err_bound"),
        "every bound at once: too many parameters": (
            _with_config(blob, n_layer=12, d_model=1024, n_head=16, n_kv_head=16, vocab_size=50_000, block_size=1024),
            "ckpt.err_params"),
        "tokenizer of an unknown type": (_with_metadata(blob, tokenizer='{"type": "pickle"}'), "ckpt.err_tokenizer"),
        "tokenizer not an object": (_with_metadata(blob, tokenizer='"abc"'), "ckpt.err_tokenizer"),
        "tokenizer of another size": (_with_metadata(blob, tokenizer='{"type": "char", "chars": ["a", "b"]}'),
                                      "ckpt.err_tokenizer_size"),
        "tokenizer with 60,000 entries": (_with_metadata(blob, tokenizer=json.dumps({"type": "char", "chars": ["a"] * 60_000})),
                                             "ckpt.err_tokenizer_size"),
        "BPE merges doubling a token 64 times": (
            _with_metadata(blob, tokenizer=_bpe_tokenizer([[1, 1]] + [[3 + i, 3 + i] for i in range(63)])),
            "ckpt.err_token_long"),
        "BPE merge of a later id": (_with_metadata(blob, tokenizer=_bpe_tokenizer([[1, 7]])), "ckpt.err_tokenizer"),
        "huge declared shape": (_with_entry(blob, first, shape=[10**12, 10**12]), "ckpt.err_tensor_shape"),
        "transposed shape": (_with_entry(blob, "wte.weight", shape=header["wte.weight"]["shape"][::-1]),
                             "ckpt.err_tensor_shape"),
        "negative shape": (_with_entry(blob, first, shape=[-1, 32]), "ckpt.err_tensor_entry"),
        "entry not an object": (_join({**header, first: [1, 2, 3]}, body), "ckpt.err_tensor_entry"),
        "wrong dtype (int64)": (_with_entry(blob, first, dtype="I64"), "ckpt.err_tensor_dtype"),
        "wrong dtype (float64)": (_with_entry(blob, first, dtype="F64"), "ckpt.err_tensor_dtype"),
        "wrong dtype (bf16)": (_with_entry(half, first, dtype="BF16"), "ckpt.err_tensor_dtype"),
        "missing tensor": (_with_entry(blob, first, drop=True), "ckpt.err_tensor_missing"),
        "20,000 fake tensors in a 1.9 MB header": (
            _join({**header, **{f"t{i}": {"dtype": "F32", "shape": [10**6, 10**6], "data_offsets": [0, 4 * 10**12]}
                                for i in range(20_000)}}, body), "ckpt.err_tensor_extra"),
        "extra tensor": (_with_entry(blob, "evil.weight", dtype="F32", shape=[0], data_offsets=[0, 0]),
                         "ckpt.err_tensor_extra"),
        "offsets claiming 1 TB": (_with_entry(blob, first, data_offsets=[0, 10**12]), "ckpt.err_tensor_offsets"),
        "two tensors on the same bytes": (_with_entry(blob, second, data_offsets=header[first]["data_offsets"]),
                                          "ckpt.err_tensor_offsets"),
        "truncated by 100 bytes": (blob[:-100], "ckpt.err_truncated"),
        "truncated inside the header": (blob[:200], "ckpt.err_header_length"),
        "padded with junk": (blob + bytes(16), "ckpt.err_truncated"),
        "a NaN weight": (_with_weight(blob, first, float("nan")), "ckpt.err_nonfinite"),
        "an infinite weight": (_with_weight(blob, "wte.weight", float("inf")), "ckpt.err_nonfinite"),
        "a -inf fp16 weight": (_with_weight(half, "ln_f.weight", float("-inf")), "ckpt.err_nonfinite"),
    }


HOSTILE = _hostile_cases()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_file_is_refused_with_one_clear_sentence(name):
    data, key = HOSTILE[name]
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(data)
    err = info.value
    assert err.key == key, (name, err.key, str(err))
    sentence = str(err)
    assert sentence == english(key, err.params)                 # the catalogue's sentence, filled in
    assert not sentence.startswith("ckpt.") and "{" not in sentence and "Traceback" not in sentence
    assert "[" not in sentence and "](" not in sentence and "<" not in sentence   # safe as Markdown
    assert isinstance(err, ValueError)                           # callers that catch ValueError still do


def test_every_refusal_has_both_languages():
    from ui.i18n import catalogue

    keys = {key for _, key in HOSTILE.values()} | {"ckpt.err_too_large", "ckpt.err_missing", "ckpt.err_source"}
    for lang in ("en", "zh"):
        assert keys <= set(catalogue(lang)), lang


def test_size_and_source_checks_come_before_reading(tmp_path):
    big = tmp_path / "big.safetensors"
    with open(big, "wb") as f:                                   # sparse: no disk, no memory
        f.truncate(MAX_BYTES + 1)
    for src, key in ((big, "ckpt.err_too_large"), (tmp_path / "missing.safetensors", "ckpt.err_missing"),
                     (12, "ckpt.err_source"), (memoryview(bytes(MAX_BYTES + 1)), "ckpt.err_too_large")):
        with pytest.raises(CheckpointError) as info:
            load_checkpoint(src)
        assert info.value.key == key


def test_names_from_the_file_are_never_echoed_unless_plain():
    data, _ = HOSTILE["Markdown as a config field"]
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(data)
    assert info.value.params["name"] == "(unreadable name)"


def test_largest_preset_round_trips_and_fits_the_upload_limit():
    from lmviz.bpe import TrainedBPE
    from lmviz.train import PRESETS

    text = "the quick brown fox jumps over the lazy dog, 我们喜欢学习数学。" * 20
    tok = TrainedBPE.train(text, 50)
    cfg = PRESETS["bigger"].model_config(tok.vocab_size)
    torch.manual_seed(0)
    m = GPT(cfg).eval()
    blob = save_checkpoint(m, tok, {"steps": 1})
    assert len(blob) < MAX_BYTES
    m2, tok2, _ = load_checkpoint(blob)
    assert m2.cfg == cfg and tok2.to_dict() == tok.to_dict()
    assert m2.lm_head.weight is m2.wte.weight
    assert sum(p.numel() for p in m2.parameters()) == param_count(cfg)
    idx = torch.tensor([tok.encode("the fox 我们")])
    with torch.no_grad():
        assert torch.equal(m2(idx)[0], m(idx)[0])


def test_the_largest_trainable_model_can_always_be_uploaded_again():
    # MAX_PARAMS fp32 weights plus the largest header fit the one upload limit
    assert 8 + MAX_HEADER_BYTES + 4 * MAX_PARAMS <= MAX_BYTES == MAX_UPLOAD_MB * 2**20


def test_upload_limit_is_the_server_limit():
    import tomllib
    from pathlib import Path

    conf = tomllib.loads((Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text())
    assert conf["server"]["maxUploadSize"] == MAX_UPLOAD_MB


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


# -- a training replay travels with the checkpoint ----------------------------------------------------

def _replay(model, tok, steps=(0, 1, 2, 4)):
    """A real replay of ``model`` (weights nudged between snapshots, so each one differs)."""
    from lmviz.replay import Probe, Recorder

    rec = Recorder(Probe("hello abc, 世界 hello", "he", top_k=4), max_steps=steps[-1], per_octave=1)
    rec.start(model, tok)
    with torch.no_grad():
        for s in steps[1:]:
            model.wte.weight.add_(0.01 * torch.randn(model.wte.weight.shape, generator=torch.Generator().manual_seed(s)))
            rec.after_step(model, tok, s, 3.0 - 0.1 * s)
    return rec.replay()


def _replay_blob():
    m, tok = make()
    return m, tok, _replay(m, tok), None


def test_replay_round_trip_is_exact_and_typed():
    from lmviz.checkpoint import load_checkpoint_with_replay
    from lmviz.replay import PREFIX
    from lmviz import checkpoint

    assert checkpoint._REPLAY == PREFIX
    m, tok, rp, _ = _replay_blob()
    for half in (False, True):
        blob = save_checkpoint(m, tok, {"steps": 4}, half=half, replay=rp)
        header, _ = _split(blob)
        assert header["replay.step"]["dtype"] == "I64" and header["replay.loss"]["dtype"] == "F64"
        assert header["replay.attention"]["dtype"] == "F32"          # never halved with the weights
        m2, tok2, meta, back = load_checkpoint_with_replay(blob)
        assert meta == {"steps": 4} and back.probe == rp.probe and len(back) == len(rp) == 4
        for a, b in zip(rp.snapshots, back.snapshots):
            assert (a.step, a.loss, a.layer, a.probe_ids, a.prompt_ids, a.entropy) == \
                (b.step, b.loss, b.layer, b.probe_ids, b.prompt_ids, b.entropy)
            for f in ("attention", "prev_token", "emb_xy", "emb_var", "top_ids", "top_probs"):
                assert getattr(a, f).dtype == getattr(b, f).dtype and torch.equal(getattr(a, f), getattr(b, f))
        assert load_checkpoint(blob)[2] == {"steps": 4}                 # the 3-tuple API is unchanged
    # no replay: None, and an old checkpoint loads as before
    assert load_checkpoint_with_replay(save_checkpoint(m, tok))[3] is None
    assert load_checkpoint_with_replay(DEFAULT_PATH)[3] is None
    assert rp.upto(2).snapshots == rp.snapshots[:3]


def _with_replay_value(blob, name, fmt, value, index=0):
    header, body = _split(blob)
    b = bytearray(body)
    struct.pack_into(fmt, b, header[name]["data_offsets"][0] + index * struct.calcsize(fmt), value)
    return _join(header, bytes(b))


def _hostile_replays():
    """name -> (bytes, catalogue key): replays a hostile student could put in a checkpoint."""
    m, tok, rp, _ = _replay_blob()
    blob = save_checkpoint(m, tok, replay=rp)
    header, body = _split(blob)
    rmeta = json.loads(header["__metadata__"]["replay"])
    other = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=3, n_head=4, n_kv_head=4, d_model=32))
    big = dict(header["replay.attention"])
    big["shape"] = [10**6, 4, 16, 16]
    no_meta = {k: v for k, v in header["__metadata__"].items() if k != "replay"}
    one = save_checkpoint(m, tok, replay=rp.upto(rp.snapshots[0].step))      # a single snapshot
    return {
        "an unknown replay tensor": (_with_entry(blob, "replay.evil", dtype="F32", shape=[0], data_offsets=[0, 0]),
                                     "ckpt.err_replay"),
        "replay tensors without their metadata": (_join({**header, "__metadata__": no_meta}, body),
                                                  "ckpt.err_replay"),
        "replay metadata without its tensors": (_with_metadata(save_checkpoint(m, tok), replay=header["__metadata__"]["replay"]),
                                                "ckpt.err_replay"),
        "a missing replay tensor": (_with_entry(blob, "replay.entropy", drop=True), "ckpt.err_replay"),
        "attention stored as F16": (_with_entry(blob, "replay.attention", dtype="F16"), "ckpt.err_replay"),
        "steps stored as F64": (_with_entry(blob, "replay.step", dtype="F64"), "ckpt.err_replay"),
        "a million snapshots announced": (_join({**header, "replay.attention": big}, body), "ckpt.err_replay_size"),
        "NaN attention": (_with_replay_value(blob, "replay.attention", "<f", float("nan")), "ckpt.err_replay"),
        "attention weight 2": (_with_replay_value(blob, "replay.attention", "<f", 2.0), "ckpt.err_replay"),
        "infinite entropy": (_with_replay_value(blob, "replay.entropy", "<d", float("inf")), "ckpt.err_replay"),
        "a token id past the vocabulary": (_with_replay_value(blob, "replay.top_ids", "<q", 10**6), "ckpt.err_replay"),
        "steps out of order": (_with_replay_value(blob, "replay.step", "<q", 99), "ckpt.err_replay"),
        "a count that does not match": (_with_metadata(blob, replay=json.dumps({**rmeta, "count": 3})),
                                        "ckpt.err_replay"),
        "a probe sentence of 5,000 characters": (_with_metadata(blob, replay=json.dumps(
            {**rmeta, "probe": {**rmeta["probe"], "sentence": "a" * 5000}})), "ckpt.err_replay"),
        "replay metadata not JSON": (_with_metadata(blob, replay="{"), "ckpt.err_replay"),
        # the hostile probe: a bool passed the int check and crashed /training
        "layer true": (_with_metadata(blob, replay=json.dumps({**rmeta, "layer": True})), "ckpt.err_replay"),
        "layer false": (_with_metadata(blob, replay=json.dumps({**rmeta, "layer": False})), "ckpt.err_replay"),
        "layer 1.0": (_with_metadata(blob, replay=json.dumps({**rmeta, "layer": 1.0})), "ckpt.err_replay"),
        "count true (one snapshot)": (_with_metadata(one, replay=json.dumps({**json.loads(
            _split(one)[0]["__metadata__"]["replay"]), "count": True})), "ckpt.err_replay"),
        # ... and metadata nested 100,000 deep raised RecursionError (its English text on the page)
        "replay metadata nested 100,000 deep": (_with_metadata(blob, replay="[" * 100_000 + "]" * 100_000),
                                                "ckpt.err_replay"),
        "a probe nested 100,000 deep": (_with_metadata(blob, replay=json.dumps({**rmeta, "probe": "@"}).replace(
            '"@"', "[" * 100_000 + "]" * 100_000)), "ckpt.err_replay"),
        "a replay dtype that is a list": (_with_entry(blob, "replay.attention", dtype=["F32"]), "ckpt.err_replay"),
        "a replay of another model": (save_checkpoint(m, tok, replay=_replay(other, tok)), "ckpt.err_replay_model"),
    }


# -- ... with the run's induction record, when it probed for one (issue 57) ---------------------------

def _induction_evals(model, tok, steps=(0, 50, 100), maps=(True, False, True)):
    """A run's probed evaluations of ``model`` (weights nudged between them, so each differs)."""
    from lmviz.induction import probe, repeated_tokens
    from lmviz.train import EvalMetrics

    ids = repeated_tokens(tok.vocab_size, 4, 0)
    out = []
    with torch.no_grad():
        for i, (s, keep) in enumerate(zip(steps, maps)):
            model.wte.weight.add_(0.05 * torch.randn(model.wte.weight.shape, generator=torch.Generator().manual_seed(i)))
            out.append(EvalMetrics(s, 3.0 - 0.01 * i, 3.1 - 0.01 * i, math.exp(3.1 - 0.01 * i),
                                   probe(model, ids, 4, keep_maps=keep)))
    return out


def _same_evals(a, b):
    import numpy as np

    assert [(e.step, e.train_loss, e.val_loss) for e in a] == [(e.step, e.train_loss, e.val_loss) for e in b]
    for x, y in zip(a, b):
        p, q = x.induction, y.induction
        assert (p.half, p.ids, p.prefix, p.previous, p.first_loss, p.second_loss) == \
            (q.half, q.ids, q.prefix, q.previous, q.first_loss, q.second_loss)
        assert (p.maps is None) == (q.maps is None)
        assert p.maps is None or (q.maps.dtype == np.uint8 and np.array_equal(p.maps, q.maps))


def test_the_induction_record_round_trips_exactly_with_or_without_snapshots():
    from lmviz.checkpoint import load_checkpoint_with_replay
    from lmviz.induction import PREFIX
    from lmviz.replay import Replay

    m, tok, rp, _ = _replay_blob()
    evals = _induction_evals(m, tok)
    plain = [type(evals[0])(7, 2.0, 2.0, 7.4)]                   # an evaluation with no probe: not kept
    for replay in (Replay(rp.snapshots, rp.probe).upto(10**6, evals + plain), Replay(()).upto(10**6, evals)):
        blob = save_checkpoint(m, tok, {"steps": 100}, half=True, replay=replay)
        header, _ = _split(blob)
        assert header[PREFIX + "maps"]["dtype"] == "U8" and header[PREFIX + "maps"]["shape"] == [2, 2, 4, 8, 8]
        assert header[PREFIX + "prefix"]["dtype"] == "F64"            # never halved with the weights
        back = load_checkpoint_with_replay(blob)[3]
        assert len(back.snapshots) == len(replay.snapshots)
        _same_evals(evals, back.evals)
    assert [e.step for e in Replay((), None, tuple(evals)).upto(50).evals] == [0, 50]
    # a run that kept no maps at all still carries its scores
    none = _induction_evals(m, tok, maps=(False, False, False))
    back = load_checkpoint_with_replay(save_checkpoint(m, tok, replay=Replay((), None, tuple(none))))[3]
    _same_evals(none, back.evals)
    # uint8 is read for the maps alone: weights stored as U8 are refused as before
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(_with_entry(save_checkpoint(m, tok), "wte.weight", dtype="U8"))
    assert err.value.key == "ckpt.err_tensor_dtype"


def _hostile_inductions():
    """name -> (bytes, catalogue key): induction records a hostile student could put in a checkpoint."""
    from lmviz.replay import Replay

    m, tok = make()
    blob = save_checkpoint(m, tok, replay=Replay((), None, tuple(_induction_evals(m, tok))))
    header, body = _split(blob)
    imeta = json.loads(header["__metadata__"]["induction"])
    other = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=3, n_head=4, n_kv_head=4, d_model=32))
    b = header["induction.step"]["data_offsets"][0]
    many = dict(header["induction.step"], shape=[10**5], data_offsets=[b, b + 8 * 10**5])
    return {
        "an unknown induction tensor": (_with_entry(blob, "induction.evil", dtype="U8", shape=[0],
                                                    data_offsets=[0, 0]), "ckpt.err_replay"),
        "a missing induction tensor": (_with_entry(blob, "induction.map_at", drop=True), "ckpt.err_replay"),
        "induction tensors without their metadata": (_join({**header, "__metadata__": {
            k: v for k, v in header["__metadata__"].items() if k != "induction"}}, body), "ckpt.err_replay"),
        "maps stored as F32": (_with_entry(blob, "induction.maps", dtype="F32"), "ckpt.err_replay"),
        "100,000 evaluations announced": (_join({**header, "induction.step": many}, body), "ckpt.err_replay_count"),
        "a prefix score of 2": (_with_replay_value(blob, "induction.prefix", "<d", 2.0), "ckpt.err_replay"),
        "a NaN loss": (_with_replay_value(blob, "induction.first", "<d", float("nan")), "ckpt.err_replay"),
        "a negative loss": (_with_replay_value(blob, "induction.train_loss", "<d", -1.0), "ckpt.err_replay"),
        "a probe id past the vocabulary": (_with_replay_value(blob, "induction.ids", "<q", 10**6), "ckpt.err_replay"),
        "steps out of order": (_with_replay_value(blob, "induction.step", "<q", 999), "ckpt.err_replay"),
        "maps of an evaluation that is not there": (_with_replay_value(blob, "induction.map_at", "<q", 7, index=1),
                                                   "ckpt.err_replay"),
        "a count that does not match": (_with_metadata(blob, induction=json.dumps({**imeta, "count": 2})),
                                        "ckpt.err_replay"),
        "a half that does not match the probe": (_with_metadata(blob, induction=json.dumps({**imeta, "half": 3})),
                                                 "ckpt.err_replay"),
        "half true": (_with_metadata(blob, induction=json.dumps({**imeta, "half": True})), "ckpt.err_replay"),
        "induction metadata nested 100,000 deep": (_with_metadata(blob, induction="[" * 100_000 + "]" * 100_000),
                                                   "ckpt.err_replay"),
        "a record of another model": (save_checkpoint(m, tok, replay=Replay((), None, tuple(_induction_evals(other, tok)))),
                                      "ckpt.err_replay_model"),
    }


def _hostile_records():
    return {**_hostile_replays(), **{f"induction: {k}": v for k, v in _hostile_inductions().items()}}


@pytest.mark.parametrize("case", sorted(_hostile_records()))
def test_hostile_replay_is_refused_with_a_sentence(case):
    data, key = _hostile_records()[case]
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(data)
    assert err.value.key == key, (case, str(err.value))
    msg = str(err.value)
    assert "refused" in msg and "{" not in msg and "Traceback" not in msg




def test_a_weight_dtype_that_is_a_list_is_refused_not_a_crash():
    m, tok = make()
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(_with_entry(save_checkpoint(m, tok), "wte.weight", dtype=["F32"]))
    assert err.value.key == "ckpt.err_tensor_dtype"


def test_a_tokenizer_type_that_is_a_list_is_refused_not_a_crash():
    m, tok = make()
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(_with_metadata(save_checkpoint(m, tok), tokenizer=json.dumps({"type": ["char"]})))
    assert err.value.key == "ckpt.err_tokenizer"


def test_meta_is_typed_and_bounded_and_unknown_fields_are_dropped():
    """Every field of ``meta`` a page may read comes back typed and bounded; what lmviz does not
    know is dropped, so no page ever reads (or shows) it."""
    m, tok = make()
    meta = {"steps": 120, "batch_size": 12, "tokens_seen": 92_160, "label": "tiny · english", "seed": 1,
            "val_loss": 2, "losses": [3, 2.5], "trainer": {"lr": 0.001, "tokenizer": "char", "n_layer": 2},
            "languages": {"en": {"corpus": "english", "heldout_loss": 1, "train_loss": 1.0, "gap": 0.0,
                                 "unigram_baseline": 3.1, "uniform_baseline": 8.2, "eval_tokens": 10}},
            "note": {"deep": [[[[["x"]]]]]}, "[link](https://x.example)": 1}
    got = load_checkpoint(save_checkpoint(m, tok, meta))[2]
    assert set(got) == set(meta) - {"note", "[link](https://x.example)"}
    assert got["val_loss"] == 2.0 and isinstance(got["val_loss"], float)
    assert got["losses"] == [3.0, 2.5] and all(isinstance(x, float) for x in got["losses"])
    assert got["languages"]["en"]["heldout_loss"] == 1.0 and got["languages"]["en"]["eval_tokens"] == 10

    from lmviz.baselines import language_report

    assert language_report(got, "en").unigram == 3.1
    # what /cost computes from it is a plain product of bounded ints
    assert got["steps"] * got["batch_size"] * 16 == 23_040


def test_the_cost_pages_hostile_upload_costs_nothing():
    """The reproduction of the probe: a 70 kB file whose meta was {"steps": [0], "batch_size":
    3000000} is refused with a sentence, before any page multiplies its fields."""
    import tracemalloc

    m, tok = make()
    data = save_checkpoint(m, tok, {"steps": [0], "batch_size": 3_000_000})
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError) as err:
            load_checkpoint(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.key == "ckpt.err_meta_field" and err.value.params == {"name": "steps"}
    assert peak < 20 * 2**20                       # the file's own size, not 3,000,000 x a list
    from ui.i18n import translate

    assert "steps" in translate("ckpt.err_meta_field", "zh", name="steps")


@pytest.mark.parametrize("case", ["layer true", "replay metadata nested 100,000 deep", "a probe nested 100,000 deep"])
def test_the_probes_replays_are_refused_in_the_readers_language(case):
    """/training shows ``t(err.key, **err.params)``: a catalogue sentence in the page's language,
    never Python's own English message (RecursionError's "maximum recursion depth exceeded")."""
    from ui.i18n import translate

    data, _ = _hostile_replays()[case]
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(data)
    zh = translate(err.value.key, "zh", **err.value.params)
    en = translate(err.value.key, "en", **err.value.params)
    assert zh != en and "recursion" not in (zh + en).lower() and "{" not in zh
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh)


@pytest.mark.parametrize("case,lang", [("layer true", "zh"), ("a probe nested 100,000 deep", "en"),
                                       ("steps a list, batch 3,000,000", "zh")])
def test_training_page_refuses_the_probes_uploads_in_its_language(case, lang):
    """The upload on /training, as the probe sent it: the page shows the refusal in its own
    language and no traceback, and the shipped model stays the live one."""
    from tests.apptest_util import open_page
    from ui.i18n import translate

    data = {**_hostile_replays(), **HOSTILE}[case][0]
    at = open_page("chapters/training.py", lang)
    at.file_uploader(key="train_upload_ckpt").set_value(("probe.safetensors", data, "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(data)
    want = translate("train.err_ckpt", lang, msg=translate(err.value.key, lang, **err.value.params))
    assert want in errors, errors
    assert "lmviz_session_bundle" not in at.session_state or at.session_state["lmviz_session_bundle"] is None
