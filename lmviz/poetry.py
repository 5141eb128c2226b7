"""The Tang-poetry corpus (全唐诗, regular forms) and the *form* of generated poems.

The asset ``assets/corpora/poetry.txt.gz`` (built by ``scripts/make_corpora.py``) holds one
poem per line, in simplified characters, titles and authors left out, in an order shuffled with a
fixed seed; its last ``n_heldout`` poems (``poetry.json``) are held out. So the held-out set is
whole poems drawn at random, and any tail of the file is too.

Vocabulary (``poetry_tokenizer``): one token per character for the most frequent characters that
together cover 99.5 % of the training poems, plus every character of the English corpus and of
the app's own example sentences, plus one unknown token "□" for the rest (the rare characters:
about 2,500 of the 6,340 distinct ones, 0.5 % of the text; poetry.json has the numbers). The page
explains the choice with the catalogue string ``train.vocab_reason`` and ``vocab_facts()``.

Form (``form_share``): a model learns the shape of a poem before its meaning. A *line* is the
text between two line marks (，。？！； or a line break); the share of complete lines that are
exactly 5 or 7 characters long measures how well generated text keeps the form.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from .data import CORPUS_DIR, load_corpus, split
from .tokenizer import CharTokenizer

CORPUS = "poetry"                       # name for lmviz.data.load_corpus
LINE_MARKS = "，。？！；\n"             # a line of a poem ends at one of these
FORM_LENGTHS = (5, 7)                   # 五言 and 七言
PROMPT = "\n春风"                       # live samples start a new poem (after a line break) with 春风

@dataclass(frozen=True)
class PoetryCorpus:
    train: tuple[str, ...]      # poems the model may train on, one string each (with ，。)
    heldout: tuple[str, ...]    # whole poems never trained on (the file's last n_heldout)
    stats: dict                 # poetry.json: source, licence, counts, vocabulary, seed

    @property
    def train_text(self) -> str:
        return "".join(p + "\n" for p in self.train)

    @property
    def heldout_text(self) -> str:
        return "".join(p + "\n" for p in self.heldout)


def poetry_stats() -> dict:
    """The corpus's sidecar record (assets/corpora/poetry.json)."""
    return json.loads((CORPUS_DIR / "poetry.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def load_poetry() -> PoetryCorpus:
    """The poems, split into train and held-out by whole poems (cached)."""
    stats = poetry_stats()
    poems = load_corpus(CORPUS).splitlines()
    n_val = stats["n_heldout"]
    if len(poems) != stats["n_poems"] or not 0 < n_val < len(poems):
        raise ValueError("poetry.txt.gz and poetry.json disagree; rebuild with scripts/make_corpora.py")
    train, held = split(poems, n_val=n_val)
    return PoetryCorpus(tuple(train), tuple(held), stats)


@functools.lru_cache(maxsize=1)
def poetry_tokenizer() -> CharTokenizer:
    """The poetry vocabulary (see the module doc) with its unknown token."""
    st = poetry_stats()
    return CharTokenizer.from_chars(list(st["vocab"]), unk=st["unk"])


def vocab_facts() -> dict:
    """The numbers behind the vocabulary, named as the catalogue string ``train.vocab_reason``
    expects them: ``t("train.vocab_reason", **vocab_facts())``."""
    st = poetry_stats()
    return {"n_cover": st["vocab_coverage_chars"], "coverage": st["vocab_coverage"],
            "n_rare": st["chars_to_unk"], "unk": st["unk"], "vocab_size": st["vocab_size"]}


def training_text() -> tuple[str, float]:
    """(text, val_frac) for ``lmviz.train.Trainer``: the train poems then the held-out poems,
    and the val_frac whose tail is exactly the held-out poems under the poetry tokenizer (one
    token per character), so the live model is scored on whole poems it never saw."""
    c = load_poetry()
    tr, va = c.train_text, c.heldout_text
    n = len(tr) + len(va)
    return tr + va, (len(va) + 0.5) / n       # int(n * val_frac) == len(va)


@dataclass(frozen=True)
class FormMetric:
    n_lines: int        # complete lines in the text (closed by a line mark)
    n_form: int         # of them, exactly 5 or 7 characters long
    share: float        # n_form / n_lines (0.0 when there is no complete line)
    lengths: tuple[int, ...]   # the length of each complete line, in order


def form_share(text: str, lengths=FORM_LENGTHS) -> FormMetric:
    """How many complete lines of text are exactly 5 or 7 characters.

    A line is the text between two line marks (，。？！； or a line break); the piece before the
    first mark counts too (a sample may start mid-poem, and the prompt is part of its first line),
    the unfinished piece after the last mark does not, and empty pieces (two marks in a row) are
    skipped. Spaces count as characters (a poem has none).

    >>> m = form_share("床前明月光，疑是地上霜。举头望明月，低头思故乡。\\n春眠不觉")
    >>> m.n_lines, m.n_form, m.share
    (4, 4, 1.0)
    >>> form_share("白日依山尽，黄河入海流流。").lengths
    (5, 6)
    >>> form_share("无标点").n_lines
    0
    """
    pieces = re.split(f"[{re.escape(LINE_MARKS)}]", text)[:-1]      # the last piece is unfinished
    lens = tuple(len(p) for p in pieces if p)
    n_form = sum(n in lengths for n in lens)
    return FormMetric(len(lens), n_form, n_form / len(lens) if lens else 0.0, lens)
