"""A confirmed forget, end to end: the real MCP client, the local service, the real gate.

capture → admission → the host asks a human (``engram-memory confirm request``) → the
human approves (``engram-memory confirm approve``) → the agent's forget, carrying the
confirmation reference in its host token, tombstones the record: gone from search and get.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

import pytest
from engram_memory.cli import main as cli
from engram_memory.local.service import RunningService

from .conftest import MODES, PURPOSE, WORKSPACE, connect
from .test_memory_flow import capture_arguments, search_until_found, value

PRINCIPAL = "local-user"
TOOLS = ["search", "get", "capture", "request_admission", "forget"]


def _cli(capsys: pytest.CaptureFixture[str], service: RunningService, *argv: str
         ) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    status = cli.main(["confirm", *argv[:1], "--data-dir", str(service.home),
                               "--workspace", WORKSPACE, *argv[1:]])
    return status, json.loads(capsys.readouterr().out)


async def _call(service: RunningService, mode: str, tool: str, arguments: dict[str, Any],
                **claims: Any) -> Any:
    token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=TOOLS,
                         principal=PRINCIPAL, **claims)
    async with connect(service.mcp_url, token, mode) as client:
        return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("mode", MODES)
def test_a_confirmed_forget_removes_the_record_from_search_and_get(
    service: RunningService, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = "quokka" + secrets.token_hex(3)
    text = f"Backups of the billing database are verified every Monday ({marker})."

    async def admitted_record() -> str:
        captured = value(await _call(service, mode, "engram_memory_capture",
                                     capture_arguments(text)))
        outcome = value(await _call(service, mode, "engram_memory_request_admission", {
            "candidate_id": captured["candidate_id"],
            "idempotency_key": "e2e-admit-" + secrets.token_hex(8)}))
        record_id = str(outcome["outcome"]["record_id"])
        token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=TOOLS)
        async with connect(service.mcp_url, token, mode) as client:
            found = await search_until_found(client, marker, record_id)
        assert record_id in [p["record"]["record_id"] for p in found["records"]]
        return record_id

    record_id = asyncio.run(admitted_record())
    forget = {"record_id": record_id, "idempotency_key": "e2e-forget-" + secrets.token_hex(8),
              "reason_ref": "reason:owner-request"}

    unconfirmed = asyncio.run(_call(service, mode, "engram_memory_forget", forget,
                                    confirmation_ref="ref-not-approved-yet"))
    assert unconfirmed.structured_content["error"]["code"] == "gate_failed"

    status, requested = _cli(capsys, service, "request", "--tool", "forget",
                             "--principal", PRINCIPAL, "--arguments", json.dumps(forget),
                             "--ttl", "60")
    assert status == 0, requested
    ref = requested["elicitationRef"]
    status, approved = _cli(capsys, service, "approve", ref, "--approver", "alice")
    assert status == 0, approved
    assert approved["state"] == "approved"

    async def forget_then_look() -> tuple[Any, Any, Any]:
        forgotten = await _call(service, mode, "engram_memory_forget", forget,
                                confirmation_ref=ref)
        got = await _call(service, mode, "engram_memory_get",
                          {"record_id": record_id, "purpose_ref": PURPOSE})
        found = await _call(service, mode, "engram_memory_search",
                            {"query": marker, "purpose_ref": PURPOSE})
        return forgotten, got, found

    forgotten, got, found = asyncio.run(forget_then_look())
    assert value(forgotten)["receipt"]["to_state"] == "tombstoned"
    assert got.structured_content["error"]["code"] == "NOT_FOUND"
    assert record_id not in [p["record"]["record_id"] for p in value(found)["records"]]
    status, shown = _cli(capsys, service, "show", ref)
    assert status == 0
    assert shown["state"] == "consumed"
