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
