"""Benchmark: the default model's load time, and the attention page's server time for a 32-token
sentence, measured side by side in one run.

    .venv/bin/python bench/model.py [--repeat 5]

Prints, each as the median of --repeat runs:
- load:      load_checkpoint(assets/models/default.safetensors) on CPU (goal: < 1 s);
- compute:   what a layer/head slider move costs the attention page: forward_trace of 32 tokens
             (uncached) + the stage heatmap and the all-heads figure built and serialised;
- cached:    the same with the trace already cached (what the page does on a slider move);
- rerun:     a full AppTest rerun of the attention page after moving the layer slider (the
             fragment and everything around it; goal: < 200 ms server time);
and the ratios between them. When the default model is not there yet, a model of the same
config is saved to a temporary file and used instead (the output says so).
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

SENTENCE = "The capital of France is Paris!"   # 31 chars: with a leading space, 32 tokens


def median_time(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import torch

    import lmviz
    from lmviz import checkpoint as ck
    from lmviz.chapters.embedding import encode_for_model

    lmviz.set_threads()
    path, note = ck.DEFAULT_PATH, "default model"
    if not path.exists():
        from lmviz.model import GPT, GPTConfig
        from lmviz.tokenizer import CharTokenizer

        text = "".join((ROOT / "assets" / "corpora" / f"{n}.txt").read_text(encoding="utf-8")
                       for n in ("english", "chinese"))
        tok = CharTokenizer(text)
        m = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=4, n_head=4, d_model=128))
        path = Path(tempfile.mkdtemp()) / "standin.safetensors"
        path.write_bytes(ck.save_checkpoint(m, tok))
        note = "stand-in (default model not found), same config as scripts/train_default.py"
    size_mb = path.stat().st_size / 2**20
    t_load = median_time(lambda: ck.load_checkpoint(path, device="cpu"), args.repeat)
    model, tok, _ = ck.load_checkpoint(path, device="cpu")
    cfg = model.cfg

    enc = encode_for_model(tok, " " + SENTENCE, cfg.block_size)
    ids = torch.tensor(enc.ids)
    from viz.attention import heads_figure, heatmap

    def figs(tr):
        L = tr.layers[min(1, cfg.n_layer - 1)]
        heatmap(L.weights[0], x_labels=enc.tokens, y_labels=enc.tokens, zmin=0.0, zmax=1.0).to_json()
        heads_figure(L.weights, enc.tokens, [f"h{i}" for i in range(cfg.n_head)]).to_json()

    def compute():
        with torch.no_grad():
            figs(model.forward_trace(ids))

    trace = model.forward_trace(ids)
    t_compute = median_time(compute, args.repeat)
    t_cached = median_time(lambda: figs(trace), args.repeat)

    # a full page rerun through AppTest, with the same model as the default
    ck.load_default = lambda: (model, tok, {})
    from tests.apptest_util import open_page

    at = open_page("chapters/attention.py", "en", s=SENTENCE)
    layer = at.slider(key="att_layer")
    vals = [1 + (i % cfg.n_layer) for i in range(1, args.repeat + 1)]
    times = []
    for v in vals:
        t0 = time.perf_counter()
        layer.set_value(v).run()
        times.append(time.perf_counter() - t0)
        layer = at.slider(key="att_layer")
        assert not at.exception
    t_rerun = statistics.median(times)

    print(f"model: {note}; {model.num_params():,} params, {size_mb:.2f} MB on disk, "
          f"{torch.get_num_threads()} torch thread(s)")
    print(f"sentence: {len(enc.ids)} tokens")
    print(f"load default model        {t_load * 1e3:8.1f} ms   (goal < 1000 ms)")
    print(f"trace + 2 figures         {t_compute * 1e3:8.1f} ms")
    print(f"2 figures, trace cached   {t_cached * 1e3:8.1f} ms")
    print(f"full page rerun (AppTest) {t_rerun * 1e3:8.1f} ms   (goal < 200 ms server time)")
    print(f"ratios: rerun / cached compute = {t_rerun / t_cached:.1f}x, "
          f"uncached / cached compute = {t_compute / t_cached:.1f}x")


if __name__ == "__main__":
    main()
