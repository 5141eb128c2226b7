"""The tree keeps ARCHITECTURE.md's rules: no import circle, each floor and wing imports only what
it may, no folder named ``pages`` beside app.py, and the document's tree lists the folders as they
are. The import graph is read from the source by scripts/imports.py (nothing is imported)."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {"screenshots", "node_modules", "__pycache__"}


def _imports_module():
    spec = importlib.util.spec_from_file_location("lmviz_imports", ROOT / "scripts" / "imports.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def graph():
    return _imports_module().graph(ROOT)


def test_the_circle_finder_finds_a_circle(tmp_path):
    imports = _imports_module()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    from pkg import b\n")      # lazy: still a circle
    (tmp_path / "pkg" / "b.py").write_text("from .a import f\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    g = imports.graph(tmp_path)
    assert g["pkg.a"] == {"pkg.b"} and g["pkg.b"] == {"pkg.a"} and g["pkg.c"] == {"pkg.a"}
    assert imports.circles(g) == [["pkg.a", "pkg.b"]]


def test_no_import_circle_anywhere(graph):
    assert _imports_module().circles(graph) == []


def wing(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "lmviz":
        return f"lmviz.{parts[1]}" if len(parts) > 1 and parts[1] in ("chapters", "server") else "lmviz"
    return parts[0]


ALLOWED = {  # a wing or floor -> what it may import (besides itself)
    "lmviz": set(),
    "lmviz.chapters": {"lmviz"},
    "lmviz.server": {"lmviz"},
    "viz": {"lmviz"},          # the core's pure helpers (numbers per language), never ui
    "ui": {"lmviz", "lmviz.chapters", "lmviz.server", "viz"},
}


@pytest.mark.parametrize("src", sorted(ALLOWED))
def test_each_wing_imports_only_the_wings_below_it(graph, src):
    bad = sorted(f"{a} -> {b}" for a, targets in graph.items() if wing(a) == src
                 for b in targets if wing(b) != src and wing(b) not in ALLOWED[src])
    assert bad == []


def test_nothing_below_ui_imports_streamlit():
    found = []
    for path in sorted((ROOT / "lmviz").rglob("*.py")) + sorted((ROOT / "viz").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "streamlit"]
    assert found == []


def test_no_folder_named_pages_beside_the_main_script():
    # Streamlit's legacy multipage mode (see ui/chapters.py) would take a fresh server's first run
    assert not ROOT.joinpath("pages").exists()
    from ui.chapters import CHAPTERS

    for c in CHAPTERS:
        assert c.file.startswith("chapters/") and (ROOT / c.file).is_file(), c.file
        assert Path(c.file).stem == (c.slug.replace("-", "_") or "home"), c


def documented_tree() -> set[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"## The tree\n+```\n(.*?)```", text, re.S).group(1)
    paths, stack = set(), []
    for line in block.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        stack[depth:] = [name.rstrip("/")]
        paths.add("/".join(stack) + ("/" if name.endswith("/") else ""))
    return paths


def actual_tree() -> set[str]:
    paths = set()
    for p in ROOT.iterdir():
        if p.name.startswith(".") or p.name in SKIP_DIRS:
            continue
        if p.is_dir():
            paths.add(p.name + "/")
        elif p.suffix == ".py":
            paths.add(p.name)
    for folder in ("lmviz", "lmviz/chapters", "lmviz/server"):
        for p in (ROOT / folder).iterdir():
            if p.is_dir() and p.name not in SKIP_DIRS:
                paths.add(f"{folder}/{p.name}/")
            elif p.suffix == ".py":
                paths.add(f"{folder}/{p.name}")
    return paths


def test_architecture_md_lists_the_folders_as_they_are():
    doc, real = documented_tree(), actual_tree()
    assert sorted(real - doc) == [], "in the tree but not in ARCHITECTURE.md"
    assert sorted(doc - real) == [], "in ARCHITECTURE.md but not in the tree"
