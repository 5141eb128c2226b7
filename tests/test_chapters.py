"""Every chapter URL resolves in Streamlit's legacy pages/ mode too (a fresh server's first run).

See ui/chapters.py: a chapter whose URL path is not its file's stem has an alias page named after
the URL path that only runs app.py (whose navigation resolves the path); tests/test_browser_first_visit.py checks the real
first visit in Chromium.
"""
from __future__ import annotations

import ast
from pathlib import Path

from ui.chapters import CHAPTERS, ROOT, alias_file, by_slug


def test_every_chapter_url_has_a_file_named_after_it():
    for c in CHAPTERS:
        if not c.slug:
            continue
        stem_file = ROOT / "pages" / f"{c.slug}.py"
        assert stem_file.is_file(), f"/{c.slug}: no pages/{c.slug}.py (first visitors would see 'Page not found')"
        if alias_file(c):
            assert not stem_file.is_symlink()                  # Streamlit resolves links: duplicates
            assert (ROOT / c.file).is_file()


def test_alias_pages_only_run_the_app():
    aliases = {alias_file(c) for c in CHAPTERS} - {None}
    assert aliases == {"pages/kv-cache.py", "pages/loss-and-gradients.py", "pages/transformer-block.py"}
    for a in aliases:
        tree = ast.parse((ROOT / a).read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        assert [ast.unparse(c.func) for c in calls] == ["run_app"], a


def test_no_other_stray_pages():
    # every file in pages/ is a chapter or one of its aliases
    files = {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    known = {c.file for c in CHAPTERS} | {alias_file(c) for c in CHAPTERS} - {None}
    assert files <= known, files - known
    assert by_slug("kv-cache").file == "pages/kv_cache.py"
    assert Path(by_slug("kv-cache").file).stem != "kv-cache"
