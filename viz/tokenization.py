"""Figures for the Tokenization chapter: pair counts per merge step, token chips, and the
vocabulary-size trade-off. Pure builders: records in, Plotly figures (or escaped HTML) out."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from lmviz.numfmt import axis_ticks
from viz import theme
from viz.theme import COLORS, TOKEN_CYCLE

_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def visible(s: str) -> str:
    """Make whitespace visible in a token label.

    >>> visible("a b\\n")
    'a␣b↵'
    """
    return "".join(_VISIBLE.get(c, c) for c in s)


def segmentation(pieces) -> str:
    """Tokens of one word joined with a visible boundary mark (the · of the notes).

    >>> segmentation(["lo", "w"])
    'lo·w'
    """
    return "·".join(visible(p) for p in pieces)


def pair_counts_figure(pairs: list[str], counts: list[int], winner: str | None,
                       tied: set[str] | frozenset = frozenset(), *, x_title: str = "",
                       y_title: str = "", names: tuple[str, str, str] = ("winner", "tie", "other"),
                       title: str | None = None) -> go.Figure:
    """Bar chart of candidate pair counts, best first; the winner and tied pairs highlighted.

    pairs are already-formatted labels such as "l + o"; names label the three colours.
    """
    kind = ["w" if p == winner else ("t" if p in tied else "o") for p in pairs]
    fig = go.Figure()
    for k, name, colour in (("w", names[0], COLORS["chosen"]), ("t", names[1], COLORS["key"]),
                            ("o", names[2], COLORS["token"])):
        idx = [i for i, x in enumerate(kind) if x == k]
        fig.add_trace(go.Bar(
            x=[pairs[i] for i in idx], y=[counts[i] for i in idx], name=name,
            marker_color=colour, text=[counts[i] for i in idx], textposition="outside",
            hovertemplate="%{x}: %{y}<extra></extra>", showlegend=bool(idx)))
    fig.update_layout(barmode="overlay", bargap=0.25)
    fig.update_xaxes(title=x_title, categoryorder="array", categoryarray=pairs, type="category")
    fig.update_yaxes(title=y_title, rangemode="tozero")
    theme.apply(fig, height=360, title=title)
    # the legend sits on its own line under the title
    fig.update_layout(margin=dict(t=90 if title else 40), legend=dict(y=1.0, yanchor="bottom"))
    return fig


LABEL_GAP = 0.08   # a point's "V=..." label is shown when it stands this share of the x range past the last one shown


def tradeoff_figure(table_params: list[int], tokens_per_char: list[float], vocab_sizes: list[int],
                    *, x_title: str, y_title: str, hover: str = "V = %{customdata}",
                    title: str | None = None, lang: str = "en") -> go.Figure:
    """Tokens per character of held-out text against embedding-table size V x d (measured),
    the table sizes written in ``lang`` (lmviz.numfmt: 21 万 on a Chinese chart).

    Each point is labelled with its V where there is room: vocabularies of nearly the same size
    (a short text's merges run out) stand almost on one spot, and their labels were written over
    each other; a label goes only where the point is ``LABEL_GAP`` of the range past the last
    labelled one (every point tells its V on hover). The last label is written to its point's
    left, inside the chart.

    >>> f = tradeoff_figure([100, 200, 205, 400], [0.9, 0.7, 0.69, 0.5], [10, 20, 21, 40], x_title="", y_title="")
    >>> list(f.data[0].text), list(f.data[0].textposition)
    (['V=10', 'V=20', '', 'V=40'], ['top right', 'top right', 'top right', 'top left'])
    """
    x = [float(v) for v in table_params]
    gap = LABEL_GAP * ((max(x) - min(x)) if x else 0.0)
    text, last = [], None
    for xi, v in zip(x, vocab_sizes):
        shown = last is None or xi - last >= gap
        text.append(f"V={v}" if shown else "")
        last = xi if shown else last
    where = ["top right"] * len(x)
    if where:
        where[-1] = "top left"
    fig = go.Figure(go.Scatter(
        x=table_params, y=tokens_per_char, customdata=vocab_sizes, mode="lines+markers+text",
        text=text, textposition=where, cliponaxis=False,      # a label above the top point stays whole
        marker=dict(size=9, color=COLORS["query"]), line=dict(color=COLORS["query"]),
        hovertemplate=hover + "<br>%{x:,}<br>%{y:.3f}<extra></extra>"))
    fig.update_xaxes(title=x_title, **axis_ticks(min(x, default=0.0), max(x, default=1.0), lang))
    fig.update_yaxes(title=y_title, rangemode="tozero")
    theme.apply(fig, height=380, title=title)
    fig.update_layout(margin=dict(r=30))   # room for the last point's marker (its label is written to its left)
    return fig


def token_chips_html(tokens, *, id_word: str = "ID", bytes_word: str = "bytes",
                     unk_color: str = COLORS["negative"], marked=frozenset(), marked_at=frozenset()) -> str:
    """Coloured chips, one per token, ID below; hover (title) shows the ID and the bytes.

    tokens: records with .id, .text, .raw, .unk (lmviz.bpe.Token). All text is escaped. A token
    whose ID is in ``marked`` (a chat template's special tokens), or whose place is in
    ``marked_at`` (a template's characters around a question's own), is outlined and bold.

    >>> from types import SimpleNamespace as T
    >>> "&lt;b&gt;" in token_chips_html([T(id=3, text="<b>", raw=b"<b>", unk=False)])
    True
    """
    parts = []
    for k, tok in enumerate(tokens):
        bg = unk_color if tok.unk else TOKEN_CYCLE[k % len(TOKEN_CYCLE)]
        hexes = " ".join(f"{b:02X}" for b in tok.raw)
        tip = html.escape(f"{id_word} {tok.id} · {bytes_word}: {hexes}", quote=True)
        label = html.escape(visible(tok.text))
        mark = f"outline:2px solid {COLORS['chosen']};font-weight:700;" if tok.id in marked or k in marked_at else ""
        parts.append(
            f'<span title="{tip}" style="display:inline-block;margin:2px 1px;padding:1px 4px;{mark}'
            f'border-radius:4px;background:{bg};color:#111;font-family:monospace;'
            f'white-space:pre;text-align:center;line-height:1.2">{label}'
            f'<br><span style="font-size:0.7em;color:#444">{tok.id}</span></span>')
    return '<div style="line-height:2.4;overflow-wrap:anywhere">' + "".join(parts) + "</div>"


def id_chips_html(tok, ids, *, marked=frozenset(), marked_at=frozenset(), bytes_word: str = "bytes") -> str:
    """:func:`token_chips_html` of token ids of ``tok`` (its ``token(i)``; its ``raw(i)`` bytes
    where it has them, else the token's UTF-8): a chat template's tokens, a question's characters.

    >>> from lmviz.tokenizer import CharTokenizer
    >>> h = id_chips_html(CharTokenizer("问答"), [0, 1], marked={0}); h.count("outline"), "E9 97 AE" in h
    (1, True)
    """
    from types import SimpleNamespace

    raw = getattr(tok, "raw", None)
    return token_chips_html([SimpleNamespace(id=int(i), text=tok.token(int(i)),
                                             raw=raw(int(i)) if raw else tok.token(int(i)).encode("utf-8"), unk=False)
                             for i in ids], bytes_word=bytes_word, marked=marked, marked_at=marked_at)
