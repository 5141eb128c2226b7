"""lmviz.chapters.claims: every claim, fed data on both sides of its predicate, picks a different
statement, and the sentence the page prints (in both languages) flips with it. Plus: every
statement a claim can make has its sentence in every catalogue, formatted by the claim's numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lmviz.chapters import claims
from lmviz.chapters.claims import STATEMENTS, Claim
from lmviz.numfmt import duration
from ui.i18n import LANGS, catalogue, translate

EXTRA = {  # names the pages add to a claim's own numbers (a function: made from them, as the page does)
    "robot": {"model": "M"}, "pronoun": {"ref": "R", "ctrl": "C", "pron": "P", "lh": "L1 H1", "dist": 5},
    "answer_shift": {"tok": "P"}, "pace": {"eta": "75 s"}, "context_use": {"T": 64, "n": 128},
    "baseline": lambda c, lang: {"took": duration(c.values.get("secs", math.nan), lang)},
    "room_favourite": {"room": "A, B", "model": "C"}, "room_surprise": {"toks": "B"},
    "induction": {"lh": "L18 H6", "clh": "L18 H9", "n": 24}, "induction_forming": {"lh": "L2 H3", "plh": "L1 H2"},
}


def sentence(c: Claim, lang: str) -> str:
    extra = EXTRA.get(c.name, {})
    return translate(c.key, lang, **{**dict(c.values), **(extra(c, lang) if callable(extra) else extra)})


def flips(a: Claim, b: Claim) -> None:
    """Two claims on two sides of a predicate: different statements, different sentences."""
    assert a.name == b.name and a.statement != b.statement
    for lang in LANGS:
        sa, sb = sentence(a, lang), sentence(b, lang)
        assert sa != sb and sa and sb and not sa.startswith("claim.")


_NS = [128, 256, 512, 1024, 2048]
# data that makes each claim state each of its statements
def _run(losses, scores, icls, layers: int = 2):
    """A run's induction record (lmviz.chapters.induction_run) from its evaluations' training
    losses, the best head's prefix scores and the ICL scores (the head in the last layer)."""
    from lmviz.chapters.induction_run import induction_run
    from lmviz.induction import InductionPoint
    from lmviz.train import EvalMetrics

    def point(s, icl):
        rows = tuple((0.05, 0.03) for _ in range(layers - 1)) + ((s, 0.03),)
        return InductionPoint(2, (5, 9, 5, 9), rows, tuple((0.3, 0.1) for _ in range(layers)), 3.4, 3.4 + icl)
    return induction_run([EvalMetrics(50 * i, x, x, 1.0, point(s, c))
                          for i, (x, s, c) in enumerate(zip(losses, scores, icls))])


# the loss and the best head's score at each of 8 evaluations, and the ICL score
_FLAT = ([3.47, 3.46, 3.45, 3.44, 3.43, 3.42, 3.41, 3.40], [0.03] * 8, [-0.1] * 8)
_FORMS = ([3.47, 3.46, 3.45, 3.44, 3.43, 3.2, 2.9, 2.85], [0.03] * 5 + [0.4, 0.6, 0.6], [-0.1] * 5 + [-1.5, -2.4, -2.5])
_BUMP = ([3.47, 3.46, 3.45, 3.44, 3.43, 3.47, 2.9, 2.85], _FORMS[1], _FORMS[2])
_SMOOTH = ([3.47, 3.37, 3.27, 3.17, 3.07, 2.95, 2.85, 2.75], _FORMS[1], _FORMS[2])

