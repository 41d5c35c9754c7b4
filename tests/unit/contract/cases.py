"""The rule table: one valid fixture per tool, then one mutation per rule of CONTRACT.md §2."""

from __future__ import annotations

from typing import Any

from engram_memory.domain.context import Tool
from engram_memory.domain.errors import InvalidDigest, InvalidSchema

from tests.fixtures.contract_fixtures import sha256_digest
from tests.unit.contract.helpers import DELETE, VALID, Case

S, D = InvalidSchema, InvalidDigest
SAFE = 2**53 - 1
DIGEST = sha256_digest("x")


def _components(n: int) -> Any:
    def grow(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
        extra = [
            {"component_id": f"c-extra-{i}", "kind": "context", "text": "t",
             "citation_ids": ["cit-adr"]}
            for i in range(n - len(components))
        ]
        return components + extra

    return grow


def _citations(n: int) -> Any:
    def grow(citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        extra = [
            {"citation_id": f"cit-{i:03d}", "source_ref": "s", "content_digest": DIGEST,
             "locator": {"scheme": "path", "value": "v"}}
            for i in range(n - len(citations))
        ]
        return citations + extra

    return grow


def _ids(n: int) -> list[str]:
    return [f"cit-{i:03d}" for i in range(n)]


def _case(name: str, tool: Tool, expected: type[Exception] | None, *changes: Any,
          schema: bool = True) -> Case:
    return Case(name, tool, tuple(changes), expected, schema)


C, P = Tool.CAPTURE, ("payload",)
COMP0 = (*P, "components", 0)
CIT0 = (*P, "citations", 0)
EV = ("evidence",)
KEY = ("idempotency_key",)

CAPTURE_CASES = [
    _case("valid capture", C, VALID),
    _case("key of 16 ascii bytes", C, VALID, (KEY, "k" * 16)),
    _case("key of 15 ascii bytes", C, S, (KEY, "k" * 15), schema=False),
    _case("key of 256 bytes", C, VALID, (KEY, "k" * 256)),
    _case("key of 257 bytes", C, S, (KEY, "k" * 257)),
    # Issue 15 item 3: "at least 16 ASCII characters" is advice, not a rule (§3.5).
    _case("key of 16 bytes in 8 non-ascii chars", C, VALID, (KEY, "é" * 8)),
    _case("key with 15 ascii chars and 2 bytes more", C, VALID, (KEY, "k" * 15 + "é")),
    _case("cyrillic key of 41 bytes", C, VALID, (KEY, "ключ-идемпотентности-1")),
    _case("key of 4 chars of 4 bytes", C, VALID, (KEY, "\U0001f600" * 4)),
    _case("key of 15 bytes in 8 chars", C, S, (KEY, "é" * 7 + "k"), schema=False),
    _case("key of 16 ascii chars plus accents", C, VALID, (KEY, "k" * 16 + "é")),
    _case("key not NFC", C, S, (KEY, "k" * 16 + "e\u0301"), schema=False),
    _case("key as integer", C, S, (KEY, 12345678901234567)),
    _case("schema_version 1", C, S, ((*P, "schema_version"), 1)),
    _case("schema_version 2.0", C, S, ((*P, "schema_version"), 2.0), schema=False),
    _case("schema_version as string", C, S, ((*P, "schema_version"), "2")),
    _case("schema_version as bool", C, S, ((*P, "schema_version"), True)),
    _case("purpose_ref empty", C, S, ((*P, "purpose_ref"), "")),
    _case("purpose_ref of 512 bytes", C, VALID, ((*P, "purpose_ref"), "p" * 512)),
    _case("purpose_ref of 513 bytes", C, S, ((*P, "purpose_ref"), "p" * 513)),
    _case("purpose_ref of 256 two-byte chars", C, VALID, ((*P, "purpose_ref"), "é" * 256)),
    _case("purpose_ref of 257 two-byte chars", C, S, ((*P, "purpose_ref"), "é" * 257),
          schema=False),
    _case("purpose_ref not NFC", C, S, ((*P, "purpose_ref"), "cafe\u0301"), schema=False),
    _case("valid_time.t at max safe int", C, VALID, ((*P, "valid_time", "t"), SAFE)),
    _case("valid_time.t above max safe int", C, S, ((*P, "valid_time", "t"), SAFE + 1)),
    _case("valid_time.t at min safe int", C, VALID, ((*P, "valid_time", "t"), -SAFE)),
    _case("valid_time.t below min safe int", C, S, ((*P, "valid_time", "t"), -SAFE - 1)),
    _case("valid_time.t as bool", C, S, ((*P, "valid_time", "t"), True)),
    _case("valid_time.t as float", C, S, ((*P, "valid_time", "t"), 1.5)),
    _case("valid_time.t as string", C, S, ((*P, "valid_time", "t"), "1")),
    _case("valid_time.t missing", C, S, ((*P, "valid_time", "t"), DELETE)),
    _case("t_end before t", C, S, ((*P, "valid_time"), {"t": 10, "t_end": 9}), schema=False),
    _case("t_end equal to t", C, VALID, ((*P, "valid_time"), {"t": 10, "t_end": 10})),
    _case("t_end after t", C, VALID, ((*P, "valid_time"), {"t": 10, "t_end": 11})),
    _case("t_end null", C, S, ((*P, "valid_time"), {"t": 10, "t_end": None})),
    _case("valid_time extra field", C, S, ((*P, "valid_time", "unit"), "ms")),
    _case("no components", C, S, ((*P, "components"), [])),
    _case("64 components", C, VALID, ((*P, "components"), _components(64))),
    _case("65 components", C, S, ((*P, "components"), _components(65))),
    _case("component kind unknown", C, S, ((*COMP0, "kind"), "note")),
    _case("component text empty", C, S, ((*COMP0, "text"), "")),
    _case("component text of 65536 bytes", C, VALID, ((*COMP0, "text"), "a" * 65536)),
    _case("component text of 65537 bytes", C, S, ((*COMP0, "text"), "a" * 65537)),
    _case("component text of 32768 two-byte chars", C, VALID, ((*COMP0, "text"), "é" * 32768)),
    _case("component text of 32769 two-byte chars", C, S, ((*COMP0, "text"), "é" * 32769),
          schema=False),
    _case("component without citations", C, S, ((*COMP0, "citation_ids"), [])),
    _case("component citing 256", C, VALID, ((*P, "citations"), _citations(256)),
          ((*COMP0, "citation_ids"), ["cit-adr", *_ids(254)])),
    _case("component citing 257", C, S, ((*P, "citations"), _citations(256)),
          ((*COMP0, "citation_ids"), ["cit-adr", *_ids(256)])),
    _case("component citing twice", C, S, ((*COMP0, "citation_ids"), ["cit-adr", "cit-adr"])),
    _case("component citation unresolved", C, S, ((*COMP0, "citation_ids"), ["cit-adr", "nope"]),
          schema=False),
    _case("component extra field", C, S, ((*COMP0, "confirmed"), True)),
    _case("duplicate component_id", C, S, ((*P, "components", 1, "component_id"), "c-decision"),
          schema=False),
    _case("duplicate citation_id", C, S, ((*P, "citations", 1, "citation_id"), "cit-adr"),
          schema=False),
    _case("primary component unresolved", C, S, ((*P, "primary_component_id"), "c-missing"),
          schema=False),
    _case("primary event citation unknown", C, S,
          ((*P, "primary_event", "citation_id"), "cit-none"), schema=False),
    _case("primary event citation not in primary component", C, S,
          ((*P, "primary_component_id"), "c-context"), schema=False),
    _case("primary event at above safe", C, S, ((*P, "primary_event", "at"), SAFE + 1)),
    # Issue 15 item 4: type_ref, locator scheme/value are not opaque refs (§2): no NFC
    # rule, no byte bounds beyond the argument ceiling.
    _case("primary event type_ref empty", C, VALID, ((*P, "primary_event", "type_ref"), "")),
    _case("primary event type_ref NFD", C, VALID,
          ((*P, "primary_event", "type_ref"), "e\u0301vent")),
    _case("primary event type_ref of 600 bytes", C, VALID,
          ((*P, "primary_event", "type_ref"), "t" * 600)),
    _case("primary event type_ref lone surrogate", C, S,
          ((*P, "primary_event", "type_ref"), "\ud800"), schema=False),
    _case("primary event type_ref as integer", C, S, ((*P, "primary_event", "type_ref"), 3)),
    _case("no citations", C, S, ((*P, "citations"), [])),
    _case("257 citations", C, S, ((*P, "citations"), _citations(257))),
    _case("content digest uppercase", C, D, ((*CIT0, "content_digest"), DIGEST.upper())),
    _case("content digest 63 hex", C, D, ((*CIT0, "content_digest"), DIGEST[:-1])),
    _case("content digest other algorithm", C, D, ((*CIT0, "content_digest"), "md5:" + "a" * 32)),
    _case("content digest as integer", C, S, ((*CIT0, "content_digest"), 7)),
    _case("content digest missing", C, S, ((*CIT0, "content_digest"), DELETE)),
    _case("bad digest and bad bound together", C, S, ((*CIT0, "content_digest"), "sha256:x"),
          ((*COMP0, "text"), "")),
    _case("observed_at on Feb 30", C, S, ((*CIT0, "observed_at"), "2026-02-30T00:00:00.000Z"),
          schema=False),
    _case("observed_at on a leap day", C, VALID,
          ((*CIT0, "observed_at"), "2024-02-29T23:59:59.999Z")),
    _case("observed_at at hour 24", C, S, ((*CIT0, "observed_at"), "2026-01-02T24:00:00.000Z"),
          schema=False),
    _case("observed_at without millis", C, S, ((*CIT0, "observed_at"), "2026-01-02T03:04:05Z")),
    _case("observed_at with offset", C, S,
          ((*CIT0, "observed_at"), "2026-01-02T03:04:05.678+00:00")),
    _case("locator value empty", C, VALID, ((*CIT0, "locator", "value"), "")),
    _case("locator value of 4096 bytes", C, VALID, ((*CIT0, "locator", "value"), "v" * 4096)),
    _case("locator value of 4097 bytes", C, VALID, ((*CIT0, "locator", "value"), "v" * 4097)),
    _case("locator value of 100,000 bytes", C, VALID,
          ((*CIT0, "locator", "value"), "v" * 100_000)),
    _case("locator scheme not NFC", C, VALID, ((*CIT0, "locator", "scheme"), "e\u0301")),
    _case("locator scheme as list", C, S, ((*CIT0, "locator", "scheme"), ["path"])),
    _case("locator extra field", C, S, ((*CIT0, "locator", "port"), 1)),
    _case("retention retain", C, VALID, ((*P, "retention"), {"derivative_rule": "retain"})),
    _case("retention with expiry", C, VALID, ((*P, "retention"), {
        "derivative_rule": "make-ineligible", "expires_at": "2027-01-01T00:00:00.000Z"})),
    _case("retention rule unknown", C, S, ((*P, "retention"), {"derivative_rule": "delete"})),
    _case("retention without rule", C, S, ((*P, "retention"), {})),
    _case("retention expiry malformed", C, S, ((*P, "retention"), {
        "derivative_rule": "retain", "expires_at": "2027-13-01T00:00:00.000Z"}), schema=False),
    _case("retention null", C, S, ((*P, "retention"), None)),
    _case("family refs sorted", C, VALID, ((*P, "reconciliation"), {"family_refs": ["a", "b"]})),
    _case("family refs unsorted", C, S, ((*P, "reconciliation"), {"family_refs": ["b", "a"]}),
          schema=False),
    _case("family refs duplicated", C, S, ((*P, "reconciliation"), {"family_refs": ["a", "a"]})),
    _case("family refs empty", C, VALID, ((*P, "reconciliation"), {"family_refs": []})),
    _case("family refs NFD", C, VALID, ((*P, "reconciliation"), {"family_refs": ["e\u0301"]})),
    _case("reconciliation without family refs", C, S, ((*P, "reconciliation"), {})),
    _case("64 family refs", C, VALID,
          ((*P, "reconciliation"), {"family_refs": [f"f{i:02d}" for i in range(64)]})),
    _case("65 family refs", C, S,
          ((*P, "reconciliation"), {"family_refs": [f"f{i:02d}" for i in range(65)]})),
    _case("family refs in UTF-16 order", C, VALID,
          ((*P, "reconciliation"), {"family_refs": ["\U0001f600", "\uff61"]})),
    _case("family refs in code point order only", C, S,
          ((*P, "reconciliation"), {"family_refs": ["\uff61", "\U0001f600"]}), schema=False),
    _case("evidence digest malformed", C, D, ((*EV, "evidence_digest"), "sha256:")),
    _case("evidence citation unresolved", C, S, ((*EV, "citation_ids"), ["cit-zzz"]),
          schema=False),
    _case("evidence citation duplicated", C, S, ((*EV, "citation_ids"), ["cit-adr", "cit-adr"])),
    _case("evidence without citations", C, S, ((*EV, "citation_ids"), [])),
    _case("attestation of 4096 bytes", C, VALID, ((*EV, "attestation"), "a" * 4096)),
    _case("attestation of 4097 bytes", C, S, ((*EV, "attestation"), "a" * 4097)),
    _case("attestation empty", C, VALID, ((*EV, "attestation"), "")),
    _case("evidence extra field", C, S, ((*EV, "confirmed"), True)),
    _case("payload extra field", C, S, ((*P, "trust_class"), "verified")),
    _case("payload missing", C, S, (P, DELETE)),
    *[_case(f"host-owned field {f}", C, S, ((f,), "x"))
      for f in ("confirmed", "tenant", "workspace", "principal", "auditId")],
]

SR, G = Tool.SEARCH, Tool.GET
SEARCH_CASES = [
    _case("valid search", SR, VALID),
    _case("query empty", SR, S, (("query",), "")),
    _case("query of 8192 bytes", SR, VALID, (("query",), "q" * 8192)),
    _case("query of 8193 bytes", SR, S, (("query",), "q" * 8193)),
    _case("query of 4097 two-byte chars", SR, S, (("query",), "é" * 4097), schema=False),
    _case("limit 0", SR, S, (("limit",), 0)),
    _case("limit 1", SR, VALID, (("limit",), 1)),
    _case("limit 50", SR, VALID, (("limit",), 50)),
    _case("limit 51", SR, S, (("limit",), 51)),
    _case("limit as bool", SR, S, (("limit",), True)),
    _case("limit as float", SR, S, (("limit",), 10.0), schema=False),
    _case("budget 4095", SR, S, (("max_packet_bytes",), 4095)),
    _case("budget 4096", SR, VALID, (("max_packet_bytes",), 4096)),
    _case("budget 1048576", SR, VALID, (("max_packet_bytes",), 1_048_576)),
    _case("budget 1048577", SR, S, (("max_packet_bytes",), 1_048_577)),
    _case("policy empty object", SR, VALID, (("capability_policy",), {})),
    _case("policy semantic and allow", SR, VALID, (("capability_policy",), {
        "minimum_channels": "lexical_and_semantic", "network": "allow"})),
    _case("policy unknown channel", SR, S, (("capability_policy",), {"minimum_channels": "x"})),
    _case("policy extra field", SR, S, (("capability_policy",), {"grant": "all"})),
    _case("page cursor empty", SR, S, (("page_cursor",), "")),
    _case("page cursor of 4096 chars", SR, VALID, (("page_cursor",), "c" * 4096)),
    _case("page cursor of 4097 chars", SR, S, (("page_cursor",), "c" * 4097)),
    _case("page cursor with DEL", SR, S, (("page_cursor",), "abc\x7f")),
    _case("page cursor non-ascii", SR, S, (("page_cursor",), "abcé")),
    _case("search purpose missing", SR, S, (("purpose_ref",), DELETE)),
    _case("search extra field", SR, S, (("workspace",), "w")),
    _case("valid get", G, VALID),
    _case("get record id prefix only", G, S, (("record_id",), "mem_")),
    _case("get record id uppercase", G, S, (("record_id",), "mem_ABC")),
    _case("get record id with 1", G, S, (("record_id",), "mem_abc1")),
    _case("get record id of 512 bytes", G, VALID, (("record_id",), "mem_" + "a" * 508)),
    _case("get record id of 513 bytes", G, S, (("record_id",), "mem_" + "a" * 509)),
    _case("get candidate id as record", G, S, (("record_id",), "cand_abc")),
    _case("get budget 4095", G, S, (("max_packet_bytes",), 4095)),
    _case("get budget 65536", G, VALID, (("max_packet_bytes",), 65536)),
    _case("get purpose not NFC", G, S, (("purpose_ref",), "e\u0301"), schema=False),
]

A, W, F = Tool.REQUEST_ADMISSION, Tool.WITHDRAW, Tool.FORGET
STATE_CASES = [
    _case("valid admission", A, VALID),
    _case("admission short candidate id", A, VALID, (("candidate_id",), "cand_a")),
    _case("admission candidate prefix only", A, S, (("candidate_id",), "cand_")),
    _case("admission record id as candidate", A, S, (("candidate_id",), "mem_abc")),
    _case("admission candidate of 513 bytes", A, S, (("candidate_id",), "cand_" + "a" * 508)),
    _case("admission key missing", A, S, (("idempotency_key",), DELETE)),
    _case("admission decision supplied", A, S, (("decision",), "accept")),
    _case("valid withdraw", W, VALID),
    _case("withdraw reason empty", W, S, (("reason_ref",), "")),
    _case("withdraw reason of 513 bytes", W, S, (("reason_ref",), "r" * 513)),
    _case("withdraw confirmed by the model", W, S, (("confirmed",), True)),
    _case("withdraw key short", W, S, (("idempotency_key",), "short"), schema=False),
    _case("withdraw key of 3 chars", W, S, (("idempotency_key",), "abc")),
    _case("valid forget", F, VALID),
    _case("forget candidate id as record", F, S, (("record_id",), "cand_abc")),
    _case("forget reason missing", F, S, (("reason_ref",), DELETE)),
    _case("forget reason null", F, S, (("reason_ref",), None)),
    _case("forget tenant supplied", F, S, (("tenant",), "t2")),
]

ALL_CASES = CAPTURE_CASES + SEARCH_CASES + STATE_CASES
