"""The result envelope of CONTRACT.md §2, success and failure forms."""

from __future__ import annotations

from typing import Any

from engram_memory.domain.errors import EngramError, MutationOutcomeUnknown, StoreUnavailable

SCHEMA_VERSION = 1
REDACTION_CLASS = "high"


def success(value: dict[str, Any], audit_id: str) -> dict[str, Any]:
    """``{ok: true, output: {schema_version: 1, value}, auditId, redactionClass}``."""
    return {
        "ok": True,
        "output": {"schema_version": SCHEMA_VERSION, "value": value},
        "auditId": audit_id,
        "redactionClass": REDACTION_CLASS,
    }


def failure(error: EngramError | type[EngramError], audit_id: str) -> dict[str, Any]:
    """``{ok: false, auditId, redactionClass, error: {code, message, retriable}}``."""
    return {
        "ok": False,
        "auditId": audit_id,
        "redactionClass": REDACTION_CLASS,
        "error": {"code": error.code, "message": error.message, "retriable": error.retriable},
    }


def failure_for_unexpected(audit_id: str, *, mutation: bool = False) -> dict[str, Any]:
    """The envelope for an exception that is not an EngramError (retriable either way).

    One rule at every layer (tool Lambda, endpoint): a mutation may have sent its commit
    before the failure, so its outcome is MUTATION_OUTCOME_UNKNOWN (a retry with the same
    key and arguments tells); a read is plainly STORE_UNAVAILABLE.
    """
    return failure(MutationOutcomeUnknown if mutation else StoreUnavailable, audit_id)
