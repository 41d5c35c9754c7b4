from __future__ import annotations

import json
from typing import Any

from engram_memory import bootstrap
from engram_memory.contract.content_digest import content_digest
from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.instant import format_instant

from tests.integration.read_path.conftest import ReadPath, error_code, payload_args

UNKNOWN_ID = "mem_" + "q" * 52


def _without_audit(envelope: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in envelope.items() if k != "auditId"}, sort_keys=True)


def test_get_returns_a_current_record_with_a_recomputable_read_receipt(
    read_path: ReadPath,
) -> None:
    record_id = read_path.admit("Vole service owns the billing export.")
    envelope = read_path.get(record_id)
    assert envelope["ok"], envelope
    value = envelope["output"]["value"]
    assert value["record"]["record_id"] == record_id
    assert value["redacted_fields"] == []
    receipt = value["read_receipt"]
    assert receipt["record_id"] == record_id
    assert receipt["record_digest"] == value["record"]["record_digest"]
    assert receipt["valid_as_of"] == receipt["checked_at"] == format_instant(read_path.clock.now)
    assert int(receipt["system_as_of"]) >= 2  # capture + admission events
    body = {k: v for k, v in receipt.items() if k != "receipt_digest"}
    assert receipt["receipt_digest"] == digest(DigestKind.READ_RECEIPT, body)
    rest = {k: v for k, v in value.items() if k != "packet_digest"}
    assert value["packet_digest"] == digest(DigestKind.PACKET, rest)


def test_get_does_not_wait_for_the_projector(read_path: ReadPath) -> None:
    record_id = read_path.admit("Walrus nodes reboot on Sundays.")
    assert read_path.get(record_id)["ok"]


def test_another_tenants_record_is_byte_identical_to_an_unknown_id(read_path: ReadPath) -> None:
    record_id = read_path.admit("Xerus tenant secret rotation schedule.")
    foreign_workspace = read_path.get(record_id, workspace_id="ws-other", audit_id="audit-ws")
    unknown = read_path.get(UNKNOWN_ID, audit_id="audit-unknown")
    # Tenant B's deployment (one stack per tenant; here even sharing tenant A's tables) asks
    # for tenant A's record: its keys cannot reach it.
    read_path.aws.configure(ENGRAM_TENANT_ID="tenant-b")
    foreign_tenant = read_path.get(record_id, tenant_id="tenant-b", audit_id="audit-foreign")
    unknown_in_b = read_path.get(UNKNOWN_ID, tenant_id="tenant-b", audit_id="audit-unknown")
    assert error_code(unknown) == "NOT_FOUND"
    assert _without_audit(foreign_tenant) == _without_audit(unknown)
    assert _without_audit(unknown_in_b) == _without_audit(unknown)
    assert _without_audit(foreign_workspace) == _without_audit(unknown)
    assert foreign_tenant["auditId"] == "audit-foreign"


def test_every_ineligible_state_is_the_same_not_found(read_path: ReadPath) -> None:
    unknown = read_path.get(UNKNOWN_ID)
    forgotten = read_path.admit("Yak shaving policy.")
    read_path.forget(forgotten)
    now = read_path.clock.now
    ended = read_path.admit("Zorilla limits.", valid_time={"t": now - 10, "t_end": now - 1})
    future = read_path.admit("Aardvark launch plan.", valid_time={"t": now + 10_000})
    for record_id in (forgotten, ended, future):
        assert _without_audit(read_path.get(record_id)) == _without_audit(unknown)


def test_refusals_make_the_same_reads_whatever_the_reason(read_path: ReadPath) -> None:
    current = read_path.admit("Bison ingest owner.")
    forgotten = read_path.admit("Caribou retired service.")
    read_path.forget(forgotten)
    calls: list[str] = []

    def record(event_name: str, **_: Any) -> None:
        calls.append(event_name.rsplit(".", 1)[-1])

    def reads_of(record_id: str, **kwargs: Any) -> list[str]:
        calls.clear()
        read_path.get(record_id, **kwargs)
        return list(calls)

    bootstrap.dynamodb_client().meta.events.register("before-call.dynamodb", record)
    reads = {
        "unknown": reads_of(UNKNOWN_ID),
        "forgotten": reads_of(forgotten),
        "current": reads_of(current),
    }
    read_path.aws.configure(ENGRAM_TENANT_ID="tenant-b")  # tenant B's deployment
    bootstrap.dynamodb_client().meta.events.register("before-call.dynamodb", record)
    reads["foreign"] = reads_of(current, tenant_id="tenant-b")
    assert reads["unknown"] == reads["forgotten"] == reads["foreign"] == reads["current"]
    assert reads["unknown"] == ["GetItem", "Query"]


def test_the_host_allowlist_redacts_fields_with_a_recomputable_receipt(
    read_path: ReadPath,
) -> None:
    record_id = read_path.admit("Dingo cache eviction is LRU.")
    read_path.aws.configure(ENGRAM_REDACTION_ALLOWLIST="components,citations")
    read_path.rewire()
    value = read_path.get(record_id)["output"]["value"]
    assert set(value["record"]) == {"record_id", "components", "citations"}
    assert "/trust_class" in value["redacted_fields"]
    assert "/record_digest" in value["redacted_fields"]
    assert value["redacted_fields"] == sorted(value["redacted_fields"])
    subject = {"record": value["record"], "redacted_fields": value["redacted_fields"]}
    assert value["redaction_receipt_digest"] == digest(DigestKind.REDACTION_RECEIPT, subject)
    read_path.project()
    packet = read_path.search("dingo")["output"]["value"]["records"][0]
    assert packet["record"] == value["record"]
    assert packet["redacted_fields"] == value["redacted_fields"]


def test_a_claimed_content_digest_is_kept_as_claimed_and_never_recomputed(
    read_path: ReadPath,
) -> None:
    # Issue 15 item 9 (content_digest) and item 4 (strings the contract leaves free):
    # the digest of bytes the server never saw, an NFD type_ref, a locator value over
    # 4,096 bytes and an empty family list all go through capture, admission and get.
    claimed = content_digest(b"Vole release notes, as served by the wiki.\r\n")
    payload = payload_args("Vole exports nightly.", "unused-key-0000-0000")["payload"]
    citations = payload["citations"]
    citations[0]["content_digest"] = claimed
    citations[0]["locator"]["value"] = "https://wiki.example/vole#" + "x" * 5000
    event = {**payload["primary_event"], "type_ref": "de\u0301cision"}
    record_id = read_path.admit("Vole exports nightly.", citations=citations,
                                primary_event=event, reconciliation={"family_refs": []})
    record = read_path.get(record_id)["output"]["value"]["record"]
    assert record["citations"][0]["content_digest"] == claimed
    assert record["citations"][0]["locator"]["value"].endswith("x" * 5000)
    assert record["primary_event"]["type_ref"] == "de\u0301cision"


def test_the_reference_content_digest_hashes_the_exact_bytes() -> None:
    assert content_digest(b"abc") == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert content_digest("é".encode()) != content_digest("e\u0301".encode())
