"""Cached vs uncached greedy decoding, measured side by side in one run (issue 7, decode-speed example).

A 6-layer, 256-wide GPT (8 heads, RoPE so the context is not capped by learned positions) reads a
512-token prompt and generates 256 tokens twice, step by step: once with a KV cache (one token
per step) and once rerunning the whole context every step. The two runs alternate at every step
(lmviz.chapters.kv_cache.measure_decode), so both see the same machine load. Prints the totals, the
speed-up (target >= 8x on CPU), and the slope of the per-step cached time against the cache
length (attention still reads every cached row, so it grows roughly linearly).

    .venv/bin/python bench/kv_cache.py            # the issue's sizes
    .venv/bin/python bench/kv_cache.py --quick    # 128 + 64 tokens, a smoke run

Measured here (2-core server, 1 torch thread; the README's row), in the units it prints:
    cached 1.70 s, uncached 40.5 s for 255 timed decode steps -> speed-up 23.8x; slope of the
    cached step 2.25 ms per 1,000 cached tokens (cached step 6.2 ms at ~513 tokens -> 6.9 ms
    at ~767 tokens). Under load the absolute times grow; the ratio holds (alternating steps).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import lmviz  # noqa: E402
from lmviz.chapters.kv_cache import measure_decode, slope  # noqa: E402
from lmviz.model import GPT, GPTConfig  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="stay on CPU even when CUDA is present")
    args = ap.parse_args()
    if args.quick:
        args.prompt, args.new = 128, 64
    dev = torch.device("cpu") if args.cpu else lmviz.device()
    name = "CPU" if dev.type == "cpu" else torch.cuda.get_device_name(0)
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=256, block_size=args.prompt + args.new, n_layer=6, n_head=8, n_kv_head=8,
                    d_model=256, pos="rope")
    model = GPT(cfg).to(dev).eval()
    prompt = torch.randint(0, cfg.vocab_size, (args.prompt,)).tolist()
    measure_decode(model, prompt[:16], 8, name)                      # warm-up (allocator, kernels)
    r = measure_decode(model, prompt, args.new, name)
    s_c = slope(r.cache_len, r.cached_ms)
    s_u = slope(r.cache_len, r.uncached_ms)
    c0, c1 = sum(r.cached_ms[:16]) / 16, sum(r.cached_ms[-16:]) / 16
    print(f"device: {name}, threads: {torch.get_num_threads()}, model: 6 layers x 256 wide, "
          f"{model.num_params():,} params")
    print(f"prompt {args.prompt} tokens, {args.new} new tokens ({len(r.cache_len)} timed decode steps)")
    print(f"{'':>10} {'total s':>9} {'ms/step':>9} {'slope ms/1k tok':>16}")
    print(f"{'cached':>10} {r.total_cached_s:9.3f} {1e3 * r.total_cached_s / len(r.cache_len):9.2f} {s_c * 1e3:16.2f}")
    print(f"{'uncached':>10} {r.total_uncached_s:9.3f} {1e3 * r.total_uncached_s / len(r.cache_len):9.2f} {s_u * 1e3:16.2f}")
    print(f"speed-up (uncached / cached): {r.speedup:.1f}x  (target >= 8x)")
    print(f"cached step: {c0:.2f} ms at ~{r.cache_len[0]} tokens -> {c1:.2f} ms at ~{r.cache_len[-1]} tokens")


if __name__ == "__main__":
    main()
