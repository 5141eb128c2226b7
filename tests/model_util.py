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
