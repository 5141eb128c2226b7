"""The computation order of a GPT-style model as a picture: the home page's whole pipeline (SVG) and
one block's stages with the loop over the blocks (/transformer-block)."""
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


def pipeline_figure(stages: list[Stage], loop_label: str, *, loop: tuple[int, int]) -> go.Figure:
    """One block's stages in a row with the "repeat for each block" loop around them only.

    ``loop = (first, last)``: the stages of one block (inclusive). The stages before it (the
    embedding) sit on a row above, those after it (final norm, LM head) on a row below, so the
    dotted loop, from the block's last stage back to its first, encloses the block alone: the
    embedding runs once before the blocks and the head once after them.

    >>> f = pipeline_figure([Stage(str(i), "", "", "#fff") for i in range(5)], "loop", loop=(1, 3))
    >>> [round(s.y0, 2) for s in f.layout.shapes if s.type == "rect"]
    [0.0, -1.37, -1.37, -1.37, -2.74]
    """
    first, last = loop
    if not 0 <= first <= last < len(stages):
        raise ValueError("the loop must name stages of the picture")
    fig = go.Figure()
    w, h, gap_x, gap_y = 1.4, 0.62, 0.3, 0.75
    row_y = [0.0, -(h + gap_y), -2 * (h + gap_y)]
    pos = []
    for i, _ in enumerate(stages):
        if i < first:        # before the blocks: above the block row, ending over its first stage
            pos.append(((i - (first - 1)) * (w + gap_x), row_y[0]))
        elif i <= last:      # the block, left to right
            pos.append(((i - first) * (w + gap_x), row_y[1]))
        else:                # after the blocks: below, starting under the block's last stage
            pos.append(((last - first + (i - last - 1)) * (w + gap_x), row_y[2]))
    for (x, y), s in zip(pos, stages):
        fig.add_shape(type="rect", x0=x, y0=y, x1=x + w, y1=y + h, line=dict(color="#555", width=1.5),
                      fillcolor=s.color, layer="below")
        fig.add_annotation(x=x + w / 2, y=y + h * 0.64, text=f"<b>{s.label}</b>", showarrow=False,
                           font=dict(size=12, color="#1a1a1a"))
        fig.add_annotation(x=x + w / 2, y=y + h * 0.27, text=s.shape, showarrow=False,
                           font=dict(size=10, color="#333", family="monospace"))

    def arrow(x0, y0, x1, y1):
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=3, arrowsize=1.3, arrowwidth=2, arrowcolor="#444",
                           text="")

    for i in range(len(stages) - 1):
        (x0, y0), (x1, y1) = pos[i], pos[i + 1]
        if y0 == y1 and x1 > x0:
            arrow(x0 + w, y0 + h / 2, x1, y1 + h / 2)
        elif y0 == y1:
            arrow(x0, y0 + h / 2, x1 + w, y1 + h / 2)
        else:        # down to the next row: the two boxes are in the same column
            arrow(x0 + w / 2, y0, x1 + w / 2, y1 + h)
    # the loop: from the bottom of the block's last stage, under the block row, back into the
    # bottom of its first stage (left of the arrow that leaves the block downwards)
    (xl, yl), (xf, yf) = pos[last], pos[first]
    y_loop = yl - 0.28
    x_out, x_in = xl + w * 0.2, xf + w * 0.5
    fig.add_shape(type="path", path=f"M {x_out},{yl} L {x_out},{y_loop} L {x_in},{y_loop} L {x_in},{yf - 0.05}",
                  line=dict(color=theme.COLORS["chosen"], width=2, dash="dot"))
    fig.add_annotation(x=x_in, y=yf, ax=x_in, ay=yf - 0.06, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=3, arrowsize=1.3, arrowwidth=2,
                       arrowcolor=theme.COLORS["chosen"], text="")
    fig.add_annotation(x=(x_out + x_in) / 2, y=y_loop, text=loop_label, showarrow=False, yshift=-11,
                       font=dict(color=theme.COLORS["chosen"], size=13))
    xs = [x for x, _ in pos]
    fig.update_xaxes(visible=False, range=[min(xs) - 0.2, max(xs) + w + 0.2])
    fig.update_yaxes(visible=False, range=[row_y[2] - 0.1, h + 0.1])
    theme.apply(fig, height=470)
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
