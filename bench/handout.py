"""Benchmark: a chapter's HTML hand-out as lmviz's own route makes it (``ui.handout.made``, what
``GET /handout/<token>/<name>`` runs on a worker thread), for every chapter in each language.

Each chapter is drawn once by AppTest as a student who skipped its questions sees it; then its
record's hand-out is made (cold: the file is built) and asked for again (warm: the same state of
the record, the kept file). Prints one line per chapter and language (cold ms, warm ms, MB) and a
last line with the range. Goal (issue 54 item 2): a press is answered with the file in well under
a second on the 2-core machine, and a second press of an unchanged page costs no second build.

    .venv/bin/python bench/handout.py [--lang zh,en] [--chapter attention,...]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", default="zh,en")
    ap.add_argument("--chapter", default="", help="slugs, comma-separated (default: every chapter)")
    args = ap.parse_args()

    from tests.apptest_util import open_page
    from ui import handout
    from ui.chapters import registered

    wanted = [s for s in args.chapter.split(",") if s]
    chapters = [c for c in registered() if c.slug and (not wanted or c.slug in wanted)]
    cold, warm = [], []
    for lang in args.lang.split(","):
        for c in chapters:
            at = open_page(c.file, lang=lang)
            rec = at.session_state["lmviz_export"]
            t0 = time.perf_counter()
            body = handout.made(rec.token, lang)
            t1 = time.perf_counter()
            again = handout.made(rec.token, lang)
            t2 = time.perf_counter()
            assert again is body
            cold.append(t1 - t0)
            warm.append(t2 - t1)
            print(f"/{c.slug} {lang}: made in {1000 * (t1 - t0):.0f} ms, again {1000 * (t2 - t1):.2f} ms, "
                  f"{len(body) / 1e6:.2f} MB", flush=True)
    print(f"hand-out made in {1000 * min(cold):.0f}-{1000 * max(cold):.0f} ms, asked again "
          f"{1000 * max(warm):.2f} ms at most, {len(cold)} chapters")


if __name__ == "__main__":
    main()
