"""Save and load a model + tokenizer as one safetensors file (never pickle).

Layout: the weights are safetensors tensors (the tied lm_head is stored once, as
``wte.weight``); the header's ``__metadata__`` holds three JSON strings: ``config`` (GPTConfig),
``tokenizer`` (its to_dict) and ``meta`` (anything JSON: corpus, steps, losses...), plus
``format = "lmviz-gpt-1"``. Loading checks every piece and raises ValueError with a plain
message on a bad file.
"""
from __future__ import annotations

import functools
import json
import struct
from pathlib import Path

import torch

from .model import GPT, GPTConfig
from .tokenizer import tokenizer_from_dict

FORMAT = "lmviz-gpt-1"
MAX_BYTES = 256 * 1024 * 1024          # refuse anything larger (an upload guard)
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "assets" / "models" / "default.safetensors"
_TIED = "lm_head.weight"


def save_checkpoint(model: GPT, tokenizer, meta: dict | None = None, half: bool = False) -> bytes:
    """The model, its tokenizer and meta as safetensors bytes; half=True stores fp16 weights."""
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
    return save(tensors, metadata=metadata)


def _read_header(data: bytes) -> dict:
    """The safetensors JSON header: 8-byte little-endian length, then that many bytes of JSON."""
    if len(data) < 8:
        raise ValueError("not a safetensors file (too short)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8 or n > 100_000_000:
        raise ValueError("not a safetensors file (bad header length)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a safetensors file (header is not JSON: {e})") from None
    if not isinstance(header, dict):
        raise ValueError("not a safetensors file (header is not an object)")
    return header


def load_checkpoint(src, device=None):
    """(model in eval mode, tokenizer, meta) from bytes or a path. ValueError on a bad file."""
    from safetensors.torch import load

    if isinstance(src, (str, Path)):
        p = Path(src)
        if not p.is_file():
            raise ValueError(f"no checkpoint at {p}")
        if p.stat().st_size > MAX_BYTES:
            raise ValueError(f"checkpoint is larger than {MAX_BYTES // 2**20} MB")
        data = p.read_bytes()
    elif isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
    else:
        raise ValueError(f"load_checkpoint takes bytes or a path, got {type(src).__name__}")
    if len(data) > MAX_BYTES:
        raise ValueError(f"checkpoint is larger than {MAX_BYTES // 2**20} MB")

    md = _read_header(data).get("__metadata__") or {}
    if md.get("format") != FORMAT:
        raise ValueError(f"not an lmviz checkpoint (format {md.get('format')!r}, expected {FORMAT!r})")
    try:
        cfg_d, tok_d, meta = (json.loads(md[k]) for k in ("config", "tokenizer", "meta"))
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"checkpoint metadata is missing or not JSON: {e}") from None
    if not isinstance(cfg_d, dict):
        raise ValueError("checkpoint config is not an object")
    try:
        cfg = GPTConfig.from_dict(cfg_d)
    except (TypeError, ValueError) as e:
        raise ValueError(f"checkpoint config is invalid: {e}") from None
    if isinstance(tok_d, dict) and tok_d.get("type") == "bpe":  # a BPE trained by lmviz.train
        from .bpe import TrainedBPE

        tok = TrainedBPE.from_dict(tok_d)
    else:
        tok = tokenizer_from_dict(tok_d)
    if tok.vocab_size != cfg.vocab_size:
        raise ValueError(f"tokenizer has {tok.vocab_size} tokens, config says {cfg.vocab_size}")
    try:
        tensors = load(data)
    except Exception as e:  # safetensors raises its own error types on corrupt data
        raise ValueError(f"could not read checkpoint tensors: {e}") from None

    model = GPT(cfg)
    expected = {k: v for k, v in model.state_dict().items() if k != _TIED}
    missing, extra = set(expected) - set(tensors), set(tensors) - set(expected)
    if missing or extra:
        raise ValueError(f"checkpoint tensors do not match the config (missing {sorted(missing)[:5]}, "
                         f"unexpected {sorted(extra)[:5]})")
    for k, v in tensors.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ValueError(f"tensor {k} has shape {tuple(v.shape)}, config needs {tuple(expected[k].shape)}")
        if not v.is_floating_point():
            raise ValueError(f"tensor {k} is not floating point")
    with torch.no_grad():
        for k, p in model.state_dict().items():
            if k != _TIED:
                p.copy_(tensors[k].float())
    if device is not None:
        model.to(device)
    return model.eval(), tok, meta if isinstance(meta, dict) else {"meta": meta}


@functools.lru_cache(maxsize=1)
def load_default():
    """The shipped default model (assets/models/default.safetensors) on lmviz.device(), eval mode.

    Cached: one shared instance; use it under torch.no_grad() and do not train it in place.
    """
    from . import device

    return load_checkpoint(DEFAULT_PATH, device=device())
