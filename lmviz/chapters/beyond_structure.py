"""The capital-corpus example trained for real: a bigram (count) model against a small transformer on the capital corpus.

The corpus (lmviz.capitals.capital_corpus) puts a city first and its country last:

    Paris is a city in France .
    <bos> Paris is a city in France .        (what the models read; "France" is predicted from "in")

A bigram model predicts each token from the one before it only, so after "in" it can do no better
than the countries' overall frequencies. A transformer reads the whole prefix, so it can carry
"Paris" forward. Both models see the same tokens: words and punctuation in English, single
characters in Chinese (a city never seen in training reads as <unk>).

Everything returns records; nothing prints. Training takes a few seconds on a CPU.
"""
from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from lmviz.capitals import TEMPLATES, Pair, _holdable, capital_corpus, load_pairs, template_positions
from lmviz.capitals import render as render_sentence
from lmviz.data import pad_batch
from lmviz.model import GPT, GPTConfig, init_weights
from lmviz.sampling import next_logits

__all__ = ["StructureConfig", "Vocab", "tokenize", "BigramModel", "SentenceLoss", "CountrySummary",
           "StructureResult", "encode_sentence", "train_transformer", "sentence_losses",
           "country_attention", "country_summary", "known_country_sentences", "prepare", "W9Corpus", "w9_corpus", "train_structure", "untrained_transformer"]

BOS, UNK = "<bos>", "<unk>"
_EN_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class StructureConfig:
    lang: str = "en"          # corpus language: "en" (word tokens) or "zh" (character tokens)
    n_sentences: int = 1500   # training sentences drawn from the templates
    n_heldout: int = 8        # city/country pairs whose city never appears in training
    seed: int = 0             # corpus, weights and batches all derive from it
    alpha: float = 0.1        # add-alpha smoothing of the bigram counts
    n_layer: int = 2          # transformer blocks
    n_head: int = 2           # heads per block
    d_model: int = 48         # residual width
    steps: int = 300          # optimizer steps
    batch: int = 64           # sentences per step
    lr: float = 3e-3          # AdamW learning rate (constant after a short warm-up)


def tokenize(text: str, lang: str) -> list[str]:
    """Words and punctuation (English) or characters (Chinese), spaces dropped.

    >>> tokenize("Paris lies in France.", "en"), tokenize("巴黎位于法国。", "zh")[:3]
    (['Paris', 'lies', 'in', 'France', '.'], ['巴', '黎', '位'])
    """
    if lang == "zh":
        return [c for c in text if not c.isspace()]
    return _EN_TOKEN.findall(text)


class Vocab:
    """Token <-> id, with <bos> = 0 and <unk> = 1.

    >>> v = Vocab(["a b", "b c"], "en"); v.encode("a z"), v.token(2)
    ([0, 2, 1], 'a')
    """

    def __init__(self, sentences, lang: str):
        self.lang = lang
        seen = sorted({tok for s in sentences for tok in tokenize(s, lang)})
        self.tokens = [BOS, UNK] + seen
        self.stoi = {t: i for i, t in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def token(self, i: int) -> str:
        return self.tokens[i]

    def encode(self, sentence: str) -> list[int]:
        """<bos> then one id per token (unknown tokens -> <unk>)."""
        return [0] + [self.stoi.get(t, 1) for t in tokenize(sentence, self.lang)]


class BigramModel:
    """p(next | previous) from counts with add-alpha smoothing: the model that sees one token back.

    >>> b = BigramModel([[0, 2, 3], [0, 2, 4]], vocab_size=5, alpha=0.0)
    >>> round(float(b.probs[2, 3]), 2)  # after token 2 came 3 once and 4 once
    0.5
    """

    def __init__(self, seqs, vocab_size: int, alpha: float = 0.1):
        counts = np.full((vocab_size, vocab_size), float(alpha))   # [V,V] prev -> next
        for s in seqs:
            np.add.at(counts, (np.asarray(s[:-1]), np.asarray(s[1:])), 1.0)
        rows = counts.sum(1, keepdims=True)
        self.probs = np.divide(counts, rows, out=np.full_like(counts, 1.0 / vocab_size), where=rows > 0)

    def nll(self, ids: list[int]) -> np.ndarray:
        """Loss (nats) of each next token: [T-1], entry i predicts ids[i+1] from ids[i]."""
        a = np.asarray(ids)
        return -np.log(self.probs[a[:-1], a[1:]])


def _new_model(vocab_size: int, block_size: int, cfg: StructureConfig) -> GPT:
    gen = torch.Generator().manual_seed(cfg.seed)
    model = GPT(GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=cfg.n_layer,
                          n_head=cfg.n_head, n_kv_head=cfg.n_head, d_model=cfg.d_model))
    init_weights(model, gen)
    return model


