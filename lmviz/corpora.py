"""Old name of :mod:`lmviz.chapters.capitals`, kept only so ``tests/test_corpora.py`` (owned by
another branch) keeps importing; delete once that test imports ``lmviz.chapters.capitals``."""
import sys

from lmviz.chapters import capitals

sys.modules[__name__] = capitals       # the same module object under the old name
