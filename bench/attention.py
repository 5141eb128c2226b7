"""Benchmark: attention's O(n^2) cost measured, and dense vs tiled (FlashAttention-style) time.

Run:  .venv/bin/python bench/attention.py [--max-n 4096] [--d 64] [--repeats 3] [--device cpu]

Part 1 times the score matrix Q K^T and full attention softmax(Q K^T / sqrt(d)) V for
n = 128, 256, ... (doubling) and prints the ratio at each doubling: ~4 once n is large enough
that per-call overhead no longer hides the n^2 work (n² attention-cost example).

Part 1 reports the fastest of --repeats samples (the least disturbed one), part 2 the median.

Part 2 times dense_attention against tiled_attention (causal) side by side in one run, with a
small and a large tile. The tiled version is plain Python looping over tiles, one library call
per tile: with small tiles the loop overhead makes it several times SLOWER than dense. With
large tiles on a CPU it can come out even or ahead at large n, for two reasons that are not
FlashAttention's: causal tiles above the diagonal are skipped (dense computes the full square,
then masks it) and a 128x128 block stays in the CPU cache. FlashAttention's real speed-up is
a fused GPU kernel that keeps tiles in on-chip SRAM. What this code does show is that the
result is exact and that no [n, n] matrix is ever held (largest block printed).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from lmviz import device as default_device, device_name  # noqa: E402
from lmviz.attention import dense_attention, tiled_attention  # noqa: E402
from lmviz.chapters.cost import loglog_slope, measure_attention_time  # noqa: E402


def _median_time(fn, repeats: int, sync) -> float:
    fn(); sync()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter(); fn(); sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-n", type=int, default=4096)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default=None)
    ap.add_argument("--blocks", type=int, nargs=2, default=(16, 128), help="small and large tile size")
    args = ap.parse_args()
    dev = torch.device(args.device) if args.device else default_device()
    name = device_name() if dev.type == default_device().type else str(dev)
    ns = [n for n in (128, 256, 512, 1024, 2048, 4096, 8192, 16384) if n <= args.max_n]
    print(f"device: {name}   threads: {torch.get_num_threads()}   d={args.d}   fp32")

    print(f"\n[1] O(n^2): time per attention call (one head; the fastest of {args.repeats} samples), "
          "ratio to the previous n")
    print(f"{'n':>6} {'scores ms':>10} {'x':>6} {'full ms':>10} {'x':>6} {'[n,n] MiB':>10}")
    recs = measure_attention_time(ns, d=args.d, device=dev, repeats=args.repeats)
    for r in recs:
        rs = f"{r.ratio_scores:6.2f}" if r.ratio_scores else f"{'':>6}"
        rf = f"{r.ratio_full:6.2f}" if r.ratio_full else f"{'':>6}"
        print(f"{r.n:>6} {r.t_scores * 1e3:10.3f} {rs} {r.t_full * 1e3:10.3f} {rf} {r.matrix_bytes / 2**20:10.2f}")
    big = [r for r in recs if r.n >= 512] or recs
    if len(big) >= 2:  # least-squares slope of log t against log n: 2 means O(n^2)
        for label, ts in (("scores", [r.t_scores for r in big]), ("full", [r.t_full for r in big])):
            slope = loglog_slope([r.n for r in big], ts)
            print(f"log-log slope for n >= {big[0].n} ({label}): {slope:.2f}  (2 = quadratic; one doubling = 2^slope = {2 ** slope:.2f}x)")

    b1, b2 = args.blocks
    print(f"\n[2] dense vs tiled, causal, tiles {b1} and {b2} (Python loops over tiles; same result; "
          f"the median of {args.repeats} runs)")
    print(f"{'n':>6} {'dense ms':>10} {f'tiled{b1} ms':>11} {'/dense':>7} {f'tiled{b2} ms':>12} {'/dense':>7}"
          f" {'max |diff|':>11} {'largest block vs [n,n]':>23}")
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    g = torch.Generator().manual_seed(0)
    for n in [n for n in ns if n <= 2048]:
        q, k, v = (torch.randn(n, args.d, generator=g).to(dev) for _ in range(3))
        with torch.no_grad():
            td = _median_time(lambda: dense_attention(q, k, v), args.repeats, sync)
            t1 = _median_time(lambda: tiled_attention(q, k, v, b1, b1), args.repeats, sync)
            t2 = _median_time(lambda: tiled_attention(q, k, v, b2, b2), args.repeats, sync)
            out, tr = tiled_attention(q, k, v, b2, b2, trace=True)
            diff = float((out - dense_attention(q, k, v)).abs().max())
        print(f"{n:>6} {td * 1e3:10.3f} {t1 * 1e3:11.3f} {t1 / td:7.2f} {t2 * 1e3:12.3f} {t2 / td:7.2f}"
              f" {diff:11.2e} {tr.max_block_elems:>11} vs {n * n:>9}")


if __name__ == "__main__":
    main()
