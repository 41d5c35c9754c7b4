"""Use cases, one per module; ports.py holds the Protocols they need."""
