"""Attention chapter, "why attention": a pronoun and its referent, tested with a control.

The notes' example is 把书交给小李，因为他需要参考: to write 他 the model needs 小李, several
tokens back. The test (:func:`pronoun_case`) reads the attention row at the position that writes
the pronoun (the token just before it: a causal model chooses 他 or 她 there), finds the head that
looks most at the referent, and checks that head two ways (``lmviz.chapters.attention.
pronoun_control``): the same sentence with a word the pronoun cannot mean in the referent's place,
and the head's own habit of looking that far back.

The shipped model (English docstrings and Tang poems) has never read sentences like these, so the
chapter also ships a **pronoun toy**: a two-layer word-level model trained on sentences generated
here (:func:`toy_corpus`), in English and Chinese, where exactly one named person appears, at a
place that changes from template to template, among objects that sometimes stand where a person
could, and the third-person pronoun agrees with that person (他/她, he/she). The only way to
write the right pronoun is to find the name, wherever it is; ``python -m
lmviz.chapters.attention_pronoun`` retrains it (a few seconds) and writes
``assets/models/pronoun_toy.safetensors``.
"""
from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from lmviz.chapters.about_model import word_ids
from lmviz.chapters.attention import (PronounAttention, PronounControl, PronounMargin, find_span, pronoun_attention,
                                     pronoun_control, pronoun_margin)
from lmviz.data import pad_batch
from lmviz.model import GPT
from lmviz.tokenizer import WordTokenizer
from lmviz.train import Toy, fit_toy, load_toy_file

# ------------------------------------------------------------------ the toy's world --------
# names by gender; 小李 is the notes' (he, 他); Paul and 杯子 are the page's default controls' kin
NAMES = {
    "en": {"he": ["Paul", "Tom", "John", "David", "Peter", "James", "Mark", "Leo"],
           "she": ["Anna", "Mary", "Lucy", "Emma", "Sara", "Kate", "Lily", "Jane"]},
    "zh": {"他": ["小李", "小明", "小刚", "小强", "小军", "小伟", "小林", "小杰"],
           "她": ["小红", "小丽", "小芳", "小燕", "小美", "小雪", "小兰", "小玲"]},
}
OBJECTS = {"en": ["book", "cup", "pen", "map", "phone", "key", "bag", "hat", "box", "letter"],
           "zh": ["书", "杯子", "笔", "本子", "雨伞", "钥匙", "电脑", "手机", "苹果", "地图"]}
# an optional opening (so the person's place shifts by one more token)
OPENINGS = {"en": ["", "Yesterday", "Today", "Then"], "zh": ["", "昨天", "今天", "下午", "早上"]}
# {P} the person, {pr} the pronoun, {O}/{O2} objects; the person stands early, late, after an
# object, or as a possessor, and objects stand in places a person stands in other templates
TEMPLATES = {
    "en": ["I gave the {O} to {P} because {pr} needs it .",
           "{P} gave the {O} to me because {pr} does not need it .",
           "I put {P} 's {O} on the table because {pr} went out .",
           "I met {P} at school and {pr} was reading a {O} .",
           "{P} said {pr} was busy .",
           "the teacher sent {P} home because {pr} was ill .",
           "I lent the {O} to {P} and {pr} was happy .",
           "the {O} is {P} 's and {pr} uses it every day .",
           "the {O} was on the table and {P} said {pr} needs it ."],
    "zh": ["我把{O}交给{P}，因为{pr}需要{O2}。",
           "把{O}交给{P}，因为{pr}需要参考。",
           "{P}把{O}交给我，因为{pr}不需要{O2}了。",
           "我把{P}的{O}放在桌上，因为{pr}要出门。",
           "我在学校见到了{P}，{pr}在看{O}。",
           "{P}说{pr}很忙。",
           "老师让{P}回家，因为{pr}病了。",
           "我把{O}借给{P}，{pr}很高兴。",
           "{O}是{P}的，{pr}每天都用。",
           "{O}在桌上，{P}说{pr}需要{O2}。"],
}
# every other word the templates use (the tokenizer's vocabulary is these plus names and objects)
WORDS = {
    "en": ["I", "gave", "the", "The", "to", "because", "needs", "it", ".", "me", "does", "not",
           "need", "put", "'s", "on", "table", "went", "out", "met", "at", "school", "and", "was",
           "reading", "a", "said", "busy", "teacher", "sent", "home", "ill", "lent", "happy", "is",
           "uses", "every", "day", "he", "she", "He", "She"],
    "zh": ["我", "把", "交给", "，", "因为", "需要", "。", "参考", "不", "了", "的", "放在", "桌上",
           "要", "出门", "在", "学校", "见到", "看", "说", "很", "忙", "老师", "让", "回家", "病",
           "借给", "高兴", "是", "每天", "都", "用", "他", "她"],
}


