"""The current model in the page's words: the one way a page names the model it draws and says
what it is, from ``lmviz.chapters.about_model.about`` (the model's own records: where it comes
from, what one token is, the languages it learned, its size).

- ``name(b)``: the model as a sentence names it (a pretrained model's own name, else "the shipped
  model" / "the model trained in this session"), escaped;
- ``by(b)``: the caption under a picture drawn by the model ("Model: SmolLM2-135M-Instruct, a Llama
  model with 134,515,008 parameters, pretrained elsewhere on English text …");
- ``reads(b)``: what one token of it is, a phrase that follows its name ("reads one character per
  token" / "reads byte-level BPE tokens: …");
- ``facts(b)``: the AboutModel itself, for a page that picks a sentence by ``unit`` or ``pos``.
"""
from __future__ import annotations

from lmviz.chapters.about_model import AboutModel, about
from ui.i18n import lang, language_names, t


def facts(b) -> AboutModel:
    """What the records of bundle ``b`` (ui.session.Bundle) say about its model."""
    n = b.model.num_params() if hasattr(b.model, "num_params") else None
    return about(b.source, b.meta, b.model.cfg, b.tokenizer, n)


def name(b, a: AboutModel | None = None, *, start: bool = False) -> str:
    """The model as a sentence names it: its own name when pretrained, else the shipped model or
    the one trained in this session (HTML-escaped); ``start``: at the start of a sentence or label
    ("The shipped model")."""
    from ui.render import escape

    a = a or facts(b)
    if a.pretrained and a.name:
        return escape(a.name)
    key = "model.name_session" if a.source == "session" else "model.name_default"
    return t(key + "_start" if start else key)


def reads(b, a: AboutModel | None = None) -> str:
    """What one token of the model is, a phrase after its name."""
    return t(f"model.reads.{(a or facts(b)).reads}")


def languages(a: AboutModel) -> str:
    """The languages its records say it learned, named in the page's language ("" when they do not say)."""
    return language_names(a.languages) if a.languages else ""


def by(b, a: AboutModel | None = None) -> str:
    """The caption under a picture the model drew: which model, where it comes from, and, when its
    records say so, the languages it learned (a Chinese page on an English model says so)."""
    a = a or facts(b)
    if not a.pretrained:
        return t("model.by_session" if a.source == "session" else "model.by_default")
    langs = t("model.by_langs", langs=languages(a)) if a.languages else ""
    return t("model.by_pretrained", name=name(b, a), family=a.family, params=f"{a.params:,}", langs=langs,
             instruct=t("model.by_instruct") if a.instruct else "",
             foreign=t("model.by_foreign", langs=languages(a), page=language_names([lang()]))
             if not a.knows(lang()) else "")
