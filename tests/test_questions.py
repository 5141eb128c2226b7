"""Predict-then-reveal questions (lmviz/chapters/questions.py): every chapter has 1-3, every answer is
computed by the core and checked here against an independent small computation (plain Python),
and every string exists in both languages and formats with the computed numbers."""
from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from lmviz.server.classroom import ClassStore
from lmviz.chapters.questions import QUESTIONS, by_id, for_chapter
from ui.chapters import CHAPTERS
from ui.i18n import LANGS, catalogue

IDS = [q.id for q in QUESTIONS]


def label(qid: str) -> str:
    """The shown label of the right option (worded options: the English string)."""
    s = by_id(qid).solve()
    o = next(o for o in s.options if o.id == s.correct)
    return o.label or catalogue("en")[o.label_key]


def explain(qid: str, lang: str = "en") -> str:
    q = by_id(qid)
    return catalogue(lang)[q.explain_key].format(**q.solve().explain_args)


# -- structure -----------------------------------------------------------------------------------
def test_every_chapter_has_one_to_three_questions():
    slugs = [c.slug for c in CHAPTERS if c.slug]        # the one list of chapters (ui/chapters.py)
    for slug in slugs:
        assert 1 <= len(for_chapter(slug)) <= 3, slug
    assert {q.chapter for q in QUESTIONS} == set(slugs)
    assert len(set(IDS)) == len(IDS)


def test_each_question_is_asked_before_a_section_its_chapter_has():
    """``Question.section`` is a key of its chapter's ``render.run_sections`` list (read from the page)."""
    from ui.chapters import ROOT, by_slug

    for q in QUESTIONS:
        page = (ROOT / by_slug(q.chapter).file).read_text(encoding="utf-8")
        assert f'("{q.section}", ' in page, (q.id, q.section)


@pytest.mark.parametrize("qid", IDS)
def test_options_are_well_formed_and_the_store_accepts_them(qid):
    q = by_id(qid)
    s = q.solve()
    ids = q.option_ids()
    assert 2 <= len(ids) <= 8 and len(set(ids)) == len(ids)
    if q.by_run:       # no answer until a live run gives one (lmviz.chapters.induction_run.answers)
        assert s.correct == "" and not any(q.is_correct(i) for i in ids)
    else:
        assert s.correct in ids and q.is_correct(s.correct)
        assert sum(q.is_correct(i) for i in ids) == 1
    for o in s.options:
        assert bool(o.label) != bool(o.label_key), o          # exactly one way to show it
    shown = [o.label or o.label_key for o in s.options]
    assert len(set(shown)) == len(shown)
    store = ClassStore()
    c = store.create_class()
    assert store.open_question(c.code, c.secret, q.id, list(ids)).ok
    assert store.answer(c.code, "s1", q.id, s.correct or ids[0]).ok


@pytest.mark.parametrize("qid", IDS)
@pytest.mark.parametrize("lang", LANGS)
def test_strings_exist_and_take_the_computed_numbers(qid, lang):
    q = by_id(qid)
    s = q.solve()
    cat = catalogue(lang)
    for key, args in ((q.prompt_key, s.prompt_args), (q.explain_key, s.explain_args)):
        text = cat[key]
        needed = set(re.findall(r"{(\w+)}", text))
        assert needed <= set(args), (key, needed - set(args))
        assert all(isinstance(v, str) for v in args.values())
        out = text.format(**args)
        assert "{" not in out and "}" not in out
    for o in s.options:
        if o.label_key:
            assert cat[o.label_key].strip()


def test_lookups():
    assert by_id("gen_tau_half").chapter == "generation"
    assert by_id("nope") is None and by_id(None) is None and by_id(["x"]) is None
    assert by_id("kv_bytes").solve() is by_id("kv_bytes").solve()   # computed once


def test_computed_options_do_not_give_the_answer_away():
    """Computed options get neutral ids in value order: the answer is not always the same letter."""
    lettered = [q for q in QUESTIONS if q.option_ids()[0] == "a"]
    assert len(lettered) >= 8
    assert len({q.solve().correct for q in lettered}) >= 3


# -- each answer, computed independently ---------------------------------------------------------
def _mini_bpe(text: str, merges: int) -> list[tuple[str, str]]:
    """A plain BPE trainer: words split on spaces, ties to the smaller (left, right) code points."""
    words = Counter(text.split())
    segs = {w: list(w) for w in words}
    learned = []
    for _ in range(merges):
        pairs = Counter()
        for w, f in words.items():
            for a, b in zip(segs[w], segs[w][1:]):
                pairs[(a, b)] += f
        best = min(pairs, key=lambda p: (-pairs[p], p))
        learned.append(best)
        for w in segs:
            out, i = [], 0
            while i < len(segs[w]):
                if segs[w][i:i + 2] == list(best):
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(segs[w][i])
                    i += 1
            segs[w] = out
    return learned


