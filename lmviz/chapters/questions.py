"""Predict-then-reveal questions: asked before a chapter shows the answer, answered by the core.

Each chapter has 1-3 :class:`Question` records. A question's right option and the numbers of
its explanation are COMPUTED by the same core function the chapter draws with (``lmviz.bpe``,
``lmviz.sampling``, ``lmviz.chapters``, ...), never typed; wrong options are computed too, each
from a common mistake (forgetting the 2 of K and V, reading the wrong token, ...).

Text lives in the catalogues: ``q.<id>.prompt`` (the question), ``q.<id>.explain`` (the reveal)
and ``q.<id>.opt.<option id>`` for options in words; both are formatted with the solution's
``prompt_args`` / ``explain_args`` (numbers already formatted as strings). An option whose
``label`` is set (a token, a pair, a number) is shown as is in every language: it is plain text
from a fixed input, but a page must still escape it (tokens such as ``<EOS>`` look like markup).

The inputs of each question (``low low lower``, logits [2, 1, -1], ...) are the chapter's own
worked examples; the constant each mirrors is named beside it. A question whose chapter shows
another example in another language (the toy sentence, the preset selected first) is solved per
language (``per_language``): ``solve()`` reads the page's language from :data:`language_source`,
which the Streamlit side sets (``ui.i18n``); core code and tests may pass ``lang`` instead.

    >>> q = by_id("gen_tau_half"); s = q.solve(); s.correct, q.option_ids()
    ('rises', ('rises', 'falls', 'same'))
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

__all__ = ["Option", "Solution", "Question", "QUESTIONS", "by_id", "for_chapter"]

# the language of the page being drawn (ui.i18n replaces this with its own ``lang``)
language_source: Callable[[], str] = lambda: "en"


@dataclass(frozen=True)
class Option:
    id: str              # stable id the class store keeps (lower-case, [a-z0-9_.-])
    label_key: str = ""  # catalogue key of an option in words ("" when `label` is given)
    label: str = ""      # a computed label shown as is in every language (escape it in HTML)


@dataclass(frozen=True)
class Solution:
    options: tuple[Option, ...]      # in the order they are shown
    correct: str                     # id of the right option
    prompt_args: dict                # placeholders of q.<id>.prompt (formatted strings)
    explain_args: dict               # placeholders of q.<id>.explain (formatted strings)
    values: dict                     # the raw computed numbers behind them (for tests, figures)


@dataclass(frozen=True)
class Question:
    id: str                           # also the catalogue prefix q.<id>.*
    chapter: str                      # chapter slug (ui.chapters)
    section: str                      # the chapter's section it is asked just before (ui.render.run_sections
    #                                   key); a question a live run answers: the section of that run
    compute: Callable[..., Solution]  # computes options, the answer and the explanation's numbers
    per_language: bool = False        # compute(lang): the chapter's example differs by language
    by_run: bool = False              # a live run answers it: no correct option until the page passes the
    #                                   one the run's data support (lmviz.chapters.induction_run.answers)

    @property
    def prompt_key(self) -> str:
        return f"q.{self.id}.prompt"

    @property
    def explain_key(self) -> str:
        return f"q.{self.id}.explain"

    def solve(self, lang: str | None = None) -> Solution:
        """The solution in ``lang`` (default: the page's language), computed once per process
        and language, then cached."""
        return _solve(self.id, (lang or _page_language()) if self.per_language else "")

    def option_ids(self, lang: str | None = None) -> tuple[str, ...]:
        return tuple(o.id for o in self.solve(lang).options)

    def is_correct(self, option_id: str, lang: str | None = None) -> bool:
        return option_id == self.solve(lang).correct


def _page_language() -> str:
    """The page's language from :data:`language_source`; English when it cannot tell (a thread
    with no page, say)."""
    try:
        code = language_source()
    except Exception:   # noqa: BLE001 - any failure of the hook means "no page language"
        return "en"
    return code if code in ("en", "zh") else "en"


def _worded(qid: str, *ids: str) -> tuple[Option, ...]:
    return tuple(Option(i, label_key=f"q.{qid}.opt.{i}") for i in ids)


def _fmt(x: float, fmt: str) -> str:
    """format(x, fmt) without a minus sign on a number that rounds to zero."""
    out = format(float(x), fmt)
    return out[1:] if out.startswith("-") and float(out) == 0 else out


def _vec(v, fmt: str = ".2f") -> str:
    """[0.85, 0.00, -0.20]"""
    return "[" + ", ".join(_fmt(x, fmt) for x in v) + "]"


def _num(x: float) -> str:
    return f"{float(x):g}"


def _choices(cands: dict, label: Callable[[object], str], answer: str,
             sort_key: Callable[[str], object] | None = None) -> tuple[tuple[Option, ...], str]:
    """Options for computed candidates {kind: value}: ids "a", "b", ... in a neutral order
    (ascending value, or sort_key), so neither an id nor the position gives the answer away.
    Returns (options, id of the `answer` kind). Labels must differ (a computed distractor must
    never coincide with the answer)."""
    kinds = sorted(cands, key=sort_key or (lambda k: cands[k]))
    opts = tuple(Option(chr(ord("a") + i), label=label(cands[k])) for i, k in enumerate(kinds))
    labels = [o.label for o in opts]
    if len(set(labels)) != len(labels):
        raise AssertionError(f"two options look the same: {labels}")
    return opts, opts[kinds.index(answer)].id


def _match(cands: dict, value: float) -> str:
    """The kind whose value equals `value` (exactly one must)."""
    hits = [k for k, v in cands.items() if math.isclose(v, value, rel_tol=1e-9, abs_tol=1e-12)]
    if len(hits) != 1:
        raise AssertionError(f"expected one candidate equal to {value}, got {hits}")
    return hits[0]


# -----------------------------------------------------------------------------
# 1 tokenization (lmviz.bpe; chapters/tokenization.py's toy corpus)

TOY_CORPUS = "low low lower"   # the tokenization chapter's "toy" source


def _tok_first_merge() -> Solution:
    from lmviz.bpe import train_bpe

    step = train_bpe(TOY_CORPUS, 1).history[0]
    cands = step.candidates
    opts, correct = _choices({c.ids: c.pair for c in cands}, lambda p: f"{p[0]} + {p[1]}", step.ids,
                             sort_key=lambda ids: ids)   # by token ids: l < o < w, e < r ...
    (a, b), (c, d) = step.tied[0], step.tied[1]
    ids = {c_.pair: c_.ids for c_ in cands}
    return Solution(opts, correct, {"text": TOY_CORPUS},
                    {"a": a, "b": b, "c": c, "d": d, "count": str(step.count),
                     "id_a": str(ids[(a, b)][0]), "id_c": str(ids[(c, d)][0]), "token": step.token},
                    {"count": step.count, "reason": step.reason, "pair": step.pair,
                     "tied": step.tied})


def _tok_lower_tokens() -> Solution:
    from lmviz.bpe import train_bpe

    tok = train_bpe(TOY_CORPUS, 2)
    pieces = [x.text for x in tok.tokens("lower")]
    n = len(pieces)
    opts = tuple(Option(f"n{k}", label=str(k)) for k in range(1, 6))
    return Solution(opts, f"n{n}", {"text": TOY_CORPUS, "merges": str(len(tok.merges))},
                    {"m1": "".join(tok.merges[0]), "m2": "".join(tok.merges[1]),
                     "pieces": " | ".join(pieces), "n": str(n)},
                    {"n": n, "pieces": pieces, "merges": tok.merges})


# -----------------------------------------------------------------------------
# 2 embedding (lmviz.chapters.embedding: the notes' toy table, the position example and the word-order example)

def _emb_order() -> Solution:
    import torch

    from lmviz.chapters.embedding import lookup, order_check, toy_embedding

    e = toy_embedding()
    robot, love = e.tokens.index("robot"), e.tokens.index("love")
    zeros = torch.zeros(2, e.E.shape[1], dtype=torch.float64)     # no position vectors
    c = order_check(e.E, [robot, love], [love, robot], zeros)
    opts = _worded("emb_order", "same", "different")
    rows = lookup(e.E, [robot, love])
    return Solution(opts, "same" if c.same_multiset else "different", {},
                    {"robot": _vec(rows[0]), "love": _vec(rows[1])},
                    {"same_multiset": c.same_multiset, "same_sequence": c.same_sequence})


def _emb_add_pos() -> Solution:
    import torch

    from lmviz.chapters.embedding import TOY_P3, add_position, toy_embedding

    e = toy_embedding()
    row = e.E[e.tokens.index("robot")]
    p3 = torch.tensor(TOY_P3, dtype=torch.float64)
    answer = add_position(row, p3)
    cands = {"sum": answer, "row": row, "diff": (row - p3).round(decimals=12),
             "prod": (row * p3).round(decimals=12)}
    opts, correct = _choices(cands, _vec, "sum", sort_key=lambda k: _vec(cands[k]))
    return Solution(opts, correct, {"row": _vec(row), "p3": _vec(p3)},
                    {"row": _vec(row), "p3": _vec(p3), "sum": _vec(answer)},
                    {"sum": answer.tolist()})


# -----------------------------------------------------------------------------
# 3 autoregression (lmviz.chapters.autoregression: teacher forcing, the causal mask)

MASK_T = 5   # chapters/autoregression.py: the mask slider's default T


def _ar_pairs(lang: str) -> Solution:
    from lmviz.chapters.autoregression import TOY_SENTENCE, toy_teacher_forcing

    tf = toy_teacher_forcing(lang if lang in TOY_SENTENCE else "en")
    T, n = len(tf.tokens), len(tf.pairs)
    opts = tuple(Option(f"n{k}", label=str(k)) for k in range(T - 2, T + 2))
    return Solution(opts, f"n{n}", {"sentence": " ".join(tf.tokens), "T": str(T)},
                    {"T": str(T), "n": str(n), "first": " ".join(tf.pairs[0].context),
                     "first_label": tf.pairs[0].target, "last": tf.tokens[-1]},
                    {"T": T, "n": n})


def _ar_mask_zero() -> Solution:
    from lmviz.chapters.autoregression import causal_mask_demo, toy_scores

    d = causal_mask_demo(toy_scores(MASK_T))
    w = d.weights
    zero = {(i, j) for i in range(MASK_T) for j in range(MASK_T) if float(w[i, j]) == 0.0}
    regions = {
        "above": {(i, j) for i in range(MASK_T) for j in range(MASK_T) if j > i},
        "below": {(i, j) for i in range(MASK_T) for j in range(MASK_T) if j < i},
        "diagonal": {(i, i) for i in range(MASK_T)},
        "none": set(),
    }
    hits = [k for k, cells in regions.items() if cells == zero]
    assert len(hits) == 1, hits
    opts = _worded("ar_mask_zero", "above", "below", "diagonal", "none")
    return Solution(opts, hits[0], {"T": str(MASK_T)},
                    {"n_zero": str(len(zero)), "n_cells": str(MASK_T * MASK_T),
                     "first_row": _vec(w[0], ".0f")},
                    {"zero": sorted(zero)})


# -----------------------------------------------------------------------------
# 4 attention (lmviz.chapters.attention: the weighted sum of values and the one-query softmax at d_k = 256)

ATT_WEIGHTS = (0.2, 0.3, 0.5)              # chapters/attention.py sec_w17
ATT_VALUES = ((1, 0), (0, 2), (2, 2))
SCALE_DK = 256                              # chapters/attention.py: the d_k picker's default


def _att_weighted_sum() -> Solution:
    import torch

    from lmviz.chapters.attention import weighted_sum_terms

    ws = weighted_sum_terms(ATT_WEIGHTS, ATT_VALUES)
    v = ws.values
    cands = {"weighted": ws.output, "mean": v.mean(0), "top": v[int(torch.argmax(ws.weights))],
             "sum": v.sum(0)}
    opts, correct = _choices(cands, lambda x: _vec(x, ".3g"), "weighted",
                             sort_key=lambda k: tuple(cands[k].tolist()))
    terms = " + ".join(f"{float(a):g}×{_vec(b, 'g')}" for a, b in zip(ws.weights, v))
    return Solution(opts, correct,
                    {"weights": _vec(ws.weights, "g"), "values": ", ".join(_vec(r, "g") for r in v)},
                    {"terms": terms, "out": _vec(ws.output, "g")},
                    {"output": ws.output.tolist()})


def _att_scale() -> Solution:
    from lmviz.chapters.attention import softmax_example

    p = softmax_example(SCALE_DK)
    raw, scaled = float(p.raw.max()), float(p.scaled.max())
    correct = "peaked" if raw > scaled else "flatter" if raw < scaled else "same"
    return Solution(_worded("att_scale", "peaked", "flatter", "same"), correct,
                    {"dk": str(SCALE_DK), "n": str(len(p.raw))},
                    {"raw": f"{raw:.2f}", "scaled": f"{scaled:.2f}", "sqrt": _num(math.sqrt(SCALE_DK))},
                    {"raw_max": raw, "scaled_max": scaled})


# -----------------------------------------------------------------------------
# 5 transformer block (lmviz.chapters.transformer_block.norm_steps on the chapter's default vector)

NORM_VECTOR = (2.0, -1.0, 0.5, 3.5)   # chapters/transformer_block.py: the vector box's default


def _blk_norm_mean() -> Solution:
    from lmviz.chapters.transformer_block import norm_steps

    s = norm_steps(list(NORM_VECTOR))
    ln_mean, rms_mean = float(s.layernorm.mean()), float(s.rmsnorm.mean())
    ln0, rms0 = abs(ln_mean) < 1e-9, abs(rms_mean) < 1e-9
    correct = {(True, False): "ln", (False, True): "rms", (True, True): "both",
               (False, False): "neither"}[(ln0, rms0)]
    return Solution(_worded("blk_norm_mean", "ln", "rms", "both", "neither"), correct,
                    {"h": _vec(NORM_VECTOR, "g")},
                    {"mean": f"{s.mean:.4f}", "ln": _vec(s.layernorm, ".4f"),
                     "ln_mean": _fmt(ln_mean, ".4f"), "rms_den": f"{s.rms_den:.4f}",
                     "rms": _vec(s.rmsnorm, ".4f"), "rms_mean": _fmt(rms_mean, ".4f")},
                    {"ln_mean": ln_mean, "rms_mean": rms_mean})


# -----------------------------------------------------------------------------
# 6 loss and gradients (lmviz.chapters.loss_and_gradients: softmax and cross-entropy, the one-parameter model)

CE_LOGITS = (2.0, 1.0, -1.0)    # chapters/loss_and_gradients.py: the logit sliders' defaults (A, B, C)
CE_NAMES = ("A", "B", "C")
CE_TARGET = 1                   # ... and the answer selectbox's default, B
ONE_PARAM = dict(w=1.0, x=2.0, y=6.0)   # chapters/loss_and_gradients.py: one_param_step(1.0, 2.0, 6.0, lr)
BIG_LR = 0.6                    # the η = 0.6 (the page's η slider reaches 0.7)


def _loss_ce() -> Solution:
    from lmviz.chapters.loss_and_gradients import cross_entropy

    ce = cross_entropy(CE_LOGITS, CE_TARGET)
    p = ce.probs
    top = max(range(len(p)), key=lambda i: p[i])
    cands = {"ln_answer": ce.loss, "ln_top": -math.log(p[top]), "one_minus": 1 - p[CE_TARGET],
             "minus_logit": -CE_LOGITS[CE_TARGET]}
    opts, correct = _choices(cands, lambda x: _fmt(x, ".2f"), _match(cands, ce.torch_loss))
    return Solution(opts, correct,
                    {"logits": _vec(CE_LOGITS, "g"), "answer": CE_NAMES[CE_TARGET]},
                    {"probs": _vec(p, ".3f"), "answer": CE_NAMES[CE_TARGET],
                     "p": f"{p[CE_TARGET]:.3f}", "loss": f"{ce.loss:.2f}"},
                    {"loss": ce.loss, "probs": p})


def _loss_big_lr() -> Solution:
    from lmviz.chapters.loss_and_gradients import one_param_step

    s = one_param_step(lr=BIG_LR, **ONE_PARAM)
    w_star = ONE_PARAM["y"] / ONE_PARAM["x"]
    factor = (s.w_new - w_star) / (s.w - w_star)
    correct = "rises" if s.loss_new > s.loss else "falls" if s.loss_new < s.loss else "same"
    return Solution(_worded("loss_big_lr", "rises", "falls", "same"), correct,
                    {"lr": _num(BIG_LR), "x": _num(ONE_PARAM["x"]), "y": _num(ONE_PARAM["y"]),
                     "w": _num(ONE_PARAM["w"])},
                    {"grad": _num(s.grad), "w": _num(s.w), "w_new": f"{s.w_new:g}",
                     "w_star": _num(w_star), "y_hat": f"{s.y_hat_new:g}", "loss": f"{s.loss:g}",
                     "loss_new": f"{s.loss_new:.2f}", "x2": _num(ONE_PARAM["x"] ** 2),
                     "factor": f"{factor:+.2f}"},
                    {"loss": s.loss, "loss_new": s.loss_new, "w_new": s.w_new, "factor": factor})


# -----------------------------------------------------------------------------
# 7 training (lmviz.train.lr_at: warm-up, then cosine, on the preset the chapter selects first)

def _train_lr_start(lang: str) -> Solution:
    from lmviz.chapters.examples import DEFAULT_SETUP
    from lmviz.train import PRESETS, lr_at

    preset = DEFAULT_SETUP.get(lang, DEFAULT_SETUP["en"])[1]
    cfg = PRESETS[preset]
    lo = cfg.lr * cfg.min_lr_frac
    cands = {"peak": cfg.lr, "warm": lr_at(0, cfg), "zero": 0.0, "floor": lo}
    opts, correct = _choices(cands, lambda x: f"{x:g}", _match(cands, lr_at(0, cfg)))
    return Solution(opts, correct,
                    {"preset": preset, "lr": f"{cfg.lr:g}", "warmup": str(cfg.warmup_steps),
                     "steps": f"{cfg.max_steps:,}"},
                    {"warmup": str(cfg.warmup_steps), "lr0": f"{lr_at(0, cfg):g}",
                     "peak": f"{lr_at(cfg.warmup_steps - 1, cfg):g}",
                     "floor": f"{lr_at(cfg.max_steps, cfg):g}", "steps": f"{cfg.max_steps:,}"},
                    {"lr0": lr_at(0, cfg), "peak": lr_at(cfg.warmup_steps - 1, cfg),
                     "floor": lr_at(cfg.max_steps, cfg)})


# 7 training, answered by a live run of the induction preset (issue 57): the options only; the
# run's own evaluations pick the right one (lmviz.chapters.induction_run.answers)

def _by_run(qid: str, options: tuple[str, ...]) -> Callable[[], Solution]:
    def compute() -> Solution:
        from lmviz.train import PRESETS

        cfg = PRESETS["induction"]
        args = {"layers": str(cfg.n_layer), "steps": f"{cfg.max_steps:,}", "half": str(cfg.induction_probe)}
        return Solution(tuple(Option(o, f"q.{qid}.opt.{o}") for o in options), "", args, args, {})
    return compute


# -----------------------------------------------------------------------------
# 8 generation (lmviz.sampling: W8 greedy on the toy table, W13/W20 temperature, W22)

TAU_LOGITS = (2.0, 1.0, -1.0)   # chapters/generation.py LOGITS (A, B, C)
TAU_NEW = 0.5
GREEDY_STEP = 2                 # the step after "<BOS> I love"


def _gen_greedy() -> Solution:
    from lmviz.sampling import TOY_TABLE, TOY_VOCAB, greedy_trace

    step = greedy_trace(TOY_TABLE)[GREEDY_STEP]
    ranked = sorted((i for i, p in enumerate(step.probs) if p > 0), key=lambda i: (-step.probs[i], i))
    opts = tuple(Option(f"t{i}", label=TOY_VOCAB[i]) for i in sorted(ranked))
    second = ranked[1]
    return Solution(opts, f"t{TOY_VOCAB.index(step.token)}", {"prefix": " ".join(step.prefix)},
                    {"token": step.token, "p": f"{step.prob:.2f}", "p2": f"{step.probs[second]:.2f}"},
                    {"token": step.token, "prob": step.prob})


def _gen_tau_half() -> Solution:
    from lmviz.sampling import softmax_t

    p1 = float(softmax_t(TAU_LOGITS, 1.0)[0])
    p2 = float(softmax_t(TAU_LOGITS, TAU_NEW)[0])
    correct = "rises" if p2 > p1 else "falls" if p2 < p1 else "same"
    return Solution(_worded("gen_tau_half", "rises", "falls", "same"), correct,
                    {"logits": _vec(TAU_LOGITS, "g"), "tau": _num(TAU_NEW)},
                    {"p1": f"{p1:.3f}", "p2": f"{p2:.3f}", "tau": _num(TAU_NEW)},
                    {"p1": p1, "p2": p2})


def _gen_greedy_best() -> Solution:
    from lmviz.sampling import TOY_TABLE, best_sequence, table_prob_fn

    r = best_sequence(table_prob_fn(TOY_TABLE))
    return Solution(_worded("gen_greedy_best", "yes", "no"), "yes" if r.greedy == r.best else "no", {},
                    {"greedy": " ".join(r.greedy), "greedy_joint": f"{r.greedy_joint:.2f}",
                     "best": " ".join(r.best), "best_joint": f"{r.best_joint:.2f}"},
                    {"greedy": r.greedy, "best": r.best})


# -----------------------------------------------------------------------------
# 9 KV cache (lmviz.kv_cache.kv_cache_bytes, lmviz.chapters.kv_cache: the notes' 32-layer cache example)

KV_PRESET = "notes"   # chapters/kv_cache.py: the preset selectbox's default


def _gib(n: float) -> str:
    return f"{n / 2 ** 30:g} GiB"


def _kv_bytes() -> Solution:
    from lmviz.kv_cache import DTYPE_BYTES, kv_cache_bytes
    from lmviz.chapters.kv_cache import MODEL_SHAPES

    s = MODEL_SHAPES[KV_PRESET]
    b = DTYPE_BYTES[s.dtype]
    right = kv_cache_bytes(1, s.n_layer, s.n_tokens, s.n_kv_head, s.head_dim, b)
    cands = {"right": right,
             "no_kv2": right / 2,   # forgot that K and V are both cached
             "q_heads": kv_cache_bytes(1, s.n_layer, s.n_tokens, s.n_head, s.head_dim, b),  # query heads
             "fp32": kv_cache_bytes(1, s.n_layer, s.n_tokens, s.n_kv_head, s.head_dim, DTYPE_BYTES["FP32"])}
    opts, correct = _choices(cands, _gib, "right")
    return Solution(opts, correct,
                    {"L": str(s.n_layer), "n": f"{s.n_tokens:,}", "H": str(s.n_head),
                     "Hkv": str(s.n_kv_head), "d": str(s.head_dim), "dtype": s.dtype},
                    {"L": str(s.n_layer), "n": f"{s.n_tokens:,}", "Hkv": str(s.n_kv_head),
                     "d": str(s.head_dim), "s": _num(b), "bytes": f"{right:,}", "gib": _gib(right)},
                    {"bytes": right})


def _kv_gqa() -> Solution:
    from lmviz.kv_cache import DTYPE_BYTES
    from lmviz.chapters.kv_cache import MODEL_SHAPES, attention_variants

    s = MODEL_SHAPES[KV_PRESET]
    v = {x.name: x for x in attention_variants(1, s.n_layer, s.n_tokens, s.n_head, s.n_kv_head,
                                               s.head_dim, DTYPE_BYTES[s.dtype])}
    g = v["GQA"].saving
    cands = {"half": g / 2, "right": g, "double": g * 2, "mqa": v["MQA"].saving}
    opts, correct = _choices(cands, lambda x: f"{x:g}×", "right")
    return Solution(opts, correct, {"H": str(s.n_head), "Hkv": str(s.n_kv_head)},
                    {"mha": _gib(v["MHA"].bytes), "gqa": _gib(v["GQA"].bytes), "saving": f"{g:g}",
                     "mqa": _gib(v["MQA"].bytes), "H": str(s.n_head), "Hkv": str(s.n_kv_head)},
                    {"saving": g})


# -----------------------------------------------------------------------------
# 10 cost (lmviz.chapters.cost: doubling n and where attention starts to dominate)

COST_D = 64                  # head width of the O(n^2) example (chapters/cost.py: d = 64)
COST_N = 1024
WHERE_D, WHERE_R = 128, 4    # chapters/cost.py sec_where: the default model's d_model and mlp_ratio


def _cost_double_n() -> Solution:
    from lmviz.chapters.cost import attention_flops, mlp_flops, projection_flops

    f1, f2 = attention_flops(COST_N, COST_D), attention_flops(2 * COST_N, COST_D)
    r = f2 / f1
    lin = (projection_flops(2 * COST_N, COST_D) + mlp_flops(2 * COST_N, COST_D)) / (
        projection_flops(COST_N, COST_D) + mlp_flops(COST_N, COST_D))
    cands = {"x2": 2.0, "x4": 4.0, "x8": 8.0}   # linear, quadratic, cubic in n
    opts, correct = _choices(cands, lambda x: f"{x:g}×", _match(cands, r))
    return Solution(opts, correct,
                    {"n": f"{COST_N:,}", "n2": f"{2 * COST_N:,}", "d": str(COST_D)},
                    {"f1": f"{f1:,}", "f2": f"{f2:,}", "ratio": f"{r:g}", "lin": f"{lin:g}"},
                    {"ratio": r, "linear_ratio": lin})


def _cost_crossover() -> Solution:
    from lmviz.chapters.cost import attention_dominates_from, layer_flops

    n = attention_dominates_from(WHERE_D, WHERE_R)
    f = layer_flops(int(n), WHERE_D, WHERE_R)
    assert f.attention == f.projections + f.mlp
    d = WHERE_D
    cands = {"d": float(d), "2d": 2.0 * d, "right": n, "d2": float(d * d)}
    opts, correct = _choices(cands, lambda x: f"{x:g}", "right")
    return Solution(opts, correct, {"d": str(d), "r": str(WHERE_R)},
                    {"n": f"{n:g}", "r": str(WHERE_R), "k": f"{n / d:g}",
                     "flops": f"{f.attention:,}"},
                    {"n": n})


# -----------------------------------------------------------------------------
# 11 beyond (lmviz.chapters.beyond_robot: actions as tokens)

def _bey_bins() -> Solution:
    import numpy as np

    from lmviz.chapters.beyond_robot import RobotConfig, round_trip

    cfg = RobotConfig()   # chapters/beyond.py: the bins slider's default is RobotConfig's n_bins
    r = round_trip(np.linspace(-cfg.max_step, cfg.max_step, 1001), cfg)
    worst = float(np.abs(r.error).max())
    cands = {"zero": 0.0, "half": r.half_bin, "bin": cfg.bin_width, "max": cfg.max_step}
    opts, correct = _choices(cands, lambda x: f"{x:.3f}", min(cands, key=lambda k: abs(cands[k] - worst)))
    return Solution(opts, correct, {"n": str(cfg.n_bins), "m": _num(cfg.max_step)},
                    {"n": str(cfg.n_bins), "m": _num(cfg.max_step), "w": f"{cfg.bin_width:.4f}",
                     "half": f"{r.half_bin:.4f}", "worst": f"{worst:.4f}", "k": str(len(r.values))},
                    {"worst": worst, "half_bin": r.half_bin})


# -----------------------------------------------------------------------------
# 12 post-training (lmviz.chapters.post_training): the question's loss, answered by the live
# fine-tune (post_training.answers); the DPO margin of the page's worked example

def _pt_prompt_loss() -> Solution:
    from lmviz.chapters.post_training import SFTConfig

    args = {"steps": str(SFTConfig().steps)}
    return Solution(_worded("pt_prompt_loss", "falls_like", "falls_less", "same", "rises"), "", args, args, {})


def _pt_dpo_margin() -> Solution:
    from lmviz.chapters.post_training import DPO_EXAMPLE, dpo_by_hand

    r = dpo_by_hand(**DPO_EXAMPLE)
    cands = {"margin": r.margin, "no_beta": r.chosen_shift - r.rejected_shift, "chosen_only": r.beta * r.chosen_shift,
             "flipped": -r.margin}
    num = lambda x: _fmt(x, "g").replace("-", "\u2212")  # noqa: E731   (a true minus, as the page writes it)
    opts, correct = _choices(cands, num, "margin")
    args = {k: num(DPO_EXAMPLE[k]) for k in ("chosen", "rejected", "ref_chosen", "ref_rejected", "beta")}
    return Solution(opts, correct, args,
                    dict(args, dw=num(r.chosen_shift), dl=num(r.rejected_shift), margin=num(r.margin),
                         p=f"{r.prob:.4f}", loss=f"{r.loss:.4f}"),
                    {"margin": r.margin, "loss": r.loss})


# -----------------------------------------------------------------------------

QUESTIONS: tuple[Question, ...] = (
    Question("tok_first_merge", "tokenization", "tok.stepper", _tok_first_merge),
    Question("tok_lower_tokens", "tokenization", "tok.encode", _tok_lower_tokens),
    Question("emb_order", "embedding", "emb.sec_position", _emb_order),
    Question("emb_add_pos", "embedding", "emb.sec_position", _emb_add_pos),
    Question("ar_pairs", "autoregression", "ar.sec_teacher", _ar_pairs, per_language=True),
    Question("ar_mask_zero", "autoregression", "ar.sec_mask", _ar_mask_zero),
    Question("att_weighted_sum", "attention", "att.sec_w17", _att_weighted_sum),
    Question("att_scale", "attention", "att.sec_scale", _att_scale),
    Question("blk_norm_mean", "transformer-block", "blk.sec_norms", _blk_norm_mean),
    Question("loss_ce", "loss-and-gradients", "loss.sec_softmax", _loss_ce),
    Question("loss_big_lr", "loss-and-gradients", "loss.sec_onestep", _loss_big_lr),
    Question("train_lr_start", "training", "train.sec_run", _train_lr_start, per_language=True),
    Question("train_ind_loss", "training", "train.sec_run", _by_run("train_ind_loss", ("smooth", "sudden", "bump")),
             by_run=True),
    Question("train_ind_one_layer", "training", "train.sec_run", _by_run("train_ind_one_layer", ("yes", "no")),
             by_run=True),
    Question("gen_greedy", "generation", "gen.sec_greedy", _gen_greedy),
    Question("gen_tau_half", "generation", "gen.sec_temp", _gen_tau_half),
    Question("gen_greedy_best", "generation", "gen.sec_tree", _gen_greedy_best),
    Question("kv_bytes", "kv-cache", "kv.sec_memory", _kv_bytes),
    Question("kv_gqa", "kv-cache", "kv.sec_memory", _kv_gqa),
    Question("cost_double_n", "cost", "cost.sec_measured", _cost_double_n),
    Question("cost_crossover", "cost", "cost.sec_where", _cost_crossover),
    Question("bey_bins", "beyond", "bey.sec_robot", _bey_bins),
    Question("pt_prompt_loss", "post-training", "pt.sec_sft", _pt_prompt_loss, by_run=True),
    Question("pt_dpo_margin", "post-training", "pt.sec_dpo", _pt_dpo_margin),
)
_BY_ID = {q.id: q for q in QUESTIONS}


@lru_cache(maxsize=None)
def _solve(qid: str, lang: str) -> Solution:
    q = _BY_ID[qid]
    return q.compute(lang) if q.per_language else q.compute()


def by_id(qid: str) -> Question | None:
    """The question with this id, or None (ids come from URLs and the class store)."""
    return _BY_ID.get(qid) if isinstance(qid, str) else None


def for_chapter(slug: str) -> tuple[Question, ...]:
    """The questions of one chapter, in the order they are asked."""
    return tuple(q for q in QUESTIONS if q.chapter == slug)
