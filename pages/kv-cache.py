"""Alias of pages/kv_cache.py for Streamlit's legacy pages/ lookup of /kv-cache (see ui/chapters.py)."""
from ui.chapters import run_app

run_app()
