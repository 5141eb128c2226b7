"""Save and load a model + tokenizer as one safetensors file (never pickle).

Layout: the weights are safetensors tensors (the tied lm_head is stored once, as
``wte.weight``); the header's ``__metadata__`` holds three JSON strings: ``config`` (GPTConfig),
``tokenizer`` (its to_dict) and ``meta`` (the training record: steps, label, losses...; each
field typed and bounded by :func:`check_meta` on load, unknown ones dropped), plus
``format = "lmviz-gpt-1"``.

Loading is a checkpoint's border control: every byte of the file is checked **before** anything
the file asks for is allocated, against the bounds of ``lmviz.limits``: the file and header
size, the header's JSON, the model configuration (layers, width, heads, vocabulary, context,
parameter count), the tokenizer (sizes, and the length of every BPE token its merges build), and
the tensors (exactly the names, shapes and dtypes the configuration implies, laid out back to
back to the end of the file). Only then are the weights read (at most ``MAX_PARAMS`` of them)
and checked to be finite; the model is built on the ``meta`` device and takes those tensors
as its parameters, so no second copy is made. A refused file raises :class:`CheckpointError`
(a ``ValueError``) whose ``key``/``params`` name one catalogue sentence and whose ``str()`` is
that sentence in English; names taken from the file are shown only when they are plain
identifiers, so the sentence is safe to show as Markdown.

A training replay (``lmviz.replay``) may travel in the same file: tensors named ``replay.*``,
stored exactly as recorded (int64 steps and ids, float64 loss and entropy, float32 maps; never
cast), and a ``replay`` metadata string. Its tensors pass the same border control: only the
names, dtypes and ranks ``lmviz.replay`` writes, shapes that fit the model (its layers, heads,
context and vocabulary), at most ``MAX_REPLAY_SNAPSHOTS`` snapshots and ``MAX_REPLAY_BYTES``
bytes, laid out back to back with the weights; then finite values in range and consistent
stacks (``snapshots_from_tensors``). The replay of a run that probed for an induction head also
carries that record (``induction.*``, ``lmviz.induction.evals_to_tensors``: its scores fit the
model's layers and heads, its maps are uint8), under the same control. A file whose replay fails
any check is refused as a whole.
:func:`load_checkpoint_with_replay` returns the replay too; :func:`load_checkpoint` checks it
and leaves it out.
"""
from __future__ import annotations

import functools
import json
import math
import re
import struct
from pathlib import Path

import torch

from . import limits
from .model import GPT, GPTConfig, meta_gpt
from .tokenizer import tokenizer_from_dict

FORMAT = "lmviz-gpt-1"
MAX_BYTES = limits.MAX_CHECKPOINT_BYTES   # refuse anything larger (the upload limit)
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "assets" / "models" / "default.safetensors"
_TIED = "lm_head.weight"
_TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "F64": torch.float64, "I64": torch.int64,
                 "U8": torch.uint8}
_REPLAY = "replay."                       # = lmviz.replay.PREFIX (checked in the tests)
MAX_REPLAY_BYTES = 16 * 2**20             # replay tensors in one file (4x what a Recorder keeps)
MAX_REPLAY_SNAPSHOTS = 256                # snapshots in one replay (8x what a Recorder keeps)
MAX_PROBE_CHARS = 1000                    # the replay's probe sentence and prompt, each
_REPLAY_DTYPES = {"F32": 4, "F64": 8, "I64": 8, "U8": 1}
MAX_INDUCTION_EVALS = 4096                # evaluations in one induction record (a 5,000-step run every 50: 101)
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.]{1,80}")
_INT_FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_kv_head", "d_model", "mlp_ratio")


class CheckpointError(limits.SaidError, ValueError):
    """A refused checkpoint. ``key`` is a catalogue key, ``params`` its placeholders (numbers and
    plain names only); ``str(err)`` is the English sentence, safe to show as text or Markdown."""


def _fail(code: str, **params):
    raise CheckpointError(f"ckpt.{code}", **params)


