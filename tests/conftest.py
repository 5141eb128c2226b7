"""Shared test fixtures: repo root on sys.path, one torch thread, and the browser server."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LMVIZ_THREADS", "1")
os.chdir(ROOT)  # AppTest.from_file("app.py") and relative asset paths


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives the running app in headless Chromium")
    config.addinivalue_line("markers", "apptest: runs pages through streamlit.testing AppTest")
