"""Branch on another token (greedy-vs-best example, on the current model): greedy decoding for a
few tokens, then, at one step, a candidate other than the arg-max is forced and greedy goes on
from it. Both continuations have the same length, and each token carries its log-probability
under the model given everything before it, so their sums compare the two whole sequences.

Greedy takes the most probable token at every step; a less probable step can still lead to a
continuation whose summed log-probability is higher: greedy is not the most probable sequence.

- ``greedy_run()``   the greedy continuation, and at every step the most probable candidates;
- ``branch_from()``  the branch at ``step`` with ``token`` forced, greedy after it, beside greedy.

Both decode with a KV cache (lmviz.kv_cache.generate_cached): a branch re-reads the prompt and
the shared tokens once, then one token per step. Pure functions of the model and the ids; they
return records, the page draws them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lmviz.kv_cache import generate_cached

BRANCH_LEN = 12      # tokens in each continuation (a lecture's line: long enough to pay back a detour)
TOP = 5              # candidates offered at each step


@dataclass(frozen=True)
class Continuation:
    tokens: tuple[int, ...]       # the generated ids after the prompt
    logprobs: tuple[float, ...]   # ln p of each token given the prompt and the tokens before it (float64)
    forced_at: int                # the step whose token was chosen by hand (-1: greedy at every step)

    @property
    def total(self) -> float:
        """Σ ln p: the log of the whole continuation's probability given the prompt."""
        return float(sum(self.logprobs))


@dataclass(frozen=True)
class GreedyRun:
    prompt: tuple[int, ...]                   # the prompt's ids
    path: Continuation                        # greedy's tokens and their log-probabilities
    top: tuple[tuple[int, ...], ...]          # per step: the TOP most probable ids, most probable first
    top_probs: tuple[tuple[float, ...], ...]  # their probabilities at that step


@dataclass(frozen=True)
class Branch:
    prompt: tuple[int, ...]   # the prompt's ids
    step: int                 # where the branch leaves greedy (0: the first generated token)
    greedy: Continuation      # greedy at every step
    branch: Continuation      # greedy's tokens before `step`, the chosen token, then greedy again

    @property
    def chosen(self) -> int:
        """The token forced at ``step``."""
        return self.branch.tokens[self.step]

    @property
    def margin(self) -> float:
        """Σ ln p of the branch minus greedy's: > 0 when the branch is the more probable sequence
        (by a factor of exp(margin))."""
        return self.branch.total - self.greedy.total


def _logprobs(step_logits: torch.Tensor, tokens) -> list[float]:
    """ln p of each token under its step's logits [n, V] (float64 log-softmax)."""
    lp = torch.log_softmax(step_logits.double(), dim=-1)
    return [float(lp[i, t]) for i, t in enumerate(tokens)]


def _fits(model, n_prompt: int, n: int) -> None:
    if n_prompt < 1:
        raise ValueError("the prompt must have at least one token")
    if model.cfg.pos == "learned" and n_prompt + n - 1 > model.cfg.block_size:
        raise ValueError(f"prompt ({n_prompt}) + {n} tokens exceed the context of {model.cfg.block_size}")


@torch.no_grad()
def greedy_run(model, prompt, n: int = BRANCH_LEN, top: int = TOP, cancel=None) -> GreedyRun:
    """Greedy decoding of ``n`` tokens after ``prompt`` with every step's ``top`` candidates.

    >>> from lmviz.model import GPT, GPTConfig
    >>> _ = torch.manual_seed(0)
    >>> m = GPT(GPTConfig(vocab_size=7, block_size=16, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
    >>> r = greedy_run(m, [1, 2], n=4, top=3)
    >>> len(r.path.tokens), all(r.top[i][0] == t for i, t in enumerate(r.path.tokens))
    (4, True)
    """
    prompt = [int(i) for i in prompt]
    _fits(model, len(prompt), n)
    g = generate_cached(model, prompt, n, max_len=len(prompt) + n - 1, cancel=cancel)
    probs = torch.softmax(g.step_logits.double(), dim=-1)                     # [n, V]
    k = min(int(top), probs.shape[-1])
    order = torch.sort(probs, dim=-1, descending=True, stable=True)          # ties: the lower id first
    ids = order.indices[:, :k]
    return GreedyRun(tuple(prompt), Continuation(tuple(g.tokens), tuple(_logprobs(g.step_logits, g.tokens)), -1),
                     tuple(tuple(int(i) for i in row) for row in ids),
                     tuple(tuple(float(p) for p in row) for row in order.values[:, :k]))


@torch.no_grad()
def branch_from(model, run: GreedyRun, step: int, token: int, cancel=None) -> Branch:
    """Force ``token``, one of the run's candidates at ``step``, and continue greedily to the same
    length. The forced token's probability is the run's own at that step (the context there is
    the same); the tokens after it are decoded afresh.

    >>> from lmviz.model import GPT, GPTConfig
    >>> _ = torch.manual_seed(0)
    >>> m = GPT(GPTConfig(vocab_size=7, block_size=16, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
    >>> r = greedy_run(m, [1, 2], n=4, top=3)
    >>> b = branch_from(m, r, 1, r.top[1][1])
    >>> b.chosen == r.top[1][1], b.branch.tokens[:1] == r.path.tokens[:1], len(b.branch.tokens)
    (True, True, 4)
    """
    g = run.path
    n = len(g.tokens)
    if not 0 <= step < n:
        raise ValueError(f"step {step} outside 0..{n - 1}")
    token = int(token)
    if token not in run.top[step]:
        raise ValueError(f"token {token} is not one of the {len(run.top[step])} candidates at step {step}")
    if token == g.tokens[step]:                      # greedy's own choice: the branch is greedy
        return Branch(run.prompt, step, g, Continuation(g.tokens, g.logprobs, step))
    head = list(g.tokens[:step])
    lp_forced = math.log(run.top_probs[step][run.top[step].index(token)])
    rest = n - step - 1
    tail_tokens, tail_lp = [], []
    if rest:
        ctx = list(run.prompt) + head + [token]
        t = generate_cached(model, ctx, rest, max_len=len(ctx) + rest - 1, cancel=cancel)
        tail_tokens, tail_lp = list(t.tokens), _logprobs(t.step_logits, t.tokens)
    b = Continuation(tuple(head + [token] + tail_tokens),
                     tuple(list(g.logprobs[:step]) + [lp_forced] + tail_lp), step)
    return Branch(run.prompt, step, g, b)


def sequence_logprobs(model, prompt, tokens) -> list[float]:
    """ln p of each of ``tokens`` after ``prompt``, one uncached forward pass over the whole
    sequence (the check that a record's sums are the model's own)."""
    ids = [int(i) for i in prompt] + [int(t) for t in tokens]
    with torch.no_grad():
        logits = model(torch.tensor([ids], device=model.device))[0][0].float().cpu()   # [T, V]
    lp = torch.log_softmax(logits.double(), dim=-1)
    n0 = len(prompt)
    return [float(lp[n0 - 1 + i, t]) for i, t in enumerate(tokens)]
