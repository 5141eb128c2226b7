"""lmviz.bpe: BPE 'low lower' example (merges and the tie), embedding-table example (IDs index a table), round-trips, the HF oracle,
early stopping, and the incremental trainer against a recount-everything reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lmviz.bpe import (UNK, byte_label, pre_split, split_heldout, text_from_bytes, train_bpe,
                       vocab_tradeoff,
                       _merge)

MIXED = ("The quick brown fox jumps over the lazy dog. 我喜欢学习，我喜欢数学。"
         "Ça va? naïve café 😀🚀 <script>alert(1)</script>\n\tdef f(x): return x**2\n") * 3


# -- BPE 'low lower' example -----------------------------------------------------------------------------------------
def test_w11_merges_and_tie():
    tok = train_bpe("low low lower", 2)
    assert tok.merges == [("l", "o"), ("lo", "w")]
    first, second = tok.history
    # (l, o) and (o, w) both occur 3 times; the tie rule (smaller left-token ID) picks (l, o)
    assert first.count == 3 and first.tied == (("l", "o"), ("o", "w"))
    assert first.reason == "tie_smaller_ids"
    assert {c.pair: c.count for c in first.candidates} == {
        ("l", "o"): 3, ("o", "w"): 3, ("w", "e"): 1, ("e", "r"): 1}
    assert second.pair == ("lo", "w") and second.count == 3 and second.reason == "most_frequent"
    assert second.token == "low"


def test_w11_segmentation_table():
    tok = train_bpe("low low lower", 2)
    seg = lambda words: {w: s for w, _, s in words}  # noqa: E731
    assert seg(tok.initial_words)["lower"] == ("l", "o", "w", "e", "r")
    assert seg(tok.history[0].words) == {"low": ("lo", "w"), " ": (" ",),
                                         "lower": ("lo", "w", "e", "r")}
    assert seg(tok.history[1].words) == {"low": ("low",), " ": (" ",),
                                         "lower": ("low", "e", "r")}
    assert {w: c for w, c, _ in tok.initial_words} == {"low": 2, " ": 2, "lower": 1}


def test_no_merge_crosses_words():
    tok = train_bpe("ab ab ab", 10, split_words=True, min_count=1)
    assert all(" " not in a + b or (a + b).strip() == "" for a, b in tok.merges)
    joined = train_bpe("ab ab ab", 10, split_words=False, min_count=1)
    assert any(" " in a + b and (a + b).strip() for a, b in joined.merges)


# -- embedding-table example -----------------------------------------------------------------------------------------
def test_w12_ids_are_row_indices():
    tok = train_bpe("low low lower", 2)
    ids = tok.encode("lower low")
    d = 4
    table = np.arange(tok.vocab_size * d).reshape(tok.vocab_size, d)  # [V, d]
    rows = table[ids]                                                  # [n, d]
    assert rows.shape == (len(ids), d)
    assert all((rows[k] == table[i]).all() for k, i in enumerate(ids))
    # the notes' table: 50,000 tokens x 768 dims
    (p,) = vocab_tradeoff(train_bpe("", 0), "x", [0], d=768)
    assert p.vocab_size * 768 == p.table_params
    assert 50_000 * 768 == 38_400_000


# -- encoding ------------------------------------------------------------------------------------
def test_encode_applies_merges_by_rank_not_recount():
    tok = train_bpe("low low lower", 2)
    # "owowow" would make (o, w) the most frequent pair if recounted; by rank there is no (l, o)
    # here, so the only applicable merge is none -- and "slow" gets "low" via l,o then lo,w
    assert [tok.label(i) for i in tok.encode("owow")] == ["o", "w", "o", "w"]
    assert [tok.label(i) for i in tok.encode("lowlow")] == ["low", "low"]


def test_encode_reproduces_training_segmentation():
    text = "the cat sat on the mat; the rat ate the hat " * 4
    tok = train_bpe(text, 12, history_words=100)
    for word, _, seg in tok.history[-1].words:
        assert tuple(tok.label(i) for i in tok.encode(word)) == seg


def test_char_level_unknown_char():
    tok = train_bpe("low low lower", 2)
    toks = tok.tokens("lox")
    assert [t.text for t in toks] == ["lo", UNK]
    assert toks[-1].unk and tok.decode(tok.encode("lox")) == "lo\ufffd"


def test_byte_level_honest_labels():
    tok = train_bpe("我喜欢学习，我喜欢数学。", 3, level="byte")
    labels = [t.text for t in tok.tokens("学😀")]
    assert "\ufffd" not in "".join(labels)
    assert labels[0] == "<E5>"  # 学 = E5 AD A6: three byte tokens, none a whole character
    assert "".join(labels).count("<") == len(labels)
    assert byte_label("学".encode()) == "学"


def test_tokens_offsets_and_bytes():
    tok = train_bpe(MIXED, 40, level="byte")
    toks = tok.tokens(MIXED)
    assert b"".join(t.raw for t in toks) == MIXED.encode("utf-8")
    assert [t.id for t in toks] == tok.encode(MIXED)
    assert all(0 <= t.start < len(MIXED) for t in toks)
    assert [t.start for t in toks] == sorted(t.start for t in toks)


# -- round trips ---------------------------------------------------------------------------------
BYTE_TOK = train_bpe(MIXED, 60, level="byte")


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_byte_level_round_trip_any_unicode(s):
    assert BYTE_TOK.decode(BYTE_TOK.encode(s)) == s


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60), st.integers(0, 30), st.booleans())
def test_byte_level_round_trip_trained_on_itself(s, n, split):
    tok = train_bpe(s, n, level="byte", split_words=split, min_count=1)
    assert tok.decode(tok.encode(s)) == s
    assert len(tok.merges) <= n


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60), st.integers(0, 30))
def test_char_level_round_trip_in_alphabet(s, n):
    tok = train_bpe(s, n, min_count=1)
    assert tok.decode(tok.encode(s)) == s


def test_byte_level_equals_char_level_on_ascii():
    text = "the cat sat on the mat, the rat ate the hat. " * 3
    assert train_bpe(text, 15, level="byte").merges == train_bpe(text, 15).merges


# -- the incremental trainer vs a reference that recounts everything -----------------------------
def naive_bpe(text: str, num_merges: int, min_count: int = 2,
              split_words: bool = True) -> list[tuple[str, str]]:
    """Recount every pair each step (slow, obviously correct). Same tie rule: smaller IDs."""
    alphabet = sorted(set(text))
    vocab = alphabet[:]
    words = [[alphabet.index(c) for c in w] for w in pre_split(text, split_words)]
    merges = []
    for _ in range(num_merges):
        counts: dict = {}
        for w in words:
            for p in zip(w, w[1:]):
                counts[p] = counts.get(p, 0) + 1
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        if counts[pair] < min_count:
            break
        vocab.append(vocab[pair[0]] + vocab[pair[1]])
        merges.append((vocab[pair[0]], vocab[pair[1]]))
        words = [_merge(w, pair, len(vocab) - 1) for w in words]
    return merges


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="abcab ,.\n", max_size=120), st.integers(0, 25), st.integers(1, 3),
       st.booleans())
def test_incremental_equals_recount(text, n, min_count, split):
    ours = train_bpe(text, n, min_count=min_count, split_words=split)
    assert ours.merges == naive_bpe(text, n, min_count, split)


# -- the HF tokenizers oracle --------------------------------------------------------------------
def hf_merges(text: str, num_merges: int) -> list[tuple[str, str]]:
    tokenizers = pytest.importorskip("tokenizers")
    from bench.bpe import hf_train

    assert tokenizers
    return hf_train(text, num_merges)


def test_oracle_no_ties():
    # counts chosen so no two pairs ever tie at the top: every merge is unambiguous
    text = "hug " * 10 + "pug " * 6 + "pun " * 12 + "bun " * 4 + "hugs " * 5
    ours = train_bpe(text, 7)
    assert len(ours.merges) == 7
    assert all(h.reason == "most_frequent" for h in ours.history)
    assert ours.merges == hf_merges(text, 7)


def test_oracle_on_bundled_english():
    import pathlib

    p = pathlib.Path(__file__).parent.parent / "assets" / "examples" / "english.txt"
    if not p.exists():
        pytest.skip("bundled example missing")
    text = p.read_text(encoding="utf-8")
    # ties are broken by the same rule as HF's (smaller IDs), so even tied steps agree
    assert train_bpe(text, 100).merges == hf_merges(text, 100)


# -- stopping and bad input ----------------------------------------------------------------------
def test_stops_early_and_says_why():
    tok = train_bpe("low low lower", 100)
    assert tok.merges == [("l", "o"), ("lo", "w")]
    assert tok.stopped_early and tok.stop_reason == "min_count" and tok.requested == 100
    tok = train_bpe("low low lower", 100, min_count=1)
    assert tok.stop_reason == "no_pairs"
    assert [tok.label(i) for i in tok.encode("lower")] == ["lower"]
    assert train_bpe("low low lower", 2).stop_reason == "done"


@pytest.mark.parametrize("text", ["", "   \n\t ", "a", "😀", "<script>alert('x')</script>"])
@pytest.mark.parametrize("level", ["char", "byte"])
def test_degenerate_corpora(text, level):
    tok = train_bpe(text, 50, level=level)
    assert tok.decode(tok.encode(text)) == text
    assert len(tok.merges) <= 50
    if len(text) <= 1 and level == "char" or text in ("", "a"):
        assert tok.merges == [] and tok.stop_reason == "no_pairs"


def test_emoji_byte_level_merges_bytes_of_one_character():
    tok = train_bpe("😀 😀 😀", 3, level="byte")
    assert tok.merges[-1] == ("<F0>", "<9F><98><80>") or tok.label(tok.encode("😀")[0]) == "😀"
    assert [tok.label(i) for i in tok.encode("😀")] == ["😀"]


def test_bad_arguments():
    with pytest.raises(ValueError):
        train_bpe("x", 1, level="word")
    with pytest.raises(ValueError):
        train_bpe("x", -1)


# -- vocabulary trade-off ------------------------------------------------------------------------
def test_vocab_tradeoff_is_measured():
    text = "the cat sat on the mat; the rat ate the hat. " * 20
    train, held = split_heldout(text, 0.2)
    assert train + held == text
    tok = train_bpe(train, 30)
    assert tok.stop_reason == "no_pairs" and len(tok.merges) == 10  # every word is one token
    pts = vocab_tradeoff(tok, held, [0, 5, 30], d=8)
    assert [p.merges for p in pts] == [0, 5, 10]  # asking for more than learned is clamped
    assert pts[0].tokens_per_char == 1.0  # no merges: one token per character
    assert pts[-1].tokens_per_char < pts[0].tokens_per_char
    assert all(p.table_params == p.vocab_size * 8 for p in pts)
    assert all(p.n_tokens == len(tok.truncated(p.merges).encode(held)) for p in pts)


def test_upload_checks():
    assert text_from_bytes("low 低".encode(), 100) == ("low 低", "ok")
    assert text_from_bytes(b"x" * 101, 100) == (None, "too_big")
    assert text_from_bytes(b"PK\x03\x04\x00\x00", 100) == (None, "binary")
    assert text_from_bytes("café".encode("latin-1"), 100) == (None, "utf8")


def test_heldout_split_near_80_percent_without_spaces():
    text = "我在图书馆学习。" * 50  # no spaces at all
    train, held = split_heldout(text, 0.2)
    assert train + held == text and len(held) == len(text) - int(len(text) * 0.8)
