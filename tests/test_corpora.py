"""The bundled corpora and the capital-corpus generator of the notes' structure example (lmviz/capitals.py)."""
import json
import re
import sys
from pathlib import Path

import pytest

from lmviz.data import load_corpus
from lmviz.capitals import (CAPITALS_JSON, TEMPLATES, Pair, Template, capital_corpus, load_pairs, render,
    template_positions)

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")


# ---- the W9 generator --------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_generator_is_deterministic_and_seed_dependent(lang):
    a = capital_corpus(lang, n_sentences=300, seed=7)
    b = capital_corpus(lang, n_sentences=300, seed=7)
    c = capital_corpus(lang, n_sentences=300, seed=8)
    assert a == b
    assert a.text != c.text
    assert len(a.sentences) == 300 and a.text == "\n".join(a.sentences) + "\n"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_heldout_pairs_never_appear_in_training_text(lang, seed):
    c = capital_corpus(lang, n_sentences=2000, seed=seed, n_heldout=10)
    assert len(c.heldout_pairs) == 10
    assert not set(c.heldout_pairs) & set(c.train_pairs)
    for p in c.heldout_pairs:
        if lang == "en":
            assert re.search(rf"\b{re.escape(p.city)}\b", c.text) is None, p
        else:
            assert p.city not in c.text, p
    assert not set(c.heldout_sentences) & set(c.sentences)
    # every held-out pair gets an evaluation sentence that names it
    assert len(c.heldout_sentences) == 10
    assert all(p.city in s and s.endswith(p.country + s[-1])
               for p, s in zip(c.heldout_pairs, c.heldout_sentences))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_country_is_last_before_punctuation(lang):
    c = capital_corpus(lang, n_sentences=500, seed=0)
    by_city = {p.city: p.country for p in load_pairs(lang)}
    for s in c.sentences:
        pos = template_positions(s)
        assert by_city[pos.city] == pos.country  # the sentence states a true fact
        assert s[pos.country_span[0]:pos.country_span[1]] == pos.country
        assert pos.country_span[1] == len(s) - 1 and s[-1] in ".。"
        assert pos.city_span[0] < pos.country_span[0]  # the city comes first
        if lang == "en":
            assert s.split()[pos.country_word].rstrip(".") == pos.country.split()[0]
        else:
            assert pos.country_word == pos.country_span[0]


def test_notes_example_positions():
    # the notes' three sentences: the country is word 5, after "capital of"
    for city, country in [("Paris", "France"), ("Tokyo", "Japan"), ("Ottawa", "Canada")]:
        pos = template_positions(f"{city} is the capital of {country}.")
        assert (pos.city, pos.country, pos.country_word) == (city, country, 5)
    pos = template_positions("巴黎位于法国。")
    assert (pos.city, pos.country, pos.country_span) == ("巴黎", "法国", (4, 6))
    assert template_positions("我到了渥太华，它在加拿大。").country == "加拿大"


def test_capital_template_only_for_capitals():
    cap = TEMPLATES["en"][0]
    assert cap.capital_only
    with pytest.raises(ValueError):
        render(cap, Pair("Osaka", "Japan", False))
    for lang in ("en", "zh"):
        c = capital_corpus(lang, n_sentences=1500, seed=3)
        capitals = {p.city for p in load_pairs(lang) if p.capital}
        marker = "capital of" if lang == "en" else "首都"
        hits = [s for s in c.sentences if marker in s]
        assert hits and all(template_positions(s).city in capitals for s in hits)


def test_chinese_variant_uses_chinese_names():
    c = capital_corpus("zh", n_sentences=200, seed=0)
    assert all(CJK.search(s) and s.endswith("。") for s in c.sentences)
    assert not re.search(r"[A-Za-z]", c.text)
    en, zh = load_pairs("en"), load_pairs("zh")
    assert len(en) == len(zh) and [p.capital for p in en] == [p.capital for p in zh]
    assert ("东京", "日本") in {(p.city, p.country) for p in zh}


def test_custom_templates_and_bad_arguments():
    only = (Template("{city} is the capital of {country}.", capital_only=True),)
    c = capital_corpus("en", n_sentences=50, seed=0, templates=only)
    assert all(s.endswith(".") and " is the capital of " in s for s in c.sentences)
    with pytest.raises(ValueError):
        capital_corpus("fr")
    with pytest.raises(ValueError):
        capital_corpus("en", templates=(Template("The capital of {country} is {city}."),))
    with pytest.raises(ValueError):
        capital_corpus("en", n_heldout=10_000)
    with pytest.raises(ValueError):
        template_positions("This sentence fits no template.")


def test_capitals_data():
    doc = json.loads(CAPITALS_JSON.read_text(encoding="utf-8"))
    assert "public" in doc["about"]
    pairs = load_pairs("en")
    assert 80 <= len(pairs) <= 120
    assert len({p.city for p in pairs}) == len(pairs)  # a city names one country
    assert all(" " not in p.country for p in pairs)  # English countries are single words
    assert Pair("Ottawa", "Canada", True) in pairs and Pair("Paris", "France", True) in pairs


# ---- the bundled text corpora -----------------------------------------------------------

def test_chinese_corpus_size_and_required_sentences():
    s = load_corpus("chinese")
    assert 15_000 <= len(s.encode()) <= 30_000
    assert len(CJK.findall(s)) >= 8000
    for phrase in ["我吃了一个苹果", "苹果很甜", "苹果发布了新", "苹果公司的手机", "我喜欢学习数学"]:
        assert phrase in s, phrase
    assert s.count("苹果公司") >= 3 and s.count("我喜欢学习数学") >= 3
    assert s.count("我喜欢数学") >= 3 and s.count("我喜欢学习") >= 5