def _name(s) -> str:
    """A name from the file as it may be shown: a plain identifier, or a neutral stand-in."""
    return s if isinstance(s, str) and _SAFE_NAME.fullmatch(s) else "(unreadable name)"


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def save_checkpoint(model: GPT, tokenizer, meta: dict | None = None, half: bool = False, replay=None) -> bytes:
    """The model, its tokenizer and meta as safetensors bytes; half=True stores fp16 weights.
    ``replay`` (an ``lmviz.replay.Replay``, optional) is stored beside them, unchanged: its
    snapshots as ``replay.*``, its induction record (``Replay.evals``) as ``induction.*``."""
    from safetensors.torch import save

    if tokenizer.vocab_size != model.cfg.vocab_size:
        raise ValueError(f"tokenizer has {tokenizer.vocab_size} tokens, model expects {model.cfg.vocab_size}")
    tensors = {}
    for k, v in model.state_dict().items():
        if k == _TIED:
            continue
        v = v.detach().cpu().contiguous()
        tensors[k] = v.half() if half and v.is_floating_point() else v.float()
    metadata = {
        "format": FORMAT,
        "config": json.dumps(model.cfg.to_dict()),
        "tokenizer": json.dumps(tokenizer.to_dict(), ensure_ascii=False),
        "meta": json.dumps(meta or {}, ensure_ascii=False),
    }
    if replay is not None:
        from .induction import evals_to_tensors
        from .replay import snapshots_to_tensors

        for rt, rmeta in (snapshots_to_tensors(replay.snapshots, replay.probe), evals_to_tensors(replay.evals)):
            tensors.update(rt)              # as recorded: int64, float64, float32, uint8 (no cast)
            metadata.update(rmeta)
    return save(tensors, metadata=metadata)


# -----------------------------------------------------------------------------
# the checks, in the order a file is read

def _read_source(src) -> bytes:
    if isinstance(src, (str, Path)):
        p = Path(src)
        if not p.is_file():
            _fail("err_missing")
        size = p.stat().st_size
        if size > MAX_BYTES:
            _fail("err_too_large", mb=round(size / 2**20, 1), limit_mb=limits.MAX_UPLOAD_MB)
        return p.read_bytes()
    if isinstance(src, (bytes, bytearray, memoryview)):
        if len(src) > MAX_BYTES:
            _fail("err_too_large", mb=round(len(src) / 2**20, 1), limit_mb=limits.MAX_UPLOAD_MB)
        return bytes(src)
    _fail("err_source")


def _read_header(data: bytes) -> tuple[dict, int]:
    """(the safetensors JSON header, the offset where the weights start)."""
    if len(data) < 8:
        _fail("err_too_short", size=len(data))
    (n,) = struct.unpack("<Q", data[:8])
    if n > limits.MAX_HEADER_BYTES or n > len(data) - 8:
        _fail("err_header_length", n=n, size=len(data), limit=limits.MAX_HEADER_BYTES)
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _fail("err_header_json")
    if not isinstance(header, dict):
        _fail("err_header_json")
    return header, 8 + n


def _metadata(header: dict) -> tuple[dict, object, object]:
    md = header.get("__metadata__")
    if not isinstance(md, dict) or md.get("format") != FORMAT:
        _fail("err_format")
    parts = []
    for part in ("config", "tokenizer", "meta"):
        raw = md.get(part)
        try:
            if not isinstance(raw, str):
                raise ValueError
            parts.append(json.loads(raw))
        except (ValueError, RecursionError):
            _fail("err_metadata", part=part)
    return tuple(parts)


def _config(d) -> GPTConfig:
    """A GPTConfig within the bounds of lmviz.limits, from the header's JSON (nothing built)."""
    if not isinstance(d, dict):
        _fail("err_metadata", part="config")
    known = set(GPTConfig.__dataclass_fields__)
    for k in sorted(set(d) - known, key=str)[:1]:
        _fail("err_config_field", name=_name(k))
    for k in _INT_FIELDS:
        if k in d and not _is_int(d[k]):
            _fail("err_config_field", name=k)
    for k, hi in (("n_layer", limits.MAX_LAYERS), ("n_head", limits.MAX_HEADS), ("n_kv_head", limits.MAX_HEADS),
                  ("d_model", limits.MAX_WIDTH), ("block_size", limits.MAX_CONTEXT),
                  ("vocab_size", limits.MAX_VOCAB), ("mlp_ratio", limits.MAX_MLP_RATIO)):
        if k in d and d[k] > hi:
            _fail("err_bound", name=k, value=d[k], limit=hi)
    if not isinstance(d.get("pos", ""), str) or not isinstance(d.get("norm", ""), str):
        _fail("err_config_field", name="pos" if not isinstance(d.get("pos", ""), str) else "norm")
    if "vocab_size" not in d:
        _fail("err_config_field", name="vocab_size")
    try:
        cfg = GPTConfig(**d)
    except (TypeError, ValueError):
        _fail("err_config_invalid")
    for key, params in limits.model_problems(cfg):
        raise CheckpointError(key, **params)
    return cfg


