"""Candidate ids, retention resolution, the predicted record digest, instants."""

from __future__ import annotations

import pytest
from engram_memory.domain.canonical import record_id_for
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import InvalidSchema, Unauthorized
from engram_memory.domain.instant import format_instant, parse_instant
from engram_memory.domain.records import (
    build_record,
    candidate_id_for,
    check_reconciliation,
    effective_payload,
    record_digest_for,
    resolve_retention,
)

from tests.fixtures.contract_fixtures import valid_payload

SCOPE = Scope("tenant-a", "ws-main")
NOW = 1_780_000_000_000
CEILING = 1_000_000


def test_the_candidate_id_depends_on_scope_principal_and_key_only() -> None:
    one = candidate_id_for(SCOPE, "user:alice", "key-0000000000000001")
    assert one == candidate_id_for(SCOPE, "user:alice", "key-0000000000000001")
    assert one != candidate_id_for(SCOPE, "user:bob", "key-0000000000000001")
    assert one != candidate_id_for(Scope("tenant-a", "ws-other"), "user:alice",
                                   "key-0000000000000001")
    assert one.startswith("cand_")


def test_omitted_retention_is_make_ineligible() -> None:
    resolved = resolve_retention(None, now_ms=NOW, retain_allowed=False, ceiling_ms=CEILING)
    assert resolved == {"derivative_rule": "make-ineligible"}


def test_retain_needs_host_permission() -> None:
    with pytest.raises(Unauthorized):
        resolve_retention({"derivative_rule": "retain"}, now_ms=NOW, retain_allowed=False,
                          ceiling_ms=CEILING)
    assert resolve_retention({"derivative_rule": "retain"}, now_ms=NOW, retain_allowed=True,
                             ceiling_ms=CEILING) == {"derivative_rule": "retain"}


@pytest.mark.parametrize(("offset", "error"), [
    (0, InvalidSchema), (-1, InvalidSchema), (CEILING + 1, Unauthorized)])
def test_expires_at_bounds(offset: int, error: type[Exception]) -> None:
    retention = {"derivative_rule": "make-ineligible", "expires_at": format_instant(NOW + offset)}
    with pytest.raises(error):
        resolve_retention(retention, now_ms=NOW, retain_allowed=False, ceiling_ms=CEILING)


def test_expires_at_within_bounds_is_kept() -> None:
    for offset in (1, CEILING):
        at = format_instant(NOW + offset)
        resolved = resolve_retention({"derivative_rule": "make-ineligible", "expires_at": at},
                                     now_ms=NOW, retain_allowed=False, ceiling_ms=CEILING)
        assert resolved["expires_at"] == at


def test_reconciliation_families_need_consent() -> None:
    payload = {"reconciliation": {"family_refs": ["family:a", "family:b"]}}
    with pytest.raises(Unauthorized):
        check_reconciliation(payload, {"family:a"})
    check_reconciliation(payload, {"family:a", "family:b"})


def test_the_record_digest_is_predictable_and_names_the_record() -> None:
    effective = effective_payload(valid_payload(), {"derivative_rule": "make-ineligible"})
    predicted = record_digest_for(SCOPE, effective)
    record = build_record(predicted, effective, trust_class="asserted", recorded_at_ms=NOW)
    assert record.record_id == record_id_for(predicted)
    assert record.view["record_digest"] == predicted
    assert record.view["recorded_at"] == format_instant(NOW)
    assert record_digest_for(Scope("tenant-a", "ws-other"), effective) != predicted


def test_instants_round_trip_and_reject_non_canonical_forms() -> None:
    assert format_instant(0) == "1970-01-01T00:00:00.000Z"
    assert parse_instant(format_instant(NOW + 7)) == NOW + 7
    for bad in ("2026-02-30T00:00:00.000Z", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00.000Z"):
        with pytest.raises(ValueError, match="canonical"):
            parse_instant(bad)