SAMPLES = {
    "robot": [claims.robot(1.86, x) for x in (0.1, 0.9, 1.8)],
    "positions": [claims.positions([0.9, 0.8, 0.7, 0.2, 0.1]), claims.positions([0.3, 0.5, 0.1, 0.2, 0.7])],
    "pronoun": [claims.pronoun(*x) for x in ((0.6, 0.1, 0.1, 0.2), (0.5, 0.45, 0.1, 0.2),
                                             (0.5, 0.1, 0.45, 0.2), (0.3, 0.1, 0.1, 0.2))],
    "power_law": [claims.power_law(_NS, [[n ** e * f for n in _NS] for f in (1, 1.01, 0.99)])
                  for e in (2, 1, 3)] + [claims.power_law(_NS, [[1, 2, 3, 4, 5], [5, 1, 4, 2, 3], [1, 5, 1, 5, 1]])],
    "answer_shift": [claims.answer_shift(*x) for x in ((0.1, 0.5), (0.5, 0.1), (0.3, 0.3), (0.3, 0.3, 0.5))],
    "context_use": [claims.context_use(5, 1.2, 0.1, [0.05] * 64), claims.context_use(3, 4.6, 0.1, [0.5] * 64),
                    claims.context_use(60, 4.6, 0.1, [0.5] * 64)],
    "noise_shrink": [claims.noise_shrink([1, 4, 16, 64], [1.0, 0.52, 0.26, 0.13]),
                     claims.noise_shrink([1, 4, 16], [5.4, 2.6, 2.02]), claims.noise_shrink([1, 4, 16], [1.0, 0.2, 0.05])],
    "baseline": [claims.baseline([1], [1.0], [5.0], 6.0), claims.baseline([1], [1.0], [7.0], 6.0),
                 claims.baseline([], [], [], 6.0)],
    "pace": [claims.pace(*x) for x in ((14.0, 14.1, 12.0, 20.0, 900), (22.0, 14.1, 18.0, 20.0, 900),
                                       (5.0, 14.1, 4.0, 20.0, 900), (14.0, 14.1, 12.0, 2.0, 900))],
    "room_favourite": [claims.room_favourite(*x) for x in ((["a"], "a"), (["b"], "a"), (["a", "b", "c"], "d"),
                                                           (["a", "b"], "b"))],
    "room_surprise": [claims.room_surprise(1.85, 0.0, 0, 0.0005), claims.room_surprise(5.85, 0.5, 1, 0.0005)],
    "induction": [claims.induction(0.89, 0.028, -11.3, 1.63, 0.03), claims.induction(0.025, 0.021, 0.74, 0.08, 0.01),
                  claims.induction(0.6, 0.028, -3.0, 0.05, 0.04)],
    "induction_forming": [claims.induction_forming(_run(*_FORMS)), claims.induction_forming(_run(*_FLAT))],
    "induction_loss": [claims.induction_loss(_run(*_BUMP)), claims.induction_loss(_run(*_FORMS)),
                       claims.induction_loss(_run(*_SMOOTH)), claims.induction_loss(_run(*_FLAT))],
    "induction_control": [claims.induction_control(_run(*_FORMS), _run(*_FLAT, layers=1)),
                          claims.induction_control(_run(*_FLAT), _run(*_FORMS, layers=1)),
                          claims.induction_control(_run(*_FORMS), _run(*_FORMS, layers=1)),
                          claims.induction_control(_run(*_FLAT), _run(*_FLAT, layers=1)),
                          claims.induction_control(_run(*_FORMS), _run(*_FLAT))],
}


@pytest.mark.parametrize("lang", LANGS)
def test_every_statement_has_a_sentence_in_every_language(lang):
    assert set(SAMPLES) == set(STATEMENTS)
    for name, statements in STATEMENTS.items():
        assert sorted(c.statement for c in SAMPLES[name]) == sorted(statements), name
        for c in SAMPLES[name]:
            assert c.key in catalogue(lang), c.key
            text = sentence(c, lang)                       # every placeholder is supplied
            assert text and "{" not in text


def test_a_claim_cannot_state_what_it_does_not_know():
    with pytest.raises(ValueError):
        Claim("robot", "rises")


