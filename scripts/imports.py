"""Import circles over the tree, read from the source (AST): nothing is imported or run.

    python scripts/imports.py            # the circles, one a line; exit status 1 when there are any
    python scripts/imports.py --edges    # also every edge between the project's modules

A module is a ``.py`` file of the project (``lmviz``, ``ui``, ``viz``, ``pages``/``chapters``,
``tests``, ``bench``, ``scripts``, ``deploy``, ``app.py``, ``serve.py``). Every import statement
counts, at the top of a file or inside a function: a circle of lazy imports is still a circle (two
modules that need each other), it only fails later. ``from a import b`` is an edge to ``a.b`` when
that is a module of ours, else to ``a``. A circle is a strongly connected component of two or more
modules.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {".venv", ".git", "node_modules", "__pycache__", ".pytest_cache"}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file below ``root`` (packages by __init__)."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in SKIP or part.startswith(".") for part in rel.parts):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules that ``name`` (file ``path``) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        # the longest prefix that is a module of ours
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            cand = ".".join(parts[:i])
            if cand in known:
                found.add(cand)
                return

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                full = f"{mod}.{alias.name}" if mod else alias.name
                if full in known:
                    found.add(full)
                else:
                    add(mod)
    found.discard(name)  # a package's ``from . import x`` of itself, or ``from pkg import name``
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def main(argv: list[str]) -> int:
    g = graph()
    if "--edges" in argv:
        for a in sorted(g):
            for b in sorted(g[a]):
                print(f"{a} -> {b}")
    found = circles(g)
    for comp in found:
        print("circle: " + " <-> ".join(comp))
    print(f"{len(found)} import circle(s) among {len(g)} modules, {sum(map(len, g.values()))} edges")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
