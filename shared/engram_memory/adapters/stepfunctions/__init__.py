"""Step Functions adapter: the confirmation workflow (start, decision signals)."""
