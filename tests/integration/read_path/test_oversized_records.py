"""Issue 26 item 1: one large record must not break search or get (moto, real handlers).

Principal A admits a short record; principal B, in the same workspace and purpose, admits
one whose texts repeat the query's words up to the largest record capture accepts
(domain/packet_bound.py). A's search still finds A's record at the default and at the
largest packet size, lexically and fused; B's record is delivered (redacted where it cannot
fit, whole at the largest size) and `get` reads it; one byte more is refused at capture.
"""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.domain import records
from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.packet_bound import LARGEST_PACKET_BYTES, RECORD_BYTES_MAX

from tests.fixtures.contract_fixtures import valid_evidence, valid_payload
from tests.integration.read_path.conftest import ReadPath, error_code, ids
from tests.support.events import TENANT_ID, WORKSPACE_ID
from tests.support.semantic import SEMANTIC_ENV, create_vector_index

A_TEXT = "Deploys go out from the release branch only."
PRINCIPAL_B = "user:bob"
QUERY = "release branch"
WORDS = "release branch deploys "
COMPONENT_BYTES = 65_536
BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}
DEFAULT_PACKET = 65_536


def _repeat(length: int) -> str:
    return (WORDS * (length // len(WORDS) + 1))[:length]


def _big_payload(last_text: int) -> dict[str, Any]:
    """Sixteen components of repeated words; the last one ``last_text`` bytes long."""
    payload = valid_payload(text="unused", decision_text=_repeat(COMPONENT_BYTES))
    payload["components"] = payload["components"][:1] + [
        {"component_id": f"c-more-{n:02d}", "kind": "context",
         "text": _repeat(COMPONENT_BYTES if n < 14 else last_text),
         "citation_ids": ["cit-runbook"]}
        for n in range(15)
    ]
    return payload


def _record_bytes(payload: dict[str, Any], now_ms: int) -> int:
    """Canonical size of the record admission would store (what capture bounds)."""
    effective = records.effective_payload(payload, {"derivative_rule": "make-ineligible"})
    scope = Scope(TENANT_ID, WORKSPACE_ID)
    view = records.build_record(records.record_digest_for(scope, effective), effective,
                                trust_class=records.DEFAULT_TRUST_CLASS,
                                recorded_at_ms=now_ms).view
    return len(canonical_json(dict(view)))


def _payload_of_record_size(target: int, now_ms: int) -> dict[str, Any]:
    probe = 1000
    size = _record_bytes(_big_payload(probe), now_ms)
    payload = _big_payload(probe + target - size)
    assert _record_bytes(payload, now_ms) == target
    return payload


def _capture_as_b(path: ReadPath, payload: dict[str, Any], key: str) -> dict[str, Any]:
    args = {"idempotency_key": f"b-capture-{key}-0000", "payload": payload,
            "evidence": valid_evidence()}
    assert len(canonical_json(args)) <= LARGEST_PACKET_BYTES  # within the argument ceiling
    return path.call(Tool.CAPTURE, args, principal=PRINCIPAL_B)


def _admit_as_b(path: ReadPath, candidate_id: str) -> str:
    admitted = path.call(Tool.REQUEST_ADMISSION, {
        "candidate_id": candidate_id, "idempotency_key": "b-admission-0000-0000"},
        principal=PRINCIPAL_B)
    assert admitted["ok"], admitted
    return str(admitted["output"]["value"]["outcome"]["record_id"])


def _pages(path: ReadPath, **args: Any) -> list[dict[str, Any]]:
    """Every page of A's search (at most five), each one a success."""
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(5):
        extra = {"page_cursor": cursor} if cursor else {}
        envelope = path.search(QUERY, **args, **extra)
        assert envelope["ok"], envelope
        value = envelope["output"]["value"]
        assert len(canonical_json(value)) <= args.get("max_packet_bytes", DEFAULT_PACKET)
        pages.append(value)
        cursor = value.get("next_page_cursor")
        if cursor is None:
            break
    return pages


def _packets(pages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["record"]["record_id"]: p for page in pages for p in page["records"]}


def _repro(path: ReadPath, policy: dict[str, str] | None) -> None:
    a_record = path.admit(A_TEXT, decision_text=A_TEXT)
    now = path.clock.now_ms()
    over = _capture_as_b(path, _payload_of_record_size(RECORD_BYTES_MAX + 1, now), "over")
    assert error_code(over) == "INVALID_SCHEMA"
    captured = _capture_as_b(path, _payload_of_record_size(RECORD_BYTES_MAX, now), "max")
    assert captured["ok"], captured
    b_record = _admit_as_b(path, captured["output"]["value"]["candidate_id"])
    path.project()
    extra: dict[str, Any] = {"capability_policy": policy} if policy else {}

    # The default packet size: B's record (first lexically) redacted, A's on the same page.
    first = path.search(QUERY, **extra)
    assert set(ids(first)) == {b_record, a_record}
    packets = _packets([first["output"]["value"]])
    assert "/components" in packets[b_record]["redacted_fields"]
    assert "components" not in packets[b_record]["record"]
    assert packets[a_record]["redacted_fields"] == []
    # Even a one-record page delivers the oversized record (redacted), with a cursor to A.
    one = _pages(path, limit=1, **extra)
    assert set(_packets(one)) == {b_record, a_record}

    # The largest packet size: B's record whole on its own page, A's after the cursor.
    largest = _packets(_pages(path, max_packet_bytes=LARGEST_PACKET_BYTES, **extra))
    assert a_record in largest
    assert largest[b_record]["redacted_fields"] == []
    assert len(largest[b_record]["record"]["components"]) == 16

    # get reads B's record whole at the largest size; below it, the contract's answer.
    whole = path.call_get({"record_id": b_record, "max_packet_bytes": LARGEST_PACKET_BYTES})
    assert whole["ok"], whole
    assert len(whole["output"]["value"]["record"]["components"]) == 16
    assert error_code(path.get(b_record)) == "PROJECTION_OVERSIZED"
    assert path.get(a_record)["ok"]


def test_a_record_at_the_bound_hides_nothing_in_lexical_search(read_path: ReadPath) -> None:
    _repro(read_path, None)


def test_a_record_at_the_bound_hides_nothing_in_hybrid_search(read_path: ReadPath) -> None:
    create_vector_index()
    read_path.aws.configure(**SEMANTIC_ENV)
    read_path.rewire()
    _repro(read_path, BOTH)


@pytest.mark.parametrize("budget", [4_096, 20_000])
def test_small_budgets_still_deliver_the_page(read_path: ReadPath, budget: int) -> None:
    big = "release branch " + "filler " * 3000
    b_record = read_path.admit(big, decision_text=big)
    a_record = read_path.admit(A_TEXT, decision_text=A_TEXT)
    read_path.project()
    found = _packets(_pages(read_path, max_packet_bytes=budget))
    assert {a_record, b_record} <= set(found)
    assert found[b_record]["redacted_fields"]
