"""The autoregression chapter's computations: the chain rule, teacher forcing and the causal mask.

- ``toy_chain_rule``: P(sequence) as five conditional probabilities, and log P as a sum.
- ``sequence_log_probs``: the same chain rule on a real model for any text.
- ``teacher_forcing``: inputs and labels shifted by one (5 and 4 pairs for the toy sentences).
- ``causal_mask_demo``: future scores set to -inf become weight 0 after softmax.
- ``parallel_vs_sequential``: one masked pass gives the same next-token logits as T passes
  over growing prefixes (why training is parallel), and changing the future changes nothing.

Every worked example is a pure function that returns a record; the page only draws it, and
``tests/test_chapter_autoregression.py`` pins each number. The torch functions never write into a model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

# the two toy sentences of the notes (teacher-forcing example), as text the toy tokenizers split
from lmviz.chapters.examples import TOY_SENTENCE  # noqa: F401  (shared with the home page's tour)
from lmviz.model import causal_mask
from lmviz.sampling import TOY_TABLE
from lmviz.tokenizer import TOY_EN, ContextIds, fit_context, toy_tokenizer



# -----------------------------------------------------------------------------
# the chain rule on the toy sequence

@dataclass(frozen=True)
class Factor:
    prefix: tuple[str, ...]  # x_<t, the tokens already there
    token: str               # x_t, the token whose probability is asked
    prob: float              # P(x_t | x_<t)
    log_prob: float          # ln P(x_t | x_<t), <= 0


@dataclass(frozen=True)
class ChainRule:
    factors: list[Factor]    # one per predicted token, in order
    joint: float             # product of the factors' probabilities
    log_joint: float         # sum of the factors' log-probabilities = ln(joint)


def chain_rule(tokens: Sequence[str], table=TOY_TABLE, vocab: Sequence[str] = TOY_EN) -> ChainRule:
    """P(x_2..x_n | x_1) as a product of next-token probabilities read from a prefix table.

    The default table is MADE UP FOR TEACHING (``lmviz.sampling.TOY_TABLE``, the same
    numbers the generation chapter decodes greedily): the notes' own numbers were lost.

    >>> r = chain_rule(TOY_SENTENCE["en"].split())
    >>> len(r.factors), round(r.joint, 4), round(math.exp(r.log_joint), 4)
    (5, 0.0858, 0.0858)
    """
    tokens = list(tokens)
    if len(tokens) < 2:
        raise ValueError("need at least two tokens (a start and one token to predict)")
    factors = []
    for t in range(1, len(tokens)):
        prefix = tuple(tokens[:t])
        if prefix not in table:
            raise ValueError(f"the table has no row for the prefix {' '.join(prefix)!r}")
        if tokens[t] not in vocab:
            raise ValueError(f"{tokens[t]!r} is not in the vocabulary")
        p = float(table[prefix][list(vocab).index(tokens[t])])
        factors.append(Factor(prefix, tokens[t], p, math.log(p) if p > 0 else float("-inf")))
    joint = math.prod(f.prob for f in factors)
    return ChainRule(factors, joint, sum(f.log_prob for f in factors))


def toy_chain_rule() -> ChainRule:
    """The chain-rule example: the toy sequence <BOS> I love robot s <EOS> as five conditional probabilities."""
    return chain_rule(TOY_SENTENCE["en"].split())


# -----------------------------------------------------------------------------
# the chain rule on a real model: P(x_t | x_<t) at every position of a text

@dataclass(frozen=True)
class SequenceLogProbs:
    tokens: list[str]         # the tokens of the text (after dropping unknown characters), [T]
    probs: list[float]        # P(x_t | x_<t) for t = 1..T-1 (the first token is given), [T-1]
    log_probs: list[float]    # ln of the above, [T-1]
    best: list[str]           # the model's most probable next token at each position, [T-1]
    best_probs: list[float]   # its probability, [T-1]
    total_log_prob: float     # sum of log_probs = ln P(x_2..x_T | x_1)
    mean_loss: float          # -total_log_prob / (T-1): the cross-entropy of this text
    unknown: list[str]        # characters the tokenizer does not know (dropped)
    truncated: bool           # the text was cut to the model's block size
    context: ContextIds       # the cut itself (total tokens, limit, how many left out)


@torch.no_grad()
def sequence_log_probs(model, tokenizer, text: str) -> SequenceLogProbs:
    """The chain rule on a model: one forward pass scores every next token of ``text``.

    Text longer than the model's block size is cut (the page says so). ValueError when fewer
    than two known tokens remain.
    """
    fit = fit_context(tokenizer, text, model.cfg.block_size)
    ids, unknown, truncated = fit.ids, fit.unknown, fit.cut > 0
    if len(ids) < 2:
        raise ValueError("need at least two known tokens")
    idx = torch.tensor(ids, dtype=torch.long, device=model.device)[None]      # [1,T]
    logits, _ = model(idx)                                                   # [1,T,V]
    logp = F.log_softmax(logits[0, :-1].float(), dim=-1).cpu()              # [T-1,V]
    tgt = idx[0, 1:].cpu()                                                   # [T-1]
    lp = logp.gather(1, tgt[:, None])[:, 0]                                  # [T-1]
    top = logp.max(dim=-1)                                                   # [T-1]
    return SequenceLogProbs(
        tokens=[tokenizer.token(i) for i in ids], probs=lp.exp().tolist(), log_probs=lp.tolist(),
        best=[tokenizer.token(int(i)) for i in top.indices], best_probs=top.values.exp().tolist(),
        total_log_prob=float(lp.sum()), mean_loss=float(-lp.mean()), unknown=unknown,
        truncated=truncated, context=fit)


# -----------------------------------------------------------------------------
# teacher forcing

@dataclass(frozen=True)
class TrainingPair:
    context: tuple[str, ...]  # the true prefix the model reads (never its own guesses)
    target: str               # the label: the token that follows in the data


@dataclass(frozen=True)
class TeacherForcing:
    tokens: list[str]         # the whole sequence, [T]
    inputs: list[str]         # tokens[:-1], [T-1]
    labels: list[str]         # tokens[1:], [T-1]: labels are the inputs shifted by one
    pairs: list[TrainingPair]  # one next-token question per position


def teacher_forcing(tokens: Sequence[str]) -> TeacherForcing:
    """Inputs and labels shifted by one: a sequence of T tokens is T-1 training questions.

    >>> tf = teacher_forcing(["<BOS>", "I", "love"])
    >>> tf.inputs, tf.labels, tf.pairs[1]
    (['<BOS>', 'I'], ['I', 'love'], TrainingPair(context=('<BOS>', 'I'), target='love'))
    """
    tokens = list(tokens)
    if len(tokens) < 2:
        raise ValueError("need at least two tokens")
    pairs = [TrainingPair(tuple(tokens[:t]), tokens[t]) for t in range(1, len(tokens))]
    return TeacherForcing(tokens, tokens[:-1], tokens[1:], pairs)


def toy_teacher_forcing(lang: str = "en") -> TeacherForcing:
    """Teacher forcing on the notes' sentences: 5 pairs in English, 4 in Chinese (tokens via the toy vocab)."""
    tok = toy_tokenizer(lang)
    ids = tok.encode(TOY_SENTENCE[lang])
    return teacher_forcing([tok.token(i) for i in ids])


