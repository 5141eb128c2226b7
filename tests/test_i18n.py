"""Every UI string exists in both languages, and every key used in code is in the catalogues."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ui.i18n import LANGS, catalogue, translate
from ui.chapters import CHAPTERS

ROOT = Path(__file__).resolve().parent.parent
KEY_RE = re.compile(r"""\bt\(\s*["']([a-z_]+\.[A-Za-z0-9_.]+)["']""")


def test_same_keys_in_every_language():
    keys = {lang: set(catalogue(lang)) for lang in LANGS}
    assert keys["en"], "the English catalogue is empty"
    assert keys["en"] - keys["zh"] == set(), "keys missing in Chinese"
    assert keys["zh"] - keys["en"] == set(), "keys missing in English"


def test_no_empty_strings_and_chinese_is_chinese():
    for lang in LANGS:
        empty = [k for k, v in catalogue(lang).items() if not str(v).strip()]
        assert empty == [], f"empty strings in {lang}: {empty}"
    # at least most Chinese strings contain Han characters (some are symbols or proper names)
    han = sum(bool(re.search(r"[\u4e00-\u9fff]", v)) for v in catalogue("zh").values())
    assert han / len(catalogue("zh")) > 0.8


def test_placeholders_match():
    for key, en in catalogue("en").items():
        zh = catalogue("zh")[key]
        assert set(re.findall(r"{(\w*)}", en)) == set(re.findall(r"{(\w*)}", zh)), key


def test_every_key_used_in_code_exists():
    used = set()
    for path in list(ROOT.glob("chapters/*.py")) + list(ROOT.glob("ui/*.py")) + [ROOT / "app.py"]:
        used |= set(KEY_RE.findall(path.read_text(encoding="utf-8")))
    used |= {c.title_key for c in CHAPTERS}
    missing = sorted(k for k in used if k not in catalogue("en"))
    assert missing == []


def test_format_and_fallback():
    assert translate("common.device", "zh", name="CPU") == "计算设备：CPU"
    assert translate("no.such.key", "zh") == "no.such.key"


def test_no_internal_example_codes():
    # the notes do not number their examples; students never see our labels such as "W9"
    code = re.compile(r"\bW\d+\b")
    for lang in LANGS:
        bad = {k: v for k, v in catalogue(lang).items() if code.search(v)}
        assert bad == {}, f"internal example codes in {lang}: {sorted(bad)}"


def test_temperature_divides_the_logits():
    assert "在 softmax 之前去除" not in catalogue("zh")["gen.temp_intro"]


def test_layer_and_head_labels_count_from_one():
    for lang in LANGS:
        assert translate("common.layer_head", lang, layer=1, head=2) in {"layer 1 · head 2", "第 1 层 · 头 2"}
        assert translate("common.layer_n", lang, n=1).replace("第 ", "").startswith(("layer 1", "1 层"))
        assert translate("common.head_n", lang, n=1) in {"head 1", "头 1"}


def test_a_count_picks_its_word_in_english():
    """"1 token(s)", "at most 1 trainings": an English sentence with a count says {n|one|many}."""
    assert translate("train.idle", "en", n=1).count("at most 1 training at once") == 1
    assert "at most 2 trainings at once" in translate("train.idle", "en", n=2)
    one = translate("gen.kept_msg_k", "en", n=1, kept="A", mass="0.5", nk=3, mass_k="0.9", probs="1")
    assert "**Kept: 1 token**" in one and "kept 3 tokens holding" in one
    for key, text in catalogue("en").items():
        assert "(s)" not in text.replace("(seconds)", "") or key == "tok.real_col_char", key


def test_section_numbers_count_in_order():
    """A chapter's section titles are numbered all or none ("N · ", the number computed from the
    section's place: ui.render.section), and a title outside the section list carries none: the
    tokenizer chapter showed "1 · The training text" and then "1 · Watch the merges", the
    attention chapter went from 3 to 5 past an unnumbered section."""
    import ast
    import re
    from pathlib import Path

    en = catalogue("en")
    numbered = re.compile(r"^\d+ · ")
    for path in sorted((Path(__file__).resolve().parent.parent / "chapters").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listed = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.List) and node.elts and all(
                    isinstance(e, ast.Tuple) and len(e.elts) == 2 and isinstance(e.elts[0], ast.Constant)
                    and e.elts[0].value in en for e in node.elts):
                keys = [e.elts[0].value for e in node.elts]
                listed.update(keys)
                marks = {bool(numbered.match(en[k])) for k in keys}
                assert len(marks) == 1, (path.name, [k for k in keys if not numbered.match(en[k])])
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "section" and node.args \
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value not in listed:
                assert not numbered.match(en.get(node.args[0].value, "")), (path.name, node.args[0].value)


def test_every_bold_run_closes_and_a_chinese_one_needs_no_space_after_it():
    """CommonMark closes ``**`` after punctuation only before a space or punctuation, so a Chinese
    bold run that ended in "。" needed a half-width space after it ("**训练目标奖励什么。** 训练…"),
    which Chinese does not write: the punctuation goes outside the run ("**…什么**。训练…"). Every
    string's bold runs render as bold in both languages (markdown-it, CommonMark as Streamlit's)."""
    import json
    import re

    from markdown_it import MarkdownIt

    from ui.i18n import CATALOGUE_DIR, LANGS

    md = MarkdownIt("commonmark")
    for lang in LANGS:
        cat = json.loads((CATALOGUE_DIR / f"{lang}.json").read_text(encoding="utf-8"))
        unclosed = [k for k, v in cat.items() if "**" in v and "**" in md.render(re.sub(r"\{[^{}]*\}", "X", v))]
        assert unclosed == [], (lang, unclosed)
        if lang == "zh":
            spaced = [k for k, v in cat.items() if re.search(r"[。，：；！？]\*\* ", v)]
            assert spaced == [], spaced
