"""The HTML hand-out (ui.render.export_html): prose keeps its Markdown (bold, code, tables, code
blocks), text is escaped exactly once, and raw HTML in prose never becomes markup."""
from __future__ import annotations

from html.parser import HTMLParser

from ui.render import export_html


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _parse(doc: str) -> _Text:
    p = _Text()
    p.feed(doc.split("</head>", 1)[1])
    return p


def test_prose_keeps_markdown_and_is_escaped_once():
    prose = ('He said "no" & left: **bold** `x<y`\n\n| τ | p(A) |\n|---|---|\n| 0.5 | 0.879 |\n\n'
             "```\nfor t in range(3):\n    pass\n```\n\n<script>alert(1)</script>")
    doc = export_html('A "title"', [("h", "计算如下"), ("md", prose)], "zh")
    p = _parse(doc)
    text = "".join(p.text)
    assert 'He said "no" & left: bold x<y' in text          # decoded once by the browser: no &quot;
    assert "&quot;" not in text and "&amp;" not in text
    assert {"table", "th", "td", "pre", "strong", "code"} <= set(p.tags)
    assert "0.879" in text and "for t in range(3):" in text
    assert "<script>alert(1)</script>" in text and "script" not in p.tags[p.tags.index("h2"):]
    assert '<html lang="zh">' in doc
