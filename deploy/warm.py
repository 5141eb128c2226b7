"""Check freshly started lmviz replicas: one headless visit of the home page each.

    python deploy/warm.py 127.0.0.1:8501 127.0.0.1:8502

Each replica runs ``serve.py``, which warms itself as it starts (ui/warmup.py: torch, the default
model, then one visit of every chapter in both languages); this visit confirms that each replica
serves a page without an exception box. Exit status 0 when every replica answered.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ui.headless import Session  # noqa: E402


async def visit(addr: str) -> bool:
    host, _, port = addr.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        raise SystemExit(f"warm.py only visits 127.0.0.1, not {addr}")
    try:
        async with Session(int(port), "", "lang=en", auto_rerun=False) as s:
            await s.wait_idle(timeout=120)
            return not s.errors
    except Exception:  # noqa: BLE001 - reported by the exit status
        return False


async def main(addrs: list[str]) -> int:
    ok = await asyncio.gather(*(visit(a) for a in addrs))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
