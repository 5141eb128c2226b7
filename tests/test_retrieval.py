"""BM25 retrieval over the bundled passages (lmviz/retrieval.py)."""
import math

import pytest

from lmviz.retrieval import BM25, BM25Config, Hit, load_documents, tokenize


@pytest.fixture(scope="module")
def docs():
    return load_documents()


def test_bundled_documents(docs):
    assert 10 <= len(docs) <= 20
    langs = {d.lang for d in docs}
    assert langs == {"en", "zh"}
    assert all(d.title and d.text.startswith("# ") and len(d.text) > 80 for d in docs)
    assert len({d.name for d in docs}) == len(docs)


def test_tokenize_english_words_and_chinese_characters():
    assert tokenize("Tokyo's TRAINS, 40 million!") == ["tokyo", "s", "trains", "40", "million"]
    assert tokenize("苹果很甜") == ["苹", "果", "很", "甜"]
    assert tokenize("KV 缓存") == ["kv", "缓", "存"]
    assert tokenize("the of is") == []  # stop words only


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
