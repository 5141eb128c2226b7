"""BM25 retrieval over the bundled passages (lmviz/chapters/beyond_retrieval.py)."""
import math
import re
from pathlib import Path

import pytest

from lmviz.chapters.beyond_retrieval import (BM25, BM25Config, Hit, best_sentence, load_documents,
    split_sentences, tokenize)
from ui.i18n import catalogue

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def docs():
    return load_documents()


def test_bundled_documents(docs):
    assert 10 <= len(docs) <= 20
    langs = {d.lang for d in docs}
    assert langs == {"en", "zh"}
    assert all(d.title and d.text.startswith("# ") and len(d.text) > 80 for d in docs)
    assert len({d.name for d in docs}) == len(docs)


def test_tokenize_english_words_and_chinese_characters_and_bigrams():
    assert tokenize("Tokyo's TRAINS, 40 million!") == ["tokyo", "s", "trains", "40", "million"]
    assert tokenize("苹果很甜") == ["苹", "苹果", "果", "果很", "很", "很甜", "甜"]
    assert tokenize("KV 缓存") == ["kv", "缓", "缓存", "存"]
    assert tokenize("the of is") == []  # stop words only
    assert tokenize("的了") == ["的了"]  # stop characters go, the bigram they form stays
    assert tokenize("首都，北京") == ["首", "首都", "北", "北京", "京"]  # no bigram across punctuation


def test_bigrams_tell_france_from_china():
    # with single characters 法国 shares 国 with 中国; the bigram 法国 does not
    bm = BM25(["北京是中国的首都。", "巴黎是法国的首都。"])
    assert bm.search("法国的首都是", k=1)[0].doc_id == 1


@pytest.mark.parametrize("query", ["Where do people skate on a frozen canal in winter?",
                                   "zebra umbrella marmalade"])
def test_planted_passage_ranks_first(docs, query):
    planted = "Zebra umbrella marmalade: in Ottawa people skate to work on the frozen canal."
    texts = [d.text for d in docs]
    texts.insert(5, planted)
    hits = BM25(texts).search(query, k=3)
    assert hits[0].doc_id == 5 and hits[0].text == planted
    assert all(isinstance(h, Hit) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("query,expected", [
    ("苹果公司生产什么？", "zh-apple"),
    ("北京的故宫", "zh-beijing"),
    ("机器人怎么预测动作", "zh-robot"),
    ("capital of Japan", "en-tokyo"),
    ("what does a KV cache store", "en-kv-cache"),
])
def test_queries_find_the_right_bundled_passage(docs, query, expected):
    hits = BM25([d.text for d in docs]).search(query, k=3)
    assert docs[hits[0].doc_id].name == expected


def test_chinese_query_on_mixed_index():
    bm = BM25(["Paris is the capital of France.", "巴黎是法国的首都。", "东京是日本的首都。"])
    hits = bm.search("法国首都", k=3)
    assert hits[0].doc_id == 1
    assert {h.doc_id for h in hits} == {1, 2}  # 首都 also occurs in doc 2; doc 0 shares nothing


def test_bm25_matches_formula_by_hand():
    # two documents, one query term; compute the score by hand
    bm = BM25(["apple apple pear", "pear plum"], BM25Config(k1=1.2, b=0.75))
    n, df, tf, dl, avgdl = 2, 1, 2, 3, 2.5
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    want = idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
    got = bm.scores("apple")
    assert got[0] == pytest.approx(want) and got[1] == 0.0


def test_no_match_and_bad_input():
    bm = BM25(["one document about cats"])
    assert bm.search("dogs", k=5) == []
    assert bm.search("", k=5) == []
    assert bm.search("cats", k=0) == []
    with pytest.raises(ValueError):
        BM25([])


# ---- the retrieval presets of the knowledge section (chapters/beyond.py reads bey.q1..bey.q3) ----
# preset key -> (passage that answers it, per language; a word of the answer, per language)
PRESETS = {
    "bey.q1": ({"en": "en-paris", "zh": "zh-paris"}, {"en": "Paris", "zh": "巴黎"}),
    "bey.q2": ({"en": "en-tokyo", "zh": "zh-tokyo"}, {"en": "Japan", "zh": "日本"}),
    "bey.q3": ({"en": "en-tokyo", "zh": "zh-tokyo"}, {"en": "Tokyo", "zh": "东京"}),
}


def test_presets_listed_here_are_the_pages_presets():
    src = (ROOT / "chapters" / "beyond.py").read_text("utf-8")
    keys = re.search(r"ANSWER_KEYS = \(([^)]*)\)", src).group(1)
    used = {f"bey.{k}" for k in re.findall(r"""["'](q\d+)["']""", keys)}
    assert used == set(PRESETS)
    for key, (_, answer) in PRESETS.items():       # the page's expected answer is the same word
        for lang in ("en", "zh"):
            assert answer[lang] in catalogue(lang)[f"{key}_answer"]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("key", sorted(PRESETS))
def test_every_preset_retrieves_the_passage_that_answers_it(docs, key, lang):
    query = catalogue(lang)[key]
    want, answer = PRESETS[key][0][lang], PRESETS[key][1][lang]
    scores = BM25([d.text for d in docs]).scores(query)
    order = sorted(range(len(docs)), key=lambda i: -scores[i])
    top = docs[order[0]]
    assert top.name == want, (query, [(docs[i].name, round(float(scores[i]), 2)) for i in order[:3]])
    assert scores[order[0]] > 1.5 * scores[order[1]]  # a clear winner, not a coin toss
    # the page places the passage's best sentence before the question: it must hold the answer
    sentence = best_sentence(top.text, query)
    assert answer in sentence and sentence in split_sentences(top.text)


def test_a_context_moves_the_next_token_and_the_window_keeps_the_question():
    import numpy as np
    import torch

    from lmviz.chapters.beyond_retrieval import context_shift
    from lmviz.model import GPT, GPTConfig

    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=9, block_size=6, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
    same = context_shift(m, [], [1, 2])
    assert same.kl < 1e-9 and same.read == 0 and same.cut == 0
    sh = context_shift(m, [3, 4, 5, 6, 7], [1, 2])
    assert sh.ids == (3, 4, 5, 6, 1, 2) and sh.read == 4 and sh.cut == 1
    assert abs(sh.p_after.sum() - 1) < 1e-9 and sh.kl > 0
    assert np.isclose(sh.kl, float(np.sum(sh.p_after * np.log(sh.p_after / sh.p_before))), atol=1e-9)
