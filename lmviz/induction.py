"""The `induction` corpus: text on which a small model forms an induction head within a lecture
(issue 57; /training's preset of the same name learns from it).

Olsson et al. (2022) saw two-layer-and-deeper models form an induction head early in training
(a head that attends from the current token to the token after its earlier copy: [A][B] … [A] →
[B]); the in-context-learning score jumps at the same time and the training loss shows its only
bump, and a one-layer model never gets there. Their runs took billions of tokens. The same moment
fits a lecture on text made for it: sequences of random symbols in which a span is followed, after a
random number of other random symbols, by its copy. Nothing predicts a symbol of the span the
first time (the loss stays near ln V); its copy is predictable, but only by finding the earlier
occurrence of the current symbol and reading what came after it, which takes two layers (a head
that looks at the previous token, then one that matches it). The gap varies, so no fixed position
holds the answer: a one-layer model can learn only that symbols already seen are likelier again.

Each sequence is SEQ symbols, a window of the preset (``TrainConfig.aligned``).

**The probe** (Olsson et al.'s, scaled down): a run of random tokens, then the same run again
(:func:`repeated_tokens`). The first half cannot be predicted from context; each token of the
second can be read off its earlier copy. :func:`measure` scores every head on it (the
prefix-matching and previous-token scores) with the loss at each position; :func:`probe` keeps
that as an :class:`InductionPoint`, cheap enough for every evaluation of a training
(``TrainConfig.induction_probe``: the Trainer attaches one to each ``EvalMetrics``), and
lmviz.chapters.attention_induction.scan adds the causal check for /attention.

**Travels with the checkpoint.** A run's probed evaluations are its induction record: the
replay a checkpoint carries keeps them (``lmviz.replay.Replay.evals``), packed by
:func:`evals_to_tensors` into tensors ``induction.*`` (scores as float64, the maps as the
uint8 they are kept in: the round trip is exact) and read back, checked, by
:func:`evals_from_tensors`, so an uploaded run draws the same pictures as the live one.
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["ALPHABET", "SPAN", "MAX_GAP", "SEQ", "induction_text", "PROMPT", "PROBE_HALF", "FORMED_ICL", "FORMED_HEAD",
           "formed", "repeated_tokens", "prefix_matching", "previous_token", "uniform_prefix", "halves_loss", "measure",
           "InductionPoint", "probe", "MAPS_MAX_BYTES", "maps_every", "PREFIX", "SPEC", "ProbedEvaluation",
           "evals_to_tensors", "evals_from_tensors"]

ALPHABET = "abcdefghijklmnopqrstuvwxyz012345"   # 32 symbols: ln 32 = 3.47 nats for a symbol nothing predicts
SPAN = 20          # symbols in the span that is copied
MAX_GAP = 24       # random symbols between the span and its copy: 0 .. MAX_GAP, so the distance varies
SEQ = 65           # symbols per sequence: a window of 64 and the symbol after it (the preset's block_size + 1)
PROBE_HALF = 24    # the probe's run of distinct symbols, then the run again (48 symbols)
FORMED_ICL = -1.0  # nats: the probe's ICL score of a run that has formed an induction head is this low,
FORMED_HEAD = 0.3  # and its best prefix-matching head scores this much (a head attending evenly: 0.028)
PROMPT_SEED = 7    # the fixed prompt sampled at each evaluation
MAPS_MAX_BYTES = 2 * 2 ** 20   # a run keeps its probe's attention maps (one byte a weight) within 2 MiB:
#                                the preset's 41 evaluations take 0.72 MiB, every one kept (maps_every)


def _symbols(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def induction_text(n_seqs: int = 2000, seed: int = 0) -> str:
    """``n_seqs`` sequences of SEQ symbols end to end (no spaces, no lines): a span, a random gap,
    the span again, random symbols to the end. The same arguments give the same text.

    2,000 sequences: a run of the preset reads each about 35 times, and learns the training spans
    partly by heart (its validation loss ends ~0.17 nats above the training loss). With fewer
    repeats it formed later or not at all: with 10,000 sequences neither of 2 seeds had an
    induction head when stopped at step 1,700-1,800 (ICL score near -1.1 nats, but the best
    prefix matcher in layer 1 at 0.07), where with 2,000 all of 5 seeds had one by step 800
    (bench/induction.py --train).

    >>> t = induction_text(3, seed=1)
    >>> len(t), set(t) <= set(ALPHABET), all(t[i:i + SPAN] in t[i + SPAN:i + SEQ] for i in range(0, len(t), SEQ))
    (195, True, True)
    """
    rng = random.Random(seed)
    out = []
    for _ in range(n_seqs):
        span = _symbols(rng, SPAN)
        body = span + _symbols(rng, rng.randint(0, MAX_GAP)) + span
        out.append(body + _symbols(rng, SEQ - len(body)))
    return "".join(out)


def _prompt() -> str:
    """A span, a short gap and the span's first four symbols: a model that has formed an
    induction head goes on with the rest of the span (the evaluation samples show it)."""
    rng = random.Random(PROMPT_SEED)
    span = _symbols(rng, SPAN)
    return span + _symbols(rng, 6) + span[:4]


PROMPT = _prompt()


def formed(icl: float, prefix: float) -> bool:
    """Whether a probe (lmviz.chapters.attention_induction.scan) says the run has formed an
    induction head: the second half's loss well below the first's (``icl``, nats) *and* a head
    that attends to the token after the earlier copy (``prefix``: the best prefix-matching
    score). A low ICL score alone is not enough: a run can lower it without such a head.

    >>> formed(-2.5, 0.62), formed(-1.1, 0.07), formed(-0.4, 0.5)
    (True, False, False)
    """
    return icl <= FORMED_ICL and prefix >= FORMED_HEAD


# ------------------------------------------------------------------ the probe ------------------
def repeated_tokens(vocab_size: int, half: int, seed: int = 0, exclude=()) -> list[int]:
    """``half`` distinct random token ids (none of ``exclude``: special tokens), then the same
    ``half`` again: [2 * half]. The same arguments give the same sequence.

    >>> s = repeated_tokens(50, 5, seed=1)
    >>> len(s), s[:5] == s[5:], len(set(s[:5]))
    (10, True, 5)
    """
    banned = {int(i) for i in exclude}
    pool = torch.tensor([i for i in range(int(vocab_size)) if i not in banned], dtype=torch.long)
    if half < 2 or len(pool) < half:
        raise ValueError(f"need 2 <= half <= {len(pool)} usable tokens, got half = {half}")
    g = torch.Generator().manual_seed(int(seed))
    run = pool[torch.randperm(len(pool), generator=g)[:half]].tolist()
    return run + run


def prefix_matching(weights: torch.Tensor, half: int) -> torch.Tensor:
    """[H] each head's mean attention from second-half positions i (half <= i < 2 half) to
    position i - half + 1, the token after i's earlier copy. ``weights`` [H, T, T], T = 2 half."""
    i = torch.arange(half, 2 * half)
    return weights[:, i, i - half + 1].mean(dim=1)


