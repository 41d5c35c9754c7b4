"""The reference form of a citation's ``content_digest`` (docs/contract.md, decision 17).

``sha256:`` + the lowercase hex SHA-256 of the exact bytes of the cited content as its
locator delivers them: no Unicode normalization, no newline or whitespace change. The
server never recomputes it (it never fetches a locator); callers and host verifiers use
this function so that both sides hash the same thing.
"""

from __future__ import annotations

import hashlib


def content_digest(content: bytes) -> str:
    """The ``content_digest`` of cited content given as the bytes the locator serves."""
    return "sha256:" + hashlib.sha256(content).hexdigest()