def train_transformer(seqs: list[list[int]], vocab_size: int, cfg: StructureConfig,
                      on_step: Callable[[int, float], None] | None = None,
                      cancel: Callable[[], bool] | None = None) -> tuple[GPT, list[float]]:
    """Train a small GPT on whole sentences; returns (eval-mode model, loss per step)."""
    import lmviz

    from lmviz.train import fit_small

    lmviz.set_threads()
    x, y = pad_batch(seqs)                                   # [N,T], padding targets = -1
    model = _new_model(vocab_size, x.shape[1], cfg)
    losses = fit_small(model, x, y, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed + 1,
                       clip=1.0, cancel=cancel, on_step=on_step)
    return model.eval(), losses


def untrained_transformer(vocab_size: int, block_size: int, cfg: StructureConfig) -> GPT:
    """The same architecture at its seeded initial weights (the "before" picture)."""
    return _new_model(vocab_size, block_size, cfg).eval()


@dataclass(frozen=True)
class SentenceLoss:
    sentence: str             # the sentence scored
    tokens: list[str]         # the tokens read, <bos> first, <unk> for unseen ones
    bigram: np.ndarray        # [T-1] loss (nats) of token i+1 for the bigram model
    transformer: np.ndarray   # [T-1] the same for the transformer
    country: int              # index into the loss arrays of the country's first token
    city: tuple[int, int]     # [start, end) token positions of the city (in ``tokens``)


def _spans(sentence: str, lang: str) -> tuple[tuple[int, int], int]:
    """City token span and country token index (both counting <bos> as token 0)."""
    pos = template_positions(sentence)
    s = sentence.strip()
    c0 = len(tokenize(s[:pos.city_span[0]], lang)) + 1
    c1 = c0 + len(tokenize(pos.city, lang))
    country = len(tokenize(s[:pos.country_span[0]], lang)) + 1
    return (c0, c1), country


def encode_sentence(sentence: str, vocab: Vocab) -> list[int]:
    return vocab.encode(sentence.strip())


@torch.no_grad()
def _transformer_nll(model: GPT, ids: list[int]) -> np.ndarray:
    x = torch.tensor(ids[:-1])[None]                          # [1,T-1]
    logits, _ = model(x)                                      # [1,T-1,V]
    logp = F.log_softmax(logits[0].float(), -1)               # [T-1,V]
    return (-logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]).numpy()


def sentence_losses(sentence: str, vocab: Vocab, bigram: BigramModel, model: GPT) -> SentenceLoss:
    """The loss at every position of one template sentence, for both models."""
    ids = encode_sentence(sentence, vocab)
    city, country = _spans(sentence, vocab.lang)
    return SentenceLoss(sentence.strip(), [vocab.token(i) for i in ids], bigram.nll(ids),
                        _transformer_nll(model, ids), country - 1, city)


@dataclass(frozen=True)
class Attention:
    tokens: list[str]         # tokens up to the one that predicts the country, <bos> first
    weights: np.ndarray       # [L,H,T] attention of the last token (the query) over them
    city: tuple[int, int]     # [start, end) of the city among the tokens


def country_attention(sentence: str, vocab: Vocab, model: GPT) -> Attention:
    """Where the transformer looks from the token just before the country (the position whose
    output predicts the country) back over the sentence."""
    ids = encode_sentence(sentence, vocab)
    city, country = _spans(sentence, vocab.lang)
    ids = ids[:country]                                       # query = the token before the country
    tr = model.forward_trace(torch.tensor(ids))
    w = torch.stack([layer.weights[:, -1, :] for layer in tr.layers]).numpy()   # [L,H,T]
    return Attention([vocab.token(i) for i in ids], w, city)


@dataclass(frozen=True)
class CountrySummary:
    n: int                    # sentences scored
    bigram: float             # mean loss (nats) at the country's first token, bigram model
    transformer: float        # the same for the transformer
    bigram_acc: float         # fraction where the bigram's top guess is the right token
    transformer_acc: float    # the same for the transformer


