"""assets/i18n/GLOSSARY.md's checked table, applied to every string of the catalogues (the page
text that code builds is checked in tests/test_page_text.py with the same table)."""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from ui.i18n import CATALOGUE_DIR, catalogue, listed

GLOSSARY = CATALOGUE_DIR / "GLOSSARY.md"
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_LATIN_GLOSS = re.compile(r"（[A-Za-z0-9 ./+\-]+）")   # 预填充（prefill）: the allowed first mention


@dataclass(frozen=True)
class Rule:
    preferred: str
    forbidden: re.Pattern
    where: str                 # "zh", "zh+page" or "all"
    exceptions: tuple[str, ...]
    why: str

    def langs(self) -> tuple[str, ...]:
        return ("en", "zh") if self.where == "all" else ("zh",)

    def on_pages(self) -> bool:
        return self.where in ("zh+page", "all")

    def applies_to(self, key: str) -> bool:
        return not any(fnmatch.fnmatchcase(key, pat) for pat in self.exceptions)


def _cells(line: str) -> list[str]:
    """A markdown table row's cells: split on unescaped pipes, code backticks dropped."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    out = []
    for c in cells:
        c = c.strip().replace("\\|", "|")
        if c.startswith("`") and c.endswith("`") and len(c) > 1:
            c = c[1:-1]
        out.append(c)
    return out


@lru_cache(maxsize=None)
def rules(path: Path = GLOSSARY) -> tuple[Rule, ...]:
    """The rows of the glossary's checked table."""
    text = path.read_text(encoding="utf-8")
    section = text.split("## Checked table", 1)[1]
    rows = [ln for ln in section.splitlines() if ln.startswith("|")][2:]   # skip header + rule
    out = []
    for ln in rows:
        preferred, forbidden, where, exceptions, why = _cells(ln)
        assert where in ("zh", "zh+page", "all"), ln
        excepts = tuple(e.strip().strip("`") for e in exceptions.split(",") if e.strip())
        out.append(Rule(preferred, re.compile(forbidden), where, excepts, why))
    return tuple(out)


def prepared(text: str, *, catalogue_string: bool) -> str:
    """The text as the rules read it: placeholders as X, Latin glosses in （） skipped."""
    if catalogue_string:
        text = _PLACEHOLDER.sub("X", text)
    return _LATIN_GLOSS.sub("", text)


def violations(rule: Rule, text: str, *, catalogue_string: bool = True) -> list[str]:
    """Each forbidden variant found in ``text``, with a little context."""
    s = prepared(text, catalogue_string=catalogue_string)
    return [s[max(0, m.start() - 12): m.end() + 12] for m in rule.forbidden.finditer(s)]


def test_the_table_is_read():
    rs = rules()
    assert len(rs) >= 20
    assert any(r.preferred.startswith("遮罩") for r in rs)
    assert all(r.forbidden.pattern for r in rs)


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r.preferred[:16])
def test_every_catalogue_string_follows_the_rule(rule):
    found = [f"{lang} {key}: …{hit}…" for lang in rule.langs() for key, value in catalogue(lang).items()
             if rule.applies_to(key) for hit in violations(rule, value)]
    assert found == [], f"{rule.preferred} ({rule.why}):\n" + "\n".join(found)


@pytest.mark.parametrize("text,preferred", [
    ("这就是因果掩码。", "遮罩"), ("行是查询，列是键。", "query"), ("第 X 层第 X 个头", "第 1 层"),
    ("批大小为 1，batch 为 1", "批次"), ("692B 个参数", "692 亿"), ("比 MHA 小 4 倍", "只有 1/4"),
    ("红色, 蓝色", "、 and"), ("运行 bench/kv_cache.py", "a description"), ("+attn 1", "translated"),
])
def test_each_rule_catches_its_variant(text, preferred):
    rule = next(r for r in rules() if r.preferred.startswith(preferred))
    assert violations(rule, text)


@pytest.mark.parametrize("text", ["预填充（prefill）一次处理全部提示词", "关键词", "拖动滑块", "Llama-2-7B",
                                  "989 TFLOP/s", "每层 {block_size} 个位置", "MHA 的缓存是 GQA 的 4 倍"])
def test_allowed_forms_pass(text):
    assert not [r.preferred for r in rules() if violations(r, text)]


def test_lists_built_by_code_use_the_languages_separator():
    assert listed(["我", "喜欢", "学习"], "zh") == "我、喜欢、学习"
    assert listed([1, 2], "en") == "1, 2"
    rule = next(r for r in rules() if r.preferred.startswith("、 and"))
    assert not violations(rule, listed(["红色", "蓝色"], "zh"), catalogue_string=False)
