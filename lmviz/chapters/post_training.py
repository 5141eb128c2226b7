"""After pre-training (/post-training): from a model that continues text to one that answers.

Pre-training grades every next token of a text. Supervised fine-tuning (SFT) shows the model a
question and its answer as one sequence and grades only the answer's tokens; a preference step
(DPO) then moves the model towards a chosen answer and away from a rejected one, measured against
a frozen copy of the model it started from (its reference).

- each position's loss, and the mean over the graded ones beside the mean over all  -> :func:`masked_loss`
- the DPO loss of a batch of pairs, from their four summed log-probabilities and β  -> :func:`dpo_loss`
- the same for one pair, every number a page writes in the notes' style              -> :func:`dpo_by_hand`
- a city's question and its answer in the page's language, and the rows SFT trains on -> :func:`qa_pairs`, :func:`sft_rows`
- whether the model answers a pair right (greedy, read in one forward pass)           -> :func:`answered`
- the chapter's base model: pre-trained on lmviz.capitals' sentences, shipped          -> :func:`train_base`, :func:`load_base`
- the loss at every position of a question and its answer, graded or not            -> :func:`graded_losses`, :func:`sides`
- the model's greedy answer to a question, right or not (before and after SFT)       -> :func:`ask`, :func:`before_after`
- the live fine-tune: masked loss, held-out answers counted as it goes               -> :func:`run_sft`, :func:`fine_tune`
- which way the question's (ungraded) loss went: the run's answer for the room       -> :func:`answers`
- a few DPO steps against the frozen SFT model: the margin and the KL as they go     -> :func:`run_dpo`, :func:`prefer`

The notes stop at pre-training and say only that an assistant adds later stages whose order and
methods differ between models; these records are lmviz's own small, exact versions of two of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class MaskedLoss:
    """The loss of one sequence, position by position, with the positions SFT grades."""

    losses: tuple[float, ...]   # -log p(target) at each position (nats), whether graded or not
    graded: tuple[bool, ...]    # True where the target is an answer token (SFT counts it)
    masked: float               # the mean over the graded positions: what SFT minimises
    unmasked: float             # the mean over every position: what pre-training would minimise
    prompt: float               # the mean over the positions not graded (nan when there are none)


def masked_loss(logits: torch.Tensor, targets, graded) -> MaskedLoss:
    """The per-position cross-entropy of ``logits [T, V]`` against ``targets [T]`` and its means:
    over the ``graded [T]`` positions (at least one), over all, and over the rest.

    >>> lg = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.75], [0.9, 0.1]]))
    >>> r = masked_loss(lg, [0, 1, 0], [False, True, True])
    >>> [round(x, 3) for x in r.losses], round(r.masked, 3), round(r.unmasked, 3), round(r.prompt, 3)
    ([0.693, 0.288, 0.105], 0.197, 0.362, 0.693)
    """
    targets = torch.as_tensor(targets, dtype=torch.long)
    graded_t = torch.as_tensor(graded, dtype=torch.bool)
    if logits.dim() != 2 or targets.shape != logits.shape[:1] or graded_t.shape != targets.shape:
        raise ValueError("logits [T, V], targets [T] and graded [T] must agree")
    if not bool(graded_t.any()):
        raise ValueError("at least one position must be graded")
    per = F.cross_entropy(logits.float(), targets, reduction="none")
    rest = per[~graded_t]
    return MaskedLoss(tuple(per.tolist()), tuple(graded_t.tolist()), per[graded_t].mean().item(),
                      per.mean().item(), rest.mean().item() if rest.numel() else math.nan)


def dpo_loss(chosen: torch.Tensor, rejected: torch.Tensor, ref_chosen: torch.Tensor,
             ref_rejected: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean DPO loss, per-pair margins) of a batch: each argument holds, per pair, an answer's
    log-probability summed over its tokens, under the model being trained (``chosen``,
    ``rejected``) or the frozen reference (``ref_*``). The margin is
    β((log π(y_w) − log π_ref(y_w)) − (log π(y_l) − log π_ref(y_l))) and the loss −log σ(margin)
    (Rafailov et al. 2023, eq. 7): it falls as the model raises the chosen answer relative to the
    reference more than the rejected one. The one DPO loss of lmviz (by hand and in the steps).

    >>> loss, m = dpo_loss(*(torch.tensor([v]) for v in (-12.0, -15.0, -14.0, -13.0)), beta=0.1)
    >>> round(m.item(), 4), round(loss.item(), 4)
    (0.4, 0.513)
    """
    margin = beta * ((chosen - ref_chosen) - (rejected - ref_rejected))
    return -F.logsigmoid(margin).mean(), margin