# the training record (``meta``): every field a page may read, typed and bounded here, so that no
# page does arithmetic on what a file says (a list as ``steps`` times a huge ``batch_size`` built a
# 3 GB list on /cost). A known field of the wrong type or out of range refuses the file; a field
# lmviz does not know is dropped (no page reads it, so it costs nothing and is never shown).
MAX_META_STR = 200             # characters of a label, a corpus name, a date
MAX_META_LIST = 100_000        # numbers in a list (a recorded loss curve)
MAX_META_KEYS = 64             # entries of a record inside the record (trainer settings, languages)
MAX_STEPS = 10**9              # optimizer steps (a lecture trains thousands)
MAX_BATCH = 10**6              # sequences per step
MAX_TOKENS_SEEN = 10**15       # tokens trained on (10^15: far above any run lmviz can do)


class _Bad(Exception):
    """A meta field that fails its check (turned into the one refusal below)."""


def _m_int(lo: int, hi: int):
    def check(v):
        if not _is_int(v) or not lo <= v <= hi:
            raise _Bad
        return v
    return check


def _m_float(v):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or abs(v) > 1e12:
        raise _Bad
    return float(v)


def _m_opt_float(v):
    return None if v is None else _m_float(v)


def _m_str(n: int = MAX_META_STR):
    def check(v):
        if not isinstance(v, str) or len(v) > n:
            raise _Bad
        return v
    return check


def _m_list(item, n: int = MAX_META_LIST):
    def check(v):
        if not isinstance(v, list) or len(v) > n:
            raise _Bad
        return [item(x) for x in v]
    return check


def _m_map(value, n: int = MAX_META_KEYS):
    """An object of short string keys to checked values."""
    def check(v):
        if not isinstance(v, dict) or len(v) > n:
            raise _Bad
        return {_m_str(80)(k): value(x) for k, x in v.items()}
    return check


def _m_scalar(v):
    if v is None or isinstance(v, bool):
        return v
    if _is_int(v):
        return _m_int(-2**63, 2**63)(v)
    if isinstance(v, float):
        return _m_float(v)
    return _m_str()(v)


# what lmviz.baselines.language_report reads (all required) and what it may carry beside them
_LANG_NUMBERS = ("heldout_loss", "train_loss", "gap", "unigram_baseline", "uniform_baseline")
_LANG_OPTIONAL = {"below_unigram": _m_float, "eval_tokens": _m_int(0, MAX_TOKENS_SEEN),
                  "train_tokens": _m_int(0, MAX_TOKENS_SEEN), "heldout_tokens": _m_int(0, MAX_TOKENS_SEEN)}


def _m_language(v):
    if not isinstance(v, dict) or any(k not in v for k in ("corpus",) + _LANG_NUMBERS):
        raise _Bad
    out = {"corpus": _m_str(80)(v["corpus"]), **{k: _m_float(v[k]) for k in _LANG_NUMBERS}}
    out.update({k: f(v[k]) for k, f in _LANG_OPTIONAL.items() if k in v})
    return out


META_FIELDS = {
    "steps": _m_int(0, MAX_STEPS),
    "batch_size": _m_int(1, MAX_BATCH),
    "tokens_seen": _m_int(0, MAX_TOKENS_SEEN),
    "label": _m_str(),
    "corpus": _m_str(),
    "corpora": _m_list(_m_str(80), 32),
    "seed": _m_int(-2**63, 2**63),
    "trained_at": _m_str(40),
    "what": _m_str(),
    "val_loss": _m_opt_float,
    "final_train_loss": _m_map(_m_float),
    "final_val_loss": _m_map(_m_float),
    "losses": _m_list(_m_float),
    "trainer": _m_map(_m_scalar),
    "languages": _m_map(_m_language, 8),
}


def check_meta(meta) -> dict:
    """The training record as pages may read it: every known field typed and bounded
    (``META_FIELDS``), unknown fields dropped; CheckpointError ``ckpt.err_meta_field`` naming the
    first field that fails (``ckpt.err_metadata`` when the record is not a JSON object).

    >>> check_meta({"steps": 3, "batch_size": 8, "note": "dropped"})
    {'steps': 3, 'batch_size': 8}
    """
    if not isinstance(meta, dict):
        _fail("err_metadata", part="meta")
    out = {}
    for k, check in META_FIELDS.items():
        if k in meta:
            try:
                out[k] = check(meta[k])
            except _Bad:
                _fail("err_meta_field", name=k)
    return out


