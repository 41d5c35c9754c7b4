"""Canonical JSON (RFC 8785) and domain-separated SHA-256 digests.

A digest is ``sha256:`` + 64 lowercase hex digits over
``b"engram/v1/" + kind + b"\\n" + JCS(value)``. The ``kind`` prefix separates domains so
that, for instance, a payload digest can never be replayed as an event digest.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import rfc8785

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
RECORD_ID_RE = re.compile(r"^mem_[a-z2-7]+$")
_DOMAIN = b"engram/v1/"


class DigestKind(StrEnum):
    """Every kind of digest the project computes; the value is the domain prefix."""

    PAYLOAD = "payload"
    EVIDENCE = "evidence"
    RECORD = "record"
    CANDIDATE = "candidate"
    EVENT = "event"
    INTENT = "intent"
    OPERATION = "operation"
    TRANSACTION_RECEIPT = "transaction-receipt"
    DECISION_RECEIPT = "decision-receipt"
    AUTHORIZATION_RECEIPT = "authorization-receipt"
    REVALIDATION_RECEIPT = "revalidation-receipt"
    READ_RECEIPT = "read-receipt"
    RANK_RECEIPT = "rank-receipt"
    RANK_REQUEST = "rank-request"
    RANK_CONFIG = "rank-config"
    ORDERED_IDS = "ordered-ids"
    REDACTION_RECEIPT = "redaction-receipt"
    COVERAGE_RECEIPT = "coverage-receipt"
    PACKET = "packet"
    RESPONSE = "response"
    PAGE_CURSOR = "page-cursor"


def canonical_json(value: Any) -> bytes:
    """Serialize ``value`` as RFC 8785 (JCS) canonical JSON bytes."""
    return rfc8785.dumps(value)


def digest(kind: DigestKind, value: Any) -> str:
    """Domain-separated SHA-256 digest of ``value``'s canonical JSON."""
    h = hashlib.sha256(_DOMAIN + kind.value.encode("ascii") + b"\n" + canonical_json(value))
    return "sha256:" + h.hexdigest()


def digest_without(kind: DigestKind, value: Mapping[str, Any], field: str) -> str:
    """The digest of ``value`` over every field but ``field`` (the one that holds it)."""
    return digest(kind, {k: v for k, v in value.items() if k != field})


def is_digest(value: str) -> bool:
    """True when ``value`` is ``sha256:`` + 64 lowercase hex digits."""
    return DIGEST_RE.fullmatch(value) is not None


def id_from_digest(prefix: str, value_digest: str) -> str:
    """``prefix`` + lowercase unpadded base32 of the digest's 32 bytes."""
    raw = bytes.fromhex(value_digest.removeprefix("sha256:"))
    return prefix + base64.b32encode(raw).decode("ascii").rstrip("=").lower()


def record_id_for(record_digest: str) -> str:
    """The record id of a record digest: ``mem_`` + base32 (lowercase, unpadded)."""
    return id_from_digest("mem_", record_digest)


def format_cursor(position: int) -> str:
    """A journal cursor as a decimal string (gap-free, starting at 1)."""
    if position < 0:
        raise ValueError("cursor position must be >= 0")
    return str(position)