@dataclass(frozen=True)
class DPOByHand:
    """One preference pair's DPO loss, every number on the way (natural logs)."""

    beta: float             # how strongly the model is held to its reference (β)
    chosen: float           # log π(y_w | x): the chosen answer under the model
    rejected: float         # log π(y_l | x): the rejected answer under the model
    ref_chosen: float       # log π_ref(y_w | x): the chosen answer under the frozen reference
    ref_rejected: float     # log π_ref(y_l | x)
    chosen_shift: float     # log π(y_w) − log π_ref(y_w): how far the model moved the chosen answer
    rejected_shift: float   # log π(y_l) − log π_ref(y_l)
    margin: float           # β (chosen_shift − rejected_shift)
    prob: float             # σ(margin): how sure the implied preference is that y_w beats y_l
    loss: float             # −log σ(margin)


def dpo_by_hand(chosen: float, rejected: float, ref_chosen: float, ref_rejected: float,
                beta: float) -> DPOByHand:
    """:func:`dpo_loss` of one pair, with the numbers between (the page writes each).

    >>> r = dpo_by_hand(-12.0, -15.0, -14.0, -13.0, beta=0.1)
    >>> r.chosen_shift, r.rejected_shift, round(r.margin, 4), round(r.prob, 4), round(r.loss, 4)
    (2.0, -2.0, 0.4, 0.5987, 0.513)
    """
    if not beta > 0:
        raise ValueError("beta must be positive")
    loss, margin = dpo_loss(*(torch.tensor([float(v)], dtype=torch.float64)
                              for v in (chosen, rejected, ref_chosen, ref_rejected)), beta=beta)
    m = margin.item()
    return DPOByHand(beta, chosen, rejected, ref_chosen, ref_rejected, chosen - ref_chosen,
                     rejected - ref_rejected, m, torch.sigmoid(margin).item(), loss.item())


# The worked example the page computes by hand (and questions.pt_dpo_margin asks about): log-probs
# in nats of a chosen and a rejected answer under the model and its reference, and β.
DPO_EXAMPLE = {"chosen": -12.0, "rejected": -15.0, "ref_chosen": -14.0, "ref_rejected": -13.0, "beta": 0.1}


# ---------------------------------------------------------------- SFT on the capital pairs ------
# The question and its answer in the page's language; the model is graded on the answer only.
# The city comes in the question, the country is the answer: what a base model pre-trained on
# lmviz.capitals' sentences ("巴黎位于法国。") may know, asked in a form it never read.
QA_TEMPLATE = {
    "en": ("Q: Which country is {city} in? A:", " {country}."),
    "zh": ("问：{city}在哪个国家？答：", "{country}。"),
}


@dataclass(frozen=True)
class QAPair:
    """One instruction pair made from a city and its country."""

    city: str       # the city, as the corpus writes it
    country: str    # its country: what the answer must say
    prompt: str     # the question, in QA_TEMPLATE's words (not graded)
    answer: str     # the answer (graded), with its closing mark


def qa_pairs(lang: str, pairs) -> tuple[QAPair, ...]:
    """The instruction pairs of ``pairs`` (``lmviz.capitals.Pair``) in ``lang``.

    >>> from lmviz.capitals import Pair
    >>> p = qa_pairs("zh", [Pair("巴黎", "法国", True)])[0]; p.prompt, p.answer
    ('问：巴黎在哪个国家？答：', '法国。')
    """
    q, a = QA_TEMPLATE[lang]
    return tuple(QAPair(p.city, p.country, q.format(city=p.city), a.format(country=p.country)) for p in pairs)


