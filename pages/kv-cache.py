"""Alias of pages/kv_cache.py for a fresh server's first visitor of /kv-cache (see ui/chapters.py)."""
from ui.chapters import leave_legacy_mode

leave_legacy_mode()
