"""Beyond, "where knowledge lives": a reader toy that can only know what its context tells it.

The shipped model is too small to answer "The capital of France is" from a retrieved passage
(its window cuts long passages, and it never learned to copy from one). This toy is trained so
that the context is the *only* place an answer can come from: every training example pairs a
city with a country **at random** (Paris with Peru, 东京 with 巴西), states the pair in a sentence
shaped like the passages in ``assets/docs`` (their sentences that name a city and its country,
with the names taken out, plus two plain templates), then asks for the city or the country.
Weights cannot store a fact that changes from example to example, so without the passage the
toy can only spread its bet over every name; with the right passage it can copy the answer. A
fifth of the examples come with no passage, and a fifth with a passage about another pair (what
a retriever that fetched the wrong passage gives), so the toy also learns not to copy from a
passage that is not about the question.

``python -m lmviz.chapters.beyond_reader`` retrains it (seconds) and writes
``assets/models/reader_toy.safetensors``.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from lmviz.capitals import load_pairs
from lmviz.chapters.beyond_retrieval import DOCS_DIR, load_documents, split_sentences
from lmviz.data import PAD_LABEL
from lmviz.model import GPT
from lmviz.tokenizer import WordTokenizer
from lmviz.train import Toy, fit_toy, load_toy_file

# the questions: (text with {K} or {C}, which name answers it); the page's presets are of these shapes
QUESTIONS = {"en": [("The capital of {K} is", "C"), ("{C} is a city in", "K")],
             "zh": [("{K}的首都是", "C"), ("{C}这座城市属于", "K")]}
# two plain statements besides the passages' own sentences
PLAIN = {"en": ["{C} is a city in {K} .", "The capital of {K} is {C} ."],
         "zh": ["{C}是{K}的城市。", "{K}的首都是{C}。"]}
_WORD = re.compile(r"\w+|[^\w\s]")
_HAN = re.compile(r"[\u4e00-\u9fff]")


def pairs(lang: str) -> list[tuple[str, str]]:
    """(city, country) of ``assets/data/capitals.json`` (``lmviz.capitals.load_pairs``) whose
    names are one word each."""
    return [(p.city, p.country) for p in load_pairs(lang) if " " not in p.city and " " not in p.country]


def _words(text: str, lang: str) -> str:
    """English split into words and punctuation, space-separated (how the toy's examples are
    written); Chinese unchanged (the tokenizer matches names first, then single characters)."""
    return " ".join(_WORD.findall(text)) if lang == "en" else text


def passage_templates(lang: str, docs_dir: Path = DOCS_DIR) -> list[str]:
    """Sentences of the ``lang`` passages that name one city (of :func:`pairs`) and its country,
    the names replaced by ``{C}`` and ``{K}``, then :data:`PLAIN`.

    >>> any(t.startswith("{C} is the capital of {K}") for t in passage_templates("en"))
    True
    """
    known = pairs(lang)
    cities = {c for c, _ in known}
    out = []
    for d in load_documents(docs_dir):
        if not d.name.startswith(lang + "-"):
            continue
        for s in split_sentences(d.text):
            named = [c for c in cities if c in s]
            for city, country in known:
                if named == [city] and country in s and not s.startswith("#"):
                    out.append(_words(s, lang).replace(city, "{C}").replace(country, "{K}"))
    return list(dict.fromkeys(out)) + PLAIN[lang]


def reader_tokenizer() -> WordTokenizer:
    """Words of the English templates and questions, every city and country of both languages,
    and each Chinese character of the Chinese ones (a name is one token).

    >>> tok = reader_tokenizer(); [tok.token(i) for i in tok.encode("法国的首都是")]
    ['法国', '的', '首', '都', '是']
    """
    words: list[str] = []
    for lang in ("en", "zh"):
        text = " ".join(passage_templates(lang) + [q for q, _ in QUESTIONS[lang]]).replace("{C}", " ").replace("{K}", " ")
        words += [n for p in pairs(lang) for n in p]
        if lang == "en":
            words += text.split()
        else:
            words += [ch for ch in text if not ch.isspace()]
    return WordTokenizer(list(dict.fromkeys(words)), sep=" ")


def other_language_names(tok, lang: str) -> list[int]:
    """Token ids of the names (cities, countries) the toy knows only from the other language's
    examples: a chart of its guesses after a question in ``lang`` leaves them out and says how
    much they got (the toy shares one vocabulary between its English and Chinese examples, and
    spreads a little of its bet over the other language's names).

    >>> tok = reader_tokenizer(); [tok.token(i) for i in other_language_names(tok, "en")][:2]
    ['巴黎', '法国']
    """
    other = {"en": "zh", "zh": "en"}[lang]
    mine = {n for p in pairs(lang) for n in p}
    vocab = {tok.token(i): i for i in range(tok.vocab_size)}
    return [vocab[n] for p in pairs(other) for n in p if n in vocab and n not in mine]


@dataclass(frozen=True)
class Example:
    passage: str      # "" (no passage) or one statement of a pair
    question: str     # asks for the city or the country of `asked`
    answer: str       # the name that answers it
    about: bool       # whether the passage states the pair the question asks about


def reader_example(lang: str, rng: random.Random, templates: list[str], cities: list[str],
                   countries: list[str]) -> Example:
    """One training example: a random city-country pair, the passage (3/5 of the time about the
    pair, 1/5 about another pair, 1/5 none), a question about the pair and its answer."""
    city, country = rng.choice(cities), rng.choice(countries)
    q, ans = rng.choice(QUESTIONS[lang])
    r = rng.random()
    if r < 0.6:
        c2, k2, about = city, country, True
    else:
        c2, k2, about = rng.choice(cities), rng.choice(countries), False
    passage = "" if r >= 0.8 else rng.choice(templates).format(C=c2, K=k2)
    return Example(passage, q.format(C=city, K=country), city if ans == "C" else country, about)


def reader_corpus(n: int, seed: int = 0) -> list[Example]:
    """``n`` examples per language, English then Chinese, with a fixed seed."""
    rng = random.Random(seed)
    out = []
    for lang in ("en", "zh"):
        cities, countries = (sorted({p[i] for p in pairs(lang)}) for i in (0, 1))
        templates = passage_templates(lang)
        out += [reader_example(lang, rng, templates, cities, countries) for _ in range(n)]
    return out


def encode_example(tok, passage: str, question: str, lang: str) -> list[int]:
    """The toy's input: passage then question (the answer follows it); words the toy does not
    know are left out (the page reports them)."""
    return tok.encode_lossy(_words(f"{passage} {question}" if passage else question, lang))[0]


@dataclass(frozen=True)
class ReaderTrainConfig:
    examples: int = 6000     # generated examples per language
    steps: int = 1500        # AdamW steps of `batch` examples
    batch: int = 64          # examples per step
    lr: float = 3e-3         # after a short warm-up
    seed: int = 0            # corpus and torch seed: the same weights on every machine (CPU)
    n_layer: int = 2         # two layers of
    n_head: int = 4          # four heads of head_dim 16
    d_model: int = 64        # width
    block_size: int = 48     # the longest example is about 40 tokens


def train_reader(cfg: ReaderTrainConfig = ReaderTrainConfig()) -> Toy:
    """Train the reader toy: cross-entropy on the answer token only (what comes after the
    question); its losses thinned to every 10th step and the last."""
    tok = reader_tokenizer()
    exs = reader_corpus(cfg.examples, cfg.seed)
    half = len(exs) // 2
    rows = [encode_example(tok, e.passage, e.question, "en" if i < half else "zh") for i, e in enumerate(exs)]
    W = max(len(r) for r in rows)
    x = torch.zeros(len(rows), W, dtype=torch.long)                 # [N,W] inputs, 0 = padding
    y = torch.full((len(rows), W), PAD_LABEL, dtype=torch.long)     # [N,W] only the answer is scored
    for i, (r, e) in enumerate(zip(rows, exs)):
        x[i, :len(r)] = torch.as_tensor(r)
        y[i, len(r) - 1] = tok.encode(e.answer)[0]
    return fit_toy(tok, x, y, block_size=cfg.block_size, n_layer=cfg.n_layer, n_head=cfg.n_head,
                   d_model=cfg.d_model, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed, warmup=50,
                   thin=10)


READER_PATH = Path(__file__).resolve().parents[2] / "assets" / "models" / "reader_toy.safetensors"


def load_reader(path: Path = READER_PATH) -> Toy:
    """The shipped reader toy (written by ``python -m lmviz.chapters.beyond_reader``)."""
    return load_toy_file(path)


@torch.no_grad()
def answer_accuracy(model: GPT, tok, n: int = 100, seed: int = 1) -> dict[str, dict[str, float]]:
    """Per language, on ``n`` fresh examples of each kind: how often the toy's most likely next
    token is the answer, with the right passage ("about"), with another pair's ("other") and with
    none ("none"; chance is one over the number of names). One batched forward per language
    (right-padding cannot change a causal model's earlier rows)."""
    rng = random.Random(seed)
    out = {}
    for lang in ("en", "zh"):
        cities, countries = (sorted({p[i] for p in pairs(lang)}) for i in (0, 1))
        templates = passage_templates(lang)
        got = {"about": [], "other": [], "none": []}
        while min(len(v) for v in got.values()) < n:
            e = reader_example(lang, rng, templates, cities, countries)
            kind = "none" if not e.passage else ("about" if e.about else "other")
            if len(got[kind]) < n:
                got[kind].append((encode_example(tok, e.passage, e.question, lang), tok.encode(e.answer)[0]))
        rows = [r for v in got.values() for r, _ in v]
        x = torch.zeros(len(rows), max(map(len, rows)), dtype=torch.long)   # [N,T] right-padded
        for i, r in enumerate(rows):
            x[i, :len(r)] = torch.as_tensor(r)
        logits = model(x)[0]                                                # [N,T,V]
        pred = logits[torch.arange(len(rows)), torch.as_tensor([len(r) - 1 for r in rows])].argmax(-1)
        right = (pred == torch.as_tensor([a for v in got.values() for _, a in v])).tolist()
        out[lang] = {k: sum(right[i * n:(i + 1) * n]) / n for i, k in enumerate(got)}
    return out


if __name__ == "__main__":  # rebuild the shipped toy weights
    from lmviz.checkpoint import save_checkpoint

    toy = train_reader()
    READER_PATH.parent.mkdir(parents=True, exist_ok=True)
    meta = {"what": "Beyond chapter reader toy, lmviz.chapters.beyond_reader.train_reader()", "losses": toy.losses}
    READER_PATH.write_bytes(save_checkpoint(toy.model, toy.tokenizer, meta, half=True))
    print(f"wrote {READER_PATH} ({READER_PATH.stat().st_size} bytes); vocab {toy.tokenizer.vocab_size}; "
          f"final loss {toy.losses[-1]:.3f}; accuracy {answer_accuracy(toy.model, toy.tokenizer)}")