@torch.no_grad()
def country_summary(sentences, vocab: Vocab, bigram: BigramModel, model: GPT) -> CountrySummary:
    """Mean loss and top-1 accuracy at the country position over many sentences."""
    bl, tl, ba, ta = [], [], [], []
    for s in sentences:
        ids = encode_sentence(s, vocab)
        _, c = _spans(s, vocab.lang)
        prev, target = ids[c - 1], ids[c]
        bl.append(-math.log(bigram.probs[prev, target]))
        ba.append(float(np.argmax(bigram.probs[prev]) == target))
        logp = F.log_softmax(next_logits(model, ids[:c]), -1)
        tl.append(-float(logp[target]))
        ta.append(float(int(logp.argmax()) == target))
    n = len(bl)
    if n == 0:
        raise ValueError("no sentences")
    return CountrySummary(n, sum(bl) / n, sum(tl) / n, sum(ba) / n, sum(ta) / n)


@dataclass
class StructureResult:
    config: StructureConfig
    corpus: W9Corpus
    vocab: Vocab
    bigram: BigramModel
    model: GPT                                   # trained transformer, eval mode
    losses: list[float] = field(default_factory=list)   # training loss per step
    train_summary: CountrySummary | None = None  # on training sentences (memorised pairs)
    heldout_summary: CountrySummary | None = None  # on sentences about held-out cities


@dataclass(frozen=True)
class W9Corpus:
    lang: str                          # "en" or "zh"
    sentences: tuple[str, ...]         # training sentences
    heldout_pairs: tuple[Pair, ...]    # cities never read in training (their country is)
    heldout_sentences: tuple[str, ...]  # one sentence per held-out pair


def w9_corpus(lang: str = "en", n_sentences: int = 1500, seed: int = 0, n_heldout: int = 8) -> W9Corpus:
    """The capital corpus with held-out cities chosen so that their *country* still appears in
    training (through another city). Then a wrong answer on a held-out city means the model did
    not know the city, not that it never saw the country.

    >>> c = w9_corpus("en", n_sentences=50, seed=0, n_heldout=3)
    >>> held = {p.city for p in c.heldout_pairs}
    >>> any(template_positions(s).city in held for s in c.sentences)
    False
    """
    pairs = load_pairs(lang)
    per_country = Counter(p.country for p in pairs)
    rng = random.Random(seed)
    cands = [p for p in _holdable(lang, pairs) if per_country[p.country] >= 2 and not p.capital]
    held: list[Pair] = []
    for p in rng.sample(cands, len(cands)):          # at most one held-out city per country
        if len(held) < n_heldout and all(h.country != p.country for h in held):
            held.append(p)
    held_cities = {p.city for p in held}
    base = capital_corpus(lang, n_sentences * 2, seed, n_heldout=0)
    kept = [s for s in base.sentences if template_positions(s).city not in held_cities][:n_sentences]
    general = [t for t in TEMPLATES[lang] if not t.capital_only]
    held_sents = tuple(render_sentence(rng.choice(general), p) for p in held)
    return W9Corpus(lang, tuple(kept), tuple(held), held_sents)


def prepare(cfg: StructureConfig) -> tuple[W9Corpus, Vocab, list[list[int]], BigramModel]:
    """The corpus, its vocabulary, the encoded sentences and the fitted bigram (milliseconds)."""
    corpus = w9_corpus(cfg.lang, cfg.n_sentences, cfg.seed, cfg.n_heldout)
    vocab = Vocab(corpus.sentences, cfg.lang)
    seqs = [encode_sentence(s, vocab) for s in corpus.sentences]
    return corpus, vocab, seqs, BigramModel(seqs, len(vocab), cfg.alpha)


def known_country_sentences(sentences, vocab: Vocab) -> list[str]:
    """The sentences whose country was seen in training (only those can be named at all: a
    country that never appears is <unk> to both models)."""
    out = []
    for s in sentences:
        country = template_positions(s).country
        if all(t in vocab.stoi for t in tokenize(country, vocab.lang)):
            out.append(s)
    return out


def train_structure(cfg: StructureConfig = StructureConfig(),
                    on_step: Callable[[int, float], None] | None = None,
                    cancel: Callable[[], bool] | None = None, n_eval: int = 200) -> StructureResult:
    """Build the corpus, fit the bigram, train the transformer and score both at the country.

    ``n_eval`` training sentences are scored (the first ones); every held-out sentence is.
    """
    corpus, vocab, seqs, bigram = prepare(cfg)
    model, losses = train_transformer(seqs, len(vocab), cfg, on_step, cancel)
    res = StructureResult(cfg, corpus, vocab, bigram, model, losses)
    res.train_summary = country_summary(corpus.sentences[:n_eval], vocab, bigram, model)
    held = known_country_sentences(corpus.heldout_sentences, vocab)
    if held:
        res.heldout_summary = country_summary(held, vocab, bigram, model)
    return res
