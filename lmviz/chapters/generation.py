"""Chapter 8 · Generation, the live model's part: a stepper that samples one token at a time from
the current model under a seed, N continuations drawn at once from where it stands, and the search
over a few candidates per step that shows greedy is not the most probable sequence.

The stepper is a record: ``start(ids, seed)`` makes one, ``Stepper.step(logits, …)`` returns the
next (the logits of its text come from the caller, who may share them between sessions), and
``Stepper.spread(model, …)`` draws continuations without moving it. Its generator lives in the
record as a state, so the same prompt, seed and settings give the same text on every machine's CPU.

>>> from lmviz.model import GPT, GPTConfig
>>> from lmviz.sampling import next_logits
>>> m = GPT(GPTConfig(vocab_size=5, block_size=8, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
>>> s = start([1, 2], seed=0)
>>> for _ in range(3):
...     s = s.step(next_logits(m, s.ids), temperature=1.0, top_k=0, top_p=1.0)
>>> s.n_new, len(s.draws), s.ids[:2]
(3, 3, (1, 2))
>>> t = start([1, 2], seed=0)
>>> for _ in range(3):
...     t = t.step(next_logits(m, t.ids), temperature=1.0, top_k=0, top_p=1.0)
>>> t.ids == s.ids                                   # the seed decides every draw
True
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from lmviz.sampling import SearchResult, best_sequence, next_logits, sample_next_token, softmax_t

__all__ = ["Draw", "Stepper", "start", "finite", "live_search", "N_SPREAD", "SPREAD_LEN"]

N_SPREAD, SPREAD_LEN = 5, 40        # "sample 5 times": continuations and their length in tokens


@dataclass(frozen=True)
class Draw:
    temperature: float                       # τ this token was drawn at
    top_k: int                               # k (0: off)
    top_p: float                             # p (1: off)
    top3: tuple[tuple[int, float], ...]      # the three most probable ids after τ, with those probabilities
    kept: int                                # candidates the filters left
    u: float                                 # the uniform draw in [0, 1) that picked the token
    token: int                               # the id drawn
    prob: float                              # its probability after the filters


@dataclass(frozen=True)
class Stepper:
    ids: tuple[int, ...]          # the prompt's ids, then every token drawn
    n_prompt: int                 # how many of ``ids`` are the prompt
    seed: int                     # the generator's seed (a spread's i-th generator: seed + 1 + i)
    rng: torch.Tensor             # the generator's state before the next draw (torch.Generator.get_state)
    draws: tuple[Draw, ...] = ()  # one record per token drawn, in order

    @property
    def n_new(self) -> int:
        """Tokens drawn after the prompt."""
        return len(self.ids) - self.n_prompt

    def _generator(self) -> torch.Generator:
        g = torch.Generator()
        g.set_state(self.rng)
        return g

    def peek_u(self) -> float:
        """The next uniform draw, without taking it (the page shows where it will land)."""
        return float(torch.rand((), generator=self._generator(), dtype=torch.float64))

    def step(self, logits, temperature: float, top_k: int, top_p: float) -> "Stepper":
        """The stepper after one token drawn from ``logits`` (the model's after ``self.ids``)
        filtered by τ, top-k (0: off) and top-p."""
        g = self._generator()
        s = sample_next_token(logits, g, temperature, top_k or None, top_p)
        top = torch.topk(s.dist.p_temp, min(3, s.dist.p_temp.numel()))
        draw = Draw(float(temperature), int(top_k), float(top_p),
                    tuple((int(i), float(v)) for v, i in zip(top.values, top.indices)),
                    len(s.dist.kept), s.u, s.token, s.prob)
        return replace(self, ids=self.ids + (s.token,), rng=g.get_state(), draws=self.draws + (draw,))

    def spread(self, model, temperature: float, top_k: int, top_p: float, n: int = N_SPREAD,
               length: int = SPREAD_LEN) -> tuple[tuple[int, ...], ...]:
        """``n`` continuations of ``length`` tokens from the current text at these settings, the
        i-th with its own generator (seed + 1 + i), computed as one batch. The stepper itself does
        not move."""
        gens = [torch.Generator().manual_seed(self.seed + 1 + i) for i in range(n)]
        rows = [list(self.ids) for _ in range(n)]
        for _ in range(length):
            logits = next_logits(model, rows)                   # [n, V]: one batch
            for r, g, z in zip(rows, gens, logits):
                r.append(sample_next_token(z, g, temperature, top_k or None, top_p).token)
        return tuple(tuple(r[len(self.ids):]) for r in rows)


def start(ids, seed: int) -> Stepper:
    """A stepper at the end of the prompt ``ids``, its generator seeded with ``seed``."""
    return Stepper(tuple(int(i) for i in ids), len(ids), int(seed), torch.Generator().manual_seed(int(seed)).get_state())


def finite(logits) -> bool:
    """True when every logit is finite: a model with NaN or infinite weights gives none a
    probability can come from."""
    return bool(torch.isfinite(torch.as_tensor(logits)).all())


def live_search(model, ids, depth: int, branch: int) -> SearchResult:
    """lmviz.sampling.best_sequence on the model after ``ids``, expanding the ``branch`` most
    probable tokens at each of ``depth`` steps (paths of token ids: any tokenizer)."""
    ids = list(ids)
    return best_sequence(lambda path: softmax_t(next_logits(model, ids + list(path))).tolist(),
                         start=(), depth=depth, vocab=range(model.cfg.vocab_size), eos=None, branch=branch)