def _tokenizer(d, vocab_size: int):
    """The tokenizer, after its sizes are checked (a BPE's merges could otherwise build tokens of
    exponential length: merge (a, a), then (aa, aa), ...)."""
    if not isinstance(d, dict):
        _fail("err_tokenizer")
    kind = d.get("type")
    lists = {"char": ("chars",), "word": ("words",), "bpe": ("alphabet", "merges")}.get(kind) \
        if isinstance(kind, str) else None
    if lists is None:
        _fail("err_tokenizer")
    for k in lists:
        v = d.get(k)
        if not isinstance(v, list):
            _fail("err_tokenizer")
        if len(v) > limits.MAX_VOCAB:
            _fail("err_tokenizer_size", n=len(v), expected=vocab_size)
    if kind == "word" and any(not isinstance(w, str) or len(w) > limits.MAX_TOKEN_CHARS for w in d["words"]):
        _fail("err_token_long", limit=limits.MAX_TOKEN_CHARS)
    if kind == "bpe":
        lengths = [1] * (1 + len(d["alphabet"]))          # <unk> and the alphabet
        for m in d["merges"]:
            if (not isinstance(m, list) or len(m) != 2 or not all(_is_int(i) for i in m)
                    or not all(0 <= i < len(lengths) for i in m)):
                _fail("err_tokenizer")
            lengths.append(lengths[m[0]] + lengths[m[1]])
            if lengths[-1] > limits.MAX_TOKEN_CHARS:
                _fail("err_token_long", limit=limits.MAX_TOKEN_CHARS)
    try:
        if kind == "bpe":
            from .bpe import TrainedBPE

            tok = TrainedBPE.from_dict(d)
        else:
            tok = tokenizer_from_dict(d)
    except (TypeError, ValueError):
        _fail("err_tokenizer")
    if tok.vocab_size != vocab_size:
        _fail("err_tokenizer_size", n=tok.vocab_size, expected=vocab_size)
    return tok


def _tensor_layout(header: dict, cfg: GPTConfig, data_len: int, start: int) -> dict[str, tuple]:
    """name -> (torch dtype, shape, begin, end) for exactly the tensors cfg implies, laid out back
    to back from ``start`` to the end of the file; anything else is refused."""
    expected = limits.param_shapes(cfg)
    names = [k for k in header if k != "__metadata__"]
    from .induction import PREFIX as _INDUCTION

    replay = {**_replay_layout(header, cfg, [k for k in names if isinstance(k, str) and k.startswith(_REPLAY)], start),
              **_induction_layout(header, cfg, [k for k in names if isinstance(k, str) and k.startswith(_INDUCTION)],
                                  start)}
    names = [k for k in names if k not in replay]
    missing = sorted(set(expected) - set(names))
    extra = sorted(set(names) - set(expected), key=str)
    if missing:
        _fail("err_tensor_missing", count=len(missing), name=missing[0])
    if extra:
        _fail("err_tensor_extra", count=len(extra), name=_name(extra[0]))
    layout = {}
    for k in names:
        e = header[k]
        if not isinstance(e, dict):
            _fail("err_tensor_entry", name=k)
        dtype, shape, offs = e.get("dtype"), e.get("shape"), e.get("data_offsets")
        if (not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape)
                or not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) and o >= 0 for o in offs)):
            _fail("err_tensor_entry", name=k)
        if not isinstance(dtype, str) or dtype not in limits.WEIGHT_DTYPES:   # (a list is unhashable)
            _fail("err_tensor_dtype", name=k, dtype=_name(dtype))
        if tuple(shape) != expected[k]:
            _fail("err_tensor_shape", name=k, shape=str(tuple(shape))[:60], expected=str(expected[k]))
        nbytes = math.prod(shape) * limits.WEIGHT_DTYPES[dtype]
        if offs[1] - offs[0] != nbytes:
            _fail("err_tensor_offsets", name=k)
        layout[k] = (_TORCH_DTYPES[dtype], expected[k], start + offs[0], start + offs[1])
    pos = start
    for k, (_, _, b, e) in sorted({**layout, **replay}.items(), key=lambda kv: kv[1][2]):
        if b != pos:
            _fail("err_tensor_offsets", name=_name(k))
        pos = e
    if pos != data_len:
        _fail("err_truncated", size=max(0, data_len - start), expected=pos - start)
    return {**layout, **replay}


