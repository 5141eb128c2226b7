"""Special tokens, unknown characters and BPE word pieces (lmviz.chapters.tokenization)."""
import pytest

from lmviz.bpe import UNK, train_bpe
from lmviz.checkpoint import load_default
from lmviz.chapters.tokenization import (PAD_LABEL, encode_unknown, rare_vs_common, special_tokens,
    word_counts, word_pieces)
from lmviz.tokenizer import CharTokenizer, UnknownCharacters, toy_tokenizer
from lmviz.bpe import TrainedBPE
from lmviz.train import corpus_text


def test_char_tokenizer_reserves_nothing_and_refuses_unknown():
    tok = CharTokenizer("hello <BOS> world")
    s = special_tokens(tok)
    assert s.kind == "char" and s.reserved == () and s.missing == ("bos", "eos", "pad", "unk")
    assert s.unknown_policy == "error" and s.pad_label == PAD_LABEL == -1
    assert dict(s.marker_pieces)["bos"] == ("<", "B", "O", "S", ">")  # five ordinary tokens
    r = encode_unknown(tok, "hello 学!")
    assert r.ids is None and r.unknown == ("学", "!")
    with pytest.raises(UnknownCharacters) as e:
        tok.encode("hello 学!")
    assert r.error == str(e.value)
    assert r.lossy_ids == tuple(tok.encode("hello ")) and r.decoded == "hello "


def test_default_model_tokenizer():
    _, tok, _ = load_default()
    s = special_tokens(tok)
    assert s.vocab_size == tok.vocab_size
    r = encode_unknown(tok, "Paris ☃")
    assert r.unknown == ("☃",)
    if tok.unk is None:
        assert s.reserved == () and r.ids is None and r.decoded == "Paris "
    else:   # the shipped tokenizer names an unknown character: ☃ becomes its id
        assert [x.role for x in s.reserved] == ["unk"] and s.unknown_policy == "unk"
        assert r.ids[-1] == tok.stoi[tok.unk] and r.unk_positions == (6,) and r.decoded == "Paris " + tok.unk


def test_toy_vocabularies_hold_bos_and_eos():
    en, zh = special_tokens(toy_tokenizer("en")), special_tokens(toy_tokenizer("zh"))
    assert [(r.role, r.text, r.id) for r in en.reserved] == [("bos", "<BOS>", 0), ("eos", "<EOS>", 5)]
    assert [(r.role, r.text, r.id) for r in zh.reserved] == [("bos", "<开始>", 0), ("eos", "<结束>", 5)]
    assert en.id_of("pad") is None and en.unknown_policy == "error"


def test_char_bpe_maps_unknown_to_unk_id_zero():
    tok = TrainedBPE.train("low low lower lowest", 4)
    s = special_tokens(tok)
    assert [(r.role, r.text, r.id) for r in s.reserved] == [("unk", UNK, 0)] and s.unknown_policy == "unk"
    r = encode_unknown(tok, "low é")
    assert r.error is None and r.unknown == ("é",)
    assert r.ids[r.unk_positions[0]] == 0 and r.unk_positions == (len(r.ids) - 1,)
    assert r.pieces[-1] == UNK and r.decoded.endswith("\ufffd")


def test_byte_bpe_never_meets_an_unknown_character():
    tok = train_bpe("low low lower", 2, level="byte")
    s = special_tokens(tok)
    assert s.kind == "bpe_byte" and s.unknown_policy == "bytes" and s.reserved == ()
    r = encode_unknown(tok, "low 学")
    assert r.unknown == () and r.decoded == "low 学" and len(r.ids) == 2 + 3  # 'low', ' ', 3 bytes of 学


def test_rare_word_splits_into_more_pieces_than_a_common_word():
    text = corpus_text("english")
    tok = TrainedBPE.train(text, 200)
    r = rare_vs_common(tok, text)
    assert r.common.count > 100 and r.rare.count == 1
    assert len(r.rare.word) >= len(r.common.word)
    assert r.rare.n_pieces > r.common.n_pieces
    assert "".join(r.rare.pieces) == r.rare.word and "".join(r.common.pieces) == r.common.word
    counts = word_counts(text)
    assert word_pieces(tok, r.common.word, counts).count == counts[r.common.word]


def test_rare_vs_common_refuses_text_without_candidates():
    tok = TrainedBPE.train("ab ab ab", 1)
    with pytest.raises(ValueError):
        rare_vs_common(tok, "ab ab ab")


def test_doctests():
    import doctest

    from lmviz.chapters import tokenization as special_tokens
    assert doctest.testmod(special_tokens).failed == 0


def test_catalogue_strings_format_with_computed_values():
    from ui.i18n import translate

    text = corpus_text("english")
    tok = TrainedBPE.train(text, 200)
    r = rare_vs_common(tok, text)
    s = special_tokens(tok)
    u = encode_unknown(tok, "low é")
    for lang in ("en", "zh"):
        out = translate("tok.rare_body", lang, common=r.common.word, count=r.common.count,
                        n_common=r.common.n_pieces, rare=r.rare.word, n_rare=r.rare.n_pieces,
                        pieces=" · ".join(r.rare.pieces))
        assert r.rare.word in out and str(r.rare.n_pieces) in out
        translate("tok.sp_reserved", lang, n=len(s.reserved), v=s.vocab_size, tokens=", ".join(x.text for x in s.reserved))
        translate("tok.sp_unk_unk", lang, tok="<unk>", id=s.id_of("unk"), positions=", ".join(map(str, u.unk_positions)), decoded=u.decoded)
        translate("tok.sp_pad", lang, label=s.pad_label)
        for role in ("bos", "eos", "pad", "unk"):
            assert translate(f"tok.sp_role_{role}", lang) != f"tok.sp_role_{role}"


def test_char_tokenizer_with_a_named_unknown_token():
    """A CharTokenizer that names one character its unknown token (the shipped model's does)
    reserves it: unseen characters become that id and decode to it."""
    from lmviz.chapters.tokenization import encode_unknown, special_tokens
    from lmviz.tokenizer import CharTokenizer

    tok = CharTokenizer.from_chars(["a", "b", "□"], unk="□")
    s = special_tokens(tok)
    assert [(r.role, r.text, r.id) for r in s.reserved] == [("unk", "□", tok.stoi["□"])]
    assert s.unknown_policy == "unk"
    r = encode_unknown(tok, "a☃b")
    assert r.ids == (tok.stoi["a"], tok.stoi["□"], tok.stoi["b"]) and r.unk_positions == (1,)
    assert r.unknown == ("☃",) and r.decoded == "a□b"
