"""A small BM25 retriever, for the page that shows retrieval feeding a language model.

BM25 scores a document d for a query q as

    score(q, d) = sum over terms t in q of  idf(t) * tf(t, d) * (k1 + 1)
                                            / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

English is split into lower-case words. Chinese has no spaces, so each run of Chinese
characters gives every single character and every pair of neighbouring characters (character
bigrams, no word segmenter needed): with single characters only, 法国 (France) would match the 国
of 中国 (China) as well as it matches 法国 itself; the bigram 法国 occurs only where France is
named. Pure Python + numpy.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["BM25Config", "BM25", "Hit", "Document", "tokenize", "load_documents", "split_sentences",
           "best_sentence", "fit_window"]

DOCS_DIR = Path(__file__).resolve().parents[2] / "assets" / "docs"

# a few very common English words that would otherwise add noise to short queries
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was "
    "were what which who will with".split()
)
# runs of CJK unified ideographs, and runs of Latin letters/digits (one word each)
_TOKEN = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]+|[a-z0-9]+")
_HAN = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")
# very common Chinese function characters, dropped as single characters like English stop words
# (a bigram that holds one is kept: 首都 "capital" must not lose its 都)
ZH_STOPCHARS = frozenset("的了是在和也有就都而及与着或一个")
# sentence ends, English and Chinese
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；])\s*")


def tokenize(text: str, drop_stopwords: bool = True) -> list[str]:
    """Lower-case English words; for Chinese, each character followed by the bigram it starts.

    >>> tokenize("The capital of France is Paris.")
    ['capital', 'france', 'paris']
    >>> tokenize("巴黎是法国的首都", drop_stopwords=False)
    ['巴', '巴黎', '黎', '黎是', '是', '是法', '法', '法国', '国', '国的', '的', '的首', '首', '首都', '都']
    >>> tokenize("法国的首都")
    ['法', '法国', '国', '国的', '的首', '首', '首都']
    """
    out: list[str] = []
    for run in _TOKEN.findall(text.lower()):
        if not _HAN.match(run):  # a Latin word
            if not (drop_stopwords and run in STOPWORDS):
                out.append(run)
            continue
        for i, ch in enumerate(run):  # a run of Chinese characters: unigrams and bigrams
            if not (drop_stopwords and ch in ZH_STOPCHARS):
                out.append(ch)
            if i + 1 < len(run):
                out.append(run[i:i + 2])
    return out


@dataclass(frozen=True)
class BM25Config:
    k1: float = 1.5  # term-frequency saturation: higher lets repeated terms count for more
    b: float = 0.75  # length normalisation: 0 ignores document length, 1 divides by it fully


@dataclass(frozen=True)
class Hit:
    doc_id: int  # index of the document in the list given to BM25
    score: float  # BM25 score (higher is more relevant); 0.0 when no query term occurs
    text: str  # the document's text


@dataclass(frozen=True)
class Document:
    name: str  # file stem, e.g. "en-paris"
    lang: str  # "en" or "zh", from the file-name prefix
    title: str  # the first "# " heading
    text: str  # the whole passage, heading included


class BM25:
    """An index over a fixed list of texts.

    >>> bm = BM25(["Paris is in France.", "Tokyo is in Japan.", "东京在日本。"])
    >>> [h.doc_id for h in bm.search("Where is Tokyo?", k=1)]
    [1]
    >>> bm.search("日本", k=1)[0].doc_id
    2
    """

    def __init__(self, docs: list[str], config: BM25Config = BM25Config()):
        if not docs:
            raise ValueError("BM25 needs at least one document")
        self.docs = list(docs)
        self.config = config
        self.doc_tokens = [tokenize(d) for d in self.docs]
        self.tf = [Counter(toks) for toks in self.doc_tokens]
        self.doc_len = np.array([len(t) for t in self.doc_tokens], dtype=np.float64)  # (N,)
        self.avgdl = float(self.doc_len.mean()) or 1.0
        df = Counter(t for c in self.tf for t in c)
        n = len(self.docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for a query, shape (N,)."""
        k1, b = self.config.k1, self.config.b
        norm = k1 * (1.0 - b + b * self.doc_len / self.avgdl)  # (N,)
        out = np.zeros(len(self.docs))  # (N,)
        for term in tokenize(query):  # a repeated query term counts once per occurrence
            if term not in self.idf:
                continue
            tf = np.array([c.get(term, 0) for c in self.tf], dtype=np.float64)  # (N,)
            out += self.idf[term] * tf * (k1 + 1.0) / (tf + norm)
        return out

    def search(self, query: str, k: int = 3) -> list[Hit]:
        """The k best documents, best first (ties broken by lower doc_id); documents that share
        no term with the query are left out, so the list may be shorter than k."""
        s = self.scores(query)
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))
        return [Hit(i, float(s[i]), self.docs[i]) for i in order[:max(k, 0)] if s[i] > 0]


