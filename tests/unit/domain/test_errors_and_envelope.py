"""The error catalog and the envelope: what clients act on (code, retriable), never text."""

from __future__ import annotations

import json

import pytest
from engram_memory.contract.envelope import failure, failure_for_unexpected, success
from engram_memory.domain import errors

# CONTRACT.md §2, "Error codes and what to do": every code, with its retriable flag.
CONTRACT_CODES = {
    "INVALID_SCHEMA": False, "INVALID_DIGEST": False, "UNAUTHORIZED": False,
    "AUTHORIZATION_EXPIRED": False, "AUTHORIZATION_REVOKED": False, "NOT_FOUND": False,
    "DIGEST_CONFLICT": False, "ILLEGAL_TRANSITION": False, "ALREADY_TERMINAL": False,
    "MUTATION_OUTCOME_UNKNOWN": True, "gate_failed": False, "STALE_PAGE": False,
    "RESULT_TOO_LARGE": False, "PROJECTION_OVERSIZED": False, "RATE_LIMITED": True,
    "DEADLINE_EXCEEDED": True, "CANCELLED": True, "STORE_UNAVAILABLE": True, "FENCE_LOST": True,
    "CURSOR_GAP": True, "POLICY_UNAVAILABLE": True, "POLICY_STALE": True,
    "PROJECTION_STALE": True, "RANKING_UNAVAILABLE": True, "CAPABILITY_UNAVAILABLE": False,
    "JOURNAL_CORRUPT": False, "BLOB_MISSING": False, "REGISTRY_VERSION_UNAVAILABLE": False,
    "BACKUP_INVALID": False, "RESTORE_REFUSED": False, "MIGRATION_LEDGER_INVALID": False,
}


def test_the_catalog_has_exactly_the_contract_codes_with_their_retriable_flags() -> None:
    assert {code: cls.retriable for code, cls in errors.CATALOG.items()} == CONTRACT_CODES


def test_every_error_message_is_a_constant_that_ignores_caller_detail() -> None:
    for cls in errors.ALL_ERRORS:
        err = cls()
        assert str(err) == cls.message
        assert cls.message.endswith(".")


def test_success_envelope_shape() -> None:
    env = success({"x": 1}, "audit-1")
    assert env == {
        "ok": True,
        "output": {"schema_version": 1, "value": {"x": 1}},
        "auditId": "audit-1",
        "redactionClass": "high",
    }


@pytest.mark.parametrize("cls", errors.ALL_ERRORS)
def test_failure_envelope_carries_code_retriable_and_constant_message(
    cls: type[errors.EngramError],
) -> None:
    env = failure(cls(), "audit-2")
    assert env == {
        "ok": False,
        "auditId": "audit-2",
        "redactionClass": "high",
        "error": {"code": cls.code, "message": cls.message, "retriable": cls.retriable},
    }
    json.dumps(env)


def test_an_unexpected_exception_becomes_a_generic_retriable_failure() -> None:
    env = failure_for_unexpected("audit-3")
    assert env["error"] == {
        "code": "STORE_UNAVAILABLE",
        "message": "The memory store is unavailable.",
        "retriable": True,
    }


def test_an_unexpected_exception_in_a_mutation_leaves_its_outcome_unknown() -> None:
    env = failure_for_unexpected("audit-4", mutation=True)
    assert env["error"]["code"] == "MUTATION_OUTCOME_UNKNOWN"
    assert env["error"]["retriable"] is True