def template_positions(tokenizer, pair: QAPair, lang: str) -> frozenset[int]:
    """The places in ``pair.prompt``'s tokens that are the template's, not the city's.

    >>> from lmviz.capitals import Pair
    >>> from lmviz.tokenizer import CharTokenizer
    >>> p = qa_pairs("zh", [Pair("巴黎", "法国", True)])[0]
    >>> sorted(template_positions(CharTokenizer(p.prompt), p, "zh"))
    [0, 1, 4, 5, 6, 7, 8, 9, 10, 11]
    """
    before = QA_TEMPLATE[lang][0].split("{city}")[0]
    start = len(tokenizer.encode(before))
    end = start + len(tokenizer.encode(pair.city))
    return frozenset(i for i in range(len(tokenizer.encode(pair.prompt))) if not start <= i < end)


def as_statements(pairs: tuple[QAPair, ...], lang: str) -> tuple[QAPair, ...]:
    """The same pairs in the base model's own form: a sentence of its corpus up to the country
    (``lmviz.capitals.TEMPLATES``' second: "巴黎位于" → "法国。", "Paris is a city in" → " France.").
    What the base model knows, asked the way it read it.

    >>> from lmviz.capitals import Pair
    >>> p = as_statements(qa_pairs("en", [Pair("Paris", "France", True)]), "en")[0]; p.prompt, p.answer
    ('Paris is a city in', ' France.')
    """
    from lmviz.capitals import TEMPLATES

    before, after = TEMPLATES[lang][1].text.split("{country}")
    return tuple(QAPair(p.city, p.country, before.format(city=p.city).rstrip(), before[len(before.rstrip()):]
                        + p.country + after) for p in pairs)


