"""The home page's picture: the whole computation order of a GPT-style model on one figure."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from viz import theme


@dataclass(frozen=True)
class Stage:
    label: str   # translated stage name, e.g. "Tokens"
    shape: str   # what flows out of the stage, e.g. "[n]" or "[n, d]"
    slug: str    # chapter that explains it
    color: str   # fill colour


def pipeline_figure(stages: list[Stage], loop_label: str, *, per_row: int = 5) -> go.Figure:
    """Boxes joined by arrows, snaking over rows of ``per_row``, with the generation loop drawn
    from the last stage back to the first."""
    fig = go.Figure()
    w, h, gap_x, gap_y = 1.4, 0.62, 0.3, 0.75
    pos = []
    for i, _ in enumerate(stages):
        row, col = divmod(i, per_row)
        x = col * (w + gap_x)
        y = -row * (h + gap_y)
        pos.append((x, y))
    for (x, y), s in zip(pos, stages):
        fig.add_shape(type="rect", x0=x, y0=y, x1=x + w, y1=y + h, line=dict(color="#555", width=1.5),
                      fillcolor=s.color, layer="below")
        fig.add_annotation(x=x + w / 2, y=y + h * 0.64, text=f"<b>{s.label}</b>", showarrow=False,
                           font=dict(size=14, color="#1a1a1a"))
        fig.add_annotation(x=x + w / 2, y=y + h * 0.27, text=s.shape, showarrow=False,
                           font=dict(size=12, color="#333", family="monospace"))
    for i in range(len(stages) - 1):
        (x0, y0), (x1, y1) = pos[i], pos[i + 1]
        if y0 == y1:   # same row: arrow to the right
            fig.add_annotation(x=x1, y=y1 + h / 2, ax=x0 + w, ay=y0 + h / 2, xref="x", yref="y",
                               axref="x", ayref="y", showarrow=True, arrowhead=3, arrowsize=1.3,
                               arrowwidth=2, arrowcolor="#444", text="")
        else:          # next row: an elbow from the bottom of this box to the top of the next
            y_mid = y0 - (y0 - (y1 + h)) / 2
            fig.add_shape(type="path", line=dict(color="#444", width=2),
                          path=f"M {x0 + w / 2},{y0} L {x0 + w / 2},{y_mid} L {x1 + w / 2},{y_mid} "
                               f"L {x1 + w / 2},{y1 + h + 0.04}")
            fig.add_annotation(x=x1 + w / 2, y=y1 + h, ax=x1 + w / 2, ay=y1 + h + 0.05, xref="x",
                               yref="y", axref="x", ayref="y", showarrow=True, arrowhead=3,
                               arrowsize=1.3, arrowwidth=2, arrowcolor="#444", text="")
    # the autoregressive loop: the chosen token is appended to the text
    (xl, yl), (xf, yf) = pos[-1], pos[0]
    y_loop = yl - 0.35
    fig.add_shape(type="path", path=f"M {xl + w / 2},{yl} L {xl + w / 2},{y_loop} L {xf - 0.25},{y_loop} "
                  f"L {xf - 0.25},{yf + h / 2} L {xf - 0.02},{yf + h / 2}",
                  line=dict(color=theme.COLORS["chosen"], width=2, dash="dot"))
    fig.add_annotation(x=(xl + xf) / 2, y=y_loop, text=loop_label, showarrow=False, yshift=-12,
                       font=dict(color=theme.COLORS["chosen"], size=13))
    n_rows = (len(stages) + per_row - 1) // per_row
    fig.update_xaxes(visible=False, range=[-0.4, per_row * (w + gap_x) - gap_x + 0.1])
    fig.update_yaxes(visible=False, range=[-(n_rows - 1) * (h + gap_y) - 0.7, h + 0.1])
    theme.apply(fig, height=120 + 150 * n_rows)
    fig.update_layout(showlegend=False, dragmode=False)
    return fig


def pipeline_svg(stages: list[Stage], loop_label: str, *, per_row: int = 5) -> str:
    """The same picture as :func:`pipeline_figure`, as a self-contained inline SVG string.

    The home page draws this one: it needs no plotly.js, so the first picture a visitor sees
    paints as soon as the page does (plotly.js took ~2 s of the home page's first paint here).
    All text is escaped.

    >>> svg = pipeline_svg([Stage("A<b>", "[n]", "x", "#fff"), Stage("B", "[n, d]", "y", "#eee")], "loop")
    >>> svg.startswith("<svg") and "A&lt;b&gt;" in svg and svg.count("<rect") == 2
    True
    """
    from html import escape

    w, h, gx, gy, pad = 200, 84, 44, 64, 40
    n_rows = (len(stages) + per_row - 1) // per_row
    width = pad + per_row * w + (per_row - 1) * gx + 10
    height = 10 + n_rows * h + (n_rows - 1) * gy + 56
    pos = [(pad + (i % per_row) * (w + gx), 10 + (i // per_row) * (h + gy)) for i in range(len(stages))]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
           f'role="img" aria-label="{escape(" → ".join(s.label for s in stages))}" '
           f'style="max-width:{width}px;font-family:{escape(theme.FONT)}">',
           '<defs><marker id="lmviz-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#444"/>'
           '</marker></defs>']
    for (x, y), s in zip(pos, stages):
        out.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{escape(s.color)}" '
                   'stroke="#555" stroke-width="1.5"/>')
        out.append(f'<text x="{x + w / 2}" y="{y + h * 0.42}" text-anchor="middle" font-size="17" '
                   f'font-weight="700" fill="#1a1a1a">{escape(s.label)}</text>')
        out.append(f'<text x="{x + w / 2}" y="{y + h * 0.75}" text-anchor="middle" font-size="14" '
                   f'fill="#333" font-family="monospace">{escape(s.shape)}</text>')
    line = 'stroke="#444" stroke-width="2" fill="none" marker-end="url(#lmviz-arrow)"'
    for (x0, y0), (x1, y1) in zip(pos, pos[1:]):
        if y0 == y1:
            out.append(f'<line x1="{x0 + w}" y1="{y0 + h / 2}" x2="{x1 - 2}" y2="{y1 + h / 2}" {line}/>')
        else:  # elbow down to the next row
            ym = y0 + h + gy / 2
            out.append(f'<path d="M{x0 + w / 2},{y0 + h} V{ym} H{x1 + w / 2} V{y1 - 2}" {line}/>')
    (xl, yl), (xf, yf) = pos[-1], pos[0]
    y_loop = yl + h + 22
    out.append(f'<path d="M{xl + w / 2},{yl + h} V{y_loop} H{xf - 24} V{yf + h / 2} H{xf - 2}" '
               f'stroke="{theme.COLORS["chosen"]}" stroke-width="2" stroke-dasharray="5 4" fill="none" '
               'marker-end="url(#lmviz-arrow)"/>')
    out.append(f'<text x="{(xl + xf) / 2 + w / 2}" y="{y_loop + 20}" text-anchor="middle" font-size="15" '
               f'fill="{theme.COLORS["chosen"]}">{escape(loop_label)}</text>')
    out.append("</svg>")
    return "".join(out)
