"""In-memory adapters of the write ports: fast use-case tests with the store's semantics."""
