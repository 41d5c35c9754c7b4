from __future__ import annotations

import pytest
from engram_memory.domain.errors import (
    CapabilityUnavailable,
    ProjectionOversized,
    ResultTooLarge,
    StalePage,
)
from engram_memory.services.budget import fit_prefix, fit_record, size_of
from engram_memory.services.eligibility import is_eligible, visible_purpose
from engram_memory.services.paging import PageCursorCodec, PageState, delivered_digest
from engram_memory.services.ports.read import RecordRow
from engram_memory.services.redaction import (
    DEFAULT_ALLOWLIST,
    Redactor,
    json_pointer,
    redaction_receipt_digest,
)

STATE = PageState(scope="t#w", request_digest=delivered_digest(["a"]),
                  profile_digest="p", system_as_of=7, delivered_digest=delivered_digest(["x"]),
                  offset=1)


def _row(**changes: object) -> RecordRow:
    base: dict[str, object] = {
        "record_id": "mem_a", "state": "accepted_current", "record": {"purpose_ref": "purpose:a"},
        "record_digest": "d", "payload_digest": "p", "parts": 0, "valid_t": 100,
        "valid_t_end": 200, "expires_at_ms": 300,
        "recorded_cursor": 5,
    }
    base.update(changes)
    return RecordRow(**base)  # type: ignore[arg-type]


def test_a_cursor_round_trips_under_its_secret() -> None:
    codec = PageCursorCodec("secret")
    cursor = codec.encode(STATE)
    assert cursor.isascii()
    assert len(cursor) < 4096
    assert codec.decode(cursor) == STATE


def test_a_cursor_from_another_secret_is_stale() -> None:
    cursor = PageCursorCodec("one").encode(STATE)
    with pytest.raises(StalePage):
        PageCursorCodec("two").decode(cursor)


@pytest.mark.parametrize("cursor", ["", ".", "abc", "!!!.???", "e30.e30"])
def test_malformed_cursors_are_stale(cursor: str) -> None:
    with pytest.raises(StalePage):
        PageCursorCodec("secret").decode(cursor)


def test_paging_without_a_secret_is_unavailable_rather_than_unprotected() -> None:
    with pytest.raises(CapabilityUnavailable):
        PageCursorCodec("").encode(STATE)


def test_eligibility_follows_state_cursor_valid_time_and_expiry() -> None:
    assert is_eligible(_row(), system_as_of=5, valid_as_of_ms=100, purpose=None)
    assert is_eligible(_row(), system_as_of=5, valid_as_of_ms=200, purpose=None)
    assert not is_eligible(_row(), system_as_of=4, valid_as_of_ms=150, purpose=None)
    assert not is_eligible(_row(), system_as_of=5, valid_as_of_ms=99, purpose=None)
    assert not is_eligible(_row(), system_as_of=5, valid_as_of_ms=201, purpose=None)
    assert not is_eligible(_row(valid_t_end=None), system_as_of=5, valid_as_of_ms=300, purpose=None)
    assert is_eligible(_row(valid_t_end=None), system_as_of=5, valid_as_of_ms=299, purpose=None)
    assert not is_eligible(_row(state="tombstoned"), system_as_of=5, valid_as_of_ms=150,
                           purpose=None)
    assert not is_eligible(_row(record=None), system_as_of=5, valid_as_of_ms=150, purpose=None)
    assert not is_eligible(None, system_as_of=5, valid_as_of_ms=150, purpose=None)


def test_a_record_of_another_purpose_is_ineligible_unless_reads_are_widened() -> None:
    # Issue 15 item 10: purpose limitation (the host may widen it to the workspace).
    assert is_eligible(_row(), system_as_of=5, valid_as_of_ms=150, purpose="purpose:a")
    assert not is_eligible(_row(), system_as_of=5, valid_as_of_ms=150, purpose="purpose:b")
    assert not is_eligible(_row(record={}), system_as_of=5, valid_as_of_ms=150,
                           purpose="purpose:a")
    assert visible_purpose("purpose:b", "purpose") == "purpose:b"
    assert visible_purpose("purpose:b", "bogus") == "purpose:b"  # fails closed
    assert visible_purpose("purpose:b", "workspace") is None


def test_the_default_allowlist_keeps_every_view_field_and_drops_unknown_ones() -> None:
    record = {name: "v" for name in DEFAULT_ALLOWLIST} | {"internal/x": 1}
    redacted = Redactor().redact("mem_a", record)
    assert set(redacted.record) == set(DEFAULT_ALLOWLIST)
    assert redacted.record["record_id"] == "mem_a"
    assert redacted.redacted_fields == ["/internal~1x"]


def test_record_id_survives_an_allowlist_that_omits_it() -> None:
    redacted = Redactor(["trust_class"]).redact("mem_a", {"record_id": "mem_a", "state": "s"})
    assert redacted.record == {"record_id": "mem_a"}
    assert redacted.redacted_fields == ["/state"]


def test_json_pointers_escape_tilde_and_slash() -> None:
    assert json_pointer("a~b/c") == "/a~0b~1c"


def _builders(packets: list[dict[str, str]]):  # type: ignore[no-untyped-def]
    def build(k: int) -> dict[str, object]:
        return {"records": packets[:k], "tail": "x" * 10}

    def skeleton(k: int) -> dict[str, object]:
        return {"records": [], "tail": "x" * 10}

    return skeleton, build


def test_fit_prefix_takes_the_longest_prefix_that_fits_exactly() -> None:
    packets = [{"t": "a" * 20}, {"t": "b" * 20}, {"t": "c" * 20}]
    skeleton, build = _builders(packets)
    two = size_of(build(2))
    k, value = fit_prefix(packets, skeleton, build, two)
    assert k == 2
    assert size_of(value) == two
    k, _ = fit_prefix(packets, skeleton, build, two - 1)
    assert k == 1


def test_fit_prefix_distinguishes_an_oversized_record_from_a_too_large_result() -> None:
    packets = [{"t": "a" * 20}]
    skeleton, build = _builders(packets)
    with pytest.raises(ProjectionOversized):
        fit_prefix(packets, skeleton, build, size_of(packets[0]) - 1)
    with pytest.raises(ResultTooLarge):
        fit_prefix(packets, skeleton, build, size_of(packets[0]))


def _redacting(record: dict[str, object]):  # type: ignore[no-untyped-def]
    redactor = Redactor()

    def packet(withheld: frozenset[str]) -> dict[str, object]:
        redacted = redactor.redact("mem_a", record, withheld)
        return {"record": redacted.record, "redacted_fields": redacted.redacted_fields,
                "redaction_receipt_digest": redacted.receipt_digest}

    return packet


def test_fit_record_withholds_the_largest_fields_first_until_the_packet_fits() -> None:
    record = {"record_id": "mem_a", "components": ["x" * 5000], "citations": ["y" * 800],
              "state": "accepted_current"}
    packet = _redacting(record)
    whole = packet(frozenset())
    assert fit_record(packet, size_of(whole)) == whole
    fitted = fit_record(packet, size_of(whole) - 1)
    assert fitted["redacted_fields"] == ["/components"]
    assert fitted["record"]["citations"] == record["citations"]
    assert fitted["redaction_receipt_digest"] == redaction_receipt_digest(
        fitted["record"], ["/components"])
    bare = size_of(packet(frozenset({"components", "citations", "state"})))
    smallest = fit_record(packet, bare)
    assert smallest["record"] == {"record_id": "mem_a"}
    assert smallest["redacted_fields"] == ["/citations", "/components", "/state"]
    with pytest.raises(ProjectionOversized):
        fit_record(packet, size_of(smallest) - 1)