def test_tok_first_merge():
    first = _mini_bpe("low low lower", 1)[0]
    assert first == ("l", "o")
    assert label("tok_first_merge") == "l + o"
    assert by_id("tok_first_merge").solve().values["reason"] == "tie_smaller_ids"
    assert "3" in explain("tok_first_merge")


def test_tok_lower_tokens():
    m = _mini_bpe("low low lower", 2)
    seg = list("lower")
    for a, b in m:
        i, out = 0, []
        while i < len(seg):
            if seg[i:i + 2] == [a, b]:
                out.append(a + b)
                i += 2
            else:
                out.append(seg[i])
                i += 1
        seg = out
    assert seg == ["low", "e", "r"]
    assert label("tok_lower_tokens") == str(len(seg))


def test_emb_order_and_add_pos():
    robot, love, p3 = [0.80, 0.10, -0.40], [-0.20, 0.70, 0.50], [0.05, -0.10, 0.20]
    assert sorted([robot, love]) == sorted([love, robot])
    assert label("emb_order") == catalogue("en")["q.emb_order.opt.same"]
    want = "[" + ", ".join(f"{a + b:.2f}".replace("-0.00", "0.00") for a, b in zip(robot, p3)) + "]"
    assert want == "[0.85, 0.00, -0.20]" == label("emb_add_pos")


def test_ar_pairs_and_mask():
    tokens = "<BOS> I love robot s <EOS>".split()
    assert label("ar_pairs") == str(len(tokens) - 1) == "5"
    T = 5
    zero = [(i, j) for i in range(T) for j in range(T) if j > i]   # exp(-inf) = 0 exactly
    assert label("ar_mask_zero") == catalogue("en")["q.ar_mask_zero.opt.above"]
    assert by_id("ar_mask_zero").solve().explain_args["n_zero"] == str(len(zero)) == "10"


def test_att_weighted_sum_and_scale():
    w, v = (0.2, 0.3, 0.5), ((1, 0), (0, 2), (2, 2))
    out = [round(sum(wi * vi[k] for wi, vi in zip(w, v)), 9) for k in range(2)]
    assert out == [1.2, 1.6] and label("att_weighted_sum") == "[1.2, 1.6]"
    # dividing scores by sqrt(d_k) > 1 always lowers the largest softmax weight of unequal scores
    s = [3.0, -1.0, 0.5]
    top = lambda z: max(math.exp(x) for x in z) / sum(math.exp(x) for x in z)  # noqa: E731
    assert top(s) > top([x / 16 for x in s])
    assert label("att_scale").startswith("More peaked")
    vals = by_id("att_scale").solve().values
    assert vals["raw_max"] > vals["scaled_max"]


def test_blk_norm_mean():
    h = [2.0, -1.0, 0.5, 3.5]
    mu = sum(h) / 4
    var = sum((x - mu) ** 2 for x in h) / 4
    ln = [(x - mu) / math.sqrt(var + 1e-5) for x in h]
    rms = [x / math.sqrt(sum(y * y for y in h) / 4 + 1e-5) for x in h]
    assert abs(sum(ln) / 4) < 1e-12 and abs(sum(rms) / 4) > 0.5
    assert label("blk_norm_mean") == "LayerNorm only"
    assert by_id("blk_norm_mean").solve().explain_args["rms_mean"] == f"{sum(rms) / 4:.4f}"


def test_loss_ce_and_big_lr():
    z = [2.0, 1.0, -1.0]
    loss = -math.log(math.exp(z[1]) / sum(math.exp(x) for x in z))
    assert label("loss_ce") == f"{loss:.2f}" == "1.35"
    w, x, y, lr = 1.0, 2.0, 6.0, 0.6
    w2 = w - lr * (w * x - y) * x
    before, after = (w * x - y) ** 2 / 2, (w2 * x - y) ** 2 / 2
    assert (w2, before, round(after, 2)) == (5.8, 8.0, 15.68)
    assert label("loss_big_lr") == "It rises"
    e = by_id("loss_big_lr").solve().explain_args
    assert e["loss_new"] == "15.68" and e["factor"] == "-1.40"
    assert abs(float(e["factor"])) > 1    # the explanation says the error grows


def test_train_lr_start():
    peak, warmup = 3e-3, 20                 # the tiny preset
    assert label("train_lr_start") == f"{peak * 1 / warmup:g}" == "0.00015"


