"""Helpers shared by every test tier (events, AWS fixtures)."""