# -----------------------------------------------------------------------------
# the causal mask

@dataclass(frozen=True)
class MaskDemo:
    scores: torch.Tensor   # [T,T] raw scores, query rows, key columns
    masked: torch.Tensor   # [T,T] the same with the future (column > row) set to -inf
    weights: torch.Tensor  # [T,T] row softmax of masked: exactly 0 above the diagonal


def toy_scores(T: int = 5, seed: int = 0) -> torch.Tensor:
    """MADE-UP scores for the mask picture: a seeded [T,T] draw rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    return torch.round(torch.randn(T, T, generator=g, dtype=torch.float64) * 10) / 10


def causal_mask_demo(scores: torch.Tensor) -> MaskDemo:
    """The causal-mask example: mask the future of a score matrix and softmax each row.

    >>> d = causal_mask_demo(torch.zeros(3, 3))
    >>> d.weights.tolist()[1]  # row 1 sees keys 0 and 1 only, equally
    [0.5, 0.5, 0.0]
    """
    s = torch.as_tensor(scores, dtype=torch.float64)
    if s.dim() != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"scores must be square [T,T], got {tuple(s.shape)}")
    masked = s.masked_fill(~causal_mask(s.shape[0]), float("-inf"))
    return MaskDemo(s, masked, torch.softmax(masked, dim=-1))


@dataclass(frozen=True)
class ParallelCheck:
    n: int                 # tokens in the sequence
    max_diff: float        # max |logits(one pass)[t] - logits(pass over prefix 0..t)[t]|
    future_diff: float     # max change of logits at positions < T-1 when the last token changes
    last_diff: float       # change of logits at the last position itself (it may change)


@torch.no_grad()
def parallel_vs_sequential(model, ids: Sequence[int]) -> ParallelCheck:
    """Why training can be parallel: with the causal mask, one pass over T tokens gives, at every
    position t, exactly the logits of a separate pass over the prefix 0..t; and replacing the last
    token leaves every earlier position's logits unchanged (no position reads its future)."""
    ids = list(ids)[: model.cfg.block_size]
    if len(ids) < 2:
        raise ValueError("need at least two tokens")
    idx = torch.tensor(ids, dtype=torch.long, device=model.device)[None]     # [1,T]
    full = model(idx)[0][0].float()                                         # [T,V]
    prefix = torch.stack([model(idx[:, : t + 1])[0][0, -1].float() for t in range(len(ids))])  # [T,V]
    other = idx.clone()
    other[0, -1] = (other[0, -1] + 1) % model.cfg.vocab_size               # a different last token
    changed = model(other)[0][0].float()                                    # [T,V]
    return ParallelCheck(
        n=len(ids), max_diff=float((full - prefix).abs().max()),
        future_diff=float((full[:-1] - changed[:-1]).abs().max()) if len(ids) > 1 else 0.0,
        last_diff=float((full[-1] - changed[-1]).abs().max()))


def where_seen(text: str, corpus: str) -> str:
    """Whether ``text`` is part of the default model's training text of ``corpus`` ("train"), of
    its held-out part ("heldout"), or of neither ("neither"): the same splits the default model
    was trained and scored on (scripts/train_default.py: whole paragraphs or poems held out)."""
    text = text.strip()
    if not text:
        return "neither"
    if corpus == "poetry":
        from lmviz.poetry import load_poetry

        p = load_poetry()
        train, held = p.train_text, p.heldout_text
    elif corpus == "english":
        from lmviz.data import paragraph_split

        train, held = paragraph_split("english", 0.1, 0)
    else:
        return "neither"
    return "train" if text in train else "heldout" if text in held else "neither"
