"""Training throughput, measured side by side in one run (CPU; keep the whole run under ~3 min).

    .venv/bin/python bench/train.py            # default preset, ~2-3 minutes on 2 cores
    .venv/bin/python bench/train.py --quick    # fewer steps

Prints three measurements:

1. The app's Trainer.step (AdamW + schedule + clipping + per-step metrics) and the same through a
   TrainingJob worker thread (lock, events, periodic evaluation off) against a bare PyTorch loop
   (forward, backward, AdamW step) on the same model shape and batch; reports the ratios.
2. Model FLOPs utilisation: 6 * N * tokens/s against the fp32 matmul rate measured here with the
   same thread count.
3. Thread policy: step time with 1 and 2 intra-op threads, idle and with a competing busy process
   on one core (what Streamlit or a second training does to a shared 2-core server).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from lmviz.train import PRESETS, Trainer, corpus_text, replace  # noqa: E402

BUSY = "import time\nt = time.time() + {s}\nwhile time.time() < t: pass\n"


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def bare_loop(tr: Trainer, steps: int) -> float:
    """Median seconds per step of the plainest loop on a fresh copy of tr's model and data."""
    from lmviz.model import GPT

    model = GPT(tr.model.cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x, y = tr._batch(tr.train_ids, g)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    return median(times[2:])


def app_trainer(tr: Trainer, steps: int) -> float:
    return median([m.dt_ms / 1e3 for m in tr.step(steps)][2:])


def app_job(text: str, cfg, steps: int) -> float:
    """Seconds per step seen through a TrainingJob (worker thread, lock, events; no evaluation)."""
    from lmviz.server.train_job import TrainingJob

    cfg = replace(cfg, max_steps=steps, eval_every=10 ** 6)
    job = TrainingJob(lambda: Trainer(text, cfg, device="cpu"), threading.BoundedSemaphore(1))
    job.start()
    job.join()
    s = job.snapshot()
    return median([m.dt_ms / 1e3 for m in s.steps][2:])


def matmul_rate(n: int = 512, reps: int = 20) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n ** 3 * reps / (time.perf_counter() - t0)


def interleaved(pairs: int, steps: int, fns) -> dict:
    """Run each fn(steps) in turn, `pairs` rounds, so drift from other load hits all alike."""
    out = {k: [] for k in fns}
    for _ in range(pairs):
        for k, fn in fns.items():
            out[k].append(fn(steps))
    return {k: median(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--preset", default="default")
    args = ap.parse_args()
    steps = 15 if args.quick else 30
    pairs = 2 if args.quick else 3
    text = corpus_text("english")
    cfg = replace(PRESETS[args.preset], max_steps=10 ** 6, eval_every=10 ** 6)
    ncores = os.cpu_count()
    print(f"preset {args.preset}: {cfg.n_layer} layers, d {cfg.d_model}, block {cfg.block_size}, "
          f"batch {cfg.batch_size}; {ncores} cores; torch {torch.__version__}")

    # 1 + 2: at the app's thread policy (lmviz.torch_threads)
    import lmviz

    nthreads = lmviz.set_threads()
    tr = Trainer(text, cfg, device="cpu")
    tokens = cfg.batch_size * cfg.block_size
    n_params = tr.model.num_params()
    r = interleaved(pairs, steps, {"bare": lambda n: bare_loop(tr, n), "trainer": lambda n: app_trainer(tr, n),
                                   "job": lambda n: app_job(text, cfg, n)})
    print(f"\n[1] tokens/s at {nthreads} thread(s), median step of {pairs} interleaved rounds x {steps} steps")
    for k, v in r.items():
        print(f"    {k:8s} {v * 1e3:7.1f} ms/step  {tokens / v:9,.0f} tokens/s  ratio to bare {r['bare'] / v:.3f}")

    rate = matmul_rate()
    tps = tokens / r["trainer"]
    mfu = 6 * n_params * tps / rate
    print(f"\n[2] MFU: N = {n_params:,} parameters, 6*N*tokens/s = {6 * n_params * tps / 1e9:.1f} GFLOP/s; "
          f"fp32 matmul 512^3 at {nthreads} thread(s) = {rate / 1e9:.1f} GFLOP/s; MFU = {mfu:.0%}")

    # 3: thread policy with and without a competing busy process
    print("\n[3] thread policy: median ms/step (Trainer.step), idle vs one busy competing process")
    for busy in (False, True):
        proc = subprocess.Popen([sys.executable, "-c", BUSY.format(s=60)]) if busy else None
        try:
            time.sleep(0.3)
            for th in (1, 2):
                torch.set_num_threads(th)
                dt = app_trainer(tr, steps)
                print(f"    {'busy' if busy else 'idle'}  threads={th}: {dt * 1e3:7.1f} ms/step")
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
    torch.set_num_threads(nthreads)


if __name__ == "__main__":
    main()