def sft_rows(tokenizer, pairs, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(x [N, block], y [N, block]) of ``pairs``: each row one question and its answer from its
    first token, the targets -1 (not graded) everywhere but on the answer's tokens (and past the
    pair: padding). The rows ``lmviz.train.fit_small`` trains on with the masked loss."""
    xs, ys = [], []
    for p in pairs:
        q, a = tokenizer.encode(p.prompt), tokenizer.encode(p.answer)
        ids = (q + a)[:block + 1]
        n = len(ids) - 1
        y = [-1] * block
        for i in range(max(0, len(q) - 1), n):      # the target at i is token i + 1: the answer's from q's last
            y[i] = ids[i + 1]
        xs.append(ids[:n] + [0] * (block - n))
        ys.append(y)
    return torch.tensor(xs, dtype=torch.long), torch.tensor(ys, dtype=torch.long)


def answered(model, tokenizer, pairs, block: int) -> list[bool]:
    """Whether the model answers each pair right: after the question, its most probable next
    token is the answer's at every step of the answer (greedy decoding, read in one forward pass:
    teacher forcing with every prediction right is the greedy answer)."""
    x, y = sft_rows(tokenizer, pairs, block)
    with torch.no_grad():
        logits, _ = model(x)
    pred = logits.argmax(-1)
    return (((pred == y) | (y == -1)).all(-1)).tolist()


def graded_losses(model, tokenizer, pairs, block: int) -> tuple[MaskedLoss, ...]:
    """Each pair's :func:`masked_loss`: the loss at every position of its question and answer
    (every next token, to the block), graded where ``sft_rows`` grades (the answer's)."""
    x, y = sft_rows(tokenizer, pairs, block)
    with torch.no_grad():
        logits = model(x)[0]
    out = []
    for i, p in enumerate(pairs):
        ids = (tokenizer.encode(p.prompt) + tokenizer.encode(p.answer))[:block + 1]
        n = len(ids) - 1
        out.append(masked_loss(logits[i, :n], ids[1:], (y[i, :n] != -1).tolist()))
    return tuple(out)


@dataclass(frozen=True)
class Sides:
    """The mean loss of a set of pairs on each side of the mask."""

    prompt: float   # over the question's positions (not graded by SFT), mean of the pairs' means (nats)
    answer: float   # over the answer's positions (graded), mean of the pairs' means (nats)


def sides(model, tokenizer, pairs, block: int) -> Sides:
    """:class:`Sides` of ``pairs`` under ``model`` (``graded_losses``)."""
    rs = graded_losses(model, tokenizer, pairs, block)
    return Sides(sum(r.prompt for r in rs) / len(rs), sum(r.masked for r in rs) / len(rs))


def stop_ids(tokenizer, lang: str) -> tuple[int, ...]:
    """The closing mark's token(s): an answer ends there."""
    return tuple(tokenizer.encode(QA_TEMPLATE[lang][1][-1]))


@dataclass(frozen=True)
class Said:
    """A model's greedy answer to one prompt."""

    prompt_ids: tuple[int, ...]   # the prompt as tokens
    answer_ids: tuple[int, ...]   # what the model wrote, up to and with the closing mark (or cut)
    text: str                     # the same, decoded
    first_prob: float             # the probability of its first token
    right: bool                   # the text is the pair's answer


def ask(model, tokenizer, pair: QAPair, lang: str) -> Said:
    """``model``'s greedy answer to ``pair.prompt`` (``beyond_chat.greedy_answer``): at most one
    token longer than the right answer with its closing mark, ended at the closing mark."""
    from lmviz.chapters.beyond_chat import greedy_answer

    ids = tokenizer.encode(pair.prompt)
    a = greedy_answer(model, ids, stop_ids(tokenizer, lang), max_new=len(tokenizer.encode(pair.answer)) + 1)
    text = tokenizer.decode(list(a.answer_ids))
    return Said(tuple(ids), a.answer_ids, text, a.first_prob, text == pair.answer)


def template_lesson(read: Said, asked: Said) -> str:
    """What the base model's two answers to one fact say: "gap" (right in the form it read, wrong
    as a question: it knows the fact, not the format), "both" (right either way) or "neither"
    (wrong even in the form it read: the fact did not stick).

    >>> s = lambda ok: Said((), (), "", 1.0, ok)
    >>> template_lesson(s(True), s(False)), template_lesson(s(True), s(True)), template_lesson(s(False), s(False))
    ('gap', 'both', 'neither')
    """
    return ("gap" if not asked.right else "both") if read.right else "neither"


def before_after(base, tuned, tokenizer, pairs, lang: str) -> tuple[tuple[QAPair, Said, Said], ...]:
    """Each pair with the base model's answer and the fine-tuned model's."""
    return tuple((p, ask(base, tokenizer, p, lang), ask(tuned, tokenizer, p, lang)) for p in pairs)


# ---------------------------------------------------------------- the base model and its SFT ----
@dataclass(frozen=True)
class BaseTrainConfig:
    """How the shipped base model of this chapter is pre-trained (``train_base``)."""

    sentences: int = 3000    # lmviz.capitals sentences (seed 0): the base model's whole pre-training text
    steps: int = 3000        # AdamW steps of `batch` sentences, every position graded
    batch: int = 32          # sentences per step
    lr: float = 3e-3         # after a warm-up of 50 steps
    seed: int = 0            # corpus and torch seed: the same weights on every machine (CPU)
    n_layer: int = 2         # two layers of
    n_head: int = 4          # four heads of head_dim 32
    d_model: int = 128       # width
    block_size: int = 48     # the longest sentence, or question with its answer, is under 40 characters


@dataclass(frozen=True)
class SFTConfig:
    """The live fine-tune on the instruction pairs (``run_sft``)."""

    steps: int = 300         # AdamW steps of `batch` pairs
    batch: int = 16          # pairs per step
    lr: float = 1e-3         # after a warm-up of 10 steps
    seed: int = 0            # which known pairs are trained on and which held out; the batches
    share: float = 0.6       # of the pairs the base model read about, the share it is fine-tuned on
    eval_every: int = 25     # steps between two counts of the held-out answers


def base_corpus(lang: str, cfg: BaseTrainConfig = BaseTrainConfig()):
    """The base model's pre-training corpus: ``lmviz.capitals.capital_corpus`` (its held-out
    pairs never appear in it)."""
    from lmviz.capitals import capital_corpus

    return capital_corpus(lang, n_sentences=cfg.sentences, seed=cfg.seed)


def base_tokenizer(lang: str, corpus):
    """Characters of the corpus, of QA_TEMPLATE and of the held-out pairs' names: a base model's
    vocabulary covers its language's characters, whether or not its text used each."""
    from lmviz.tokenizer import CharTokenizer

    q, a = QA_TEMPLATE[lang]
    names = "".join(p.city + p.country for p in corpus.heldout_pairs)
    return CharTokenizer(corpus.text + q + a + names)


def train_base(lang: str, cfg: BaseTrainConfig = BaseTrainConfig()):
    """Pre-train the chapter's base model on ``base_corpus``: each sentence a row from its first
    character, every next character graded (``lmviz.train.fit_toy``). It learns the sentences'
    facts in their forms, and no question."""
    from lmviz.train import fit_toy

    corpus = base_corpus(lang, cfg)
    tok = base_tokenizer(lang, corpus)
    rows = [tok.encode(s)[:cfg.block_size + 1] for s in corpus.sentences]
    x = torch.zeros(len(rows), cfg.block_size, dtype=torch.long)
    y = torch.full((len(rows), cfg.block_size), -1, dtype=torch.long)
    for i, r in enumerate(rows):
        x[i, :len(r) - 1] = torch.as_tensor(r[:-1])
        y[i, :len(r) - 1] = torch.as_tensor(r[1:])
    return fit_toy(tok, x, y, block_size=cfg.block_size, n_layer=cfg.n_layer, n_head=cfg.n_head,
                   d_model=cfg.d_model, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed, warmup=50,
                   thin=10)


@dataclass(frozen=True)
class SFTSplit:
    """The instruction pairs of one language, by what the base model read."""

    train: tuple[QAPair, ...]    # known to the base model (its corpus has sentences of them): fine-tuned on
    held: tuple[QAPair, ...]     # known to the base model, never fine-tuned on: what SFT's accuracy is counted on
    unseen: tuple[QAPair, ...]   # never in the base model's corpus: no format can answer them


def sft_split(lang: str, corpus, share: float, seed: int) -> SFTSplit:
    """``corpus``'s training pairs shuffled (``seed``) and cut at ``share`` for the fine-tune,
    the rest held out; its held-out pairs are the unseen ones."""
    import random

    known = list(corpus.train_pairs)
    random.Random(seed).shuffle(known)
    k = round(share * len(known))
    return SFTSplit(qa_pairs(lang, known[:k]), qa_pairs(lang, known[k:]), qa_pairs(lang, corpus.heldout_pairs))


@dataclass(frozen=True)
class SFTRun:
    """A fine-tune's record: its losses and the held-out answers counted as it went."""

    losses: tuple[float, ...]                    # the masked loss at each step
    counted: tuple[tuple[int, float, float], ...]   # (step, held-out accuracy, unseen accuracy), from step 0
    before: Sides                                # the fine-tune pairs' loss on each side of the mask, at step 0
    after: Sides                                 # the same when the run ended (or was stopped)
    held_right: tuple[tuple[bool, ...], ...] = ()   # at each count, which held-out pairs were answered right


def run_sft(model, tokenizer, split: SFTSplit, block: int, cfg: SFTConfig = SFTConfig(), cancel=None,
            on_step=None):
    """Fine-tune ``model`` (in place: pass a copy) on ``split.train`` with the loss masked to the
    answers (``sft_rows``), through the one training loop (``lmviz.train.train_steps``), and
    count the held-out and unseen answers (``answered``) at step 0 and every ``eval_every``
    steps. ``on_step(step, loss)`` reports progress; ``cancel()`` stops it. The model ends in
    eval mode."""
    from lmviz.train import train_steps

    x, y = sft_rows(tokenizer, split.train, block)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)

    def draw():
        idx = torch.randint(0, x.shape[0], (cfg.batch,), generator=gen)
        return x[idx], y[idx]

    held_right = []

    def count(step: int) -> tuple[int, float, float]:
        model.eval()
        got = [answered(model, tokenizer, ps, block) for ps in (split.held, split.unseen)]
        model.train()
        held_right.append(tuple(got[0]))
        return step, sum(got[0]) / max(1, len(got[0])), sum(got[1]) / max(1, len(got[1]))

    model.eval()
    before = sides(model, tokenizer, split.train, block)
    losses, counted = [], [count(0)]
    model.train()
    for step, loss, _, _ in train_steps(model, opt, draw, lambda k: cfg.lr * min(1.0, (k + 1) / 10), cfg.steps,
                                        cancel=cancel):
        losses.append(loss)
        if step % cfg.eval_every == 0 or step == cfg.steps:
            counted.append(count(step))
        if on_step is not None:
            on_step(step, loss)
    model.eval()
    return SFTRun(tuple(losses), tuple(counted), before, sides(model, tokenizer, split.train, block),
                  tuple(held_right))