def test_generation_questions():
    row = {"<BOS>": 0.00, "I": 0.10, "love": 0.05, "robot": 0.65, "s": 0.10, "<EOS>": 0.10}
    assert label("gen_greedy") == max(row, key=row.get) == "robot"
    z = [2.0, 1.0, -1.0]
    p = lambda tau: math.exp(z[0] / tau) / sum(math.exp(v / tau) for v in z)  # noqa: E731
    assert p(0.5) > p(1.0) and label("gen_tau_half") == "It rises"
    assert by_id("gen_tau_half").solve().explain_args["p2"] == f"{p(0.5):.3f}"
    table = {"I": (0.5, {"love": 0.4, "robot": 0.3, "<EOS>": 0.3}),
             "robot": (0.4, {"s": 0.9, "<EOS>": 0.1}), "love": (0.1, {"robot": 0.6, "<EOS>": 0.4})}
    joint = {(a, b): pa * pb for a, (pa, nxt) in table.items() for b, pb in nxt.items()}
    best = max(joint, key=joint.get)
    greedy_first = max(table, key=lambda a: table[a][0])
    greedy = (greedy_first, max(table[greedy_first][1], key=table[greedy_first][1].get))
    assert best == ("robot", "s") and greedy == ("I", "love")
    assert label("gen_greedy_best") == "No"


def test_kv_questions():
    assert 2 * 1 * 32 * 16384 * 8 * 128 * 2 == 2 ** 31
    assert label("kv_bytes") == "2 GiB"
    assert by_id("kv_bytes").solve().explain_args["bytes"] == f"{2 ** 31:,}"
    assert label("kv_gqa") == f"{32 // 8}×"


def test_cost_questions():
    f = lambda n, d: 4 * n * n * d  # noqa: E731
    assert label("cost_double_n") == f"{f(2048, 64) / f(1024, 64):g}×" == "4×"
    d, r = 128, 4
    n = (2 + r) * d
    assert 4 * n * n * d == (8 + 4 * r) * n * d * d
    assert label("cost_crossover") == str(n) == "768"


def test_bey_bins():
    lo, hi, n = -0.2, 0.2, 11
    width = (hi - lo) / n
    worst = 0.0
    for k in range(1001):
        v = lo + (hi - lo) * k / 1000
        b = min(int((v - lo) / (hi - lo) * n), n - 1)
        worst = max(worst, abs(lo + (b + 0.5) * width - v))
    assert worst <= width / 2 + 1e-12
    assert label("bey_bins") == f"{width / 2:.3f}" == "0.018"


def test_doctests():
    import doctest

    from lmviz.server import classroom
    from lmviz.chapters import questions

    assert doctest.testmod(questions).failed == 0
    assert doctest.testmod(classroom).failed == 0


def test_questions_follow_the_chapter_examples_of_each_language():
    """The teacher-forcing question counts the toy sentence of the page's language; the
    learning-rate question reads the preset the training chapter selects first in it."""
    from lmviz.chapters.autoregression import toy_teacher_forcing
    from lmviz.chapters.examples import DEFAULT_SETUP
    from lmviz.train import PRESETS, lr_at

    q = by_id("ar_pairs")
    for lang in ("en", "zh"):
        s = q.solve(lang)
        assert s.values["n"] == len(toy_teacher_forcing(lang).pairs)
        assert s.prompt_args["sentence"] == " ".join(toy_teacher_forcing(lang).tokens)
        lr = by_id("train_lr_start").solve(lang)
        cfg = PRESETS[DEFAULT_SETUP[lang][1]]
        assert lr.values["lr0"] == lr_at(0, cfg) and lr.prompt_args["steps"] == f"{cfg.max_steps:,}"
    assert q.solve("en").values["n"] != q.solve("zh").values["n"]           # 5 and 4
    assert by_id("train_lr_start").solve("en").prompt_args != by_id("train_lr_start").solve("zh").prompt_args


def test_a_question_a_run_answers_is_revealed_with_the_runs_answer_to_every_follower():
    from lmviz.chapters.induction_run import answers

    q = by_id("train_ind_loss")
    store = ClassStore()
    c = store.create_class()
    assert store.open_question(c.code, c.secret, q.id, list(q.option_ids())).ok
    assert store.answer(c.code, "s1", q.id, "smooth").ok and store.answer(c.code, "s2", q.id, "sudden").ok
    assert store.reveal(c.code, c.secret, q.id, answer="maybe").reason == "bad_option"
    assert store.reveal(c.code, c.secret, q.id, answer="sudden").ok
    v = store.follow(c.code, "s3")
    assert (v.question.revealed, v.question.answer, dict(v.question.counts)) == \
        (True, "sudden", {"smooth": 1, "sudden": 1, "bump": 0})
    assert answers(None) == {}
