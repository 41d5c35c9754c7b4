"""The Python host kit against the real local service: maintainer claim rules, the host
routes through ``HostClient``, and an MCP session that outlives its tokens."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import secrets
from typing import Any

import httpx2
import pytest
from engram_memory import bootstrap, env_names
from engram_memory.local.service import RunningService
from engram_memory.local.state import HOST_KEY_FILE
from engram_memory_host import (
    ClaimRuleError,
    HostClient,
    HostKey,
    HostRouteError,
    check_maintainer_claims,
    memory_session,
    mint_agent_token,
    mint_maintainer_token,
    sign_claims,
)
from engram_memory_host.conformance import maintainer_violations
from mcp.shared.exceptions import MCPError

from .conftest import PURPOSE, WORKSPACE, connect
from .test_memory_flow import capture_arguments, search_until_found, value

TOOLS = ["search", "get", "capture", "request_admission", "withdraw", "forget"]
PRINCIPAL = "kit-user"


def host_key(service: RunningService) -> HostKey:
    return HostKey.load(service.home / HOST_KEY_FILE)


def agent_mint(service: RunningService, **claims: Any) -> str:
    ident = service.identity
    return mint_agent_token(host_key(service), issuer=ident.issuer, audience=ident.audience,
                            tenant=ident.tenant, **{
                                "workspace": WORKSPACE, "purpose_ref": PURPOSE,
                                "capabilities": TOOLS, "principal": PRINCIPAL,
                                "agent_id": "kit-agent", **claims})


def host_client(service: RunningService) -> HostClient:
    ident = service.identity
    return HostClient(service.base_url, functools.partial(
        mint_maintainer_token, host_key(service), issuer=ident.issuer,
        audience=ident.audience, tenant=ident.tenant, subject="kit-reviewer",
        workspaces=[WORKSPACE]))


def pending(service: RunningService, token: str) -> int:
    return httpx2.get(service.base_url + "/host/confirmations",
                      params={"workspace_id": WORKSPACE, "state": "pending"},
                      headers={"Authorization": f"Bearer {token}"}).status_code


def test_a_kit_minted_maintainer_token_is_accepted(service: RunningService) -> None:
    ident = service.identity
    for scope in ({"tenant_wide": True}, {"workspaces": [WORKSPACE]}):
        token = mint_maintainer_token(host_key(service), issuer=ident.issuer,
                                      audience=ident.audience, tenant=ident.tenant,
                                      subject="kit-reviewer", **scope)
        assert pending(service, token) == 200


@pytest.mark.parametrize("case", sorted(maintainer_violations()))
def test_each_maintainer_claim_rule_is_refused_by_the_kit_and_the_service(
    service: RunningService, case: str,
) -> None:
    ident = service.identity
    claims, rule = maintainer_violations(issuer=ident.issuer, audience=ident.audience,
                                         tenant=ident.tenant)[case]
    with pytest.raises(ClaimRuleError) as caught:
        check_maintainer_claims(claims)
    assert caught.value.rule == rule
    assert pending(service, sign_claims(host_key(service), claims)) == 401


async def _admitted(client: Any, text: str) -> str:
    captured = value(await client.call_tool("engram_memory_capture",
                                            capture_arguments(text)))
    outcome = value(await client.call_tool("engram_memory_request_admission", {
        "candidate_id": captured["candidate_id"],
        "idempotency_key": "kit-admit-" + secrets.token_hex(8)}))
    return str(outcome["outcome"]["record_id"])


def test_a_forget_walks_through_a_confirmation_the_host_client_requests_and_decides(
    service: RunningService,
) -> None:
    host = host_client(service)
    marker = "wombat" + secrets.token_hex(3)
    mint = functools.partial(agent_mint, service)

    async def admit() -> str:
        async with memory_session(service.mcp_url, mint) as client:
            record_id = await _admitted(client, f"The kit's fact to forget ({marker}).")
            await search_until_found(client, marker, record_id)
            return record_id

    record_id = asyncio.run(admit())
    forget = {"record_id": record_id, "idempotency_key": "kit-forget-" + secrets.token_hex(8),
              "reason_ref": "reason:owner-request"}
    requested = host.request_confirmation(workspace_id=WORKSPACE, capability="forget",
                                          principal=PRINCIPAL, arguments=forget,
                                          ttl_seconds=60)
    ref = requested["elicitationRef"]
    assert ref in [item["elicitationRef"] for item in
                   host.pending_confirmations(workspace_id=WORKSPACE)["items"]]
    ready = host.wait_while(ref, workspace_id=WORKSPACE, states=("requested",))
    assert ready["state"] == "awaiting_decision"
    decided = host.decide_confirmation(ref, workspace_id=WORKSPACE, decision="approve",
                                       approver="alice")
    assert decided["state"] == "approved"

    async def forget_then_get() -> tuple[Any, Any]:
        confirmed = functools.partial(agent_mint, service, confirmation_ref=ref)
        async with memory_session(service.mcp_url, confirmed) as client:
            forgotten = await client.call_tool("engram_memory_forget", forget)
            got = await client.call_tool("engram_memory_get",
                                         {"record_id": record_id, "purpose_ref": PURPOSE})
            return forgotten, got

    forgotten, got = asyncio.run(forget_then_get())
    assert value(forgotten)["receipt"]["to_state"] == "tombstoned"
    assert got.structured_content["error"]["code"] == "NOT_FOUND"
    assert host.confirmation(ref, workspace_id=WORKSPACE)["state"] == "consumed"
    with pytest.raises(HostRouteError) as caught:
        host.confirmation("conf-unknown", workspace_id=WORKSPACE)
    assert caught.value.status == 404


def test_a_held_candidate_is_listed_inspected_and_accepted_through_the_host_client(
    service: RunningService,
) -> None:
    host = host_client(service)
    previous = os.environ.get(env_names.ADMISSION_MODE)
    os.environ[env_names.ADMISSION_MODE] = "adjudicate"
    bootstrap.reset()
    try:
        async def held() -> str:
            async with memory_session(service.mcp_url,
                                      functools.partial(agent_mint, service)) as client:
                captured = value(await client.call_tool(
                    "engram_memory_capture",
                    capture_arguments("Held for a human " + secrets.token_hex(4))))
                outcome = value(await client.call_tool("engram_memory_request_admission", {
                    "candidate_id": captured["candidate_id"],
                    "idempotency_key": "kit-held-" + secrets.token_hex(8)}))
                assert outcome["outcome"]["status"] == "pending_adjudication"
                return str(captured["candidate_id"])
        candidate = asyncio.run(held())
    finally:
        if previous is None:
            os.environ.pop(env_names.ADMISSION_MODE, None)
        else:
            os.environ[env_names.ADMISSION_MODE] = previous
        bootstrap.reset()
    listed = host.held_candidates(workspace_id=WORKSPACE)
    assert candidate in [item["candidateId"] for item in listed["items"]]
    shown = host.held_candidate(candidate, workspace_id=WORKSPACE)
    assert shown["candidateId"] == candidate
    assert shown["payload"]["components"][0]["text"].startswith("Held for a human")
    decided = host.adjudicate(candidate, workspace_id=WORKSPACE, decision="accept",
                              approver="alice")
    assert decided["outcome"]["status"] == "accepted", decided
    assert candidate not in [item["candidateId"] for item in
                             host.held_candidates(workspace_id=WORKSPACE)["items"]]


def test_the_export_and_restore_routes_answer_the_host_client(service: RunningService) -> None:
    host = host_client(service)

    async def admit() -> str:
        async with memory_session(service.mcp_url,
                                  functools.partial(agent_mint, service)) as client:
            return await _admitted(client, "Exported through the kit " + secrets.token_hex(4))

    record_id = asyncio.run(admit())
    records = host.export_part(workspace_id=WORKSPACE, part="records")
    assert record_id in json.dumps(records)
    with pytest.raises(HostRouteError) as caught:  # ws1 holds records: nothing to restore into
        host.restore_begin(workspace_id=WORKSPACE, bundle_digest="sha256:" + "0" * 64)
    assert caught.value.body["error"]["code"] == "RESTORE_REFUSED"


def test_a_session_outlives_its_first_token(service: RunningService) -> None:
    minted: list[str] = []

    def mint() -> str:
        minted.append(agent_mint(service, ttl_s=1, capabilities=["search"]))
        return minted[-1]

    async def long_turn() -> list[list[str]]:
        seen = []
        async with memory_session(service.mcp_url, mint, margin_s=0) as client:
            for pause in (0.0, 3.5, 3.5):
                await asyncio.sleep(pause)
                seen.append([t.name for t in (await client.list_tools()).tools])
        return seen

    assert asyncio.run(long_turn()) == [["engram_memory_search"]] * 3
    assert len(minted) >= 3

    async def with_first_token() -> MCPError | None:
        async with connect(service.mcp_url, minted[0], "auto") as client:
            try:
                await client.list_tools()
            except MCPError as refused:
                return refused
        return None

    # 7 s later the first token (1 s lifetime, 5 s leeway) is refused: the session lived on.
    refused = asyncio.run(with_first_token())
    assert refused is not None
    assert refused.error.code == -32603