def previous_token(weights: torch.Tensor) -> torch.Tensor:
    """[H] each head's mean attention from every position i >= 1 to position i - 1.

    >>> float(previous_token(torch.eye(4).roll(-1, dims=1).tril()[None])[0])
    1.0
    """
    i = torch.arange(1, weights.shape[-1])
    return weights[:, i, i - 1].mean(dim=1)


def uniform_prefix(half: int) -> float:
    """The prefix-matching score of a head that attends evenly to every key it may see
    (weight 1 / (i + 1) at position i): the baseline a real induction head stands out from.

    >>> round(uniform_prefix(32), 4)
    0.0214
    """
    return sum(1.0 / (i + 1) for i in range(half, 2 * half)) / half


def halves_loss(nll: torch.Tensor, half: int) -> tuple[float, float]:
    """Mean next-token loss (nats) on the first and the second half of a repeated probe, from
    ``nll`` [2 half - 1] (position t's loss for predicting token t + 1). The first half: the
    predictions of tokens 1 .. half - 1; the second: of tokens half + 1 .. 2 half - 1 (token
    ``half``, where the repeat starts, is left out of both: nothing says the run restarts there).

    >>> halves_loss(torch.tensor([4.0, 4.0, 4.0, 9.0, 1.0, 1.0, 1.0]), 4)
    (4.0, 1.0)
    """
    return float(nll[:half - 1].mean()), float(nll[half:2 * half - 1].mean())