def load_documents(directory: Path = DOCS_DIR) -> list[Document]:
    """The bundled passages in assets/docs, sorted by file name.

    >>> docs = load_documents(); docs[0].name, docs[0].lang
    ('en-attention', 'en')
    """
    out = []
    for path in sorted(Path(directory).glob("*.md")):
        text = path.read_text(encoding="utf-8").strip()
        first = text.splitlines()[0] if text else ""
        title = first[2:].strip() if first.startswith("# ") else path.stem
        out.append(Document(path.stem, path.stem.split("-", 1)[0], title, text))
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of a passage, its "# " heading left out (split after . ! ? 。 ！ ？ ；).

    >>> split_sentences("# T\\n\\nOne. Two!\\n巴黎很美。塞纳河穿城而过。")
    ['One.', 'Two!', '巴黎很美。', '塞纳河穿城而过。']
    """
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return [s.strip() for s in _SENTENCE_END.split(body) if s.strip()]


def best_sentence(text: str, query: str, config: BM25Config = BM25Config()) -> str:
    """The sentence of a passage that best matches the query (BM25 over its sentences; the first
    one wins a tie); the whole text when it has no sentence.

    >>> best_sentence("# Paris\\n\\nParis is big. It is the capital of France.", "capital of France")
    'It is the capital of France.'
    """
    sents = split_sentences(text)
    if not sents:
        return text
    scores = BM25(sents, config).scores(query)
    return sents[int(np.argmax(scores))]


def fit_window(context_ids, prompt_ids, block_size: int) -> tuple[list[int], int]:
    """``context_ids + prompt_ids`` cut to a model's window of ``block_size`` tokens: the prompt
    is kept whole, the context keeps its beginning (where a passage names what it is about) and
    loses its end. Returns the ids and how many context tokens were cut.

    >>> fit_window([1, 2, 3, 4], [9, 9], 4)
    ([1, 2, 9, 9], 2)
    >>> fit_window([1], [9], 4)
    ([1, 9], 0)
    """
    context_ids, prompt_ids = list(context_ids), list(prompt_ids)[-block_size:]
    room = max(0, block_size - len(prompt_ids))
    kept = context_ids[:room]
    return kept + prompt_ids, len(context_ids) - len(kept)


@dataclass(frozen=True)
class ContextShift:
    ids: tuple[int, ...]       # context then question, as the model reads them (fit_window)
    read: int                  # context tokens the model reads
    cut: int                   # context tokens cut to fit the window
    p_before: np.ndarray       # [V] next-token probabilities after the question alone (float64)
    p_after: np.ndarray        # [V] after the context and the question
    kl: float                  # KL(after ‖ before) in nats: how far the context moved the distribution

    def claim(self, answer_id: int):
        """lmviz.chapters.claims.answer_shift of the answer's first token ``answer_id``, with the
        KL and whether another token became the most probable: the one sentence both the page
        and :func:`choose_condition` state."""
        from lmviz.chapters.claims import answer_shift

        top_moved = int(np.argmax(self.p_before)) != int(np.argmax(self.p_after))
        return answer_shift(float(self.p_before[answer_id]), float(self.p_after[answer_id]), self.kl, top_moved)


def context_shift(model, context_ids, prompt_ids) -> ContextShift:
    """What a retrieved context does to the model's next token: its distribution after the
    question alone and after the context and the question (fit to the model's window)."""
    from lmviz.sampling import next_logits, softmax_t    # torch: only when a model is asked

    prompt_ids = list(prompt_ids)[-model.cfg.block_size:]
    ids, cut = fit_window(context_ids, prompt_ids, model.cfg.block_size)
    p0, p1 = (softmax_t(next_logits(model, x or [0])).numpy() for x in (prompt_ids, ids))
    kl = float(np.sum(p1 * (np.log(p1 + 1e-12) - np.log(p0 + 1e-12))))
    return ContextShift(tuple(ids), len(ids) - len(prompt_ids), cut, p0, p1, kl)


@dataclass(frozen=True)
class ConditionChoice:
    index: int                      # the example shown: the first whose prefix moves the answer
    statements: tuple[str, ...]     # each tried example's answer_shift statement, in order
    kls: tuple[float, ...]          # each tried example's KL(after ‖ before) in nats


def choose_condition(model, tok, examples) -> ConditionChoice:
    """Of ``examples`` ((question, prefix, answer), in order of preference), the first whose
    prefix makes the model's answer rise (lmviz.chapters.claims.answer_shift); when none does,
    the one that moves the next token's distribution most. Stops at the first that rises."""
    from lmviz.chapters.about_model import answer_ids, prompt_for
    from lmviz.tokenizer import fit_context

    statements, kls = [], []
    for question, prefix, answer in examples:
        question = prompt_for(tok, question)
        sh = context_shift(model, tok.encode_lossy(prefix)[0],
                           fit_context(tok, question, model.cfg.block_size, keep="end").ids)
        ans = answer_ids(tok, question, answer)
        statements.append(sh.claim(ans[0]).statement if ans else "no_answer")
        kls.append(sh.kl)
        if statements[-1] == "rises":
            break
    i = statements.index("rises") if "rises" in statements else int(np.argmax(kls))
    return ConditionChoice(i, tuple(statements), tuple(kls))
