"""Field-level redaction of a record before an agent sees it (host allowlist).

The host's allowlist (``ENGRAM_REDACTION_ALLOWLIST``, top-level record field names) decides
which fields stay; empty means :data:`DEFAULT_ALLOWLIST`. ``record_id`` always stays. A
field outside the published record view is always removed. ``redacted_fields`` lists the
removed fields as JSON pointers (RFC 6901), sorted; the receipt digest covers exactly the
record the agent got plus that list, so anyone can recompute it from the packet.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engram_memory.domain.canonical import DigestKind, digest

RECORD_VIEW_FIELDS: frozenset[str] = frozenset({
    "record_id", "record_digest", "state", "purpose_ref", "valid_time", "components",
    "primary_component_id", "primary_event", "citations", "retention", "reconciliation",
    "trust_class", "recorded_at", "cursor",
})
DEFAULT_ALLOWLIST: tuple[str, ...] = tuple(sorted(RECORD_VIEW_FIELDS))
"""By default an agent sees every field of the published record view."""


def json_pointer(field: str) -> str:
    """The RFC 6901 pointer of a top-level field."""
    return "/" + field.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True, slots=True)
class Redacted:
    """A redacted record, the pointers removed and the receipt digest."""

    record: dict[str, Any]
    redacted_fields: list[str]
    receipt_digest: str


def redaction_receipt_digest(record: Mapping[str, Any], redacted_fields: list[str]) -> str:
    """Digest over the record as returned and the pointers removed from it."""
    subject = {"record": dict(record), "redacted_fields": list(redacted_fields)}
    return digest(DigestKind.REDACTION_RECEIPT, subject)


class Redactor:
    """Applies one allowlist (fixed per deployment)."""

    def __init__(self, allowlist: Iterable[str] = ()) -> None:
        chosen = frozenset(allowlist) or frozenset(DEFAULT_ALLOWLIST)
        self._visible = (chosen & RECORD_VIEW_FIELDS) | {"record_id"}

    def redact(self, record_id: str, record: Mapping[str, Any],
               withheld: Collection[str] = ()) -> Redacted:
        """Keep allowlisted fields except ``withheld`` ones; ``record_id`` is always the
        canonical id (``withheld``: fields a packet budget leaves out, services/budget.py)."""
        kept = {k: v for k, v in record.items() if k in self._visible and k not in withheld}
        kept["record_id"] = record_id
        removed = sorted(json_pointer(k) for k in record if k not in kept)
        return Redacted(kept, removed, redaction_receipt_digest(kept, removed))
