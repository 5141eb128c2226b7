"""Claims as data: the one way a page picks a sentence that says something about its data.

A sentence such as "it stops close to the target", "nearby positions get similar vectors" or
"doubling n quadruples the time" is true of some data and false of other data. Each function here
takes the same numbers the page's chart draws and returns a :class:`Claim`: which statement holds
(``statement``), the numbers behind it (``values``) and how strong the evidence is
(``strength``: "strong", or "weak" where noise or a control does about as well). The page prints
the catalogue sentence ``claim.<name>.<statement>`` formatted with ``values`` (``ui.render.claim``)
and never a sentence written for one state only.

Pure Python and numpy; no Streamlit, no torch. Every statement a claim can make is listed in
:data:`STATEMENTS`, so a test can check that each has a sentence in every catalogue.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from lmviz.chapters.cost import loglog_slope

STRONG, WEAK = "strong", "weak"

# name -> the statements it can make (each has the catalogue key claim.<name>.<statement>)
STATEMENTS: dict[str, tuple[str, ...]] = {
    "robot": ("reached", "closer", "not_closer"),
    "positions": ("neighbours", "not_by_distance"),
    "pronoun": ("referent", "control", "recency", "none"),
    "power_law": ("quadratic", "below", "above", "noise"),
    "answer_shift": ("rises", "falls", "elsewhere", "unmoved"),
    "context_use": ("level", "level_noisy", "not_level"),
    "noise_shrink": ("like_sqrt", "slower", "faster"),
    "baseline": ("crossed", "not_yet", "no_data"),
    "pace": ("as_estimated", "faster", "slower", "measuring"),
    "room_favourite": ("agree", "differ", "tie", "tie_model"),
    "room_surprise": ("exact", "floored"),
    "induction": ("copies", "attends_only", "none"),
    "induction_forming": ("formed", "not_yet"),
    "induction_loss": ("bump", "sudden", "smooth", "waiting"),
    "induction_control": ("only_deeper", "only_shallower", "both", "neither", "same_depth"),
}


@dataclass(frozen=True)
class Claim:
    name: str                       # which claim (a key of STATEMENTS)
    statement: str                  # which of its statements the data supports
    values: Mapping[str, float | int | str] = field(default_factory=dict)  # the numbers behind it
    strength: str = STRONG          # "strong", or "weak" where the evidence does not settle it

    def __post_init__(self):
        if self.statement not in STATEMENTS[self.name]:
            raise ValueError(f"{self.name} cannot state {self.statement!r}")

    @property
    def key(self) -> str:
        """The catalogue key of the sentence this claim prints."""
        return f"claim.{self.name}.{self.statement}"

    @property
    def weak(self) -> bool:
        return self.strength == WEAK


# ------------------------------------------------------------------ robot ----------------
def robot(start_distance: float, final_distance: float, *, reached: float = 0.25,
          closer: float = 0.75) -> Claim:
    """Where a rollout ended, relative to where it started.

    "reached": it ended within ``reached`` of its starting distance (a small rest remains, from
    the binned offsets); "closer": it made up some of the way; "not_closer": it made up less than
    ``1 - closer`` of the way (``least`` %), or ended farther (an untrained policy).

    >>> robot(1.86, 0.116).statement, robot(1.86, 1.837).statement
    ('reached', 'not_closer')
    """
    d0, d = float(start_distance), float(final_distance)
    frac = d / d0 if d0 > 0 else math.inf
    st = "reached" if frac <= reached else "closer" if frac <= closer else "not_closer"
    return Claim("robot", st, {"d0": d0, "d": d, "pct": 100 * (1 - frac) if d0 > 0 else 0.0,
                               "least": 100 * (1 - closer)})


# ------------------------------------------------------------------ positions ------------
def cosine_by_distance(vectors) -> np.ndarray:
    """Mean cosine similarity of position vectors k apart, for k = 1 .. T-1 (index k-1).

    >>> v = np.array([[1.0, 0], [1, 0.1], [0, 1]])
    >>> [round(float(x), 3) for x in cosine_by_distance(v)]
    [0.547, 0.0]
    """
    P = np.asarray(vectors, dtype=np.float64)
    P = P / np.clip(np.linalg.norm(P, axis=1, keepdims=True), 1e-12, None)
    C = P @ P.T
    return np.array([np.diagonal(C, k).mean() for k in range(1, len(P))])


def positions(cos_by_distance: Sequence[float], *, near: int = 3, margin: float = 0.05) -> Claim:
    """Do nearby positions get more similar vectors than distant ones?

    "neighbours" when the mean cosine of positions 1..``near`` apart beats every distance beyond
    by ``margin``; otherwise "not_by_distance", naming the distance whose vectors are most alike
    (a stripe parallel to the diagonal of the similarity map).

    >>> positions([0.97, 0.9, 0.8, 0.75, 0.7]).statement
    'neighbours'
    >>> c = positions([0.30, 0.55, 0.14, 0.17, 0.05, -0.01, 0.09, 0.43, 0.21, 0.67])
    >>> c.statement, c.values["top"], round(c.values["top_cos"], 2)
    ('not_by_distance', 10, 0.67)
    """
    c = np.asarray(cos_by_distance, dtype=np.float64)
    if len(c) <= near:
        raise ValueError("need distances beyond the near ones")
    near_mean = float(c[:near].mean())
    far = c[near:]
    top = int(np.argmax(c)) + 1                      # the most similar distance overall
    far_top = int(np.argmax(far)) + near + 1
    vals = {"c1": float(c[0]), "c2": float(c[1]), "near": near, "near_mean": near_mean,
            "top": top, "top_cos": float(c[top - 1]), "far_top": far_top,
            "far_top_cos": float(c[far_top - 1]), "far_min": float(far.min())}
    if near_mean >= float(far.max()) + margin:
        return Claim("positions", "neighbours", vals)
    return Claim("positions", "not_by_distance", vals,
                 WEAK if near_mean >= float(far.max()) - margin else STRONG)


# ------------------------------------------------------------------ pronoun --------------
def pronoun(referent: float, control: float, recency: float, uniform: float, *,
            factor: float = 1.5) -> Claim:
    """Does the head look at the referent because it is the referent?

    ``referent``: the head's share of attention on the referent; ``control``: the same head, the
    same sentence with a non-referent in the referent's place; ``recency``: the same head's share
    on the tokens the same distance back, averaged over the sentence's other positions (what
    looking back that far gives anyway); ``uniform``: an even spread. The claim "referent" is made
    only when the referent beats both the control and the recency baseline by ``factor`` and an
    even spread by 2×.

    >>> pronoun(0.6, 0.1, 0.15, 0.2).statement, pronoun(0.5, 0.45, 0.2, 0.2).statement
    ('referent', 'control')
    >>> pronoun(0.5, 0.1, 0.45, 0.2).statement, pronoun(0.3, 0.1, 0.1, 0.2).statement
    ('recency', 'none')
    """
    r, c, rc, u = (float(x) for x in (referent, control, recency, uniform))
    vals = {"share": r, "control": c, "recency": rc, "unif": u,
            "vs_control": r / c if c > 0 else math.inf, "vs_recency": r / rc if rc > 0 else math.inf,
            "vs_unif": r / u if u > 0 else math.inf}
    if r < 2 * u:
        return Claim("pronoun", "none", vals, WEAK)
    if r < factor * c:
        return Claim("pronoun", "control", vals, WEAK)
    if r < factor * rc:
        return Claim("pronoun", "recency", vals, WEAK)
    return Claim("pronoun", "referent", vals)


# ------------------------------------------------------------------ power law ------------
# two-sided 95 % quantiles of Student's t, by degrees of freedom (beyond 30: the normal 1.96)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df: int) -> float:
    """Two-sided 95 % Student t quantile (the nearest tabulated df at or below ``df``).

    >>> t95(4), t95(11), t95(100)
    (2.776, 2.228, 1.96)
    """
    if df < 1:
        return math.inf
    if df > 30:
        return 1.96
    return _T95[max(k for k in _T95 if k <= df)]


def power_law(ns: Sequence[int], rounds: Sequence[Sequence[float]], *, expected: float = 2.0,
              effect: float = 1.0) -> Claim:
    """How time grows with n, from repeated rounds of timings (``rounds[r][i]``: round r at ns[i]).

    Each round gives one log-log slope; their mean and its 95 % interval (Student t over rounds)
    and their spread are the numbers behind the claim. ``effect`` is the difference the
    measurement must resolve (n² against n: 1 in slope): an interval as wide as that is "noise"
    (the noise is larger than the effect). Otherwise "quadratic" when the interval holds
    ``expected``, "below" or "above" when it lies under or over it.

    >>> ns = [128, 256, 512, 1024, 2048]
    >>> clean = [[n ** 2 * 1e-9 for n in ns]] * 5
    >>> power_law(ns, clean).statement
    'quadratic'
    """
    ns = [int(n) for n in ns]
    if len(ns) < 2 or len(rounds) < 2:
        raise ValueError("need at least two lengths and two rounds")
    slopes = np.array([loglog_slope(ns, r) for r in rounds])
    mean = float(slopes.mean())
    sd = float(slopes.std(ddof=1))
    half = t95(len(slopes) - 1) * sd / math.sqrt(len(slopes))
    lo, hi = mean - half, mean + half
    vals = {"slope": mean, "lo": lo, "hi": hi, "min": float(slopes.min()), "max": float(slopes.max()),
            "rounds": len(slopes), "lengths": len(ns), "n0": ns[0], "n1": ns[-1],
            "per": 2 ** mean, "per_lo": 2 ** lo, "per_hi": 2 ** hi, "expected": expected}
    if hi - lo >= effect:
        return Claim("power_law", "noise", vals, WEAK)
    if lo - 1e-9 <= expected <= hi + 1e-9:
        return Claim("power_law", "quadratic", vals)
    return Claim("power_law", "below" if hi + 1e-9 < expected else "above", vals)


# ------------------------------------------------------------------ answer shift ---------
def answer_shift(p_before: float, p_after: float, kl: float = 0.0, top_moved: bool = False, *,
                 min_change: float = 0.05, min_ratio: float = 1.5, min_kl: float = 0.1) -> Claim:
    """Did adding a context change the answer's probability visibly, and if not, the rest of the
    next token's distribution?

    "rises"/"falls" when the answer moved by at least ``min_change`` (absolute) and by a factor
    ``min_ratio``; else "elsewhere" when the distribution moved (KL(after ‖ before) ≥ ``min_kl``
    nats, or another token became the most probable); else "unmoved" (the bars would not
    visibly change).

    >>> answer_shift(0.02, 0.40).statement, answer_shift(0.30, 0.31).statement
    ('rises', 'unmoved')
    >>> answer_shift(0.0013, 0.0005, kl=0.33, top_moved=True).statement
    'elsewhere'
    """
    a, b = float(p_before), float(p_after)
    vals = {"before": a, "after": b, "ratio": b / a if a > 0 else math.inf, "kl": float(kl)}
    big = abs(b - a) >= min_change
    if big and b >= min_ratio * a:
        return Claim("answer_shift", "rises", vals)
    if big and a >= min_ratio * b:
        return Claim("answer_shift", "falls", vals)
    if kl >= min_kl or top_moved:
        return Claim("answer_shift", "elsewhere", vals)
    return Claim("answer_shift", "unmoved", vals, WEAK)


# ------------------------------------------------------------------ gradient noise --------
def noise_shrink(batch_sizes: Sequence[int], errors: Sequence[float], *, within: float = 1.25) -> Claim:
    """How the mini-batch gradient's relative error fell from the smallest batch to the largest,
    against 1/√B (independent draws: the error of a mean falls as one over the root of the count).
    "like_sqrt" when the measured error at the largest batch is within ``within`` times what
    1/√B predicts from the smallest, else "slower" or "faster" (the reference batch is itself an
    estimate, so a measured error levels off above the guide once batches near its size).

    >>> noise_shrink([1, 4, 16, 64], [1.0, 0.52, 0.26, 0.13]).statement
    'like_sqrt'
    >>> noise_shrink([1, 4, 16], [5.4, 2.6, 2.02]).statement      # SmolLM2, its smaller measurement
    'slower'
    >>> noise_shrink([1, 4, 16], [1.0, 0.2, 0.05]).statement
    'faster'
    """
    b0, b1, e0, e1 = int(batch_sizes[0]), int(batch_sizes[-1]), float(errors[0]), float(errors[-1])
    guide = e0 * math.sqrt(b0 / b1)
    vals = {"b0": b0, "b1": b1, "e0": e0, "e1": e1, "guide": guide, "ratio": e1 / guide if guide > 0 else math.inf}
    if e1 > guide * within:
        return Claim("noise_shrink", "slower", vals)
    if e1 < guide / within:
        return Claim("noise_shrink", "faster", vals)
    return Claim("noise_shrink", "like_sqrt", vals)


# ------------------------------------------------------------------ context use -----------
def context_use(used: int, plateau: float, tolerance: float, spread: Sequence[float]) -> Claim:
    """From position ``used`` on, a model's loss by position is level with its end-of-window
    ``plateau`` (each point within ``tolerance`` of it give or take its chance ``spread``:
    lmviz.chapters.loss_and_gradients_objective.loss_by_position; ``spread`` has one value per
    position of the window). "level" when the typical spread past ``used`` is within the
    tolerance (a gain of that size would show); else "level_noisy", weak: the windows averaged
    are too few to see a smaller gain. "not_level", weak, when points above the band reach into
    the window's last quarter, which the plateau is the mean of: "level from there" would only
    restate the plateau's own definition (two windows of SmolLM2 read "level from 128" of 128).

    >>> context_use(5, 1.2, 0.1, [0.3] * 4 + [0.05] * 60).statement
    'level'
    >>> context_use(3, 4.6, 0.1, [0.5] * 64).statement
    'level_noisy'
    >>> context_use(60, 4.6, 0.1, [0.5] * 64).statement
    'not_level'
    """
    window = len(spread)
    past = [float(e) for e in spread[max(0, int(used) - 1):]] or [0.0]
    noise = float(np.median(past))
    vals = {"used": int(used), "plateau": float(plateau), "tol": float(tolerance), "noise": noise}
    if window and int(used) > window - max(1, window // 4):
        return Claim("context_use", "not_level", vals, WEAK)
    if noise <= tolerance:
        return Claim("context_use", "level", vals)
    return Claim("context_use", "level_noisy", vals, WEAK)


# ------------------------------------------------------------------ training baseline ----
def baseline(steps: Sequence[int], seconds: Sequence[float], losses: Sequence[float],
             reference: float) -> Claim:
    """When this run's loss first went below ``reference`` (a baseline's loss).

    "crossed" at step N after T seconds; "not_yet" with the latest gap; "no_data" before the first
    evaluation.

    >>> c = baseline([10, 20, 30], [5.0, 9.5, 14.0], [7.0, 6.5, 6.2], 6.46)
    >>> c.statement, c.values["step"], c.values["secs"]
    ('crossed', 30, 14.0)
    >>> baseline([10], [5.0], [7.0], 6.46).statement
    'not_yet'
    """
    if not losses:
        return Claim("baseline", "no_data", {"ref": float(reference)}, WEAK)
    for s, sec, loss in zip(steps, seconds, losses):
        if loss < reference:
            return Claim("baseline", "crossed", {"step": int(s), "secs": float(sec), "loss": float(loss),
                                                 "ref": float(reference)})
    return Claim("baseline", "not_yet", {"step": int(steps[-1]), "secs": float(seconds[-1]),
                                         "loss": float(losses[-1]), "ref": float(reference),
                                         "gap": float(losses[-1] - reference)}, WEAK)


# ------------------------------------------------------------------ training pace --------
def pace(step_sps: float, estimated_sps: float, wall_sps: float, over_s: float, steps_left: int, *,
         min_s: float = 5.0, band: float = 1.25) -> Claim:
    """This run's measured pace beside the budget's estimate made before the start.

    ``step_sps``: optimizer steps per second of the steps alone (what the estimate counts: their
    FLOPs); ``wall_sps``: steps per second of running, evaluations and samples included, over the
    last ``over_s`` seconds: it gives the time left. "faster" or "slower" when the steps run more
    than ``band`` times faster or slower than estimated, "as_estimated" inside that band;
    "measuring" (weak) before ``min_s`` seconds of running.

    >>> pace(22.0, 14.1, 18.0, 20.0, 900).statement, pace(5.0, 14.1, 4.0, 20.0, 900).statement
    ('faster', 'slower')
    >>> c = pace(14.0, 14.1, 12.0, 20.0, 900); c.statement, c.values["eta_s"]
    ('as_estimated', 75.0)
    >>> pace(14.0, 14.1, 12.0, 2.0, 900).statement
    'measuring'
    """
    a, e, w, over = float(step_sps), float(estimated_sps), float(wall_sps), float(over_s)
    vals = {"sps": w, "step_sps": a, "est": e, "over": over, "left": int(steps_left),
            "eta_s": steps_left / w if w > 0 else math.inf, "ratio": a / e if e > 0 else math.inf,
            "pct": 100 * a / e if e > 0 else math.inf}
    if over < min_s or a <= 0 or e <= 0 or w <= 0:
        return Claim("pace", "measuring", {**vals, "min_s": min_s}, WEAK)
    r = a / e
    st = "faster" if r >= band else "slower" if r <= 1 / band else "as_estimated"
    return Claim("pace", st, {**vals, "ratio": r if st != "slower" else 1 / r})


# ------------------------------------------------------------------ the room's favourite ---
def room_favourite(room_tops: Sequence[str], model_top: str) -> Claim:
    """The room's most chosen option(s) (lmviz.chapters.generation_room.RoomVsModel.room_tops)
    against the model's most probable one: "agree" / "differ" for a single favourite; "tie" /
    "tie_model" (the model's among them) when ``k`` options share the most answers, which the
    page names instead of calling one of them the favourite. ValueError when nobody answered.

    >>> room_favourite(["a"], "a").statement, room_favourite(["b"], "a").statement
    ('agree', 'differ')
    >>> room_favourite(["a", "b", "c"], "d").values["k"], room_favourite(["a", "b"], "b").statement
    (3, 'tie_model')
    """
    tops = list(room_tops)
    if not tops:
        raise ValueError("nobody answered: the room has no favourite")
    if len(tops) == 1:
        return Claim("room_favourite", "agree" if tops[0] == model_top else "differ", {"k": 1})
    return Claim("room_favourite", "tie_model" if model_top in tops else "tie", {"k": len(tops)})


# ------------------------------------------------------------------ the room's surprise ----
def room_surprise(ce_bits: float, floored_share: float, floored: int, floor: float) -> Claim:
    """The model's cross-entropy on the room's answers (lmviz.chapters.generation_room.compare).
    "exact" when every answer the room gave had a probability the model's thousandths show;
    "floored" when ``floored`` chosen options (``floored_share`` of the answers) had one shown as
    0.000 and were counted at ``floor``: with a true 0 the cross-entropy would be infinite, and the
    sentence says so and what was counted instead.

    >>> room_surprise(1.85, 0.0, 0, 0.0005).statement, room_surprise(5.85, 0.5, 1, 0.0005).statement
    ('exact', 'floored')
    """
    ce = float(ce_bits)
    if not math.isfinite(ce):
        raise ValueError(f"the cross-entropy must be finite, got {ce}")
    vals = {"ce": ce, "share": float(floored_share), "k": int(floored), "eps": float(floor)}
    return Claim("room_surprise", "floored" if floored > 0 else "exact", vals)


# ------------------------------------------------------------------ induction heads ------
def induction(score: float, uniform: float, icl: float, rise: float, control_rise: float, *,
              stands_out: float = 3.0, used: float = -0.5) -> Claim:
    """Does the model have an induction head (lmviz.chapters.attention_induction.scan)? ``score``: the best
    head's prefix-matching score, ``uniform`` that of even attention, ``icl`` the second half's
    loss minus the first's (nats), ``rise`` and ``control_rise`` the second half's loss rise with
    the best head and with its layer's control head removed.

    "none" when the best head is within ``stands_out`` times even attention or the repeat does
    not lower the loss by ``used`` nats; "copies" when it stands out, the repeat is used and
    removing the head costs the second half more than twice what removing the control costs
    (and at least 0.1 nats); else "attends_only", weak: the head looks, but the causal check
    does not single it out (other heads may do the same work).

    >>> induction(0.89, 0.028, -11.3, 1.63, 0.03).statement      # SmolLM2, L18 H6
    'copies'
    >>> induction(0.025, 0.021, 0.74, 0.08, 0.01).statement      # the shipped model
    'none'
    >>> induction(0.6, 0.028, -3.0, 0.05, 0.04).statement
    'attends_only'
    """
    vals = {"score": float(score), "uniform": float(uniform), "icl": float(icl), "rise": float(rise),
            "crise": float(control_rise), "times": float(score) / max(float(uniform), 1e-12)}
    if score < stands_out * uniform or icl > used:
        return Claim("induction", "none", vals)
    if rise >= max(0.1, 2 * abs(control_rise)):
        return Claim("induction", "copies", vals)
    return Claim("induction", "attends_only", vals, WEAK)


# ------------------------------------------------------------------ an induction head forming --
def induction_forming(run) -> Claim:
    """Has the run formed an induction head (lmviz.chapters.induction_run.InductionRun), and which?

    "formed": from the first evaluation where lmviz.induction.formed holds, with the followed
    head's score at the evaluation before and now, and the ICL score then and now; "not_yet":
    the best head and the ICL score so far (a previous-token head may already be there).
    ``lh``/``plh``: layer and head counted from 1, as said aloud.
    """
    (layer, head), (pl, ph) = run.head, run.previous_head
    last, icl = len(run.steps) - 1, run.icl
    vals = {"layer": layer + 1, "head": head + 1, "score": run.score(last), "uniform": run.uniform,
            "icl": icl[last], "icl0": icl[0], "step0": run.steps[0], "step": run.steps[last],
            "player": pl + 1, "phead": ph + 1, "pscore": run.previous[last][pl][ph]}
    if run.formed_at is None:
        return Claim("induction_forming", "not_yet", vals)
    i = run.formed_at
    vals.update(at=run.steps[i], before=run.steps[max(0, i - 1)], score_before=run.score(max(0, i - 1)),
                score_at=run.score(i), icl_at=icl[i])
    return Claim("induction_forming", "formed", vals)


def induction_loss(run, *, sudden: float = 3.0, few: int = 3) -> Claim:
    """How the training loss went while the head formed (lmviz.chapters.induction_run): "bump"
    when it rose by BUMP_NATS or more near the formation; else "sudden" when its steepest fall
    between two evaluations was at least ``sudden`` times the median fall per evaluation before
    it, "smooth" when not; "waiting" before the head forms or with no fall before it to compare
    with. Weak with
    fewer than ``few`` evaluations before the steepest fall.

    >>> from types import SimpleNamespace as R
    >>> induction_loss(R(formed_at=4, bump=None, fall=(4, 0.24, 0.01), steps=(0, 50, 100, 150, 200))).statement
    'sudden'
    >>> induction_loss(R(formed_at=4, bump=None, fall=(4, 0.02, 0.01), steps=(0, 50, 100, 150, 200))).statement
    'smooth'
    >>> induction_loss(R(formed_at=4, bump=(5, 0.03), fall=(4, 0.24, 0.01), steps=(0, 50, 100, 150, 200, 250))).key
    'claim.induction_loss.bump'
    """
    if run.formed_at is None or run.fall is None or not math.isfinite(run.fall[2]):
        return Claim("induction_loss", "waiting", {})
    i, drop, typical = run.fall
    vals = {"a": run.steps[i - 1], "b": run.steps[i], "drop": drop, "typical": typical,
            "at": run.steps[run.formed_at], "times": drop / typical if typical > 1e-6 else math.inf}
    strength = WEAK if i - 1 < few else STRONG
    if run.bump is not None:
        j, rise = run.bump
        vals.update(ra=run.steps[j - 1], rb=run.steps[j], rise=rise)
        return Claim("induction_loss", "bump", vals, strength)
    return Claim("induction_loss", "sudden" if vals["times"] >= sudden else "smooth", vals, strength)


def induction_control(run, earlier) -> Claim:
    """This run beside the one before it (lmviz.chapters.induction_run.InductionRun each): does
    only the deeper one form an induction head (Olsson et al.'s one-layer exception)?
    "same_depth" when both have as many layers (not a control); otherwise "only_deeper",
    "only_shallower", "both" or "neither" from whether each formed. Weak while the shallower run is still short
    of the step at which the deeper one formed (it may yet form).

    >>> from types import SimpleNamespace as R
    >>> two = R(prefix=(((.1,), (.6,)),), formed_at=0, steps=(700,), icl=(-2.5,))
    >>> one = R(prefix=(((.1,),),), formed_at=None, steps=(900,), icl=(-0.01,))
    >>> induction_control(one, two).statement, induction_control(one, two).values["deep"]
    ('only_deeper', 2)
    """
    a, b = sorted((run, earlier), key=lambda r: len(r.prefix[0]))        # shallower, deeper
    vals = {"shallow": len(a.prefix[0]), "deep": len(b.prefix[0]), "icl_shallow": a.icl[-1], "icl_deep": b.icl[-1],
            "steps_shallow": a.steps[-1], "steps_deep": b.steps[-1]}
    if vals["shallow"] == vals["deep"]:
        return Claim("induction_control", "same_depth", vals)
    if b.formed_at is not None:
        vals["at"] = b.steps[b.formed_at]
    if a.formed_at is not None:
        vals["at_shallow"] = a.steps[a.formed_at]
    statement = {(False, True): "only_deeper", (True, True): "both", (False, False): "neither",
                 (True, False): "only_shallower"}[(a.formed_at is not None, b.formed_at is not None)]
    short = a.formed_at is None and b.formed_at is not None and a.steps[-1] < b.steps[b.formed_at]
    return Claim("induction_control", statement, vals, WEAK if short else STRONG)