def _group_layout(header: dict, names: list, prefix: str, spec: dict, md_key: str, start: int) -> dict[str, tuple]:
    """name -> (dtype, shape, begin, end) of one group of extra tensors (the replay's, the
    induction record's), from the header alone: exactly the names ``spec`` gives (all or none),
    their dtypes and ranks, a metadata string ``md_key``, and MAX_REPLAY_BYTES bytes at most."""
    md = header.get("__metadata__") or {}
    if not names and md_key not in md:
        return {}
    spec = {prefix + k: v for k, v in spec.items()}
    for k in sorted(set(names) - set(spec), key=str)[:1]:
        _fail("err_replay", name=_name(k))
    for k in sorted(set(spec) - set(names))[:1]:
        _fail("err_replay", name=k)
    if not isinstance(md.get(md_key), str):
        _fail("err_replay", name=md_key)
    layout, total = {}, 0
    for k in sorted(names):
        e = header[k]
        dtype, shape, offs = (e.get("dtype"), e.get("shape"), e.get("data_offsets")) if isinstance(e, dict) \
            else (None, None, None)
        if (not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape)
                or not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) and o >= 0 for o in offs)
                or not isinstance(dtype, str) or dtype not in _REPLAY_DTYPES
                or _TORCH_DTYPES[dtype] != spec[k][0] or len(shape) != spec[k][1]):
            _fail("err_replay", name=k)
        if any(s > limits.MAX_PARAMS for s in shape):
            _fail("err_replay_size", limit_mb=MAX_REPLAY_BYTES // 2**20)
        nbytes = math.prod(shape) * _REPLAY_DTYPES[dtype]
        total += nbytes
        if total > MAX_REPLAY_BYTES:
            _fail("err_replay_size", limit_mb=MAX_REPLAY_BYTES // 2**20)
        if offs[1] - offs[0] != nbytes:
            _fail("err_tensor_offsets", name=k)
        layout[k] = (_TORCH_DTYPES[dtype], tuple(shape), start + offs[0], start + offs[1])
    return layout


def _replay_layout(header: dict, cfg: GPTConfig, names: list, start: int) -> dict[str, tuple]:
    """The ``replay.*`` tensors' layout (:func:`_group_layout`): at most MAX_REPLAY_SNAPSHOTS
    snapshots, in shapes that fit ``cfg``."""
    from .replay import _SPEC

    layout = _group_layout(header, names, _REPLAY, _SPEC, "replay", start)
    if not layout:
        return layout
    shape = {k[len(_REPLAY):]: v[1] for k, v in layout.items()}
    n, T = shape["step"][0], shape["probe_ids"][0]
    if not 1 <= n <= MAX_REPLAY_SNAPSHOTS:
        _fail("err_replay_count", n=n, limit=MAX_REPLAY_SNAPSHOTS)
    fits = (shape["prev_token"][1:] == (cfg.n_layer, cfg.n_head) and shape["attention"][1] == cfg.n_head
            and 2 <= T <= cfg.block_size and 1 <= shape["prompt_ids"][0] <= cfg.block_size
            and 1 <= shape["emb_xy"][1] <= cfg.vocab_size and 1 <= shape["top_ids"][1] <= cfg.vocab_size)
    if not fits:
        _fail("err_replay_model")
    return layout


def _induction_layout(header: dict, cfg: GPTConfig, names: list, start: int) -> dict[str, tuple]:
    """The ``induction.*`` tensors' layout (:func:`_group_layout`): at most MAX_INDUCTION_EVALS
    evaluations, every map and score the model's layers x heads, a probe within its context."""
    from .induction import PREFIX, SPEC

    layout = _group_layout(header, names, PREFIX, SPEC, "induction", start)
    if not layout:
        return layout
    shape = {k[len(PREFIX):]: v[1] for k, v in layout.items()}
    E, T = shape["step"][0], shape["ids"][0]
    if not 1 <= E <= MAX_INDUCTION_EVALS:
        _fail("err_replay_count", n=E, limit=MAX_INDUCTION_EVALS)
    LH = (cfg.n_layer, cfg.n_head)
    fits = (shape["prefix"][1:] == LH and shape["previous"][1:] == LH and shape["maps"][1:] == (*LH, T, T)
            and 2 <= T <= cfg.block_size)
    if not fits:
        _fail("err_replay_model")
    return layout


def _tensor(view: memoryview, dtype, shape, b: int, e: int) -> torch.Tensor:
    """The tensor stored at bytes [b, e) of the file (a copy: the file's bytes are not kept)."""
    return torch.frombuffer(bytearray(view[b:e]), dtype=dtype).reshape(shape) if e > b \
        else torch.empty(shape, dtype=dtype)


def _read_replay(data: bytes, header_md: dict, layout: dict, vocab_size: int):
    """The replay (lmviz.replay.Replay, with the run's induction record when the file has one)
    after its values are checked, or None when there is none."""
    from .induction import PREFIX as _INDUCTION, evals_from_tensors
    from .replay import Replay, snapshots_from_tensors

    view = memoryview(data)
    t = {}
    for k, where in layout.items():
        if not k.startswith((_REPLAY, _INDUCTION)):
            continue
        x = t[k] = _tensor(view, *where)
        if not k.startswith(_REPLAY):
            continue                  # the induction record's values: checked by evals_from_tensors below
        name = k[len(_REPLAY):]
        if x.is_floating_point():
            ok = torch.isfinite(x) | (torch.isnan(x) if name == "loss" else False)  # NaN loss: not given
            if not bool(ok.all()):
                _fail("err_replay", name=k)
            if name in ("attention", "prev_token", "top_probs", "emb_var") and x.numel() and \
                    (float(x.min()) < 0.0 or float(x.max()) > 1.0 + 1e-4):
                _fail("err_replay", name=k)
            if name == "entropy" and x.numel() and float(x.min()) < 0.0:
                _fail("err_replay", name=k)
    if not t:
        return None
    try:
        snaps, probe = snapshots_from_tensors(t, header_md, vocab_size=vocab_size)
    except ValueError:
        _fail("err_replay", name="replay")
    if probe is not None and (len(probe.sentence) > MAX_PROBE_CHARS or len(probe.prompt) > MAX_PROBE_CHARS):
        _fail("err_replay", name="probe")                  # the page shows them: keep them short
    try:
        evals = evals_from_tensors(t, header_md, vocab_size=vocab_size)
    except ValueError:
        _fail("err_replay", name="induction")
    return Replay(tuple(snaps), probe, tuple(evals))


def check_checkpoint(data: bytes):
    """(config, tokenizer, meta, tensor layout) of checkpoint bytes; CheckpointError when any
    check fails. Reads the header only: the weights are not touched."""
    header, start = _read_header(data)
    cfg_d, tok_d, meta = _metadata(header)
    cfg = _config(cfg_d)
    meta = check_meta(meta)
    tok = _tokenizer(tok_d, cfg.vocab_size)
    layout = _tensor_layout(header, cfg, len(data), start)
    return cfg, tok, meta, layout


def load_checkpoint(src, device=None):
    """(model in eval mode, tokenizer, meta) from bytes or a path; CheckpointError (a ValueError)
    with one clear sentence when the file is refused. See the module docstring."""
    return load_checkpoint_with_replay(src, device)[:3]


def load_checkpoint_with_replay(src, device=None):
    """(model, tokenizer, meta, replay) like :func:`load_checkpoint`; ``replay`` is the file's
    ``lmviz.replay.Replay`` (None when it carries none: older checkpoints, the shipped model)."""
    data = _read_source(src)
    cfg, tok, meta, layout = check_checkpoint(data)
    replay = _read_replay(data, _read_header(data)[0].get("__metadata__") or {}, layout, cfg.vocab_size)
    weights_only = limits.param_shapes(cfg)
    layout = {k: v for k, v in layout.items() if k in weights_only}   # the weights alone
    view = memoryview(data)
    weights = {}
    for k, (dtype, shape, b, e) in layout.items():
        t = _tensor(view, dtype, shape, b, e)
        bad = int((~torch.isfinite(t)).sum())
        if bad:
            _fail("err_nonfinite", name=k, count=bad)
        weights[k] = t.float() if dtype != torch.float32 else t
    model = meta_gpt(cfg)
    model.load_state_dict({**weights, _TIED: weights["wte.weight"]}, strict=True, assign=True)
    model.lm_head.weight = model.wte.weight          # assign=True replaced both: tie them again
    if device is not None:
        model.to(device)
    return model.eval(), tok, meta, replay


@functools.lru_cache(maxsize=1)
def load_default():
    """The shipped default model (assets/models/default.safetensors) on lmviz.device(), eval mode.

    Cached: one shared instance; use it under torch.no_grad() and do not train it in place.
    """
    from . import device

    return load_checkpoint(DEFAULT_PATH, device=device())
