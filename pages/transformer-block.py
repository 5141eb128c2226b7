"""Alias of pages/transformer_block.py for a fresh server's first visitor of /transformer-block (see ui/chapters.py)."""
from ui.chapters import leave_legacy_mode

leave_legacy_mode()
