"""Old name of :mod:`lmviz.chapters.capitals`, kept only so ``tests/test_corpora.py`` (owned by
another branch) keeps importing; delete once that test imports ``lmviz.chapters.capitals``."""
from lmviz.chapters.capitals import (CAPITALS_JSON, TEMPLATES, Pair, Template,  # noqa: F401
                                     capital_corpus, country_floor, load_corpus_text, load_pairs,
                                     render, template_positions)