def measure(model, idx: torch.Tensor, half: int):
    """One pass of ``model`` over the probe ``idx`` [2 half] (a run, then the same run):
    (its ``forward_trace``, prefix-matching scores [L, H], previous-token scores [L, H], the
    next-token loss at each position [2 half - 1] in nats)."""
    ids = idx.tolist()
    if len(ids) != 2 * half or ids[:half] != ids[half:]:
        raise ValueError("ids must be a run of half tokens followed by the same run")
    if 2 * half > model.cfg.block_size:
        raise ValueError(f"the probe ({2 * half} tokens) is longer than the model's context ({model.cfg.block_size})")
    with torch.no_grad():
        tr = model.forward_trace(idx)
    prefix = torch.stack([prefix_matching(layer.weights, half) for layer in tr.layers])     # [L,H]
    previous = torch.stack([previous_token(layer.weights) for layer in tr.layers])          # [L,H]
    nll = F.cross_entropy(tr.logits[:-1].float(), idx[1:], reduction="none")                 # [2 half - 1]
    return tr, prefix, previous, nll


@dataclass(frozen=True)
class InductionPoint:
    """Every head of a model on the probe at one moment of a training (no ablation: cheap)."""
    half: int                                   # tokens in the random run; the probe is 2 x half
    ids: tuple[int, ...]                        # the probe: the run, then the run again
    prefix: tuple[tuple[float, ...], ...]       # [L][H] prefix-matching score of each head
    previous: tuple[tuple[float, ...], ...]     # [L][H] previous-token score of each head
    first_loss: float                           # mean next-token loss on the first half, nats (nothing to copy)
    second_loss: float                          # the same on the second half (each token has an earlier copy)
    maps: Any = None                            # [L, H, T, T] uint8 attention weights x 255 (None: not kept here)

    @property
    def icl(self) -> float:
        """The in-context-learning score: second-half loss minus first-half loss (< 0: the repeat is used)."""
        return self.second_loss - self.first_loss

    @property
    def best(self) -> tuple[int, int, float]:
        """(layer, head, score) of the best prefix matcher."""
        return max(((li, h, s) for li, row in enumerate(self.prefix) for h, s in enumerate(row)), key=lambda r: r[2])

    @property
    def best_previous(self) -> tuple[int, int, float]:
        """(layer, head, score) of the best previous-token head."""
        return max(((li, h, s) for li, row in enumerate(self.previous) for h, s in enumerate(row)), key=lambda r: r[2])

    def weights(self, layer: int, head: int) -> np.ndarray:
        """[T, T] one head's attention on the probe (within 1/510 of the float weights)."""
        return self.maps[layer, head].astype(np.float32) / 255.0

    @classmethod
    def of(cls, idx: torch.Tensor, half: int, prefix, previous, nll, maps=None) -> "InductionPoint":
        """The point from :func:`measure`'s scores and losses on the probe ``idx``."""
        first, second = halves_loss(nll, half)
        return cls(half, tuple(idx.tolist()), tuple(tuple(r) for r in prefix.tolist()),
                   tuple(tuple(r) for r in previous.tolist()), first, second, maps)