def test_robot_trained_and_untrained():
    # the numbers: untrained 1.860 -> 1.837, trained 1.860 -> 0.116
    untrained, trained = claims.robot(1.860, 1.837), claims.robot(1.860, 0.116)
    assert (untrained.statement, trained.statement) == ("not_closer", "reached")
    flips(untrained, trained)
    assert claims.robot(1.86, 0.9).statement == "closer"
    assert "1.837" in sentence(untrained, "en") and "0.116" in sentence(trained, "zh")


def test_positions_neighbours_or_not():
    from lmviz.model import sinusoidal_positions

    sin = claims.positions(claims.cosine_by_distance(sinusoidal_positions(64, 128).numpy()))
    # the shipped model's learned table, as measured: 1 apart 0.30, 2 apart 0.55, 10 apart 0.67
    learned = claims.positions([0.299, 0.549, 0.14, 0.172, 0.049, -0.014, 0.092, 0.43, 0.212, 0.672])
    assert sin.statement == "neighbours" and learned.statement == "not_by_distance"
    assert learned.values["top"] == 10
    flips(sin, learned)


def test_pronoun_needs_to_beat_the_control_and_the_look_back():
    ok = claims.pronoun(0.69, 0.25, 0.10, 0.11)
    control = claims.pronoun(0.37, 0.37, 0.10, 0.11)       # a non-referent gets as much
    recency = claims.pronoun(0.50, 0.10, 0.45, 0.11)       # the head looks that far back anyway
    none = claims.pronoun(0.30, 0.05, 0.05, 0.20)          # not even twice an even spread
    assert [c.statement for c in (ok, control, recency, none)] == ["referent", "control", "recency", "none"]
    for other in (control, recency, none):
        flips(ok, other)
        assert other.weak


def test_power_law_on_a_synthetic_timing_series_with_and_without_noise():
    rng = np.random.default_rng(0)
    ns = np.array([128, 256, 512, 1024, 2048])
    clean = [list(1e-9 * ns ** 2 * (1 + 0.01 * rng.standard_normal(len(ns)))) for _ in range(5)]
    noisy = [list(1e-9 * ns ** 2 * np.exp(2.5 * rng.standard_normal(len(ns)))) for _ in range(5)]  # x12 per sd
    linear = [list(1e-6 * ns * (1 + 0.01 * rng.standard_normal(len(ns)))) for _ in range(5)]
    c, n, lin = (claims.power_law(ns, r) for r in (clean, noisy, linear))
    assert c.statement == "quadratic" and abs(c.values["slope"] - 2) < 0.05 and c.values["hi"] - c.values["lo"] < 0.1
    assert n.statement == "noise" and n.values["hi"] - n.values["lo"] >= 1 and n.weak
    assert lin.statement == "below" and abs(lin.values["slope"] - 1) < 0.05
    steep = claims.power_law(ns, [list(1e-12 * ns ** 3.0)] * 2 + [list(1.01e-12 * ns ** 3.0)])
    assert steep.statement == "above"
    flips(c, n)
    flips(c, lin)
    assert "noise is larger than the effect" in sentence(n, "en") and "噪声比要测的效应还大" in sentence(n, "zh")
    with pytest.raises(ValueError):
        claims.power_law(ns, clean[:1])


def test_answer_shift():
    up, flat, down = claims.answer_shift(0.02, 0.40), claims.answer_shift(0.30, 0.31), claims.answer_shift(0.4, 0.1)
    assert (up.statement, flat.statement, down.statement) == ("rises", "unmoved", "falls")
    flips(up, flat)
    flips(down, flat)
    assert claims.answer_shift(0.0001, 0.0003).statement == "unmoved"    # 3x, but invisible on the bars
    # the answer unmoved, the distribution not (/beyond's Chinese default on the shipped model)
    moved = claims.answer_shift(0.0013, 0.0005, kl=0.329, top_moved=True)
    assert moved.statement == "elsewhere" and not moved.weak
    flips(moved, claims.answer_shift(0.0013, 0.0005, kl=0.05))
    assert claims.answer_shift(0.3, 0.31, kl=0.1).statement == "elsewhere"


