"""One colour per concept, used by every figure builder (Okabe-Ito palette: colour-blind safe).

A query is always blue, a key orange, a value green, the chosen token vermillion and masked
cells grey, on every page, so a student who learned the colours once can read every figure.
"""
from __future__ import annotations

import plotly.graph_objects as go

COLORS: dict[str, str] = {
    "query": "#0072B2",     # blue
    "key": "#E69F00",       # orange
    "value": "#009E73",     # bluish green
    "chosen": "#D55E00",    # vermillion: the picked token / the winner
    "masked": "#BBBBBB",    # grey: masked or discarded
    "token": "#56B4E9",     # sky blue: tokens, inputs
    "positive": "#009E73",  # good / kept
    "negative": "#CC79A7",  # reddish purple: bad / removed
    "neutral": "#999999",   # grey
    "accent": "#CC79A7",    # highlights that are not a winner
    "train": "#0072B2",     # training curve
    "val": "#D55E00",       # validation curve
}

# Alternating colours for token chips (tokens next to each other must differ).
TOKEN_CYCLE: tuple[str, ...] = ("#CFE8F7", "#FBE3C0", "#CDEBDD", "#F4D6E7", "#E6E6E6", "#F7F0B6")

HEATMAP = "Viridis"   # sequential, perceptually uniform, colour-blind safe
DIVERGING = "RdBu"    # for signed values (reverse so that positive is blue)
FONT = "Noto Sans, Noto Sans CJK SC, Source Han Sans SC, sans-serif"


_AXIS = dict(gridcolor="#E5ECF6", linecolor="#C8D4E3", zerolinecolor="#C8D4E3", ticks="",
             automargin=True, title=dict(standoff=12))
# A small template with the plotly_white look. Naming "plotly_white" makes plotly deep-copy its
# large template on every figure (~100 ms each here); this one costs ~2 ms.
TEMPLATE = go.layout.Template(layout=dict(
    paper_bgcolor="white", plot_bgcolor="white", colorway=list(COLORS[k] for k in (
        "query", "key", "value", "chosen", "accent", "token", "neutral")),
    xaxis=_AXIS, yaxis=_AXIS, hoverlabel=dict(font=dict(family=FONT)),
    font=dict(family=FONT, size=14, color="#2a3f5f")))


def layout(*, height: int | None = 360, title: str | None = None, **extra) -> dict:
    """The common lmviz layout as one dict (pass it to ``go.Figure(layout=...)`` or
    ``update_layout``: each update validates the whole layout again, so one is cheaper).

    With a title, the title sits at the very top and a horizontal legend just under it, above
    the plot, so the two never overlap.
    """
    lay = dict(
        template=TEMPLATE,
        font=dict(family=FONT, size=14),
        margin=dict(l=10, r=10, t=90 if title else 20, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
    )
    if height is not None:
        lay["height"] = height
    if title:
        lay["title"] = dict(text=title, x=0, xanchor="left", y=0.98, yanchor="top", yref="container")
    lay.update(extra)
    return lay


def apply(fig: go.Figure, *, height: int | None = 360, title: str | None = None, **extra) -> go.Figure:
    """Give ``fig`` the common lmviz look (in place, one layout update) and return it."""
    fig.update_layout(**layout(height=height, title=title, **extra))
    return fig
