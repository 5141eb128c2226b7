"""Alias of pages/transformer_block.py for Streamlit's legacy pages/ lookup of /transformer-block (see ui/chapters.py)."""
from ui.chapters import run_app

run_app()
