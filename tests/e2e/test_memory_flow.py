"""The whole agent journey over MCP: capture, request admission, search, get."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from typing import Any

import pytest
from engram_memory.local.service import RunningService

from .conftest import MODES, PURPOSE, WORKSPACE, connect

FACT = "Deployments to production run only from the release branch after the smoke suite."


def capture_arguments(text: str, purpose: str = PURPOSE) -> dict[str, Any]:
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return {
        "idempotency_key": "e2e-capture-" + secrets.token_hex(8),
        "payload": {
            "schema_version": 2,
            "purpose_ref": purpose,
            "valid_time": {"t": 1_790_000_000_000},
            "components": [
                {"component_id": "c1", "kind": "decision", "text": text,
                 "citation_ids": ["cit1"]},
            ],
            "primary_component_id": "c1",
            "primary_event": {"at": 1_790_000_000_000, "type_ref": "event:decided",
                              "citation_id": "cit1"},
            "citations": [
                {"citation_id": "cit1", "source_ref": "doc:runbook",
                 "locator": {"scheme": "url", "value": "https://wiki.example/runbook"},
                 "content_digest": digest},
            ],
        },
        "evidence": {"evidence_ref": "ev:runbook", "evidence_digest": digest,
                     "citation_ids": ["cit1"]},
    }


def value(result: Any) -> dict[str, Any]:
    """The success value, after checking the envelope's MCP wrapping."""
    envelope = result.structured_content
    assert json.loads(result.content[0].text) == envelope
    assert result.is_error is (not envelope["ok"])
    assert envelope["ok"] is True, envelope
    out: dict[str, Any] = envelope["output"]["value"]
    return out


async def search_until_found(client: Any, query: str, record_id: str) -> dict[str, Any]:
    """The projector is asynchronous (a stream consumer): poll briefly until indexed."""
    deadline = time.monotonic() + 20
    while True:
        found = value(await client.call_tool(
            "engram_memory_search", {"query": query, "purpose_ref": PURPOSE}))
        ids = [packet["record"]["record_id"] for packet in found["records"]]
        if record_id in ids or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.3)


@pytest.mark.parametrize("mode", MODES)
def test_capture_admission_search_and_get_over_mcp(service: RunningService, mode: str) -> None:
    text = f"{FACT} ({mode} {secrets.token_hex(4)})"
    tok = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE,
                       capabilities=["search", "get", "capture", "request_admission"])

    async def journey() -> None:
        async with connect(service.mcp_url, tok, mode) as client:
            captured = value(await client.call_tool("engram_memory_capture",
                                                    capture_arguments(text)))
            assert captured["status"] == "committed_pending"
            admitted = value(await client.call_tool("engram_memory_request_admission", {
                "candidate_id": captured["candidate_id"],
                "idempotency_key": "e2e-admit-" + secrets.token_hex(8)}))
            assert admitted["outcome"]["status"] == "accepted"
            record_id = admitted["outcome"]["record_id"]
            found = await search_until_found(client, "release branch smoke suite", record_id)
            assert record_id in [p["record"]["record_id"] for p in found["records"]]
            got = value(await client.call_tool("engram_memory_get",
                                               {"record_id": record_id, "purpose_ref": PURPOSE}))
            assert got["record"]["record_id"] == record_id

    asyncio.run(journey())


@pytest.mark.parametrize("mode", MODES)
def test_a_pending_candidate_is_never_searchable(service: RunningService, mode: str) -> None:
    marker = "zebracorn" + secrets.token_hex(3)
    tok = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE,
                       capabilities=["search", "capture"])

    async def journey() -> dict[str, Any]:
        async with connect(service.mcp_url, tok, mode) as client:
            value(await client.call_tool("engram_memory_capture",
                                         capture_arguments(f"{FACT} {marker}")))
            await asyncio.sleep(1)
            return value(await client.call_tool(
                "engram_memory_search", {"query": marker, "purpose_ref": PURPOSE}))

    assert asyncio.run(journey())["records"] == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "extra", [{"unexpected": 1}, {"confirmed": True}, {"tenant": "t-e2e"}, {"workspace": "ws2"}],
)
def test_an_extra_argument_field_is_an_invalid_schema_envelope(
    service: RunningService, mode: str, extra: dict[str, Any]
) -> None:
    tok = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=["search"],
                       audit_id="audit-extra")

    async def call() -> Any:
        async with connect(service.mcp_url, tok, mode) as client:
            return await client.call_tool(
                "engram_memory_search", {"query": "x", "purpose_ref": PURPOSE, **extra})

    result = asyncio.run(call())
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "INVALID_SCHEMA"
    assert result.structured_content["auditId"] == "audit-extra"
    assert json.loads(result.content[0].text) == result.structured_content
