"""The "capital" corpus of the capital-corpus example: why next-token prediction needs more than the previous word.

The notes' example is a tiny corpus

    Paris is the capital of France.
    Tokyo is the capital of Japan.
    Ottawa is the capital of Canada.

A bigram model sees only "of" before the country, so it can do no better than the country's
overall frequency; a model that reads back to the city can name the country. This module makes
such corpora from ~100 real city/country pairs (assets/data/capitals.json), in English or
Chinese, with several templates in which the city comes first and the country comes last, just
before the closing punctuation. A few pairs are held out: their city never appears in the
training text, so a page can show what a model does with a city it has never read.

Pure Python (no torch, no numpy): every function returns records.
"""
from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache

from lmviz import ASSETS

__all__ = [
    "Pair", "Template", "CapitalCorpus", "Positions", "TEMPLATES", "load_pairs",
    "capital_corpus", "render", "template_positions", "CountryFloor",
    "NOTES_SENTENCES", "notes_floor",
    "country_floor",
]

CAPITALS_JSON = ASSETS / "data" / "capitals.json"   # ASSETS: lmviz/__init__.py
LANGS = ("en", "zh")


@dataclass(frozen=True)
class Pair:
    city: str  # city name in the corpus language, e.g. "Paris" / "巴黎"
    country: str  # its country in the same language, e.g. "France" / "法国"
    capital: bool  # True when the city is that country's capital


@dataclass(frozen=True)
class Template:
    text: str  # a sentence with {city} and {country}; {country} is last, before the final mark
    capital_only: bool = False  # True when the sentence is only true of capitals


# The city always comes first and the country always comes last, right before the closing
# punctuation, so the model must carry the city forward to predict the country.
# (Not "The capital of France is Paris.": there the country comes first.)
TEMPLATES: dict[str, tuple[Template, ...]] = {
    "en": (
        Template("{city} is the capital of {country}.", capital_only=True),
        Template("{city} is a city in {country}."),
        Template("I flew to {city}, in {country}."),
        Template("{city} lies in {country}."),
        Template("We took a train to {city}, a city in {country}."),
    ),
    # Chinese: "巴黎是法国的首都" puts the country before the city's role, so those templates are
    # avoided; in each of these the country is the last name before 。
    "zh": (
        Template("{city}是首都，所在的国家是{country}。", capital_only=True),
        Template("{city}位于{country}。"),
        Template("我到了{city}，它在{country}。"),
        Template("{city}这座城市属于{country}。"),
        Template("我们坐火车去了{city}，那座城市在{country}。"),
    ),
}


@dataclass(frozen=True)
class CapitalCorpus:
    lang: str  # "en" or "zh"
    seed: int  # the seed that chose held-out pairs, sentences and templates
    text: str  # the training text: one sentence per line, ending with "\n"
    sentences: tuple[str, ...]  # the training sentences, in order
    train_pairs: tuple[Pair, ...]  # pairs whose sentences make up the text
    heldout_pairs: tuple[Pair, ...]  # pairs whose city never appears in the text
    heldout_sentences: tuple[str, ...]  # one sentence per held-out pair, for evaluation
    templates: tuple[Template, ...] = field(repr=False)  # the templates used


@dataclass(frozen=True)
class Positions:
    city: str  # the city as written in the sentence
    country: str  # the country as written in the sentence
    city_span: tuple[int, int]  # [start, end) character offsets of the city
    country_span: tuple[int, int]  # [start, end) character offsets of the country
    country_word: int  # English: index of the country's first word in sentence.split();
    # Chinese: the country's first character index (same as country_span[0])
    template: Template  # the template that matched


def _check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")


@lru_cache(maxsize=None)
def load_pairs(lang: str = "en") -> tuple[Pair, ...]:
    """The bundled city/country pairs in one language, in file order.

    >>> load_pairs("en")[0], load_pairs("zh")[0].country
    (Pair(city='Paris', country='France', capital=True), '法国')
    """
    _check_lang(lang)
    rows = json.loads(CAPITALS_JSON.read_text(encoding="utf-8"))["pairs"]
    return tuple(Pair(r[f"city_{lang}"], r[f"country_{lang}"], bool(r["capital"])) for r in rows)


