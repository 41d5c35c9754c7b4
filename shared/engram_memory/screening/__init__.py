"""Content screening applied before anything is captured (CONTRACT.md §4)."""

from __future__ import annotations

from engram_memory.screening.secrets import capture_texts, find_secret

__all__ = ["capture_texts", "find_secret"]
