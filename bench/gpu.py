"""The GPU path, proven in one prepared run (issue 16): training, decoding and the attention trace
on CUDA, each checked against the same computation on the CPU.

    python bench/gpu.py            # on a CUDA machine: the figures for the README
    python bench/gpu.py --quick    # small sizes, a smoke run (on CPU it always runs small)

1. **Training** of the ``default`` and the ``bigger`` preset (lmviz.train.Trainer: bf16 autocast
   on CUDA, fp32 on CPU), after a few warm-up steps: tokens/s and MFU = tokens/s × FLOPs per
   token / the device's dense bf16 peak (FLOPs per token ≈ 6·N + 12·L·d·T, N the parameters,
   L layers, d width, T context). The peak comes from a small table by device name; a device not
   in it gets a measured large bf16 matmul as its peak (said so). On CPU the "peak" is a measured
   fp32 matmul.
2. **Match**: the same seed gives the same weights and batches on both devices (the trainer draws
   them on the CPU), so the first losses of the CUDA run must match the CPU fp32 run within the
   tolerance of bf16 (``--loss-rtol``, default 2 %).
3. **Decoding**, cached vs uncached (lmviz.chapters.kv_cache.measure_decode), and greedy tokens
   and logits of ``generate_cached`` on CUDA vs CPU (fp32 on both: same tokens; logits within
   ``--logit-atol``).
4. **The attention chapter's trace** (``GPT.forward_trace``) on CUDA vs CPU: attention weights
   within ``--att-atol``.
5. **At scale** (on CUDA; on the CPU with ``--self-check`` at toy size; the app's training budget refuses models this size): the same training
   loop (``lmviz.train.train_steps``, bf16 autocast, fused AdamW) on a GPT-2-small-sized model
   (12 layers, 768 wide, context 1024, a 50,304-token vocabulary, batch 16, random tokens: speed
   does not depend on what they are), tokens/s and MFU; and the KV-cache decode of that model after
   a 2,048-token prompt, cached vs uncached (fp32), where the GPU is no longer bound by launches.

Without CUDA it runs everything on the CPU at small sizes, says so, and checks nothing against
itself. The last line reads ``gpu bench: DEVICE, ok`` or ``gpu bench: DEVICE, MISMATCH (...)``;
the exit status is 1 on a mismatch.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import lmviz  # noqa: E402

# dense bf16 peak FLOP/s (no sparsity) by a name fragment of torch.cuda.get_device_name()
PEAK_BF16 = (("H200", 989e12), ("H100", 989e12), ("GH200", 989e12), ("A100", 312e12),
             ("L40S", 362e12), ("L40", 181e12), ("L4", 121e12), ("A10", 125e12),
             ("RTX 4090", 165e12), ("RTX 3090", 71e12))


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def matmul_flops(dev: torch.device, n: int, dtype: torch.dtype, reps: int = 5) -> float:
    """Measured FLOP/s of an n×n matmul (the best of ``reps``)."""
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    a @ b
    sync(dev)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        sync(dev)
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def peak(dev: torch.device, name: str) -> tuple[float, str]:
    if dev.type == "cpu":
        return matmul_flops(dev, 1024, torch.float32), "measured fp32 1024² matmul (CPU)"
    for frag, flops in PEAK_BF16:
        if frag.lower() in name.lower():
            return flops, f"{frag} dense bf16 peak (table)"
    return matmul_flops(dev, 8192, torch.bfloat16), "measured bf16 8192² matmul (device not in the table)"


def train_rate(preset: str, dev: torch.device, text: str, steps: int, warm: int, **over):
    """(tokens/s, FLOPs per token, params, losses of every step) for ``steps`` timed steps."""
    from lmviz.train import Trainer, make_config

    cfg = make_config(preset, max_steps=warm + steps, eval_every=10 ** 6, **over)
    tr = Trainer(text, cfg, device=dev)
    losses = [m.loss for m in tr.step(warm)]
    sync(dev)
    t0 = time.perf_counter()
    losses += [m.loss for m in tr.step(steps)]
    sync(dev)
    dt = time.perf_counter() - t0
    n = tr.num_params()
    per_token = 6 * n + 12 * cfg.n_layer * cfg.d_model * cfg.block_size
    return tr.tokens_per_step * steps / dt, per_token, n, losses


def scale_rate(dev: torch.device, n_layer: int, d_model: int, block: int, batch: int, vocab: int,
               steps: int, warm: int) -> tuple[float, int, int]:
    """(tokens/s, FLOPs per token, params) of the one training loop on a model of this size."""
    from lmviz.model import GPT, GPTConfig, init_weights
    from lmviz.train import TrainConfig, adamw, train_steps

    g = torch.Generator().manual_seed(0)
    cfg = GPTConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=d_model // 64,
                    n_kv_head=d_model // 64, d_model=d_model)
    model = GPT(cfg)
    init_weights(model, g)
    model.to(dev).train()
    opt = adamw(model, TrainConfig())
    data = torch.randint(0, vocab, (batch, block + 1), generator=g).to(dev)     # one fixed batch
    bf16 = dev.type == "cuda"

    def loss_of(x, y):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=bf16):
            return model(x, y)[1]

    run = lambda n: list(train_steps(model, opt, lambda: (data[:, :-1], data[:, 1:]), lambda k: 3e-4, n,
                                     clip=1.0, loss_of=loss_of))
    run(warm)
    sync(dev)
    t0 = time.perf_counter()
    run(steps)
    sync(dev)
    dt = time.perf_counter() - t0
    n = sum(p.numel() for p in model.parameters())
    return batch * block * steps / dt, 6 * n + 12 * n_layer * d_model * block, n


def decode_check(dev: torch.device, name: str, prompt_len: int, new: int, atol: float,
                 compare: bool, n_layer: int = 6, d_model: int = 256, n_head: int = 8) -> tuple[str, bool]:
    from lmviz.chapters.kv_cache import measure_decode
    from lmviz.kv_cache import generate_cached
    from lmviz.model import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=256, block_size=prompt_len + new, n_layer=n_layer, n_head=n_head,
                    n_kv_head=n_head, d_model=d_model, pos="rope")
    cpu_model = GPT(cfg).eval()
    prompt = torch.randint(0, cfg.vocab_size, (prompt_len,)).tolist()
    model = cpu_model if dev.type == "cpu" else GPT(cfg).to(dev).eval()
    if model is not cpu_model:
        model.load_state_dict(cpu_model.state_dict())
    measure_decode(model, prompt[:16], 8, name)                     # warm-up
    r = measure_decode(model, prompt, new, name)
    line = (f"decode ({prompt_len}-token prompt, {new} new, {n_layer}x{d_model} RoPE model): cached {r.total_cached_s:.3f} s, "
            f"uncached {r.total_uncached_s:.3f} s, speed-up {r.speedup:.1f}x")
    if not compare:
        return line, True
    k = min(new, 32)
    a = generate_cached(cpu_model, prompt, k)
    b = generate_cached(model, prompt, k)
    diff = float((a.step_logits - b.step_logits).abs().max())
    same = a.tokens == b.tokens
    ok = same and diff <= atol
    return line + f"; vs CPU: {k} greedy tokens {'identical' if same else 'DIFFER'}, max |Δlogit| {diff:.2e} " \
                  f"(tolerance {atol:g})", ok


def trace_check(dev: torch.device, atol: float, compare: bool) -> tuple[str, bool]:
    from lmviz.checkpoint import load_default

    model, tok, _ = load_default()
    ids = tok.encode("The capital of France is Paris.")[: model.cfg.block_size]
    t0 = time.perf_counter()
    cpu = model.forward_trace(torch.tensor(ids))
    t_cpu = time.perf_counter() - t0
    if not compare:
        return f"attention trace of the default model ({len(ids)} tokens): {1e3 * t_cpu:.1f} ms on CPU", True
    import copy

    gm = copy.deepcopy(model).to(dev)
    gm.forward_trace(torch.tensor(ids, device=dev))                # warm-up
    sync(dev)
    t0 = time.perf_counter()
    g = gm.forward_trace(torch.tensor(ids, device=dev))
    sync(dev)
    t_gpu = time.perf_counter() - t0
    diff = max(float((a.weights - b.weights.cpu()).abs().max()) for a, b in zip(cpu.layers, g.layers))
    ok = diff <= atol
    return (f"attention trace of the default model ({len(ids)} tokens): CPU {1e3 * t_cpu:.1f} ms, "
            f"{dev.type.upper()} {1e3 * t_gpu:.1f} ms; max |Δ attention weight| {diff:.2e} (tolerance {atol:g})"), ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--cpu", action="store_true", help="stay on the CPU even when CUDA is present")
    ap.add_argument("--steps", type=int, default=100, help="timed training steps per preset on CUDA")
    ap.add_argument("--loss-rtol", type=float, default=0.02)
    ap.add_argument("--logit-atol", type=float, default=1e-3)
    ap.add_argument("--att-atol", type=float, default=1e-4)
    ap.add_argument("--self-check", action="store_true",
                    help="on CPU, run the comparisons anyway (CPU against CPU: exercises the checks' code)")
    args = ap.parse_args()
    dev = torch.device("cpu") if args.cpu else lmviz.device()
    lmviz.set_threads()
    name = "CPU" if dev.type == "cpu" else torch.cuda.get_device_name(0)
    small = args.quick or dev.type == "cpu"
    if dev.type == "cpu":
        print("no CUDA device (or --cpu): everything runs on the CPU at small sizes; these are not "
              "GPU figures" + (" (--self-check: CPU compared with CPU)" if args.self_check
                               else " and there is nothing to compare against"))
    else:
        torch.backends.cuda.matmul.allow_tf32 = False               # fp32 checks stay fp32
        print(f"device: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    pk, pk_src = peak(dev, name)
    print(f"peak: {pk / 1e12:.1f} TFLOP/s ({pk_src})")

    from lmviz.train import corpus_text

    text = corpus_text("english")
    problems = []
    compare = dev.type == "cuda" or args.self_check
    presets = (("tiny", {}), ("default", {})) if small else (("default", {}), ("bigger", {}))
    steps, warm = (3, 2) if small else (args.steps, 10)
    for preset, over in presets:
        tps, per_tok, n, losses = train_rate(preset, dev, text, steps, warm, **over)
        mfu = tps * per_tok / pk
        line = (f"train {preset:<8} {n:>11,} params: {tps:>12,.0f} tokens/s, "
                f"{tps * per_tok / 1e12:7.3f} TFLOP/s, MFU {100 * mfu:6.2f} %")
        if compare:
            k = min(5, len(losses))
            _, _, _, ref = train_rate(preset, torch.device("cpu"), text, 0, k, **over)
            rel = max(abs(a - b) / abs(b) for a, b in zip(losses[:k], ref[:k]))
            line += f"; first {k} losses vs CPU fp32: max rel. diff {rel:.1e} (tolerance {args.loss_rtol:g})"
            if rel > args.loss_rtol:
                problems.append(f"{preset} losses")
        print(line, flush=True)

    line, ok = decode_check(dev, name, *((32, 16) if small else (512, 256)), args.logit_atol, compare)
    print(line, flush=True)
    if not ok:
        problems.append("decoding")
    line, ok = trace_check(dev, args.att_atol, compare)
    print(line, flush=True)
    if not ok:
        problems.append("attention trace")
    if dev.type == "cuda" or args.self_check:
        big = dev.type == "cuda" and not args.quick
        L, d, T, B, V = (12, 768, 1024, 16, 50304) if big else (2, 64, 32, 2, 256)
        tps, per_tok, n = scale_rate(dev, L, d, T, B, V, *((20, 5) if big else (2, 1)))
        print(f"train at scale ({L}x{d}, context {T}, batch {B}, vocab {V:,}) {n:,} params: {tps:,.0f} tokens/s, "
              f"{tps * per_tok / 1e12:.1f} TFLOP/s, MFU {100 * tps * per_tok / pk:.1f} %", flush=True)
        line, _ = decode_check(dev, name, *((2048, 64) if big else (32, 8)), args.logit_atol, False,
                               n_layer=L, d_model=d, n_head=d // 64)
        print(line, flush=True)
    print(f"gpu bench: {name}, " + ("ok" if not problems else f"MISMATCH ({', '.join(problems)})"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