def render(template: Template, pair: Pair) -> str:
    """One sentence from a template and a pair.

    >>> render(TEMPLATES["zh"][1], Pair("巴黎", "法国", True))
    '巴黎位于法国。'
    """
    if template.capital_only and not pair.capital:
        raise ValueError(f"{pair.city} is not a capital; template {template.text!r} would be false")
    return template.text.format(city=pair.city, country=pair.country)


def _contains(lang: str, haystack: str, needle: str) -> bool:
    """Whether a name occurs in a text: whole words in English, any substring in Chinese."""
    if lang == "zh":
        return needle in haystack
    return re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", haystack) is not None


def _holdable(lang: str, pairs: tuple[Pair, ...]) -> list[Pair]:
    """Pairs whose city can be held out cleanly: the city name is not inside any other name and
    contains none (e.g. 柏林 Berlin sits inside 都柏林 Dublin, so neither is held out)."""
    names = {p.city for p in pairs} | {p.country for p in pairs}
    return [p for p in pairs
            if not any(n != p.city and (_contains(lang, n, p.city) or _contains(lang, p.city, n))
                       for n in names)]


def capital_corpus(lang: str = "en", n_sentences: int = 2000, seed: int = 0,
                   templates: tuple[Template, ...] | None = None,
                   n_heldout: int = 8) -> CapitalCorpus:
    """A capital corpus: ``n_sentences`` sentences about the training pairs, one per line.

    Deterministic in (lang, n_sentences, seed, templates, n_heldout). Each sentence picks a
    training pair uniformly and a template uniformly among those true of that pair (only
    capitals get "is the capital of"). Held-out pairs are drawn from those whose city name
    overlaps no other name, and their city never appears in ``text``.

    >>> c = capital_corpus("en", n_sentences=3, seed=1)
    >>> len(c.sentences), c.text.count("\\n"), len(c.heldout_pairs)
    (3, 3, 8)
    """
    _check_lang(lang)
    if n_sentences < 1:
        raise ValueError("n_sentences must be at least 1")
    templates = tuple(TEMPLATES[lang] if templates is None else templates)
    if not templates or not all(t.text.rstrip().endswith("{country}" + t.text.rstrip()[-1])
                                for t in templates):
        raise ValueError("each template must end with {country} and one punctuation mark")
    pairs = load_pairs(lang)
    rng = random.Random(seed)
    holdable = _holdable(lang, pairs)
    if not 0 <= n_heldout <= len(holdable):
        raise ValueError(f"n_heldout must be between 0 and {len(holdable)}")
    heldout = sorted(rng.sample(holdable, n_heldout), key=pairs.index)
    train = [p for p in pairs if p not in heldout]
    general = [t for t in templates if not t.capital_only]
    sentences = []
    for _ in range(n_sentences):
        pair = rng.choice(train)
        usable = templates if pair.capital else general
        if not usable:  # only capital templates given and this city is not a capital
            pair = rng.choice([p for p in train if p.capital])
            usable = templates
        sentences.append(render(rng.choice(usable), pair))
    held_sents = []
    for pair in heldout:
        usable = templates if pair.capital else general
        held_sents.append(render(rng.choice(usable or templates), pair) if usable else "")
    return CapitalCorpus(lang, seed, "\n".join(sentences) + "\n", tuple(sentences),
                         tuple(train), tuple(heldout), tuple(s for s in held_sents if s), templates)


@lru_cache(maxsize=256)
def _template_regex(template: Template) -> re.Pattern:
    """The template as a regex, compiled once (country_floor matches every corpus sentence)."""
    parts = re.split(r"(\{city\}|\{country\})", template.text)
    rx = "".join({"{city}": r"(?P<city>.+?)", "{country}": r"(?P<country>.+?)"}.get(p, re.escape(p))
                 for p in parts)
    return re.compile(rx + r"\s*$")