def toy_sentence(lang: str, rng: random.Random) -> tuple[str, str, str]:
    """One generated sentence of the toy's world: (sentence, person, pronoun).

    >>> s, p, pr = toy_sentence("zh", random.Random(3)); p in s and pr in s
    True
    """
    pron = rng.choice(sorted(NAMES[lang]))
    person = rng.choice(NAMES[lang][pron])
    o, o2 = rng.sample(OBJECTS[lang], 2)
    body = rng.choice(TEMPLATES[lang]).format(P=person, pr=pron, O=o, O2=o2)
    opening = rng.choice(OPENINGS[lang])
    if lang == "en":
        body = body if opening else body[0].upper() + body[1:]
        return (f"{opening} {body}" if opening else body), person, pron
    return opening + body, person, pron


def toy_corpus(n: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """``n`` generated sentences per language, English then Chinese, with a fixed seed."""
    rng = random.Random(seed)
    return [toy_sentence(lang, rng) for lang in ("en", "zh") for _ in range(n)]


def toy_tokenizer() -> WordTokenizer:
    """One word per token: the words, names and objects of both languages (a name is one token).

    >>> tok = toy_tokenizer(); [tok.token(i) for i in tok.encode("把书交给小李，因为他需要参考")]
    ['把', '书', '交给', '小李', '，', '因为', '他', '需要', '参考']
    """
    words: list[str] = []
    for lang in ("en", "zh"):
        words += WORDS[lang] + [w for w in OPENINGS[lang] if w] + [n for g in sorted(NAMES[lang]) for n in NAMES[lang][g]] + OBJECTS[lang]
    return WordTokenizer(list(dict.fromkeys(words)), sep=" ")


@dataclass(frozen=True)
class ToyTrainConfig:
    sentences: int = 3000    # generated sentences per language
    steps: int = 800         # AdamW steps of `batch` sentences (under a minute on one CPU core)
    batch: int = 64          # sentences per step
    lr: float = 3e-3         # after a short warm-up
    seed: int = 0            # corpus and torch seed: the same weights on every machine (CPU)
    n_layer: int = 2         # two layers of
    n_head: int = 4          # four heads of head_dim 8
    d_model: int = 32        # width
    block_size: int = 24     # the longest generated sentence is 17 tokens; the page's box may hold more


def train_toy(cfg: ToyTrainConfig = ToyTrainConfig()) -> Toy:
    """Train the pronoun toy on :func:`toy_corpus` (next-word cross-entropy, padding ignored);
    its losses thinned to every 10th step and the last."""
    tok = toy_tokenizer()
    rows = [tok.encode(s) for s, _, _ in toy_corpus(cfg.sentences, cfg.seed)]
    x, y = pad_batch(rows)                                         # [N,T-1] inputs, targets (-1 = padding)
    return fit_toy(tok, x, y, block_size=cfg.block_size, n_layer=cfg.n_layer, n_head=cfg.n_head,
                   d_model=cfg.d_model, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed, warmup=50,
                   thin=10)


TOY_PATH = Path(__file__).resolve().parents[2] / "assets" / "models" / "pronoun_toy.safetensors"


def load_toy(path: Path = TOY_PATH) -> Toy:
    """The shipped pronoun toy (written by ``python -m lmviz.chapters.attention_pronoun``)."""
    return load_toy_file(path)


@torch.no_grad()
def pronoun_accuracy(model: GPT, tokenizer, n: int = 100, seed: int = 1) -> dict[str, float]:
    """Per language, the share of ``n`` freshly generated sentences (another seed than training)
    in which the model's most likely next token, just before the pronoun, is that pronoun
    (one batched forward per language: right-padding cannot change a causal model's earlier rows)."""
    rng = random.Random(seed)
    out = {}
    for lang in ("en", "zh"):
        rows, at, want = [], [], []
        for _ in range(n):
            s, _, pron = toy_sentence(lang, rng)
            ids = tokenizer.encode(s)
            p = ids.index(tokenizer.encode(pron)[0])
            rows.append(ids[:p])
            at.append(p - 1)
            want.append(ids[p])
        x = torch.zeros(n, max(map(len, rows)), dtype=torch.long)         # [n,T] right-padded
        for i, r in enumerate(rows):
            x[i, :len(r)] = torch.as_tensor(r)
        logits = model(x)[0]                                               # [n,T,V]
        got = logits[torch.arange(n), torch.as_tensor(at)].argmax(-1)     # [n]
        out[lang] = float((got == torch.as_tensor(want)).float().mean())
    return out


# ------------------------------------------------------------------ the test --------------
@dataclass(frozen=True)
class PronounCase:
    """The pronoun test on one sentence: where the model writes the pronoun, its look at the
    referent, and the control."""
    ids: list[int]                   # the sentence's token ids (cut to the model's context)
    ref_span: tuple[int, int]        # [start, stop) of the referent
    pron_span: tuple[int, int]       # [start, stop) of the pronoun
    query_pos: int                   # the position that writes the pronoun (pron_span[0] - 1)
    p_pronoun: float                 # the model's probability of the pronoun's first token there
    attention: PronounAttention      # every head's share on the referent from query_pos
    control: PronounControl | None   # the margin's best head tested; None when the control word cannot stand
    #                                  in the referent's place
    margin: PronounMargin | None     # every head's referent-minus-control margin; None with no control


def pronoun_words(tokenizer, ids, ref: str, pron: str, ctrl: str) -> tuple[list[int], list[int], list[int]]:
    """(referent, pronoun, control) ids as they stand in the sentence ``ids`` (:func:`word_ids`),
    the control written as the referent is (with a leading space when the referent has one).

    >>> from lmviz.tokenizer import WordTokenizer
    >>> tok = WordTokenizer(["I", "met", "Anna", "and", "she", "cup"], sep=" ")
    >>> pronoun_words(tok, tok.encode("I met Anna and she"), "Anna", "she", "cup")
    ([2], [4], [5])
    """
    spaced = False
    r = word_ids(tokenizer, ids, ref, spaced=False)
    if not r or find_span(ids, r) is None:
        r2 = word_ids(tokenizer, ids, ref, spaced=True)
        if r2 and find_span(ids, r2) is not None:
            r, spaced = r2, True
    span = find_span(ids, r) if r else None
    p = word_ids(tokenizer, ids, pron, span[1] if span else 0)
    return r, p, word_ids(tokenizer, [], ctrl, spaced=spaced) if ctrl else []


def pronoun_case(trace, ids, ref_ids, pron_ids, ctrl_ids, block_size: int) -> PronounCase | None:
    """The pronoun test on ``ids``; ``trace(ids) -> ModelTrace`` runs (or caches) the model.
    None when the referent is missing, or the pronoun does not follow it with at least one
    token before it (so that a position writes it).

    ``ctrl_ids`` (a word the pronoun cannot mean) replaces the referent for the control, read by
    the same head at the position that then writes the pronoun.
    """
    ids = list(ids)
    span = find_span(ids, ref_ids) if ref_ids else None
    pspan = find_span(ids, pron_ids, span[1]) if span and pron_ids else None
    if pspan is None or pspan[0] < 1:
        return None
    q = pspan[0] - 1
    tr = trace(tuple(ids))
    weights = [L.weights for L in tr.layers]
    att = pronoun_attention(weights, q, span)
    p_pron = float(tr.probs[q, ids[pspan[0]]])
    control = margin = None
    if ctrl_ids:
        cids = (ids[:span[0]] + list(ctrl_ids) + ids[span[1]:])[:block_size]
        cspan = (span[0], span[0] + len(ctrl_ids))
        cp = find_span(cids, pron_ids, cspan[1])
        if cp is not None:
            cw = [L.weights for L in trace(tuple(cids)).layers]
            margin = pronoun_margin(weights, q, span, cw, cp[0] - 1, cspan)
            control = pronoun_control(att, weights, cw, cp[0] - 1, cspan, head=margin.best)
    return PronounCase(ids, span, pspan, q, p_pron, att, control, margin)


@dataclass(frozen=True)
class MarginCalibration:
    """The null experiment behind lmviz.chapters.attention.MARGIN_EVIDENCE: the best margin over
    all heads in sentences with a person and in the same sentences with an object in its place."""
    person: list[float]     # per sentence, the best margin with the person in its place
    objects: list[float]    # per sentence, the best margin with an object there (no referent)


def calibration_sentences(n: int, seed: int = 0) -> list[tuple[str, str, str, str, str]]:
    """``n`` English sentences of the toy's patterns as prose (no space before "." or "'s"):
    (with the person, the person, the pronoun, with an object in the person's place, that object),
    and a third object for the control. Leading spaces as a byte-level tokenizer reads them."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tpl = rng.choice(TEMPLATES["en"])
        pron = rng.choice(["he", "she"])
        person = rng.choice(NAMES["en"][pron])
        o, o2, o3 = rng.sample(OBJECTS["en"], 3)

        def fill(who):
            t = tpl.format(P=who, pr=pron, O=o, O2=o2).replace(" .", ".").replace(" 's", "'s")
            return t[0].upper() + t[1:]
        first = tpl.startswith("{P}")
        the = "The " if first else " the "
        out.append((fill(person), ("" if first else " ") + person, " " + pron, fill("the " + o2),
                    the + o2, the + o3))
    return out


@torch.no_grad()
def margin_calibration(model: GPT, tokenizer, n: int = 100, seed: int = 0) -> MarginCalibration:
    """The best referent-minus-control margin over all heads of ``model`` in ``n`` sentences
    (:func:`calibration_sentences`), with the person and with an object in its place (another
    object as the control either way): how large a margin a swap of words gives with no referent."""
    def trace(ids):
        return model.forward_trace(torch.tensor(ids, dtype=torch.long))

    person, objects = [], []
    for s, p, pron, s0, o, ctrl in calibration_sentences(n, seed):
        for text, ref, out in ((s, p, person), (s0, o, objects)):
            ids = tokenizer.encode(text)
            case = pronoun_case(trace, ids, tokenizer.encode(ref), tokenizer.encode(pron), tokenizer.encode(ctrl),
                                model.cfg.block_size)
            if case is not None and case.margin is not None:
                out.append(case.margin.best_margin)
    return MarginCalibration(person, objects)


if __name__ == "__main__" and sys.argv[1:2] == ["calibrate"]:   # the margin threshold, on a model file or folder
    from lmviz.chapters.attention import MARGIN_EVIDENCE, MARGIN_WEAK
    from lmviz.hf import load

    m, tok, _ = load(sys.argv[2], device="cpu")
    cal = margin_calibration(m, tok)
    for name, v in (("person", cal.person), ("objects", cal.objects)):
        print(f"{name}: {len(v)} sentences, best margin >= {MARGIN_EVIDENCE}: {sum(x >= MARGIN_EVIDENCE for x in v)}, "
              f">= {MARGIN_WEAK}: {sum(x >= MARGIN_WEAK for x in v)}, median {sorted(v)[len(v) // 2]:.3f}")
elif __name__ == "__main__":  # rebuild the shipped toy weights
    from lmviz.checkpoint import save_checkpoint
    from lmviz.chapters.claims import pronoun

    toy = train_toy()
    TOY_PATH.parent.mkdir(parents=True, exist_ok=True)
    meta = {"what": "Attention chapter pronoun toy, lmviz.chapters.attention_pronoun.train_toy()",
            "losses": toy.losses}
    TOY_PATH.write_bytes(save_checkpoint(toy.model, toy.tokenizer, meta, half=True))
    acc = pronoun_accuracy(toy.model, toy.tokenizer)
    print(f"wrote {TOY_PATH} ({TOY_PATH.stat().st_size} bytes); final loss {toy.losses[-1]:.3f}; "
          f"pronoun accuracy {acc}")
    tok = toy.tokenizer

    def trace(ids):
        with torch.no_grad():
            return toy.model.forward_trace(torch.tensor(ids, dtype=torch.long))
    for s, r, p, c in [("I gave the book to Anna because she needs it .", "Anna", "she", "the cup"),
                       ("把书交给小李，因为他需要参考", "小李", "他", "杯子")]:
        case = pronoun_case(trace, tok.encode(s), tok.encode(r), tok.encode(p), tok.encode(c), 24)
        ct = case.control
        print(s, f"p={case.p_pronoun:.3f}", case.attention.best, f"share={ct.referent:.2f}",
              f"control={ct.control:.2f} recency={ct.recency:.2f} unif={ct.uniform:.2f}",
              pronoun(ct.referent, ct.control, ct.recency, ct.uniform).statement)
