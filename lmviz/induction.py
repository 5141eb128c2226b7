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

Each sequence is SEQ symbols, a window of the preset (``TrainConfig.aligned``). A run is probed with
lmviz.chapters.attention_induction.scan, the probe every model gets on /attention.
"""
from __future__ import annotations

import random

__all__ = ["ALPHABET", "SPAN", "MAX_GAP", "SEQ", "induction_text", "PROMPT", "PROBE_HALF", "FORMED_ICL", "FORMED_HEAD",
           "formed"]

ALPHABET = "abcdefghijklmnopqrstuvwxyz012345"   # 32 symbols: ln 32 = 3.47 nats for a symbol nothing predicts
SPAN = 20          # symbols in the span that is copied
MAX_GAP = 24       # random symbols between the span and its copy: 0 .. MAX_GAP, so the distance varies
SEQ = 65           # symbols per sequence: a window of 64 and the symbol after it (the preset's block_size + 1)
PROBE_HALF = 24    # the probe's run of distinct symbols, then the run again (48 symbols)
FORMED_ICL = -1.0  # nats: the probe's ICL score of a run that has formed an induction head is this low,
FORMED_HEAD = 0.3  # and its best prefix-matching head scores this much (a head attending evenly: 0.028)
PROMPT_SEED = 7    # the fixed prompt sampled at each evaluation


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
