"""One composition root per function: each wires only its own use case.

A tool's Lambda imports its root and nothing of the other tools (no other service, no
other adapter), so its cold start pays for its own tool only (docs/performance.md). The
shared pieces (settings, clients, the store, test overrides) live in ``bootstrap``.
"""
