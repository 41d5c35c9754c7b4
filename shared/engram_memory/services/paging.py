"""Integrity-protected page cursors for search.

A cursor is ``base64url(canonical JSON state) "." base64url(HMAC-SHA256)`` under the stack's
page-cursor secret. The state pins the scope, the request digest (query and parameters),
the ranking profile digest, the ``system_as_of`` of the first page, the digest of the ids
already delivered (in order) and the offset of the next page. Anything that does not
verify or parse, or that belongs to another scope, request or profile, is STALE_PAGE.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import asdict, dataclass

from engram_memory.domain.canonical import DigestKind, canonical_json, digest, is_digest
from engram_memory.domain.errors import CapabilityUnavailable, StalePage

CURSOR_VERSION = 1
_MAC_DOMAIN = b"engram/v1/page-cursor\n"


@dataclass(frozen=True, slots=True)
class PageState:
    """What a continuation must match."""

    scope: str
    request_digest: str
    profile_digest: str
    system_as_of: int
    delivered_digest: str
    offset: int


def delivered_digest(record_ids: list[str]) -> str:
    """Digest of the ordered ids already delivered (the ordering a continuation pins)."""
    return digest(DigestKind.ORDERED_IDS, {"delivered": record_ids})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PageCursorCodec:
    """Issues and verifies cursors under one secret."""

    def __init__(self, secret: str) -> None:
        self._key = secret.encode("utf-8")

    def _mac(self, payload: bytes) -> bytes:
        if not self._key:
            # No secret configured: paging cannot be offered safely.
            raise CapabilityUnavailable
        return hmac.new(self._key, _MAC_DOMAIN + payload, hashlib.sha256).digest()

    def encode(self, state: PageState) -> str:
        """The opaque cursor text for ``state``."""
        payload = canonical_json({"v": CURSOR_VERSION, **asdict(state)})
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def decode(self, cursor: str) -> PageState:
        """The verified state of a cursor; STALE_PAGE for anything forged or malformed."""
        head, _, tag = cursor.partition(".")
        try:
            payload = _unb64(head)
            mac = _unb64(tag)
        except ValueError:
            raise StalePage from None
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise StalePage
        try:
            data = json.loads(payload)
            state = PageState(
                scope=str(data["scope"]),
                request_digest=str(data["request_digest"]),
                profile_digest=str(data["profile_digest"]),
                system_as_of=int(data["system_as_of"]),
                delivered_digest=str(data["delivered_digest"]),
                offset=int(data["offset"]),
            )
        except (ValueError, KeyError, TypeError):
            raise StalePage from None
        if data.get("v") != CURSOR_VERSION or state.offset < 1 or state.system_as_of < 0:
            raise StalePage
        if not is_digest(state.request_digest) or not is_digest(state.delivered_digest):
            raise StalePage
        return state
