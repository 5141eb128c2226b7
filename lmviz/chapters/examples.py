"""The chapters' default examples, by page language, in one torch-free place.

The chapters draw with them, their questions (``lmviz.chapters.questions``) ask about them and the home
page's guided tour describes them; the home page must paint without importing torch, so they
live here rather than in the torch modules that use them.
"""
from __future__ import annotations

# autoregression: the notes' toy sentences (space-separated toy tokens)
TOY_SENTENCE = {"en": "<BOS> I love robot s <EOS>", "zh": "<开始> 我 喜欢 学习 <结束>"}

# training: what the chapter selects first, (corpus, preset)
DEFAULT_SETUP: dict[str, tuple[str, str]] = {"en": ("english", "tiny"), "zh": ("poetry", "poetry")}

# transformer block: (sentence a, sentence b, word), the same word at the same position after
# two different left contexts
CONTEXTS = {
    "en": ("I ate a red apple", "I own a new apple", "apple"),
    "zh": ("我吃了一个苹果", "我买了一部苹果", "苹果"),
}


def teacher_forcing_pairs(lang: str) -> int:
    """How many (input -> label) pairs teacher forcing makes of the toy sentence: one per token
    after the first.

    >>> teacher_forcing_pairs("en"), teacher_forcing_pairs("zh")
    (5, 4)
    """
    return len(TOY_SENTENCE.get(lang, TOY_SENTENCE["en"]).split()) - 1


# transformer block, the logit lens: a prompt whose next token is a fact the model must recall
# (no trailing space: a real tokenizer carries the space in the next token, " Paris")
LENS_PROMPT = {"en": "The capital of France is", "zh": "床前明月光，疑是地上"}

# beyond, the chat template: one question asked with and without the instruct model's template
CHAT_QUESTION = {"en": "What is the capital of France?", "zh": "法国的首都是哪里？"}


def model_languages(meta: dict | None) -> tuple[str, ...] | None:
    """The languages a model's own records say it learned (ISO codes), None when they do not say:
    a GGUF file's ``general.languages`` (``text_languages``), the shipped model's per-language
    records (``languages``).

    >>> model_languages({"text_languages": ["en"]}), model_languages({"languages": {"en": {}, "zh": {}}})
    (('en',), ('en', 'zh'))
    >>> model_languages({"family": "llama"}) is None
    True
    """
    meta = meta or {}
    for key in ("text_languages", "languages"):
        v = meta.get(key)
        if isinstance(v, (list, tuple, dict)) and v and all(isinstance(x, str) for x in v):
            return tuple(str(x) for x in v)
    return None


def default_for(table: dict[str, str], lang: str, meta: dict | None) -> tuple[str, str]:
    """(the language of the default, the default) of ``table`` for a page in ``lang``: the page's
    own, unless the model's records list the languages it learned and ``lang`` is not among them
    (then English, when it learned English).

    >>> default_for(LENS_PROMPT, "zh", {"text_languages": ["en"]})
    ('en', 'The capital of France is')
    >>> default_for(LENS_PROMPT, "zh", {"languages": {"en": {}, "zh": {}}})[0], default_for(LENS_PROMPT, "zh", {})[0]
    ('zh', 'zh')
    """
    known = model_languages(meta)
    if known is not None and lang not in known and "en" in known:
        return "en", table["en"]
    return (lang, table[lang]) if lang in table else ("en", table["en"])

# beyond, the prompt conditions the model: (question, prefix, answer) in order of preference; the
# page shows the first whose prefix moves the current model's answer (beyond_retrieval.choose_condition).
# The second of each language is one a small model trained on other text can still follow: the
# prefix holds the line the question begins, and copying from the context is what it learns first.
CONDITIONS = {
    "en": (("The capital of ", "Paris is the capital of France. ", "France"),
           ("Return ", "Return True if the file exists. Return ", "True")),
    "zh": (("中国的首都是", "北京是中国的首都。", "北京"),
           ("举头望明", "举头望明月，低头思故乡。", "月")),
}
