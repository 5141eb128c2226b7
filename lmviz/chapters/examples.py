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
