"""An induction head forming in a live run (issue 57): which head switched on, at which step, and
what the loss did meanwhile, read from the run's evaluations (``lmviz.train.EvalMetrics`` whose
``induction`` is an ``lmviz.induction.InductionPoint``: the /training preset ``induction`` probes
at every evaluation; a checkpoint brings them back as ``lmviz.induction.ProbedEvaluation``).

Olsson et al. (2022) saw the in-context-learning score jump in a narrow window of training, with
the training loss's only bump. The data decide what the page says about the loss: the steepest
fall between two evaluations against the typical fall before it ("sudden" or "smooth"), and a
*bump* only where the loss at the evaluations (fixed batches, so a rise is the model's and not
the batch's) really rose near the formation.

    >>> from lmviz.induction import InductionPoint
    >>> from lmviz.train import EvalMetrics
    >>> p = lambda s, icl: InductionPoint(2, (5, 9, 5, 9), ((0.1, 0.1), (s, 0.03)), ((0.2, 0.1), (0.05, 0.05)), 3.4, 3.4 + icl)
    >>> ev = [EvalMetrics(i * 50, l, l, 1.0, p(s, c)) for i, (l, s, c) in
    ...       enumerate([(3.47, .03, 0), (3.46, .03, -.1), (3.45, .05, -.2), (3.44, .1, -.4), (3.2, .4, -1.2), (3.0, .6, -2.3)])]
    >>> r = induction_run(ev)
    >>> r.head, r.steps[r.formed_at], [round(x, 3) for x in r.fall], r.bump
    ((1, 0), 200, [4, 0.24, 0.01], None)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmviz.induction import formed, uniform_prefix

__all__ = ["SUDDEN", "BUMP_NATS", "NEAR", "InductionRun", "probed", "induction_run", "answers"]

SUDDEN = 3.0       # the steepest fall between two evaluations is sudden at >= 3 x the median fall before it
BUMP_NATS = 0.02   # a rise of the evaluation's training loss (the same fixed batches each time) this large
#                    is a bump; the preset's runs rose by <= 0.006 nats between evaluations, once formed
NEAR = 4           # evaluations either side of the formation where a bump belongs to it


@dataclass(frozen=True)
class InductionRun:
    steps: tuple[int, ...]                          # the evaluations that carry a probe, steps
    loss: tuple[float, ...]                         # [E] training loss on the evaluation's fixed batches
    first: tuple[float, ...]                        # [E] probe loss on the first half (nothing to copy)
    second: tuple[float, ...]                       # [E] probe loss on the second half (copies available)
    prefix: tuple[tuple[tuple[float, ...], ...], ...]    # [E][L][H] prefix-matching score of each head
    previous: tuple[tuple[tuple[float, ...], ...], ...]  # [E][L][H] previous-token score of each head
    head: tuple[int, int]                           # the followed head: the best prefix matcher now
    previous_head: tuple[int, int]                  # the best previous-token head now
    formed_at: int | None                           # the first evaluation where lmviz.induction.formed holds
    fall: tuple[int, float, float] | None           # (i, fall from evaluation i - 1 to i, median fall per
    #                                                 evaluation before it): the steepest fall within NEAR
    #                                                 of the formation (None before it formed)
    bump: tuple[int, float] | None                  # (i, rise from i - 1 to i) the largest rise within NEAR
    #                                                 of the formation, when >= BUMP_NATS
    maps: tuple[int, ...]                           # evaluations that kept their attention maps
    uniform: float                                  # the prefix score of a head attending evenly
    half: int                                       # tokens in the probe's random run
    ids: tuple[int, ...]                            # the probe: the run, then the run again

    @property
    def icl(self) -> tuple[float, ...]:
        """[E] the in-context-learning score: second-half loss minus first-half loss (nats)."""
        return tuple(b - a for a, b in zip(self.first, self.second))

    def score(self, i: int, head: tuple[int, int] | None = None) -> float:
        """The prefix-matching score of ``head`` (the followed one) at evaluation ``i``."""
        layer, h = head or self.head
        return self.prefix[i][layer][h]

    @property
    def before(self) -> int | None:
        """The last evaluation with maps before the head formed (None: it has not, or none kept)."""
        if self.formed_at is None:
            return None
        kept = [i for i in self.maps if i < self.formed_at]
        return kept[-1] if kept else None

    @property
    def after(self) -> int | None:
        """The latest evaluation with maps."""
        return self.maps[-1] if self.maps else None

    def map_at(self, step: int) -> int | None:
        """The evaluation whose maps show the model at ``step`` (a replay's step): the latest kept
        one at or before it, else the first kept (None: no maps kept).

        >>> r = InductionRun((0, 50, 100, 150), *[()] * 5, (1, 0), (0, 0), None, None, None, (0, 2), 0.1, 2, ())
        >>> r.map_at(20), r.map_at(120), r.map_at(500), r.map_at(-1)
        (0, 2, 2, 0)
        """
        kept = [i for i in self.maps if self.steps[i] <= step]
        return kept[-1] if kept else (self.maps[0] if self.maps else None)


def probed(evals) -> list:
    """The evaluations that carry a probe: an InductionRun's index i is the i-th of these."""
    return [e for e in evals if getattr(e, "induction", None) is not None]


def induction_run(evals) -> InductionRun | None:
    """The run's induction record from its evaluations (None: they carry no probe)."""
    evs = probed(evals)
    if not evs:
        return None
    pts = [e.induction for e in evs]
    now = pts[-1]
    loss = np.array([e.train_loss for e in evs], dtype=float)
    at = next((i for i, p in enumerate(pts) if formed(p.icl, p.best[2])), None)
    fall = bump = None
    if at is not None and len(loss) >= 2:
        falls = loss[:-1] - loss[1:]                 # falls[j - 1]: from evaluation j - 1 to j
        lo, hi = max(1, at - NEAR), min(len(loss) - 1, at + NEAR)
        i = lo + int(np.argmax(falls[lo - 1:hi]))    # the steepest fall near the formation
        fall = (i, float(falls[i - 1]), float(np.median(falls[:i - 1])) if i > 1 else float("nan"))
        j = lo + int(np.argmin(falls[lo - 1:hi]))    # the largest rise near it
        if -falls[j - 1] >= BUMP_NATS:
            bump = (j, float(-falls[j - 1]))
    return InductionRun(
        steps=tuple(e.step for e in evs), loss=tuple(loss.tolist()), first=tuple(p.first_loss for p in pts),
        second=tuple(p.second_loss for p in pts), prefix=tuple(p.prefix for p in pts),
        previous=tuple(p.previous for p in pts), head=now.best[:2], previous_head=now.best_previous[:2],
        formed_at=at, fall=fall, bump=bump, maps=tuple(i for i, p in enumerate(pts) if p.maps is not None),
        uniform=uniform_prefix(now.half), half=now.half, ids=now.ids)


def answers(run: InductionRun | None, earlier: InductionRun | None = None) -> dict[str, str]:
    """The predict-then-reveal questions this run has answered (lmviz.chapters.questions, the
    ``by_run`` ones): question id -> the option its data support; a question is absent while the
    run cannot answer it yet (no head formed; no run of another depth beside it, one that formed
    neither head, or a control still short of the step at which the other formed). How the loss
    went comes from this run, or else from ``earlier``, the run before it (while a one-layer
    control runs, the two-layer run's answer stands).

    >>> answers(None)
    {}
    """
    from lmviz.chapters.claims import induction_control, induction_loss

    out = {}
    if run is None:
        return out
    for r in (earlier, run):        # this run's answer, else the one before it (a control beside it)
        loss = induction_loss(r) if r is not None else None
        if loss is not None and loss.statement in ("smooth", "sudden", "bump"):
            out["train_ind_loss"] = loss.statement
    if earlier is not None:
        c = induction_control(run, earlier)
        # (weak: the control has not yet trained as long as the other took to form its head)
        if c.values["shallow"] == 1 and not c.weak and c.statement != "neither":
            out["train_ind_one_layer"] = "no" if c.statement == "only_deeper" else "yes"
    return out
