"""Merge a fragment of strings into the catalogues, safely while others do the same.

Usage: ``python -m ui.i18n_merge FRAGMENT.json`` where the fragment is
``{"en": {"key": "..."}, "zh": {"key": "..."}}``. The catalogues are locked with ``fcntl`` while
being rewritten, and written sorted so diffs stay small.
"""
from __future__ import annotations

import fcntl
import json
import sys

from ui.i18n import CATALOGUE_DIR, LANGS


def merge(fragment: dict[str, dict[str, str]]) -> dict[str, int]:
    """Merge ``fragment`` into every catalogue; returns the number of keys written per language."""
    unknown = set(fragment) - set(LANGS)
    if unknown:
        raise ValueError(f"unknown languages in fragment: {sorted(unknown)}")
    counts = {}
    with open(CATALOGUE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for code, strings in fragment.items():
            path = CATALOGUE_DIR / f"{code}.json"
            data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            data.update(strings)
            path.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                            encoding="utf-8")
            counts[code] = len(strings)
    return counts


if __name__ == "__main__":
    for name in sys.argv[1:]:
        with open(name, encoding="utf-8") as f:
            print(name, merge(json.load(f)))
