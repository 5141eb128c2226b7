"""Every UI string exists in both languages, and every key used in code is in the catalogues."""
from __future__ import annotations

import re
from pathlib import Path

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
    for path in list(ROOT.glob("pages/*.py")) + list(ROOT.glob("ui/*.py")) + [ROOT / "app.py"]:
        used |= set(KEY_RE.findall(path.read_text(encoding="utf-8")))
    used |= {c.title_key for c in CHAPTERS}
    missing = sorted(k for k in used if k not in catalogue("en"))
    assert missing == []


def test_format_and_fallback():
    assert translate("common.device", "zh", name="CPU") == "计算设备：CPU"
    assert translate("no.such.key", "zh") == "no.such.key"