@dataclass(frozen=True)
class Learned:
    """When each held-out question was first answered right during a fine-tune (its replay)."""

    order: tuple[int, ...]              # the held-out pairs' indices, by the count first right (never: last)
    first: tuple[int | None, ...]       # per pair (split order): the step of its first right count, or None
    never: int                          # pairs never answered right at any count
    lost: int                           # pairs right at some count and wrong at the last


def learned(run: SFTRun) -> Learned:
    """:class:`Learned` from a run's counts.

    >>> r = SFTRun((), ((0, 0, 0), (25, 0, 0), (50, 0, 0)), None, None,
    ...            ((False, False, False), (False, True, True), (True, True, False)))
    >>> learned(r)
    Learned(order=(1, 2, 0), first=(50, 25, 25), never=0, lost=1)
    """
    steps = [c[0] for c in run.counted]
    n = len(run.held_right[0]) if run.held_right else 0
    first = tuple(next((steps[k] for k, row in enumerate(run.held_right) if row[i]), None) for i in range(n))
    order = tuple(sorted(range(n), key=lambda i: (first[i] is None, first[i] or 0, i)))
    lost = sum(1 for i in range(n) if first[i] is not None and not run.held_right[-1][i])
    return Learned(order, first, sum(f is None for f in first), lost)


