"""Home: the whole computation order on one picture, each stage linking to its chapter; a
guided 45-minute tour; the chapter list."""
from __future__ import annotations

import streamlit as st

from lmviz.chapters import examples
from ui import render
from ui.chapters import by_slug, registered
from ui.i18n import lang, t
from viz.pipeline import Stage, pipeline_svg
from viz.theme import TOKEN_CYCLE

render.page_header("home.title", "home.intro")

STAGES = [  # (label key, what flows out of the stage, chapter slug, colour)
    ("home.stage.text", t("home.ex_text"), "tokenization", TOKEN_CYCLE[4]),
    ("home.stage.tokens", t("home.ex_tokens"), "tokenization", TOKEN_CYCLE[0]),
    ("home.stage.ids", "[n]", "tokenization", TOKEN_CYCLE[0]),
    ("home.stage.embed", "[n, d]", "embedding", TOKEN_CYCLE[1]),
    ("home.stage.blocks", "[n, d] × L", "attention", TOKEN_CYCLE[2]),
    ("home.stage.hidden", "[n, d]", "transformer-block", TOKEN_CYCLE[2]),
    ("home.stage.logits", "[n, |V|]", "loss-and-gradients", TOKEN_CYCLE[3]),
    ("home.stage.softmax", "[n, |V|], Σ=1", "generation", TOKEN_CYCLE[3]),
    ("home.stage.loss", t("home.ex_out"), "training", TOKEN_CYCLE[5]),
]

# The suggested talk: (chapter slug, minutes). The minutes add up to the tour's length.
TOUR = [("", 3), ("tokenization", 5), ("embedding", 4), ("autoregression", 4), ("attention", 7),
        ("transformer-block", 3), ("loss-and-gradients", 4), ("training", 5), ("generation", 5),
        ("kv-cache", 3), ("cost", 1), ("beyond", 1), ("post-training", 2)]


def _link(slug: str, label: str, icon: str = ":material/arrow_forward:") -> None:
    if slug in {c.slug for c in registered()}:
        st.page_link(by_slug(slug).file, label=label, icon=icon)
    else:
        render.caption(f"{label} — {t('home.coming')}")


def sec_pipeline() -> None:
    render.svg(pipeline_svg([Stage(t(k), shape, slug, color) for k, shape, slug, color in STAGES],
                            t("home.loop")), key="pipeline")
    render.md(t("home.links"))
    cols = st.columns(5)
    for i, (key, _, slug, _) in enumerate(STAGES):
        with cols[i % len(cols)]:
            _link(slug, f"{i + 1}. {t(key)}")


def _tour_args(slug: str) -> dict:
    """The numbers and names a tour line states, read from the chapters' own defaults in the
    current language (lmviz.chapters.examples), never typed into the sentence."""
    code = lang()
    if slug == "training":
        return {"preset": t(f"train.preset_{examples.DEFAULT_SETUP.get(code, examples.DEFAULT_SETUP['en'])[1]}")}
    if slug == "autoregression":
        return {"n": examples.teacher_forcing_pairs(code)}
    if slug == "transformer-block":
        return {"word": examples.CONTEXTS.get(code, examples.CONTEXTS["en"])[2]}
    return {}


def sec_tour() -> None:
    total = sum(m for _, m in TOUR)
    render.md(t("home.tour_intro", minutes=total))
    start = 0
    for slug, minutes in TOUR:
        c1, c2 = st.columns([1, 3])
        with c1:
            _link(slug, f"{start}–{start + minutes}′ · {t(by_slug(slug).title_key)}")
        c2.markdown(t(f"home.tour.{slug or 'home'}", **_tour_args(slug)))
        start += minutes


def sec_chapters() -> None:
    for c in registered()[1:]:
        st.page_link(c.file, label=t(c.title_key), icon=c.icon)
        render.caption(t(c.title_key.replace(".nav", ".summary")))


render.run_sections([("home.sec_pipeline", sec_pipeline), ("home.sec_tour", sec_tour),
                     ("home.chapters", sec_chapters)])
