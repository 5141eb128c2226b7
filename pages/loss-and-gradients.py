"""Alias of pages/loss_and_gradients.py for a fresh server's first visitor of /loss-and-gradients (see ui/chapters.py)."""
from ui.chapters import leave_legacy_mode

leave_legacy_mode()
