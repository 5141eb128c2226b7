"""Each chapter's rerun time, this tree beside another (an older commit), side by side in one run.

    python bench/rerun.py --base /tmp/base [--repeats 5] [--rounds 2] [--lang en]

``--base`` is a checkout of another commit (``git worktree add /tmp/base <commit>``). For every
chapter both trees register, a child process per tree runs the app through AppTest from that
tree's folder (its own ``app.py``, pages, core and assets): the home page, then the chapter once
(cold: its imports, its caches) and ``--repeats`` more times (a rerun, what every widget change
that is not inside a fragment costs the server; the scripts are compiled once per process, as a
server's script cache does, where AppTest alone would compile app.py and the page on every run). The two trees alternate chapter by chapter and
round by round, so both see the same machine load. Prints per chapter the median rerun of each
tree and their ratio (this tree / base), and how many charts each tree's chapter drew (a
chapter that draws more does more work: compare like with like). Students who skipped the predict-then-reveal questions
are simulated where the tree has them, so each run draws every section of the chapter.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("LMVIZ_THREADS", "1")
from streamlit.testing.v1 import AppTest
import streamlit.testing.v1.app_test as _at, streamlit.testing.v1.local_script_runner as _lsr
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
_CACHE = ScriptCache()          # one per process, as a server's Runtime keeps one: AppTest makes a
_at.ScriptCache = _lsr.ScriptCache = lambda: _CACHE    # new one per run and recompiles every script
from ui.chapters import registered
slug, lang, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
chapter = next(c for c in registered() if c.slug == slug)
at = AppTest.from_file("app.py", default_timeout=300)
try:                                   # the questions' module before and after the three wings
    from lmviz.chapters.questions import QUESTIONS
except ImportError:
    try:
        from lmviz.questions import QUESTIONS
    except ImportError:
        QUESTIONS = ()
try:
    from ui.questions import SKIPPED
except ImportError:
    QUESTIONS = ()
for q in QUESTIONS:
    at.session_state[f"class_solo:{q.id}:done"] = SKIPPED
at.query_params["lang"] = lang
at.run()
t0 = time.perf_counter()
at.switch_page(str(chapter.file)).run()
cold = time.perf_counter() - t0
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    at.run()
    times.append(time.perf_counter() - t0)
print(json.dumps({"cold": cold, "runs": times, "errors": len(at.exception),
                  "charts": len(at.get("plotly_chart"))}), flush=True)
os._exit(0)   # no interpreter teardown: a page's background threads may still be running
"""


def slugs(tree: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", "from ui.chapters import registered; "
                          "print(' '.join(c.slug for c in registered() if c.slug))"],
                         cwd=tree, capture_output=True, text=True, check=True)
    return out.stdout.split()


def measure(tree: Path, slug: str, lang: str, repeats: int) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, slug, lang, str(repeats)], cwd=tree,
                       capture_output=True, text=True, timeout=900)
    line = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode or not line:
        raise RuntimeError(f"{tree} {slug}: {r.stderr[-800:]}")
    return json.loads(line[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="a checkout of the commit to compare with")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--chapters", default="", help="comma list of slugs (default: every common one)")
    a = ap.parse_args()
    common = [s for s in slugs(ROOT) if s in set(slugs(a.base))]
    if a.chapters:
        common = [s for s in common if s in a.chapters.split(",")]
    runs: dict = {(s, w): [] for s in common for w in ("base", "this")}
    cold: dict = {(s, w): [] for s in common for w in ("base", "this")}
    charts: dict = {}
    for rnd in range(a.rounds):
        for s in common:
            order = [("base", a.base), ("this", ROOT)]
            if rnd % 2:
                order.reverse()                  # alternate who goes first
            for who, tree in order:
                m = measure(tree, s, a.lang, a.repeats)
                runs[(s, who)] += m["runs"]
                cold[(s, who)].append(m["cold"])
                charts[(s, who)] = m.get("charts", 0)
                if m["errors"]:
                    print(f"  ! {who} {s}: {m['errors']} exception box(es)")
    print(f"chapter rerun (AppTest, lang={a.lang}, {a.rounds} rounds x {a.repeats} reruns, s)")
    print("  median: every rerun; p25: the fastest quarter, the page's own work with the least")
    print("  interference (a rerun's time is bimodal on a shared machine: other threads and processes)")
    print(f"{'chapter':<22}{'base':>8}{'this':>8}{'ratio':>7}{'p25 base':>10}{'p25 this':>10}{'ratio':>7}"
          f"{'cold base':>11}{'cold this':>11}{'charts base/this':>18}")
    ratios, quick = [], []
    for s in common:
        b, t = statistics.median(runs[(s, "base")]), statistics.median(runs[(s, "this")])
        qb, qt = (statistics.quantiles(runs[(s, w)], n=4)[0] for w in ("base", "this"))
        ratios.append(t / b)
        quick.append(qt / qb)
        print(f"{s:<22}{b:>8.3f}{t:>8.3f}{t / b:>7.2f}{qb:>10.3f}{qt:>10.3f}{qt / qb:>7.2f}"
              f"{statistics.median(cold[(s, 'base')]):>11.2f}{statistics.median(cold[(s, 'this')]):>11.2f}"
              f"{charts[(s, 'base')]:>11}/{charts[(s, 'this')]}")
    for name, rs in (("median", ratios), ("p25", quick)):
        print(f"{name} ratio this/base: median over chapters {statistics.median(rs):.2f}; slowest: "
              f"{max(zip(rs, common))[1]} at {max(rs):.2f}")


if __name__ == "__main__":
    main()
