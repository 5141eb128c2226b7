"""One way to read a field of a JSON file that came from elsewhere (a model folder's config.json,
tokenizer.json, model.safetensors.index.json, a safetensors header): its type is checked before
it is used, so a list where a name belongs is a sentence, never a ``TypeError``.

>>> typed({"n": 3}, "n", int, fail=print)
3
>>> typed({"n": None}, "n", int, 7, fail=print)          # null is absent, as Hugging Face reads it
7
>>> typed({"n": True}, "n", int, fail=lambda k: print("bad", k))   # a bool is never a number
bad n
"""
from __future__ import annotations

from typing import Callable, NoReturn

ABSENT = object()       # the default of a field that must be present


def typed(d, key: str, kind, default=ABSENT, *, fail: Callable[[str], NoReturn]):
    """``d[key]`` when it is of type ``kind`` (a type or a tuple of types; a bool is no int and no
    float); ``default`` when ``d`` has no ``key`` or it is null; else ``fail(key)``, which raises
    the caller's own error (a missing field without a default, a value of another type, a ``d``
    that is no dict)."""
    if not isinstance(d, dict):
        return fail(key)
    v = d.get(key)
    if v is None:
        return fail(key) if default is ABSENT else default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
        return fail(key)
    return v
