"""Home: the whole computation order on one picture, each stage linking to its chapter."""
from __future__ import annotations

import streamlit as st

from ui import render
from ui.chapters import by_slug, registered
from ui.i18n import t
from viz.pipeline import Stage, pipeline_figure
from viz.theme import COLORS, TOKEN_CYCLE

render.page_header("home.title", "home.intro")

STAGES = [  # (label key, shape, chapter slug, colour)
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
fig = pipeline_figure([Stage(t(k), shape, slug, color) for k, shape, slug, color in STAGES],
                      t("home.loop"))
render.plot(fig, key="pipeline", filename="pipeline")

# Each stage links to the chapter that explains it.
registered_slugs = {c.slug for c in registered()}
cols = st.columns(len(STAGES) // 2 + 1)
for i, (key, _, slug, _) in enumerate(STAGES):
    with cols[i % len(cols)]:
        if slug in registered_slugs:
            st.page_link(by_slug(slug).file, label=f"{i + 1}. {t(key)}", icon=":material/arrow_forward:")
        else:
            st.caption(f"{i + 1}. {t(key)} — {t('home.coming')}")

render.section("home.chapters")
for c in registered()[1:]:
    st.page_link(c.file, label=t(c.title_key), icon=c.icon)
    st.caption(t(c.title_key.replace(".nav", ".summary")))
