"""Use cases, one per module; the ``ports`` package holds the Protocols they need."""
