"""Compare lmviz.limits.estimate with a real training step: peak memory and step time.

Each configuration runs in its own subprocess (peak RSS, ``ru_maxrss``, is per process): it
imports torch, builds the Trainer, takes warm-up steps, and reports the peak resident memory
above the baseline after ``import torch`` next to the estimate of weights + gradients + AdamW +
activations (the estimate's display copies are left out: the bench keeps none).

    python bench/budget.py            # a few small configurations, side by side
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = {  # name: TrainConfig overrides (on the "default" preset)
    "default": {},
    "wide-T256": dict(n_layer=4, n_head=4, d_model=256, block_size=256, batch_size=8),
    "deep-T128": dict(n_layer=8, n_head=8, d_model=256, block_size=128, batch_size=16),
    "bigger": "bigger",
}


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child(name: str) -> None:
    import torch

    torch.set_num_threads(1)
    from lmviz.limits import OVERHEAD_BYTES, STATE_FLOATS_PER_PARAM, estimate
    from lmviz.train import PRESETS, Trainer, corpus_text, make_config

    spec = CONFIGS[name]
    cfg = PRESETS[spec] if isinstance(spec, str) else make_config("default", **spec)
    cfg = make_config("default", **{**cfg.to_dict(), "max_steps": 10})
    text = corpus_text("english")[:200_000]
    base = _rss_kib()
    peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tr = Trainer(text, cfg, device="cpu")
    tr.step(1)
    t0 = time.perf_counter()
    tr.step(2)
    dt = (time.perf_counter() - t0) / 2
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    est = estimate(cfg, tr.tokenizer.vocab_size, "cpu")
    measured = (max(peak, peak0) - base) * 1024
    # the bench keeps no display copy or download blob: compare with weights+grads+AdamW only
    train_state = (est.state_bytes - OVERHEAD_BYTES) * 4 // STATE_FLOATS_PER_PARAM + OVERHEAD_BYTES
    print(json.dumps({"name": name, "params": est.params, "measured_mib": measured / 2**20,
                      "estimate_mib": (train_state + est.activation_bytes) / 2**20,
                      "step_s": dt, "estimate_step_s": est.step_s,
                      "flops_per_s": est.step_flops / dt}))


def main() -> None:
    print(f"{'config':<11} {'params':>9} {'peak MiB':>9} {'est MiB':>8} {'ratio':>6} "
          f"{'step s':>7} {'est s':>6} {'GFLOP/s':>8}")
    for name in CONFIGS:
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True,
                             timeout=600, cwd=ROOT)
        if out.returncode:
            print(name, "failed:", out.stderr[-500:])
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:<11} {r['params']:>9,} {r['measured_mib']:>9.0f} {r['estimate_mib']:>8.0f} "
              f"{r['estimate_mib'] / r['measured_mib']:>6.2f} {r['step_s']:>7.2f} {r['estimate_step_s']:>6.2f} "
              f"{r['flops_per_s'] / 1e9:>8.1f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
