"""What a chapter may say about the current model, read from the model's own records.

A sentence such as "this model reads characters", "it was trained in this session" or "it was
trained on contexts of 64 tokens" is true of the shipped model and false of SmolLM2. Every page
that describes the model takes an :class:`AboutModel` (:func:`about`) and picks its words from it:
where it comes from (``source``: shipped, trained here, pretrained elsewhere), what one token is
(``reads``), the languages its records say it learned, whether it is an instruct model (a chat
template), its position scheme, the context it was trained on and the one lmviz runs it on, its
size. Nothing is assumed per model class.

What a page looks up in the model's tokenizer follows the tokenizer: a word is found with and
without the space a byte-level tokenizer glues to its front (:func:`word_ids`), an expected answer
is read as the model would write it after the prompt (:func:`answer_ids`), and a default prompt
drops its trailing space where the next word carries its own (:func:`prompt_for`).

Pure Python; no torch, no streamlit (a page imports it at the top).
"""
from __future__ import annotations

from dataclasses import dataclass

from lmviz.chapters.examples import model_languages

SOURCES = ("default", "session", "pretrained")
READS = ("char", "word", "bpe", "bytes")   # one token is: a character | a word | a BPE piece of characters | bytes


def tokenizer_kind(tok) -> str:
    """char | word | bpe (character level, <unk> at id 0) | bpe_byte (byte level: GPT-2, SmolLM2).

    >>> from types import SimpleNamespace as N
    >>> tokenizer_kind(N(kind="char")), tokenizer_kind(N(kind="hf", level="byte")), tokenizer_kind(N(bpe=N(level="char")))
    ('char', 'bpe_byte', 'bpe')
    """
    bpe = getattr(tok, "bpe", tok)              # TrainedBPE wraps an lmviz.bpe.BPETokenizer
    level = getattr(bpe, "level", None)
    if level is not None:
        return "bpe_byte" if level == "byte" else "bpe"
    return getattr(tok, "kind", "char")


@dataclass(frozen=True)
class AboutModel:
    source: str                        # "default" (shipped), "session" (trained or loaded here), "pretrained"
    name: str                          # a pretrained model's own name ("" for lmviz's own models)
    family: str                        # a pretrained model's family name ("Llama", "GPT-2"; "" for lmviz's GPT)
    reads: str                         # what one token is: one of READS
    languages: tuple[str, ...] | None  # the languages its records say it learned (ISO codes); None: they do not say
    instruct: bool                     # it carries a chat template: fine-tuned to answer, not only pre-trained
    pos: str                           # its position scheme: "learned" | "rope" | "sinusoidal" | "none"
    context: int                       # positions lmviz runs it on (its block size here)
    trained_context: int               # positions it was trained on (a pretrained config's; else = context)
    params: int                        # its parameters
    vocab: int                         # its vocabulary size

    @property
    def pretrained(self) -> bool:
        return self.source == "pretrained"

    @property
    def unit(self) -> str:
        """What its sentences count: "char" when one token is one character, else "token"."""
        return "char" if self.reads == "char" else "token"

    def knows(self, lang: str) -> bool:
        """Do its records say it learned ``lang`` (True when they do not say)?"""
        return self.languages is None or lang in self.languages


