import doctest
import json

import pytest

import lmviz.tokenizer as TK
from lmviz.tokenizer import CharTokenizer, UnknownCharacters, WordTokenizer, toy_tokenizer, tokenizer_from_dict


def test_doctests():
    assert doctest.testmod(TK).failed == 0


def test_char_vocab_is_sorted_unique_chars_only():
    tok = CharTokenizer("banana!")
    assert tok.chars == ["!", "a", "b", "n"]
    assert tok.vocab_size == 4
    assert tok.token(1) == "a"


def test_chinese_round_trip_one_token_per_character():
    text = "我喜欢学习数学。Attention 很有用!"
    tok = CharTokenizer(text)
    ids = tok.encode("我喜欢数学")
    assert len(ids) == 5                      # each Chinese character is one token
    assert tok.decode(ids) == "我喜欢数学"
    assert tok.decode(tok.encode(text)) == text


def test_unknown_characters():
    tok = CharTokenizer("abc")
    with pytest.raises(UnknownCharacters) as e:
        tok.encode("abxcyx")
    assert e.value.unknown == ["x", "y"]
    assert isinstance(e.value, ValueError)
    assert tok.encode_lossy("abxcyx") == ([0, 1, 2], ["x", "y"])


def test_toy_vocabularies_w5():
    en = toy_tokenizer("en")
    ids = en.encode("<BOS> I love robot s <EOS>")
    assert ids == [0, 1, 2, 3, 4, 5]
    # teacher forcing: inputs and labels shifted by one give 5 pairs
    assert list(zip(ids[:-1], ids[1:])) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    zh = toy_tokenizer("zh")
    zids = zh.encode("<开始> 我 喜欢 学习 <结束>")
    assert len(list(zip(zids[:-1], zids[1:]))) == 4
    assert zh.decode(zh.encode("我喜欢学习数学")) == "我喜欢学习数学"


def test_word_tokenizer_unknown_and_validation():
    tok = WordTokenizer(["a", "ab", "c"])
    assert tok.encode("abc ab a") == [1, 2, 1, 0]     # longest match first
    assert tok.encode_lossy("a zz c q") == ([0, 2], ["zz", "q"])
    with pytest.raises(UnknownCharacters):
        tok.encode("d")
    with pytest.raises(ValueError):
        WordTokenizer(["a", "a"])
    with pytest.raises(ValueError):
        WordTokenizer(["a b"])


@pytest.mark.parametrize("tok", [CharTokenizer("你好 world"), toy_tokenizer("zh"), toy_tokenizer("en")])
def test_dict_round_trip_through_json(tok):
    back = tokenizer_from_dict(json.loads(json.dumps(tok.to_dict(), ensure_ascii=False)))
    assert type(back) is type(tok)
    assert back.to_dict() == tok.to_dict()
    assert [back.token(i) for i in range(back.vocab_size)] == [tok.token(i) for i in range(tok.vocab_size)]


@pytest.mark.parametrize("bad", [None, {}, {"type": "char"}, {"type": "char", "chars": ["ab"]},
                                 {"type": "char", "chars": ["a", "a"]}, {"type": "bpe"}, {"type": "word", "words": 3}])
def test_bad_dicts_raise_value_error(bad):
    with pytest.raises(ValueError):
        tokenizer_from_dict(bad)