SAME_NATS = 0.05    # a change of the question's mean loss smaller than this is "about the same"


def prompt_loss_moved(run: SFTRun) -> str:
    """How the fine-tune pairs' question loss (never graded) went, beside their answer loss:
    "rises", "same" (within SAME_NATS), "falls_less" (by less than half the answer's fall) or
    "falls_like" (by at least half of it).

    >>> r = lambda p0, p1: SFTRun((), (), Sides(p0, 4.7), Sides(p1, 0.1))
    >>> [prompt_loss_moved(r(11.2, x)) for x in (11.5, 11.22, 9.8, 8.0)]
    ['rises', 'same', 'falls_less', 'falls_like']
    """
    d = run.after.prompt - run.before.prompt
    if abs(d) < SAME_NATS:
        return "same"
    if d > 0:
        return "rises"
    return "falls_like" if -d >= (run.before.answer - run.after.answer) / 2 else "falls_less"


def answers(run: SFTRun | None) -> dict[str, str]:
    """The predict-then-reveal questions a fine-tune answers (``lmviz.chapters.questions``' ``by_run``
    ones of this chapter): question id -> the option its data support; none before a run.

    >>> answers(None)
    {}
    """
    return {} if run is None else {"pt_prompt_loss": prompt_loss_moved(run)}


@dataclass(frozen=True)
class FineTuned:
    """A live fine-tune of the shipped base model: its record, the model it made and its pairs."""

    lang: str           # the pairs' language (the page's)
    tokenizer: object   # the base model's tokenizer (the fine-tuned model's too)
    run: SFTRun         # losses, held-out counts, the two sides of the mask before and after
    model: object       # the fine-tuned GPT (eval mode, CPU)
    split: SFTSplit     # the pairs it was fine-tuned on, held out from, and never read
    said: tuple         # before_after of the held-out pairs, then the unseen ones: (pair, base's, its)


def fine_tune(lang: str, cfg: SFTConfig = SFTConfig(), cancel=None, on_step=None) -> FineTuned:
    """A copy of ``load_base(lang)`` fine-tuned on ``sft_split``'s pairs (``run_sft``), and the
    answers of both models to the held-out and unseen questions."""
    from lmviz.train import copy_model

    base = load_base(lang)
    split = sft_split(lang, base_corpus(lang), cfg.share, cfg.seed)
    model = copy_model(base.model)
    run = run_sft(model, base.tokenizer, split, base.model.cfg.block_size, cfg, cancel=cancel, on_step=on_step)
    return FineTuned(lang, base.tokenizer, run, model, split,
                     before_after(base.model, model, base.tokenizer, split.held + split.unseen, lang))


BASE_PATH = {lang: Path(__file__).resolve().parents[2] / "assets" / "models" / f"capitals_base_{lang}.safetensors"
             for lang in QA_TEMPLATE}


