"""Small argument helpers shared by the commands."""

from __future__ import annotations


def csv(value: str) -> list[str]:
    """The non-empty, stripped parts of a comma-separated value."""
    return [part.strip() for part in value.split(",") if part.strip()]
