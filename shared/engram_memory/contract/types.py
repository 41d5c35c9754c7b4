"""Annotated field types of the wire contract (CONTRACT.md §2 "Common encodings").

Each type validates exactly one encoding rule and publishes the JSON Schema fragment that
expresses as much of the rule as JSON Schema can. Byte bounds are checked on UTF-8 bytes;
the published ``maxLength`` is a character count, so it is only an upper bound (a string of
N characters has at least N UTF-8 bytes). Rules JSON Schema cannot express (UTF-8 byte
lengths, NFC, calendar round-trip) live only in the validators; docs/contract.md lists them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Strict, WithJsonSchema
from pydantic_core import PydanticCustomError

MAX_SAFE_INTEGER = 2**53 - 1
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
RECORD_ID_PATTERN = r"^mem_[a-z2-7]+$"
CANDIDATE_ID_PATTERN = r"^cand_[a-z2-7]+$"
PAGE_CURSOR_PATTERN = r"^[\x20-\x7e]+$"
INSTANT_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"
DECIMAL_CURSOR_PATTERN = r"^(0|[1-9][0-9]*)$"

# The error type a malformed digest carries; validation maps it to INVALID_DIGEST.
DIGEST_ERROR_TYPE = "engram_invalid_digest"

_DIGEST_RE = re.compile(DIGEST_PATTERN)
_RECORD_ID_RE = re.compile(RECORD_ID_PATTERN)
_CANDIDATE_ID_RE = re.compile(CANDIDATE_ID_PATTERN)
_PAGE_CURSOR_RE = re.compile(PAGE_CURSOR_PATTERN)
_INSTANT_RE = re.compile(INSTANT_PATTERN)
_DECIMAL_CURSOR_RE = re.compile(DECIMAL_CURSOR_PATTERN)
_INSTANT_FORMAT = "%Y-%m-%dT%H:%M:%S"


def _refuse(rule: str) -> PydanticCustomError:
    # Constant text: the offending value never travels inside the error.
    return PydanticCustomError("engram_" + rule, "violates the {rule} rule", {"rule": rule})


def utf8_len(value: str) -> int:
    """The UTF-8 byte length of ``value``; a lone surrogate is refused as invalid."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise _refuse("utf8") from None


def _utf8(value: str) -> str:
    utf8_len(value)
    return value


def _byte_bounds(low: int, high: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not low <= utf8_len(value) <= high:
            raise _refuse("byte_length")
        return value

    return check


def _nfc(value: str) -> str:
    if not unicodedata.is_normalized("NFC", value):
        raise _refuse("nfc")
    return value


def _matching(pattern: re.Pattern[str], rule: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if pattern.fullmatch(value) is None:
            raise _refuse(rule)
        return value

    return check


def _digest(value: str) -> str:
    if _DIGEST_RE.fullmatch(value) is None:
        raise PydanticCustomError(DIGEST_ERROR_TYPE, "malformed digest")
    return value


def _instant(value: str) -> str:
    # The shape alone admits 2026-02-30; parsing and re-formatting must give the same text.
    if _INSTANT_RE.fullmatch(value) is None:
        raise _refuse("instant")
    try:
        parsed = datetime.strptime(value[:19], _INSTANT_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise _refuse("instant") from None
    if parsed.strftime(_INSTANT_FORMAT) != value[:19]:
        raise _refuse("instant")
    return value


def _safe_int(value: int) -> int:
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise _refuse("safe_integer")
    return value


def _string_schema(**extra: Any) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", **extra})


OpaqueRef = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(1, 512)),
    AfterValidator(_nfc),
    _string_schema(minLength=1, maxLength=512, description="NFC string of 1..512 UTF-8 bytes"),
]
"""An opaque reference: an NFC string of 1 to 512 UTF-8 bytes."""

Digest = Annotated[str, Strict(), AfterValidator(_digest), _string_schema(pattern=DIGEST_PATTERN)]
"""``sha256:`` + 64 lowercase hex digits; a malformed one is INVALID_DIGEST."""

Instant = Annotated[
    str,
    Strict(),
    AfterValidator(_instant),
    _string_schema(pattern=INSTANT_PATTERN, description="UTC instant YYYY-MM-DDTHH:mm:ss.sssZ"),
]
"""A canonical UTC instant with millisecond precision that names a real calendar time."""

SafeInt = Annotated[
    int,
    Strict(),
    AfterValidator(_safe_int),
    WithJsonSchema({"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}),
]
"""An integer with |n| <= 2^53-1 (a bool is not an integer)."""

IdempotencyKey = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(16, 256)),
    AfterValidator(_nfc),
    _string_schema(minLength=4, maxLength=256, description="NFC, 16..256 UTF-8 bytes"),
]
"""An idempotency key: NFC, 16..256 UTF-8 bytes (CONTRACT §3.5; "use at least 16 ASCII
characters" is advice to callers, not a rule). The published ``minLength`` is 4 because a
key of 16 bytes may be 4 characters of 4 bytes each."""

RecordId = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(5, 512)),
    AfterValidator(_matching(_RECORD_ID_RE, "record_id")),
    _string_schema(minLength=5, maxLength=512, pattern=RECORD_ID_PATTERN),
]
"""A record id as returned: ``mem_`` + lowercase base32, at most 512 bytes."""

CandidateId = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(6, 512)),
    AfterValidator(_matching(_CANDIDATE_ID_RE, "candidate_id")),
    _string_schema(minLength=6, maxLength=512, pattern=CANDIDATE_ID_PATTERN),
]
"""A candidate id as returned: ``cand_`` + lowercase base32, at most 512 bytes."""

PageCursor = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(1, 4096)),
    AfterValidator(_matching(_PAGE_CURSOR_RE, "page_cursor")),
    _string_schema(minLength=1, maxLength=4096, pattern=PAGE_CURSOR_PATTERN),
]
"""An opaque page cursor: 1..4096 printable ASCII characters."""

DecimalCursor = Annotated[
    str,
    Strict(),
    AfterValidator(_matching(_DECIMAL_CURSOR_RE, "cursor")),
    _string_schema(pattern=DECIMAL_CURSOR_PATTERN),
]
"""A journal cursor: a canonical non-negative decimal string."""



QueryText = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(1, 8192)),
    _string_schema(minLength=1, maxLength=8192),
]
"""A search query: 1..8192 UTF-8 bytes."""

ComponentText = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(1, 65536)),
    _string_schema(minLength=1, maxLength=65536),
]
"""A component's text: 1..65536 UTF-8 bytes."""

PlainText = Annotated[str, Strict(), AfterValidator(_utf8), _string_schema()]
"""A string the contract gives no encoding rule (``type_ref``, ``locator.scheme``,
``locator.value``, ``family_refs[]``): any length, no NFC rule; only the 1,048,576-byte
argument ceiling and valid UTF-8 bound it."""

Attestation = Annotated[
    str,
    Strict(),
    AfterValidator(_byte_bounds(0, 4096)),
    _string_schema(maxLength=4096),
]
"""An evidence attestation: at most 4096 UTF-8 bytes (the empty string included)."""
