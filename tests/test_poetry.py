"""lmviz.poetry (form metric, poetry tokenizer, live-training text) and lmviz.baselines."""
import doctest
import math

import pytest
import torch

import lmviz.baselines as B
import lmviz.poetry as P
from lmviz.baselines import baselines, heldout_loss, uniform_baseline, unigram_baseline
from lmviz.poetry import form_share, load_poetry, poetry_stats, poetry_tokenizer, training_text, vocab_facts
from lmviz.tokenizer import CharTokenizer, UnknownCharacters, tokenizer_from_dict


def test_doctests():
    assert doctest.testmod(P).failed == 0
    assert doctest.testmod(B).failed == 0


# ---- form ------------------------------------------------------------------------------------

def test_form_share_hand_made():
    m = form_share("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")
    assert (m.n_lines, m.n_form, m.share, m.lengths) == (4, 4, 1.0, (5, 5, 5, 5))
    # a 6 and a 4 among 7s; the unfinished tail "春风" is not a line
    m = form_share("故人西辞黄鹤楼，烟花三月下扬州。孤帆远影碧空，尽天际流。春风")
    assert m.lengths == (7, 7, 6, 4) and m.n_form == 2 and m.share == 0.5
    # ？！； and line breaks end lines too; empty pieces (two marks in a row) are skipped
    m = form_share("谁言寸草心？报得三春晖！\n\n举头望明月；低头思故乡。")
    assert m.lengths == (5, 5, 5, 5) and m.share == 1.0
    m = form_share("春眠不觉晓\n处处闻啼鸟\n")            # lines closed by line breaks alone
    assert m.lengths == (5, 5)
    assert form_share("").n_lines == 0 and form_share("").share == 0.0
    assert form_share("一二三四五六，").share == 0.0              # 6 characters
    assert form_share("一二三四，", lengths=(4,)).share == 1.0


# ---- baselines -------------------------------------------------------------------------------

def test_baselines_hand_made():
    assert uniform_baseline(1) == 0.0 and math.isclose(uniform_baseline(8), math.log(8))
    # train counts a:2 b:1 c:0; add-one: p = (3/6, 2/6, 1/6); held-out "a c"
    b = unigram_baseline([0, 0, 1], [0, 2], vocab_size=3)
    assert math.isclose(b.unigram, -(math.log(3 / 6) + math.log(1 / 6)) / 2)
    assert math.isclose(b.unigram_train, -(2 * math.log(3 / 6) + math.log(2 / 6)) / 3)
    assert (b.n_train, b.n_heldout, b.vocab_size, b.uniform_ppl) == (3, 2, 3, 3.0)
    assert math.isclose(b.unigram_ppl, math.exp(b.unigram))
    # a uniform text: the unigram baseline equals the uniform one
    u = unigram_baseline(torch.arange(4).repeat(5), torch.arange(4), vocab_size=4)
    assert math.isclose(u.unigram, u.uniform)
    # from texts, through a tokenizer
    tok = CharTokenizer("abc")
    assert baselines(tok, "aab", "ac").to_dict() == unigram_baseline([0, 0, 1], [0, 2], 3).to_dict()
    with pytest.raises(ValueError):
        unigram_baseline([], [0], 3)
    with pytest.raises(ValueError):
        unigram_baseline([0, 5], [0], 3)
    with pytest.raises(ValueError):
        unigram_baseline([0], [0], 3, alpha=-1)


def test_heldout_loss_is_deterministic_and_matches_cross_entropy():
    from lmviz.model import GPT, GPTConfig

    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
    ids = torch.randint(0, 7, (13,), generator=torch.Generator().manual_seed(1))
    # 3 windows of 4 targets: ids[0:4]->ids[1:5], ids[4:8]->ids[5:9], ids[8:12]->ids[9:13]
    with torch.no_grad():
        per = torch.stack([torch.nn.functional.cross_entropy(m(ids[s:s + 4][None])[0][0], ids[s + 1:s + 5],
                                                             reduction="none") for s in (0, 4, 8)])  # [3,4]
    assert math.isclose(heldout_loss(m, ids), float(per.mean()), rel_tol=1e-5)
    assert heldout_loss(m, ids, batch_size=1) == pytest.approx(heldout_loss(m, ids), rel=1e-6)
    assert math.isclose(heldout_loss(m, ids, max_tokens=5), float(per[0].mean()), rel_tol=1e-5)
    with pytest.raises(ValueError):
        heldout_loss(m, ids[:4])


# ---- the poetry vocabulary and the live-training text -------------------------------------------

def test_poetry_tokenizer_covers_corpus_and_app_sentences():
    tok = poetry_tokenizer()
    st = poetry_stats()
    assert tok.unk == "□" and tok.vocab_size == st["vocab_size"] == len(st["vocab"])
    assert 3000 <= tok.vocab_size <= 5000
    c = load_poetry()
    ids = tok.encode(c.train_text)
    assert len(ids) == len(c.train_text)                           # one token per character
    share_unk = ids.count(tok.stoi["□"]) / len(ids)
    assert share_unk <= 0.005 + 1e-9 and math.isclose(share_unk, st["unk_share_train"])
    for s in ("我喜欢学习数学", "我吃了一个苹果", "我买了一部苹果", "苹果发布了新产品",
              "学生在图书馆里学习数学。", "The function returns a new list of the items."):
        assert tok.encode_lossy(s)[1] == [], s                      # the app's sentences read fully
    from lmviz.data import load_corpus

    assert tok.encode_lossy(load_corpus("english"))[1] == []
    # unknown characters become □ and survive a save/load of the tokenizer
    back = tokenizer_from_dict(tok.to_dict())
    assert back.unk == "□" and back.chars == tok.chars
    assert back.decode(back.encode("春䍦")) == "春□"
    with pytest.raises(UnknownCharacters):
        CharTokenizer("ab").encode("abc")                           # no unk: still strict
    with pytest.raises(ValueError):
        CharTokenizer.from_chars(["a"], unk="b")


def test_training_text_tail_is_exactly_the_heldout_poems():
    from lmviz.train import Trainer, make_config

    text, vf = training_text()
    c = load_poetry()
    tr = Trainer(text, make_config("poetry", val_frac=vf, max_steps=1), device="cpu", tokenizer=poetry_tokenizer(),
                 prompt=P.PROMPT)
    assert tr.val_ids.tolist() == poetry_tokenizer().encode(c.heldout_text)
    assert len(tr.train_ids) == len(c.train_text)


def test_vocab_reason_numbers_come_from_the_corpus():
    from ui.i18n import translate

    st = poetry_stats()
    for lang in ("en", "zh"):
        s = translate("train.vocab_reason", lang, **vocab_facts())
        assert f"{st['vocab_coverage_chars']:,}" in s and f"{st['vocab_size']:,}" in s
        assert f"{st['chars_to_unk']:,}" in s and "□" in s and "99.5%" in s
        # the sentence itself is readable by the shipped vocabulary's tokenizer, except quotes
        assert set(poetry_tokenizer().encode_lossy(s)[1]) <= set("“”")