def test_english_and_code_corpora():
    en = load_corpus("english")
    assert 300_000 <= len(en.encode()) <= 600_000 and en.isascii()
    assert ">>>" not in en
    pars = en.strip().split("\n\n")
    assert len(set(pars)) == len(pars)  # no duplicated paragraphs
    assert all(p[0].isupper() and p.endswith(".") for p in pars)
    code = load_corpus("code")
    assert 100_000 <= len(code.encode()) <= 200_000 and code.isascii()
    assert "def " in code and "# " in code  # source with its comments
    compile(code, "code.txt", "exec")  # the concatenation is still valid Python


def test_toy_corpus():
    lines = load_corpus("toy").splitlines()
    assert "<BOS> I love robot s <EOS>" in lines and "<开始> 我 喜欢 学习 数学 <结束>" in lines
    assert len(lines) >= 24
    assert all(l.split()[0] in ("<BOS>", "<开始>") and l.split()[-1] in ("<EOS>", "<结束>")
               for l in lines)
    with pytest.raises(ValueError):
        load_corpus("../secret")


def test_make_corpora_filters():
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_corpora as mc

    assert mc.paragraphs("A line.\n\n>>> f()\n1\n\nSee ``x`` and *y* here.") == \
        ["A line.", "See x and y here."]
    assert mc.paragraphs("Table:\n\n=== ===\na   b\n=== ===") == ["Table:"]
    assert mc.is_prose("Return a new list of the words in the string, split at whitespace.")
    assert not mc.is_prose("Return f(x) for every x in the given list of values, please.")
    assert not mc.is_prose("short.")


# ---- W9 in numbers: the loss floor at the country ---------------------------------------

def test_w9_notes_example_bigram_floor_is_ln3():
    from lmviz.capitals import country_floor
    notes = ["Paris is the capital of France.", "Tokyo is the capital of Japan.",
             "Ottawa is the capital of Canada."]
    f = country_floor(notes)
    assert f.n == 3 and f.n_countries == 3
    assert f.bigram_nats == pytest.approx(__import__("math").log(3))  # "of" -> 3 equal choices
    assert f.city_nats == 0.0  # reading the city settles it


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_w9_generated_corpus_bigram_cannot_name_the_country(lang):
    from lmviz.capitals import country_floor
    f = country_floor(capital_corpus(lang, n_sentences=1000, seed=0).sentences)
    assert f.city_nats == 0.0
    assert f.bigram_nats > 2.0  # dozens of countries follow the same previous token


# ---- the Tang-poetry corpus (assets/corpora/poetry.txt.gz) -----------------------------------

# characters that exist only in traditional writing (their simplified forms are 们 东 国 无 风 时
# 长 来 为 见 与 万 门 书 乱 归 马 鸟 龙 说); 於 is not in the list: the simplified standard keeps it
# in names (於陵, 於菟), and OpenCC does too
TRADITIONAL_ONLY = "們東國無風時長來為見與萬門書亂歸馬鳥龍說"


def test_poetry_corpus_size_form_and_simplified_only():
    from lmviz.data import load_corpus
    from lmviz.poetry import load_poetry, poetry_stats

    text = load_corpus("poetry")
    poems = text.splitlines()
    st = poetry_stats()
    assert 30_000 <= len(poems) == st["n_poems"] <= 40_000
    assert 1_400_000 <= len(text) == st["chars"] <= 1_800_000
    assert (ROOT / "assets" / "corpora" / "poetry.txt.gz").stat().st_size < 3_000_000
    found = {c for c in TRADITIONAL_ONLY if c in text}
    assert not found, f"traditional characters in the corpus: {''.join(sorted(found))}"
    assert "MIT" in st["licence"] and "chinese-poetry@2.0.1" in st["source"]
    assert len(set(poems)) == len(poems)                          # de-duplicated
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_corpora as mc

    assert all(mc.regular_form(p) for p in poems)                 # every poem is 4/8 lines of 5/7
    lengths = {len(l) for p in poems[:2000] for l in re.split("[，。？！；]", p)[:-1]}
    assert lengths == {5, 7}
    c = load_poetry()
    assert len(c.heldout) == st["n_heldout"] and len(c.train) + len(c.heldout) == len(poems)


def test_poetry_split_is_by_whole_poem():
    from lmviz.poetry import load_poetry

    c = load_poetry()
    strip = str.maketrans("", "", "，。？！；")
    train = {p.translate(strip) for p in c.train}
    assert not any(p.translate(strip) in train for p in c.heldout)    # no held-out poem in train
    assert c.train_text.count("\n") == len(c.train) and c.heldout_text.endswith("\n")
    # the held-out poems are spread over the whole source, not its tail: the file order is a
    # seeded shuffle, so the held-out share of 七言 poems is close to the training share
    seven = lambda ps: sum(len(p.split("，")[0]) == 7 for p in ps) / len(ps)  # noqa: E731
    assert abs(seven(c.heldout) - seven(c.train)) < 0.05


def test_make_corpora_poetry_helpers():
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_corpora as mc

    assert mc.regular_form("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")
    assert not mc.regular_form("白日依山尽，黄河入海流。")                      # two lines
    assert not mc.regular_form("白日依山尽，黄河入海流。欲穷千里目，更上一层楼上。")  # 5, 5, 5, 6
    assert not mc.regular_form("白日依山尽，黄河入海流。欲穷千里目，更上一层□。")    # a gap
    assert mc.coverage_vocab("aaab", 0.75) == (["a"], 0.75)