@torch.no_grad()
def probe(model, ids, half: int, keep_maps: bool = False) -> InductionPoint:
    """Score ``model`` on the probe ``ids`` (:func:`repeated_tokens`); ``keep_maps``: with
    every head's attention, one byte a weight."""
    idx = torch.tensor(list(ids), dtype=torch.long)
    tr, prefix, previous, nll = measure(model, idx, half)
    maps = None
    if keep_maps:
        w = torch.stack([layer.weights for layer in tr.layers])                              # [L,H,T,T]
        maps = (w.clamp(0, 1) * 255).round().to(torch.uint8).numpy()
    return InductionPoint.of(idx, half, prefix, previous, nll, maps)


def maps_every(n_layer: int, n_head: int, half: int, n_evals: int) -> int:
    """Keep the probe's maps at every k-th evaluation, k the smallest that keeps a run's maps
    within MAPS_MAX_BYTES (one byte a weight, L x H x (2 half)^2 an evaluation).

    >>> maps_every(2, 4, PROBE_HALF, 41), maps_every(12, 16, PROBE_HALF, 1001)
    (1, 212)
    """
    per = n_layer * n_head * (2 * half) ** 2
    return max(1, math.ceil(per * n_evals / MAPS_MAX_BYTES))


# -----------------------------------------------------------------------------
# to and from checkpoint tensors

PREFIX = "induction."      # key prefix of the induction record inside a checkpoint
_FORMAT = "lmviz-induction-1"
SPEC = {  # name: (dtype, number of dims); E evaluations, M of them with maps, T = 2 half
    "step": (torch.int64, 1), "train_loss": (torch.float64, 1), "val_loss": (torch.float64, 1),
    "first": (torch.float64, 1), "second": (torch.float64, 1),
    "prefix": (torch.float64, 3), "previous": (torch.float64, 3),      # [E, L, H]
    "ids": (torch.int64, 1), "maps": (torch.uint8, 5), "map_at": (torch.int64, 1),   # [T]; [M, L, H, T, T]; [M]
}


@dataclass(frozen=True)
class ProbedEvaluation:
    """What a checkpoint keeps of an evaluation that probed (the fields of lmviz.train.EvalMetrics
    that lmviz.chapters.induction_run reads: either record serves it)."""
    step: int                    # steps taken when measured
    train_loss: float            # mean loss over the evaluation's fixed training batches
    val_loss: float              # the same over its validation batches
    induction: InductionPoint    # the probe at that evaluation


