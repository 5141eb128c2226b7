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


def _imports_torch(module: str, seen: dict) -> bool:
    """Whether importing a module of ours runs ``import torch``: read from the source, its
    module-level imports only (a function's imports run later), followed through our modules."""
    if module in seen:
        return seen[module]
    seen[module] = False                                     # a circle cannot make it heavy
    parts = module.split(".")
    path = ROOT.joinpath(*parts).with_suffix(".py")
    if not path.exists():
        path = ROOT.joinpath(*parts, "__init__.py")
    if not path.exists():
        return False
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = []

    def visit(node):                                          # module level: not inside functions
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(n, ast.Import):
                top.extend(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:                                   # from .x import y
                    pkg = parts[:-1] if path.name != "__init__.py" else parts
                    base = ".".join(pkg[: len(pkg) - n.level + 1] + ([base] if base else []))
                top.extend([base] + [f"{base}.{a.name}" for a in n.names])
            visit(n)

    visit(tree)
    heavy = any(m.split(".")[0] == "torch" or (m.split(".")[0] in OURS and _imports_torch(m, seen))
                for m in top)
    for i in range(1, len(parts)):                            # importing a.b imports a first
        heavy = heavy or _imports_torch(".".join(parts[:i]), seen)
    seen[module] = heavy
    return heavy


OURS = {"lmviz", "ui", "viz", "chapters"}


def _is_ours(module: str) -> bool:
    """A module file of ours (``from ui import room`` imports the module ui.room)."""
    p = ROOT.joinpath(*module.split("."))
    return module.split(".")[0] in OURS and (p.with_suffix(".py").exists() or (p / "__init__.py").exists())


def test_a_page_imports_light_modules_at_the_top():
    """ARCHITECTURE.md's rule for imports in a page: inside a function only modules that import
    torch, everything else at the top (the standard library, numpy, streamlit, ui, viz, light
    lmviz modules)."""
    import sys

    seen: dict = {}
    assert _imports_torch("lmviz.sampling", seen) and not _imports_torch("lmviz.tokenizer", seen)
    bad = []
    for f in sorted((ROOT / "chapters").glob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for n in tree.body:                                   # the top: nothing that imports torch
            mods = ([f"{n.module}.{a.name}" if _is_ours(f"{n.module}.{a.name}") else n.module for a in n.names]
                    if isinstance(n, ast.ImportFrom) and n.module else
                    [a.name for a in n.names] if isinstance(n, ast.Import) else [])
            bad += [f"{f.name}:{n.lineno} {m} at the top" for m in mods
                    if m.split(".")[0] == "torch" or (m.split(".")[0] in OURS and _imports_torch(m, seen))]
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                mods = ([f"{n.module}.{a.name}" if _is_ours(f"{n.module}.{a.name}") else n.module
                         for a in n.names] if isinstance(n, ast.ImportFrom) and n.module and not n.level
                        else [a.name for a in n.names] if isinstance(n, ast.Import) else [])
                for m in mods:
                    root = m.split(".")[0]
                    light = (root in sys.stdlib_module_names or root in {"numpy", "streamlit"}
                             or (root in OURS and not _imports_torch(m, seen)))
                    if light:
                        bad.append(f"{f.name}:{n.lineno} {m}")
    assert bad == []


def test_a_page_runs_no_model_pass_of_its_own():
    """ARCHITECTURE.md: pages are thin. A model's pass, its gradients, the grad mode and a random
    generator's state are the core's (``lmviz/``) or one shared cached call in ``ui.session``
    (``session.trace``, ``session.next_logits``): no ``forward_trace``, ``next_logits(`` of its
    own, ``.backward(``, ``torch.no_grad``, ``torch.Generator`` or ``manual_seed`` in a page (the
    generation stepper is ``lmviz.chapters.generation.Stepper``)."""
    bad = []
    for f in sorted((ROOT / "chapters").glob("*.py")):
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            bad += [f"{f.name}:{i} {w}" for w in ("forward_trace", ".backward(", "no_grad", "Generator(",
                                                  "manual_seed", "get_state(", "set_state(") if w in code]
            bad += [f"{f.name}:{i} next_logits" for _ in re.finditer(r"(?<!session\.)\bnext_logits\(", code)]
    assert bad == []


def test_no_page_calls_st_stop():
    """A page ends itself with ``render.end_page()``: after ``st.stop()`` every read of the
    session's state raises Streamlit's stop again, so app.py's end of the page run (a follower
    leaving the gate, ``ui.runtime.page_run``) could not run."""
    bad = []
    for folder in ("chapters", "ui"):
        for f in sorted((ROOT / folder).glob("*.py")):
            for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"(?<!`)st\.stop\(", line.split("#")[0]):    # not a docstring's ``st.stop()``
                    bad.append(f"{folder}/{f.name}:{i}")
    assert bad == []