def template_positions(sentence: str, templates: tuple[Template, ...] | None = None) -> Positions:
    """Where the city and the country sit in one corpus sentence (the country is what a model
    must predict, and what a page highlights).

    >>> p = template_positions("Paris is the capital of France.")
    >>> p.country, p.country_span, p.country_word
    ('France', (24, 30), 5)
    >>> template_positions("我到了巴黎，它在法国。").country_span
    (8, 10)
    """
    s = sentence.strip()
    cands = templates if templates is not None else TEMPLATES["en"] + TEMPLATES["zh"]
    for t in cands:
        m = _template_regex(t).match(s)
        if m:
            c0, c1 = m.span("country")
            if re.search(r"[\u4e00-\u9fff]", s):
                word = c0
            else:
                word = len(s[:c0].split())
            return Positions(m["city"], m["country"], m.span("city"), (c0, c1), word, t)
    raise ValueError(f"sentence matches no template: {sentence!r}")


@dataclass(frozen=True)
class CountryFloor:
    n: int  # sentences counted
    n_countries: int  # distinct countries among them
    bigram_nats: float  # lowest mean loss (nats) at the country for a model that sees only the
    # previous word (English) or character (Chinese): the entropy of country given that token
    city_nats: float  # the same for a model that also sees the city: 0 when city fixes country


def _entropy(counts: dict) -> float:
    """Conditional entropy (nats) of target given context, from {(context, target): count}."""
    by_ctx: dict = {}
    for (ctx, _), c in counts.items():
        by_ctx[ctx] = by_ctx.get(ctx, 0) + c
    total = sum(counts.values())
    return -sum(c / total * math.log(c / by_ctx[ctx]) for (ctx, _), c in counts.items())


def country_floor(sentences) -> CountryFloor:
    """The capital-corpus example in numbers: the best loss any model can reach on the country's first word (English)
    or character (Chinese) if it sees only the token just before it, against one that also
    sees the city. These are the floors the page's trained bigram and transformer approach.

    The notes' three sentences: after "of", France, Japan and Canada are equally likely.

    >>> f = country_floor(["Paris is the capital of France.", "Tokyo is the capital of Japan.",
    ...                    "Ottawa is the capital of Canada."])
    >>> round(f.bigram_nats, 4), f.city_nats  # ln 3
    (1.0986, 0.0)
    """
    big: dict = {}
    city: dict = {}
    countries = set()
    n = 0
    for s in sentences:
        pos = template_positions(s)
        s = s.strip()
        c0 = pos.country_span[0]
        if pos.country_word == c0 and re.search(r"[\u4e00-\u9fff]", s):  # Chinese: characters
            prev, target = s[c0 - 1], s[c0]
        else:  # English: words
            words = s.split()
            prev, target = words[pos.country_word - 1], words[pos.country_word].rstrip(".")
        big[(prev, target)] = big.get((prev, target), 0) + 1
        city[((prev, pos.city), target)] = city.get(((prev, pos.city), target), 0) + 1
        countries.add(pos.country)
        n += 1
    if n == 0:
        raise ValueError("no sentences")
    return CountryFloor(n, len(countries), _entropy(big), abs(_entropy(city)))


# The notes' own corpus, word for word (the notes write it in English, without full stops, in the
# Chinese lecture too).
NOTES_SENTENCES = ("Paris is the capital of France", "Tokyo is the capital of Japan",
                   "Ottawa is the capital of Canada")


def notes_floor() -> CountryFloor:
    """country_floor of the notes' three sentences (a full stop added, as the templates expect):
    after "of" a bigram can do no better than ln 3; with the city the country is certain.

    >>> f = notes_floor()
    >>> f.n, round(f.bigram_nats, 4), f.city_nats
    (3, 1.0986, 0.0)
    """
    return country_floor([s + "." for s in NOTES_SENTENCES])