def evals_to_tensors(evals) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The probed evaluations of one run (``lmviz.train.EvalMetrics`` with an ``induction``
    point, or :class:`ProbedEvaluation`) as tensors ``induction.*`` and metadata {"induction": JSON string}.
    They must share the probe (its ids, and the model's layers and heads). None gives ({}, {}).

    >>> p = InductionPoint(2, (3, 1, 3, 1), ((0.5,),), ((0.25,),), 1.5, 0.5)
    >>> t, md = evals_to_tensors([ProbedEvaluation(0, 2.0, 2.5, p)])
    >>> sorted(k[len(PREFIX):] for k in t), t["induction.maps"].shape, md["induction"]
    (['first', 'ids', 'map_at', 'maps', 'prefix', 'previous', 'second', 'step', 'train_loss', 'val_loss'], torch.Size([0, 1, 1, 4, 4]), '{"format": "lmviz-induction-1", "half": 2, "count": 1}')
    """
    evs = sorted((e for e in evals if getattr(e, "induction", None) is not None), key=lambda e: e.step)
    if not evs:
        return {}, {}
    p0 = evs[0].induction
    L, H, T = len(p0.prefix), len(p0.prefix[0]), 2 * p0.half
    for e in evs:
        p = e.induction
        if (p.half, p.ids) != (p0.half, p0.ids) or np.shape(p.prefix) != (L, H) or np.shape(p.previous) != (L, H) \
                or (p.maps is not None and np.shape(p.maps) != (L, H, T, T)):
            raise ValueError("the evaluations of one run must share the probe (ids, layers and heads)")
    f64 = lambda xs: torch.tensor(xs, dtype=torch.float64)   # noqa: E731
    kept = [i for i, e in enumerate(evs) if e.induction.maps is not None]
    maps = torch.from_numpy(np.stack([np.asarray(evs[i].induction.maps, dtype=np.uint8) for i in kept])) if kept \
        else torch.zeros((0, L, H, T, T), dtype=torch.uint8)
    t = {"step": torch.tensor([e.step for e in evs], dtype=torch.int64),
         "train_loss": f64([e.train_loss for e in evs]), "val_loss": f64([e.val_loss for e in evs]),
         "first": f64([e.induction.first_loss for e in evs]), "second": f64([e.induction.second_loss for e in evs]),
         "prefix": f64([e.induction.prefix for e in evs]), "previous": f64([e.induction.previous for e in evs]),
         "ids": torch.tensor(p0.ids, dtype=torch.int64), "maps": maps.contiguous(),
         "map_at": torch.tensor(kept, dtype=torch.int64)}
    meta = {"format": _FORMAT, "half": p0.half, "count": len(evs)}
    return {PREFIX + k: v for k, v in t.items()}, {"induction": json.dumps(meta)}


def evals_from_tensors(tensors: dict, metadata: dict, vocab_size: int | None = None) -> list:
    """Read back what :func:`evals_to_tensors` wrote (other keys ignored): the run's probed
    evaluations (:class:`ProbedEvaluation`). No record gives []; a malformed one raises ValueError
    with a plain message. ``vocab_size``: every probe id must be one of the checkpoint's ids."""
    from .replay import read_group

    got = read_group(tensors, metadata, "induction", PREFIX, SPEC, _FORMAT)
    if got is None:
        return []
    meta, t = got
    E, T, M = t["step"].shape[0], t["ids"].shape[0], t["maps"].shape[0]
    L, H = t["prefix"].shape[1:]
    half, count = meta.get("half"), meta.get("count")
    whole = lambda v: isinstance(v, int) and not isinstance(v, bool)   # noqa: E731
    ok = (whole(count) and count == E >= 1 and whole(half) and half >= 1 and T == 2 * half
          and all(t[f].shape == (E,) for f in ("train_loss", "val_loss", "first", "second"))
          and t["previous"].shape == (E, L, H) and t["maps"].shape[1:] == (L, H, T, T)
          and t["map_at"].shape == (M,) and M <= E)
    if not ok:
        raise ValueError("the induction tensors do not fit together")
    steps, at = t["step"].tolist(), t["map_at"].tolist()
    if steps != sorted(set(steps)) or steps[0] < 0 or at != sorted(set(at)) or (at and (at[0] < 0 or at[-1] >= E)):
        raise ValueError("the induction steps are not increasing")
    for f in ("train_loss", "val_loss", "first", "second", "prefix", "previous"):
        x = t[f]
        if not bool(torch.isfinite(x).all()) or (x.numel() and float(x.min()) < 0.0):
            raise ValueError(f"the induction values of {f} are not finite, non-negative numbers")
    for f in ("prefix", "previous"):
        if t[f].numel() and float(t[f].max()) > 1.0 + 1e-6:
            raise ValueError(f"the induction scores of {f} are not between 0 and 1")
    ids = tuple(t["ids"].tolist())
    if vocab_size is not None and (min(ids) < 0 or max(ids) >= vocab_size):
        raise ValueError("the induction probe refers to token ids the tokenizer does not have")
    maps = dict(zip(at, (m.numpy().copy() for m in t["maps"])))
    out = []
    for i in range(E):
        pt = InductionPoint(half, ids, tuple(map(tuple, t["prefix"][i].tolist())),
                            tuple(map(tuple, t["previous"][i].tolist())), float(t["first"][i]),
                            float(t["second"][i]), maps.get(i))
        out.append(ProbedEvaluation(int(steps[i]), float(t["train_loss"][i]), float(t["val_loss"][i]), pt))
    return out