def load_base(lang: str):
    """The shipped base model of ``lang`` (a ``lmviz.train.Toy``; written by ``python -m
    lmviz.chapters.post_training``)."""
    from lmviz.train import load_toy_file

    return load_toy_file(BASE_PATH[lang])


if __name__ == "__main__":  # rebuild the shipped base models
    from lmviz.checkpoint import save_checkpoint

    for lang, path in BASE_PATH.items():
        toy = train_base(lang)
        meta = {"what": f"post-training chapter base model ({lang}), lmviz.chapters.post_training.train_base()",
                "losses": toy.losses}
        path.write_bytes(save_checkpoint(toy.model, toy.tokenizer, meta, half=True))
        print(f"wrote {path} ({path.stat().st_size} bytes); vocab {toy.tokenizer.vocab_size}; "
              f"final loss {toy.losses[-1]:.3f}")


# ---------------------------------------------------------------- the preference step (DPO) -----
@dataclass(frozen=True)
class Preference:
    """One preference pair: a question, the answer preferred and the one rejected."""

    prompt: str     # the question (QA_TEMPLATE's words)
    chosen: str     # y_w: the answer pushed up
    rejected: str   # y_l: the answer pushed down

    def pair(self, which: str) -> QAPair:
        """The question with its ``which`` answer ("chosen" or "rejected")."""
        return QAPair("", "", self.prompt, getattr(self, which))