def test_baseline_crossing_stated_from_the_run():
    crossed = claims.baseline([50, 100, 150], [20.0, 41.0, 63.0], [6.9, 6.5, 6.3], 6.46)
    not_yet = claims.baseline([50, 100], [50.0, 100.0], [6.9, 6.54], 6.46)
    assert crossed.statement == "crossed" and crossed.values["step"] == 150 and crossed.values["secs"] == 63.0
    assert not_yet.statement == "not_yet" and not_yet.values["gap"] == pytest.approx(0.08)
    flips(crossed, not_yet)
    assert "150" in sentence(crossed, "en") and "63 秒" in sentence(crossed, "zh")
    early = claims.baseline([25], [0.44], [2.46], 3.59)                 # a fast run: under a second
    assert "after 0.4 s of training" in sentence(early, "en") and "0.4 秒" in sentence(early, "zh")
    assert claims.baseline([], [], [], 6.46).statement == "no_data"


def test_pace_against_the_estimate_and_the_time_left():
    """The run's measured pace beside the budget's estimate: the steps' own rate decides faster /
    slower, the pace of running (evaluations included) gives the time left."""
    fast, slow = claims.pace(22.0, 14.1, 18.0, 20.0, 900), claims.pace(5.0, 14.1, 4.0, 20.0, 900)
    flips(fast, slow)
    assert fast.values["eta_s"] == 50.0 and slow.values["eta_s"] == 225.0
    assert round(slow.values["ratio"], 2) == 2.82 and round(slow.values["pct"]) == 35
    assert "2.8× slower" in sentence(slow, "en") and "35%" in sentence(slow, "zh")
    assert claims.pace(17.0, 14.1, 12.0, 20.0, 900).statement == "as_estimated"     # inside x1.25
    early = claims.pace(14.0, 14.1, 12.0, 2.0, 900)
    assert early.statement == "measuring" and early.weak


def test_room_favourite_names_a_tie_as_a_tie():
    one, tie = claims.room_favourite(["a"], "a"), claims.room_favourite(["a", "b", "c"], "a")
    flips(one, tie)
    assert tie.statement == "tie_model" and tie.values["k"] == 3
    assert "3 choices tie" in sentence(tie, "en") and "favourite, A, B" not in sentence(tie, "en")
    flips(claims.room_favourite(["b"], "a"), claims.room_favourite(["b", "c"], "a"))
    flips(claims.room_favourite(["a", "b"], "a"), claims.room_favourite(["b", "c"], "a"))
    with pytest.raises(ValueError):
        claims.room_favourite([], "a")


def test_room_surprise_says_when_a_zero_was_floored():
    exact, floored = claims.room_surprise(1.85, 0.0, 0, 0.0005), claims.room_surprise(5.85, 0.5, 1, 0.0005)
    flips(exact, floored)
    en = sentence(floored, "en")
    assert "5.85 bits" in en and "p = 0.0005" in en and "50% of the room chose it" in en and "inf " not in en
    assert "them" in sentence(claims.room_surprise(7.0, 0.75, 2, 0.0005), "en")
    with pytest.raises(ValueError):
        claims.room_surprise(math.inf, 1.0, 1, 0.0005)


def test_induction_on_both_sides_of_each_predicate():
    """The scan's numbers for SmolLM2 (a copying head) and for the shipped model (none); a head
    that looks but whose removal costs no more than its control's is only 'attends_only'."""
    copies, none = claims.induction(0.89, 0.028, -11.3, 1.63, 0.03), claims.induction(0.025, 0.021, 0.74, 0.08, 0.01)
    flips(copies, none)
    assert claims.induction(0.89, 0.028, 0.2, 1.63, 0.03).statement == "none"        # the repeat not used
    looks = claims.induction(0.89, 0.028, -11.3, 0.05, 0.04)
    assert looks.statement == "attends_only" and looks.weak
    flips(copies, looks)


