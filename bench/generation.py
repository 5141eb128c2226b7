"""Benchmark: server time of one temperature change on /generation, fragment vs whole page.

Run:  .venv/bin/python bench/generation.py [--repeats 20] [--lang en]

In the browser a slider inside an ``st.fragment`` reruns only that fragment. AppTest always
reruns the whole script, so the two are measured side by side in one process, alternating:

- fragment: an AppTest over a two-line script that imports chapters/generation.py (which renders
  nothing when imported) and calls the temperature section, i.e. exactly the code a
  temperature change runs on the server;
- full page: AppTest over app.py switched to /generation (sidebar, navigation and all five
  sections, the live model included), the same temperature change each time;
- empty: AppTest over an empty script, the harness's own overhead, subtracted from neither.

The live section needs a model: the shipped default when it exists, else a random GPT of the
default's shape over a char vocabulary of the bundled corpora (same compute per step).
Prints medians in ms and the ratio full / fragment.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
os.environ.setdefault("LMVIZ_THREADS", "1")

from streamlit.testing.v1 import AppTest  # noqa: E402

FRAGMENT_SCRIPT = f"""
import importlib.util, sys
sys.path.insert(0, {str(ROOT)!r})
import streamlit as st
page = sys.modules.get("gen_page")
if page is None:  # import once: a real fragment rerun does not re-execute the page either
    spec = importlib.util.spec_from_file_location("gen_page", {str(ROOT / "chapters" / "generation.py")!r})
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    sys.modules["gen_page"] = page
page.sec_temperature()
"""


def _bundle():
    """The default model if it is there, else a random one of the same shape."""
    from ui.session import Bundle

    try:
        from lmviz.checkpoint import load_default

        model, tok, meta = load_default()
        return Bundle(model, tok, meta, "session"), "default checkpoint"
    except Exception:  # noqa: BLE001 - not trained yet: same shape, random weights
        import torch

        from lmviz.model import GPT, GPTConfig
        from lmviz.tokenizer import CharTokenizer

        text = "".join(p.read_text(encoding="utf-8")[:200_000]
                       for p in sorted((ROOT / "assets" / "corpora").glob("*.txt")))
        tok = CharTokenizer(text or "The cat sat.")
        torch.manual_seed(0)
        cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=4, n_head=4,
                        n_kv_head=4, d_model=128)
        return Bundle(GPT(cfg).eval(), tok, {}, "session"), f"random GPT, V={tok.vocab_size}"


_STEP = [0]


def _timed_change(at: AppTest) -> tuple[float, float]:
    """Move τ to the next of a few values; time at.run(): (wall ms, process CPU ms).

    CPU time counts only this process's work, so it is less disturbed by other processes on a
    shared machine than wall time is."""
    _STEP[0] += 1
    at.slider(key="gen_tau").set_value((0.5, 1.5, 0.8, 2.5)[_STEP[0] % 4])
    w0, c0 = time.perf_counter(), time.process_time()
    at.run()
    out = 1000 * (time.perf_counter() - w0), 1000 * (time.process_time() - c0)
    assert not at.exception, [e.value for e in at.exception]
    return out


def _timed_run(at: AppTest) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    at.run()
    return 1000 * (time.perf_counter() - w0), 1000 * (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()

    bundle, what = _bundle()
    with tempfile.TemporaryDirectory() as d:
        frag_path, empty_path = Path(d) / "frag.py", Path(d) / "empty.py"
        frag_path.write_text(FRAGMENT_SCRIPT)
        empty_path.write_text("import streamlit as st\n")

        frag = AppTest.from_file(str(frag_path), default_timeout=120)
        frag.session_state["lang"] = args.lang
        frag.run()
        full = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        full.query_params["lang"] = args.lang
        full.session_state["lmviz_session_bundle"] = bundle
        full.run()
        full.switch_page("chapters/generation.py").run()
        empty = AppTest.from_file(str(empty_path), default_timeout=60)
        empty.run()

        t_frag, t_full, t_empty = [], [], []
        for _ in range(args.repeats):  # interleaved, so load on the machine hits all alike
            t_frag.append(_timed_change(frag))
            t_full.append(_timed_change(full))
            t_empty.append(_timed_run(empty))

    print(f"model in the live section: {what}; {args.repeats} temperature changes each, lang={args.lang}")
    print(f"{'median of':34s} {'wall ms':>9s} {'CPU ms':>9s}")
    med = {}
    for name, xs in (("empty script (harness overhead)", t_empty), ("temperature fragment", t_frag),
                     ("whole /generation page rerun", t_full)):
        med[name] = [statistics.median(x[i] for x in xs) for i in (0, 1)]
        print(f"  {name:32s} {med[name][0]:9.1f} {med[name][1]:9.1f}")
    f, p, e = med["temperature fragment"], med["whole /generation page rerun"], med["empty script (harness overhead)"]
    print(f"  ratio whole page / fragment      {p[0] / f[0]:8.1f}x {p[1] / f[1]:8.1f}x")
    print(f"  fragment minus harness           {f[0] - e[0]:9.1f} {f[1] - e[1]:9.1f}   (budget 50 ms)")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
