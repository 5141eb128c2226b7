"""Alias of pages/loss_and_gradients.py for Streamlit's legacy pages/ lookup of /loss-and-gradients (see ui/chapters.py)."""
from ui.chapters import run_app

run_app()