def about(source: str, meta: dict | None, cfg, tokenizer, params: int | None = None) -> AboutModel:
    """The facts a page may state about a model: ``source`` as ui.session.Bundle's, ``meta`` its
    records, ``cfg`` its GPTConfig, ``tokenizer`` its tokenizer, ``params`` its parameter count
    (meta's ``params`` when not given).

    >>> from types import SimpleNamespace as N
    >>> cfg = N(pos="rope", block_size=2048, vocab_size=49152)
    >>> a = about("pretrained", {"name": "SmolLM2", "family_name": "Llama", "max_positions": 8192,
    ...       "text_languages": ("en",), "chat_template": "{{ x }}", "params": 134515008}, cfg, N(kind="hf", level="byte"))
    >>> a.reads, a.unit, a.instruct, a.trained_context, a.knows("zh"), a.knows("en")
    ('bytes', 'token', True, 8192, False, True)
    >>> about("default", {}, N(pos="learned", block_size=64, vocab_size=10), N(kind="char"), 5).unit
    'char'
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    meta = meta or {}
    kind = tokenizer_kind(tokenizer)
    reads = {"bpe_byte": "bytes", "bpe": "bpe", "word": "word"}.get(kind, "char")
    pre = source == "pretrained"
    ctx = int(getattr(cfg, "block_size", 0) or 0)
    own = meta.get("max_positions") if pre else None
    n = params if params is not None else meta.get("params", 0)
    return AboutModel(source, str(meta.get("name", "")) if pre else "", str(meta.get("family_name", "")) if pre else "",
                      reads, model_languages(meta), bool(meta.get("chat_template")), str(getattr(cfg, "pos", "learned")),
                      ctx, int(own) if isinstance(own, int) and own > 0 else ctx, int(n or 0),
                      int(getattr(cfg, "vocab_size", 0) or 0))


def glues_space(tok) -> bool:
    """Does ``tok`` write the space before a word into the word's own token (GPT-2's and SmolLM2's
    " cat"), rather than as a token of its own (a character model's "␣")? Read from the tokenizer.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> glues_space(CharTokenizer("the cat"))
    False
    """
    ids = tok.encode_lossy("the cat sat")[0]
    return any(len(s) > 1 and s[0] == " " and not s[1].isspace() for s in (tok.token(int(i)) for i in ids))


def prompt_for(tok, text: str) -> str:
    """A default prompt as this tokenizer should read it: without its trailing space when the
    tokenizer glues a space to the next word (the model writes " Paris" itself; a prompt ending
    in a space asks it for a word that starts without one, which its training text seldom had).

    >>> from lmviz.tokenizer import CharTokenizer
    >>> prompt_for(CharTokenizer("The capital"), "The capital ")
    'The capital '
    """
    return text.rstrip() if glues_space(tok) else text


def answer_ids(tok, prompt: str, answer: str) -> list[int]:
    """The ids of ``answer`` as the model would write it right after ``prompt``: behind a space when
    an English prompt does not end in one (a byte-level tokenizer's " Paris", a character model's
    "␣" then "P"; none after Chinese text, which has no spaces), read from encoding the two
    together. [] when the tokenizer cannot read the answer.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> tk = CharTokenizer("The capital is Paris")
    >>> [tk.token(i) for i in answer_ids(tk, "The capital is ", "Paris")][:2]
    ['P', 'a']
    >>> tk = CharTokenizer("中国的首都是北京")
    >>> [tk.token(i) for i in answer_ids(tk, "中国的首都是", "北京")]
    ['北', '京']
    """
    a = answer.strip()
    if not a:
        return []
    # a space between two words of a script written with spaces; none inside Chinese text
    sep = " " if prompt and not prompt[-1].isspace() and prompt[-1].isascii() and a[0].isascii() and a[0].isalnum() \
        else ""
    p = tok.encode_lossy(prompt)[0]
    full = tok.encode_lossy(prompt + sep + a)[0]
    if list(full[:len(p)]) == list(p) and len(full) > len(p):
        return [int(i) for i in full[len(p):]]
    return [int(i) for i in tok.encode_lossy(sep + a)[0]]


def word_ids(tok, ids, word: str, start: int = 0, spaced: bool | None = None) -> list[int]:
    """The ids of ``word`` as it stands in ``ids`` (at or after ``start``): the word alone, or, when
    that does not occur, with the leading space a byte-level tokenizer folds into a word's piece
    (" apple", not "apple"). ``spaced`` forces one form. [] when the tokenizer cannot read the word.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> tk = CharTokenizer("I ate an apple")
    >>> word_ids(tk, tk.encode("I ate an apple"), "apple") == tk.encode("apple")
    True
    """
    w = word.strip()
    forms = []
    for space in ((False, True) if spaced is None else (spaced,)):
        f, unknown = tok.encode_lossy((" " if space else "") + w) if w else ([], [])
        forms.append([int(i) for i in f] if f and not unknown else [])
    for f in forms:
        if f and find_span(ids, f, start) is not None:
            return f
    return forms[0]


def find_span(ids, word_ids, start: int = 0) -> tuple[int, int] | None:
    """[start, stop) of the first occurrence of ``word_ids`` in ``ids`` at or after ``start``.

    >>> find_span([5, 1, 2, 3, 1, 2], [1, 2], start=2)
    (4, 6)
    """
    n = len(word_ids)
    if n == 0:
        return None
    for i in range(start, len(ids) - n + 1):
        if list(ids[i:i + n]) == list(word_ids):
            return i, i + n
    return None