def _answer_rows(tokenizer, prefs, which: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``sft_rows`` of each preference's question with its ``which`` answer, as long as the
    longest (the targets: that answer's tokens, -1 elsewhere)."""
    pairs = [p.pair(which) for p in prefs]
    block = max(len(tokenizer.encode(q.prompt)) + len(tokenizer.encode(q.answer)) for q in pairs) - 1
    return sft_rows(tokenizer, pairs, block)


def mistakes_as_preferences(model, tokenizer, pairs, k: int, lang: str) -> tuple[Preference, ...]:
    """Up to ``k`` preference pairs from questions the model answers wrong: the right answer
    chosen, the model's own greedy answer (:func:`ask`) rejected."""
    wrong = [p for p, ok in zip(pairs, answered(model, tokenizer, pairs, model.cfg.block_size)) if not ok]
    return tuple(Preference(p.prompt, p.answer, ask(model, tokenizer, p, lang).text) for p in wrong[:k])


def answer_logprobs(model, tokenizer, prefs, which: str) -> torch.Tensor:
    """[N] log π(answer | prompt) of each preference's ``which`` answer ("chosen" or
    "rejected"), summed over the answer's tokens, in one batched forward pass (with gradients
    when the model has them on: the DPO steps use it on the model being trained)."""
    x, y = _answer_rows(tokenizer, prefs, which)
    logp = F.log_softmax(model(x)[0].float(), dim=-1)
    picked = logp.gather(-1, y.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return (picked * (y != -1)).sum(-1)


def answer_kl(model, ref, tokenizer, prefs) -> float:
    """The mean over the chosen answers' positions of KL(π ‖ π_ref) between the next-token
    distributions of the model and its reference (nats): how far the model moved from where it
    started, measured where DPO pushed."""
    x, y = _answer_rows(tokenizer, prefs, "chosen")
    mask = y != -1
    with torch.no_grad():
        lp, lq = (F.log_softmax(m(x)[0].float(), dim=-1) for m in (model, ref))
    kl = (lp.exp() * (lp - lq)).sum(-1)
    return kl[mask].mean().item()


@dataclass(frozen=True)
class DPOStep:
    """The preference step's record after one optimizer step (step 0: before any)."""

    step: int                # optimizer steps taken
    loss: float              # the mean DPO loss over the pairs, after the step
    chosen_shift: float      # mean log π(y_w) − log π_ref(y_w) over the pairs, after the step
    rejected_shift: float    # mean log π(y_l) − log π_ref(y_l)
    margin: float            # β (chosen_shift − rejected_shift): what DPO raises
    kl: float                # answer_kl to the reference, after the step


def run_dpo(model, ref, tokenizer, prefs, *, beta: float = 0.1, steps: int = 20, lr: float = 1e-3,
            cancel=None) -> tuple[DPOStep, ...]:
    """A few DPO steps on ``model`` (in place: pass a copy of the SFT model) against its frozen
    reference ``ref`` (the SFT model itself), every pair in every step (``dpo_loss``, through
    ``lmviz.train.train_steps``); a record before the first step and after each."""
    from lmviz.train import train_steps

    with torch.no_grad():
        ref_c, ref_r = (answer_logprobs(ref, tokenizer, prefs, w) for w in ("chosen", "rejected"))

    def measure(step: int) -> DPOStep:
        model.eval()
        with torch.no_grad():
            pc, pr = (answer_logprobs(model, tokenizer, prefs, w) for w in ("chosen", "rejected"))
            loss = dpo_loss(pc, pr, ref_c, ref_r, beta)[0].item()
        dc, dr = (pc - ref_c).mean().item(), (pr - ref_r).mean().item()
        out = DPOStep(step, loss, dc, dr, beta * (dc - dr), answer_kl(model, ref, tokenizer, prefs))
        model.train()
        return out

    def loss_of(_x, _y):
        return dpo_loss(answer_logprobs(model, tokenizer, prefs, "chosen"),
                        answer_logprobs(model, tokenizer, prefs, "rejected"), ref_c, ref_r, beta)[0]

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    out = [measure(0)]                              # the model is its reference: margin 0, loss ln 2
    model.train()
    for step, _, _, _ in train_steps(model, opt, lambda: (None, None), lambda k: lr, steps,
                                     loss_of=loss_of, cancel=cancel):
        out.append(measure(step))
    model.eval()
    return tuple(out)


def pair_by_hand(model, ref, tokenizer, pref: Preference, beta: float) -> DPOByHand:
    """:func:`dpo_by_hand` of one real pair: its four log-probabilities read from the model and
    its reference."""
    with torch.no_grad():
        four = [answer_logprobs(m, tokenizer, [pref], w).item()
                for m, w in ((model, "chosen"), (model, "rejected"), (ref, "chosen"), (ref, "rejected"))]
    return dpo_by_hand(*four, beta=beta)


def dpo_how(step: DPOStep) -> str:
    """Where a DPO run's margin came from: "fell" (the chosen answers fell too), "down" (mostly
    the rejected answers pushed down) or "up" (mostly the chosen raised).

    >>> [dpo_how(DPOStep(20, 0.0, dw, dl, 0.1 * (dw - dl), 1.0)) for dw, dl in ((-1, -9), (2, -9), (5, -1))]
    ['fell', 'down', 'up']
    """
    if step.chosen_shift < 0:
        return "fell"
    return "down" if -step.rejected_shift > step.chosen_shift else "up"


@dataclass(frozen=True)
class DPOConfig:
    """The live preference step (``prefer``)."""

    pairs: int = 4          # preference pairs: the fine-tuned model's own mistakes
    beta: float = 0.1       # β: how strongly the model is held to its reference
    steps: int = 20         # AdamW steps, every pair in each
    lr: float = 1e-3        # constant


@dataclass(frozen=True)
class Preferred:
    """A live DPO run on a fine-tuned model: its pairs, its steps, its first pair by hand."""

    prefs: tuple[Preference, ...]   # the pairs (the right answer chosen, the model's own rejected)
    steps: tuple[DPOStep, ...]      # before the first step and after each
    first: DPOByHand                # the first pair's numbers after the last step
    now_first: str                  # what the model answers its question after the steps (the
    #                                 reference's answer is the pair's rejected one)


def prefer(tuned: FineTuned, cfg: DPOConfig = DPOConfig(), cancel=None) -> Preferred:
    """DPO on a copy of ``tuned.model`` against ``tuned.model`` frozen, on up to ``cfg.pairs`` of
    its mistakes (held-out questions first, then unseen ones: ``mistakes_as_preferences``)."""
    from lmviz.train import copy_model

    tok = tuned.tokenizer
    prefs = mistakes_as_preferences(tuned.model, tok, tuned.split.held + tuned.split.unseen, cfg.pairs, tuned.lang)
    model = copy_model(tuned.model)
    steps = run_dpo(model, tuned.model, tok, prefs, beta=cfg.beta, steps=cfg.steps, lr=cfg.lr, cancel=cancel)
    return Preferred(prefs, steps, pair_by_hand(model, tuned.model, tok, prefs[0], cfg.beta),
                     ask(model, tok, prefs[0].pair("chosen"), tuned.lang).text)
