"""Turning logits into the next token: the one generation path of lmviz.

- :func:`next_logits` is the only place a model is asked for the next token's scores (its
  context is cropped to the model's ``block_size``; one row or a batch of rows);
- :func:`distributions` applies temperature -> top-k -> top-p, :func:`pick` picks the token
  from the final distribution with one uniform draw, :func:`sample_next_token` does both and
  returns the whole step as a record, :func:`greedy` is the arg-max;
- :func:`generate` is the loop (``step_fn(ids) -> logits [V]``; :func:`model_step` wraps a GPT):
  the trainer's samples, the generation chapter and the tests all use it.

Apart from ``next_logits`` everything here is a pure function on a 1-D tensor of logits or
probabilities over the vocabulary ([V]), so the same code serves the notes' toy tables, the GPT
trained in the app and any other model.

Conventions (each one is pinned by a test):

- Filter order: temperature -> top-k -> top-p. Temperature reshapes the whole distribution,
  top-k keeps the k most probable tokens and renormalises, top-p then keeps the smallest
  prefix of *that* renormalised distribution whose mass reaches p (as in HF transformers,
  where top-p sees the top-k-filtered scores).
- Ties: tokens are ranked by probability, and equal probabilities rank the lower token id
  first (a stable sort). Greedy picks the lowest id among equal maxima.
- ``temperature == 0`` is greedy decoding by convention: the formula exp(z/τ) cannot divide
  by zero, but as τ -> 0+ the distribution tends to a one-hot on the unique arg-max, so τ = 0
  returns that one-hot. Negative or non-finite τ is an error.
- ``top_k`` None or 0 means "off" (keep everything, as in HF transformers); k >= V also keeps
  everything; k < 0 is an error.
- ``top_p`` None or >= 1 means "off"; p = 0 keeps exactly one token (at least one token is
  always kept, so p = 0 behaves like greedy); p outside [0, 1] is an error. The cumulative
  mass is compared with a tolerance of 1e-6, so 0.5 + 0.3 "reaches" 0.8 despite rounding.
- A step draws exactly one uniform number u ~ U[0, 1) from the caller's ``torch.Generator``
  and picks the token whose slice of the cumulative bar (kept tokens, most probable first)
  contains u. So one seed gives the same u's whatever the settings: changing τ, k or p
  changes the distribution the dice land on, not the dice. Greedy still draws its u.

All computation is float64 on the CPU: V is at most tens of thousands, so this is cheap, and
the figures on the page then match hand calculation to many digits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Mapping, Sequence

import torch

from .cancel import check_cancel

__all__ = [
    "Filtered", "Distributions", "SampleStep", "softmax_t", "temperature_curves",
    "top_k_filter", "top_p_filter", "distributions", "sample_next_token", "generate",
    "next_logits", "model_step", "pick", "greedy",
    "TOY_VOCAB", "TOY_TABLE", "GreedyStep", "greedy_trace",
    "table_prob_fn", "TreeNode", "SearchResult", "best_sequence",
]

P_TOLERANCE = 1e-6  # slack when testing "cumulative mass reaches p" (float rounding)


def _as_f64(x) -> torch.Tensor:
    """Any 1-D array-like -> a float64 CPU tensor [V] (copied, never aliased)."""
    t = torch.as_tensor(x).detach().to("cpu", torch.float64).clone()
    if t.ndim != 1 or t.numel() == 0:
        raise ValueError(f"expected a non-empty 1-D tensor over the vocabulary, got shape {tuple(t.shape)}")
    return t


def _ranked(probs: torch.Tensor) -> torch.Tensor:
    """Token ids sorted by probability, descending; ties keep the lower id first.

    >>> _ranked(torch.tensor([0.2, 0.4, 0.4])).tolist()
    [1, 2, 0]
    """
    return torch.sort(probs, descending=True, stable=True).indices


def _support(probs: torch.Tensor) -> torch.Tensor:
    """Ids with positive probability [m], ranked as in _ranked (zero mass is never "kept")."""
    r = _ranked(probs)
    return r[probs[r] > 0]


@dataclass(frozen=True)
class Filtered:
    probs: torch.Tensor  # [V] float64, renormalised; zero outside `kept`
    kept: list[int]      # kept token ids, most probable first (ties: lower id first)


@dataclass(frozen=True)
class Distributions:
    logits: torch.Tensor   # [V] float64, the raw scores
    p_temp: torch.Tensor   # [V] softmax(logits / τ) (one-hot at τ = 0)
    p_top_k: torch.Tensor  # [V] after top-k, renormalised (== p_temp when k is off)
    p_final: torch.Tensor  # [V] after top-p, renormalised: what is sampled from
    kept_k: list[int]      # ids kept by top-k (all ids with p_temp > 0 when off)
    kept: list[int]        # ids kept at the end, most probable first
    temperature: float     # τ used (0 = greedy convention)
    top_k: int | None      # k used (None = off)
    top_p: float | None    # p used (None = off)


@dataclass(frozen=True)
class SampleStep:
    dist: Distributions            # every distribution along the filter chain
    u: float                       # the uniform draw in [0, 1) that picked the token
    token: int                     # chosen token id
    prob: float                    # p_final[token]: probability it was drawn with
    prob_raw: float                # softmax(logits)[token] at τ = 1, before any filter
    prefix: tuple[int, ...] = ()   # ids the model saw (set by `generate`)


# -----------------------------------------------------------------------------
# temperature, top-k, top-p

def softmax_t(logits, temperature: float = 1.0) -> torch.Tensor:
    """p_i = exp(z_i/τ) / Σ_j exp(z_j/τ), float64 [V]; τ = 0 -> greedy one-hot (convention).

    >>> [round(p, 3) for p in softmax_t([2.0, 1.0, -1.0]).tolist()]
    [0.705, 0.259, 0.035]
    >>> softmax_t([1.0, 3.0, 3.0], 0).tolist()
    [0.0, 1.0, 0.0]
    """
    z = _as_f64(logits)
    tau = float(temperature)
    if not math.isfinite(tau) or tau < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if torch.isnan(z).any() or not torch.isfinite(z.max()):
        raise ValueError("logits must not contain NaN and need at least one finite value")
    if tau == 0.0:
        out = torch.zeros_like(z)
        out[int(torch.argmax(z))] = 1.0  # argmax returns the first (lowest) index on ties
        return out
    # subtract the max before dividing: (z - max)/τ <= 0, so exp never overflows even for
    # tiny τ, and -inf logits (masked tokens) give exactly 0
    return torch.softmax((z - z.max()) / tau, dim=0)


def temperature_curves(logits, taus: Sequence[float]) -> torch.Tensor:
    """Probabilities at each temperature: [len(taus), V]; row i is softmax_t(logits, taus[i]).

    >>> temperature_curves([2.0, 1.0, -1.0], [0, 1]).shape
    torch.Size([2, 3])
    """
    return torch.stack([softmax_t(logits, t) for t in taus])


def top_k_filter(probs, k: int | None, _order: torch.Tensor | None = None) -> Filtered:
    """Keep the k most probable tokens and renormalise. k None/0 = off; k >= V keeps all.

    >>> f = top_k_filter([0.50, 0.30, 0.15, 0.05], 2)
    >>> f.kept, [round(p, 3) for p in f.probs.tolist()]
    ([0, 1], [0.625, 0.375, 0.0, 0.0])
    """
    p = _as_f64(probs)
    if k is not None and (int(k) != k or k < 0):
        raise ValueError(f"top_k must be None or an integer >= 0, got {k!r}")
    order = _support(p) if _order is None else _order
    return _keep(p, order if not k else order[: int(k)])


def top_p_filter(probs, p: float | None, _order: torch.Tensor | None = None) -> Filtered:
    """Keep the smallest most-probable set whose mass reaches p, renormalised. p None/>=1 = off.

    >>> top_p_filter([0.50, 0.30, 0.15, 0.05], 0.9).kept  # 0.5 + 0.3 = 0.8 < 0.9: needs three
    [0, 1, 2]
    >>> top_p_filter([0.50, 0.30, 0.15, 0.05], 0.8).kept  # 0.8 reaches 0.8
    [0, 1]
    """
    q = _as_f64(probs)
    if p is not None and not (0.0 <= float(p) <= 1.0 and math.isfinite(float(p))):
        raise ValueError(f"top_p must be None or in [0, 1], got {p!r}")
    order = _support(q) if _order is None else _order
    if p is None or float(p) >= 1.0:
        return _keep(q, order)
    mass = q[order] / q[order].sum()                      # [m] sorted, sums to 1
    before = torch.cumsum(mass, 0) - mass                 # [m] mass strictly before each token
    n_keep = max(1, int((before < float(p) - P_TOLERANCE).sum()))  # always keep >= 1
    return _keep(q, order[:n_keep])


def _keep(p: torch.Tensor, kept: torch.Tensor) -> Filtered:
    """Zero everything outside `kept` (ids [m]) and renormalise."""
    out = torch.zeros_like(p)
    out[kept] = p[kept]
    return Filtered(probs=out / out.sum(), kept=kept.tolist())



def distributions(logits, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> Distributions:
    """Run the whole filter chain (temperature -> top-k -> top-p) without drawing anything.

    Cheap enough to call on every slider move with the cached logits of the current step.

    >>> d = distributions([2.0, 1.0, -1.0], temperature=1.0, top_k=2)
    >>> d.kept, round(float(d.p_final[0]), 3)
    ([0, 1], 0.731)
    """
    z = _as_f64(logits)
    p_temp = softmax_t(z, temperature)
    # sort once: each filter renormalises a subset proportionally, so the ranking carries over
    order = _support(p_temp)                                   # [m] ids, most probable first
    fk = top_k_filter(p_temp, top_k, _order=order)
    fp = top_p_filter(fk.probs, top_p, _order=order[: len(fk.kept)])
    return Distributions(
        logits=z, p_temp=p_temp, p_top_k=fk.probs, p_final=fp.probs, kept_k=fk.kept,
        kept=fp.kept, temperature=float(temperature),
        top_k=int(top_k) if top_k else None,
        top_p=float(top_p) if top_p is not None and float(top_p) < 1.0 else None)


def pick(d: Distributions, u: float) -> int:
    """The token whose slice of the cumulative bar (kept tokens, most probable first) holds u.

    >>> d = distributions([2.0, 1.0, -1.0])
    >>> pick(d, 0.0), pick(d, 0.8), pick(d, 0.99)
    (0, 1, 2)
    """
    cum = torch.cumsum(d.p_final[torch.as_tensor(d.kept, dtype=torch.long)], 0)  # [m]
    j = min(int((cum <= u).sum()), len(d.kept) - 1)  # first slice whose right edge exceeds u
    return d.kept[j]


def greedy(logits) -> int:
    """The arg-max token id (the lowest id among equal maxima).

    >>> greedy(torch.tensor([1.0, 3.0, 3.0]))
    1
    """
    return int(torch.argmax(torch.as_tensor(logits)))


@torch.no_grad()
def next_logits(model, ids) -> torch.Tensor:
    """Logits of the token after ``ids``: [V] for one sequence of ids, [N, V] for N rows of equal
    length. The model sees at most its last ``block_size`` ids. float32 on the CPU.

    >>> from lmviz.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
    >>> z = next_logits(m, [1, 2, 3, 4, 0, 1])          # cropped to the last 4 ids
    >>> z.shape, torch.allclose(z, next_logits(m, [3, 4, 0, 1])), next_logits(m, [[3, 4, 0, 1]] * 2).shape
    (torch.Size([5]), True, torch.Size([2, 5]))
    """
    x = torch.as_tensor(ids, dtype=torch.long)
    one = x.ndim == 1
    if one:
        x = x[None]
    if x.shape[-1] == 0:
        raise ValueError("the prompt must contain at least one token")
    x = x[:, -model.cfg.block_size:].to(model.device)
    logits = model(x)[0][:, -1].float().cpu()                  # [N, V]
    return logits[0] if one else logits


def model_step(model) -> Callable[[list[int]], torch.Tensor]:
    """``step_fn`` for :func:`generate`: ids -> next_logits(model, ids)."""
    return lambda ids: next_logits(model, ids)


def sample_next_token(logits, rng: torch.Generator, temperature: float = 1.0,
                      top_k: int | None = None, top_p: float | None = None) -> SampleStep:
    """Filter the logits, draw one u ~ U[0,1) from `rng`, return the whole step as a record.

    >>> g = torch.Generator().manual_seed(0)
    >>> sample_next_token([2.0, 1.0, -1.0], g, temperature=0).token
    0
    """
    d = distributions(logits, temperature, top_k, top_p)
    u = float(torch.rand((), generator=rng, dtype=torch.float64))
    tok = pick(d, u)
    return SampleStep(dist=d, u=u, token=tok, prob=float(d.p_final[tok]),
                      prob_raw=float(softmax_t(d.logits)[tok]))


def generate(step_fn: Callable[[list[int]], torch.Tensor], prompt_ids: Sequence[int], n: int,
             rng: torch.Generator, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None, stop_ids: Sequence[int] = (), cancel=None) -> Iterator[SampleStep]:
    """Yield one SampleStep per new token: call the model, sample, append, repeat.

    `step_fn(ids)` returns the logits [V] for the token after `ids` (a model wrapper handles
    context truncation; see model_step). Stops after `n` tokens, or right after yielding a token
    in `stop_ids`. ``cancel`` (optional) is asked before every token (see lmviz.cancel).

    >>> step = lambda ids: torch.tensor([0.0, 5.0]) if ids[-1] == 0 else torch.tensor([5.0, 0.0])
    >>> [s.token for s in generate(step, [0], 4, torch.Generator().manual_seed(0), temperature=0)]
    [1, 0, 1, 0]
    """
    ids = list(prompt_ids)
    if not ids:
        raise ValueError("the prompt must contain at least one token")
    for _ in range(int(n)):
        check_cancel(cancel)
        s = sample_next_token(step_fn(list(ids)), rng, temperature, top_k, top_p)
        yield replace(s, prefix=tuple(ids))
        ids.append(s.token)
        if s.token in stop_ids:
            return


# -----------------------------------------------------------------------------
# toy tables for the notes' hand examples (greedy-decoding example, greedy-vs-best example)

TOY_VOCAB = ("<BOS>", "I", "love", "robot", "s", "<EOS>")  # the notes' 6-token toy vocabulary

# ONE toy table for the notes' hand examples: next-token probabilities, one row per prefix,
# aligned with TOY_VOCAB. MADE UP FOR TEACHING: the notes animate greedy decoding with
# "pre-written toy probabilities" whose numbers were lost; these are ours, chosen so that
# - greedy decoding spells <BOS> I love robot s <EOS>, a clear but not certain winner each step
#   (the generation chapter's greedy stepper, the autoregression chapter's chain rule);
# - greedy is not the most probable two-token sequence (greedy-vs-best example): "I" wins the first
#   step (0.5 against 0.4), but after "I" the mass is spread out (best 0.6), while after "robot" it
#   is concentrated (0.9): greedy "I love" has joint 0.5 * 0.6 = 0.30, "robot s" 0.4 * 0.9 = 0.36.
# Prefixes not in the table end the sequence.
TOY_TABLE: dict[tuple[str, ...], tuple[float, ...]] = {
    #                                      <BOS>  I     love  robot s     <EOS>
    ("<BOS>",):                            (0.00, 0.50, 0.10, 0.40, 0.00, 0.00),
    ("<BOS>", "I"):                        (0.00, 0.05, 0.60, 0.15, 0.05, 0.15),
    ("<BOS>", "I", "love"):                (0.00, 0.10, 0.05, 0.65, 0.10, 0.10),
    ("<BOS>", "I", "love", "robot"):       (0.00, 0.05, 0.05, 0.05, 0.55, 0.30),
    ("<BOS>", "I", "love", "robot", "s"):  (0.00, 0.05, 0.05, 0.05, 0.05, 0.80),
    ("<BOS>", "robot"):                    (0.00, 0.00, 0.00, 0.00, 0.90, 0.10),
    ("<BOS>", "love"):                     (0.00, 0.00, 0.00, 0.60, 0.00, 0.40),
}


@dataclass(frozen=True)
class GreedyStep:
    prefix: tuple[str, ...]   # what the model has seen so far
    probs: tuple[float, ...]  # next-token distribution, aligned with the vocabulary
    token: str                # the arg-max (lowest id on ties)
    prob: float               # its probability


def greedy_trace(prob_table: Mapping[tuple[str, ...], Sequence[float]],
                 start: Sequence[str] = ("<BOS>",), vocab: Sequence[str] = TOY_VOCAB,
                 eos: str = "<EOS>", max_steps: int = 50) -> list[GreedyStep]:
    """Greedy decoding on a fixed table: one record per generated token (greedy-decoding example).

    Stops after `eos`, when the prefix is missing from the table, or after max_steps.

    >>> " ".join(s.token for s in greedy_trace(TOY_TABLE))
    'I love robot s <EOS>'
    """
    prefix, steps = tuple(start), []
    while prefix in prob_table and len(steps) < max_steps:
        probs = tuple(float(p) for p in prob_table[prefix])
        i = max(range(len(probs)), key=lambda j: (probs[j], -j))  # ties: lowest id
        steps.append(GreedyStep(prefix=prefix, probs=probs, token=vocab[i], prob=probs[i]))
        prefix = prefix + (vocab[i],)
        if vocab[i] == eos:
            break
    return steps


def table_prob_fn(prob_table: Mapping[tuple, Sequence[float]]):
    """Wrap a prefix -> distribution table as a prob_fn for best_sequence (None = stop)."""
    return lambda prefix: prob_table.get(tuple(prefix))


@dataclass(frozen=True)
class TreeNode:
    path: tuple             # tokens after the start, e.g. ("I", "love")
    prob: float             # conditional probability of the last token given its parent
    joint: float            # product of probabilities along the path
    parent: int             # index of the parent node in SearchResult.nodes (-1 = the root)
    finished: bool          # ended by eos, by depth, or by a prefix the model cannot extend


@dataclass(frozen=True)
class SearchResult:
    start: tuple            # the prefix search began from
    nodes: list[TreeNode]   # every expanded node, parents before children (node 0 = root)
    greedy: tuple           # greedy path (tokens after start)
    greedy_joint: float     # its joint probability
    best: tuple             # most probable finished path found
    best_joint: float       # its joint probability
    exhaustive: bool        # True when no beam or branch limit pruned the tree


def best_sequence(prob_fn: Callable[[tuple], Sequence[float] | None], start: Sequence = ("<BOS>",),
                  depth: int = 2, vocab: Sequence = TOY_VOCAB, eos="<EOS>",
                  beam_width: int | None = None, branch: int | None = None,
                  min_prob: float = 0.0) -> SearchResult:
    """Search continuations of `start` up to `depth` tokens and compare with greedy (greedy-vs-best example).

    Exhaustive by default; `beam_width` keeps only the most probable open paths per level and
    `branch` expands only each node's most probable children (for a live model's large
    vocabulary). A path finishes at `eos`, at `depth`, or where prob_fn returns None.
    Paths are compared by joint probability (no length normalisation).

    >>> r = best_sequence(table_prob_fn(TOY_TABLE))
    >>> r.greedy, round(r.greedy_joint, 2), r.best, round(r.best_joint, 2)
    (('I', 'love'), 0.3, ('robot', 's'), 0.36)
    """
    start = tuple(start)
    nodes = [TreeNode(path=(), prob=1.0, joint=1.0, parent=-1, finished=False)]
    frontier = [0]
    for level in range(int(depth)):
        children = []
        for ni in frontier:
            node = nodes[ni]
            probs = prob_fn(start + node.path)
            if probs is None:
                nodes[ni] = replace(node, finished=True)
                continue
            probs = [float(p) for p in probs]
            order = sorted(range(len(probs)), key=lambda j: (-probs[j], j))
            order = [j for j in order if probs[j] > min_prob][: branch or None]
            for j in order:
                done = vocab[j] == eos or level == depth - 1
                nodes.append(TreeNode(path=node.path + (vocab[j],), prob=probs[j],
                                      joint=node.joint * probs[j], parent=ni, finished=done))
                if not done:
                    children.append(len(nodes) - 1)
        if beam_width:
            children = sorted(children, key=lambda i: -nodes[i].joint)[: int(beam_width)]
        frontier = children
    finished = [n for n in nodes[1:] if n.finished] or nodes[:1]
    best = max(finished, key=lambda n: n.joint)  # max keeps the first on ties (greedy-first order)
    # greedy: follow the arg-max child from the root through the same prob_fn
    path, joint = (), 1.0
    for _ in range(int(depth)):
        probs = prob_fn(start + path)
        if probs is None:
            break
        probs = [float(p) for p in probs]
        j = max(range(len(probs)), key=lambda i: (probs[i], -i))
        path, joint = path + (vocab[j],), joint * probs[j]
        if vocab[j] == eos:
            break
    return SearchResult(start=start, nodes=nodes, greedy=path, greedy_joint=joint,
                        best=best.path, best_joint=best.joint,
                        exhaustive=not beam_width and not branch)