def test_an_induction_run_claims_its_head_and_the_loss_from_its_own_evaluations():
    formed, flat = _run(*_FORMS), _run(*_FLAT)
    assert (formed.formed_at, formed.head, flat.formed_at) == (5, (1, 0), None)
    flips(claims.induction_forming(flat), claims.induction_forming(formed))
    c = claims.induction_forming(formed)
    assert (c.values["at"], c.values["before"], c.values["score_at"], c.values["icl_at"]) == (250, 200, 0.4, -1.5)
    # a sudden fall (0.30 nats against 0.01 before), no rise; a rise of 0.04 near the formation is a bump
    sudden, bump, smooth = (claims.induction_loss(_run(*x)) for x in (_FORMS, _BUMP, _SMOOTH))
    assert (sudden.statement, sudden.values["a"], sudden.values["b"]) == ("sudden", 250, 300)
    assert round(sudden.values["drop"], 2) == 0.3 and round(sudden.values["typical"], 2) == 0.01
    assert (bump.statement, bump.values["ra"], bump.values["rb"], round(bump.values["rise"], 2)) == ("bump", 200, 250, 0.04)
    assert smooth.statement == "smooth"
    flips(sudden, bump)
    flips(sudden, smooth)
    assert claims.induction_loss(flat).statement == "waiting"
    # the one-layer control beside the two-layer run, in either order
    c = claims.induction_control(_run(*_FLAT, layers=1), formed)
    assert (c.statement, c.values["shallow"], c.values["deep"], c.values["at"]) == ("only_deeper", 1, 2, 250)
    assert claims.induction_control(formed, _run(*_FLAT, layers=1)).values == c.values
    # a control stopped before the step the deeper run formed at is weak evidence
    short = _run(_FLAT[0][:3], _FLAT[1][:3], _FLAT[2][:3], layers=1)
    assert claims.induction_control(short, formed).weak and not c.weak


def test_the_run_answers_the_rooms_questions_only_once_its_data_settle_them():
    from lmviz.chapters.induction_run import answers

    formed, flat = _run(*_FORMS), _run(*_FLAT)
    assert answers(flat) == {} and answers(formed) == {"train_ind_loss": "sudden"}
    assert answers(_run(*_BUMP)) == {"train_ind_loss": "bump"}
    # the one-layer control beside it: "no" once it has trained past the step the other formed at
    control = _run(*_FLAT, layers=1)
    assert answers(control, formed) == {"train_ind_loss": "sudden", "train_ind_one_layer": "no"}
    short = _run(_FLAT[0][:3], _FLAT[1][:3], _FLAT[2][:3], layers=1)
    assert answers(short, formed) == {"train_ind_loss": "sudden"}
    assert answers(_run(*_FORMS, layers=1), formed)["train_ind_one_layer"] == "yes"
    assert "train_ind_one_layer" not in answers(_run(*_FLAT, layers=1), flat)   # neither formed


def test_noise_shrink_on_both_sides_of_each_predicate():
    """1/√B from the smallest batch, within 1.25 times: the guide 0.5 at B = 4 from 1.0 at B = 1."""
    like, slower = claims.noise_shrink([1, 4], [1.0, 0.62]), claims.noise_shrink([1, 4], [1.0, 0.63])
    faster, like2 = claims.noise_shrink([1, 4], [1.0, 0.39]), claims.noise_shrink([1, 4], [1.0, 0.41])
    assert (like.statement, slower.statement, faster.statement, like2.statement) == \
        ("like_sqrt", "slower", "faster", "like_sqrt")
    assert abs(slower.values["guide"] - 0.5) < 1e-12
    flips(like, slower)
    flips(like2, faster)
