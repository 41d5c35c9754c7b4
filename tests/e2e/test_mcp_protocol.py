"""The MCP endpoint over HTTP with the official SDK client, in both protocol eras."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from engram_memory.local.service import RunningService
from engram_memory.local.state import HOST_KEY_FILE
from mcp.shared.exceptions import MCPError

from tests.support.host_tokens import load_or_create_host_key, mint_agent_token

from .conftest import MODES, PURPOSE, WORKSPACE, connect

ALL = ["search", "get", "capture", "request_admission", "withdraw", "forget"]


def token(service: RunningService, **claims: Any) -> str:
    claims.setdefault("workspace", WORKSPACE)
    claims.setdefault("purpose_ref", PURPOSE)
    claims.setdefault("capabilities", ALL)
    claims.setdefault("now", time.time())
    # The unchecked test signer: several tokens here break a claim rule on purpose.
    ident = service.identity
    return mint_agent_token(load_or_create_host_key(service.home / HOST_KEY_FILE),
                            issuer=ident.issuer, audience=ident.audience, tenant=ident.tenant,
                            **claims)


def run(service: RunningService, tok: str | None, mode: str,
        action: Callable[[Any], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with connect(service.mcp_url, tok, mode) as client:
            return await action(client)
    return asyncio.run(go())


def protocol_error(service: RunningService, tok: str | None, mode: str,
                   action: Callable[[Any], Awaitable[Any]]) -> tuple[int, str]:
    async def expect_error(client: Any) -> MCPError | None:
        try:
            await action(client)
        except MCPError as exc:
            return exc
        return None

    error = run(service, tok, mode, expect_error)
    assert error is not None, "the call was expected to be refused"
    return error.error.code, error.error.message


async def list_names(client: Any) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


def search(query: str = "anything", purpose: str = PURPOSE, **extra: Any
           ) -> Callable[[Any], Awaitable[Any]]:
    async def action(client: Any) -> Any:
        return await client.call_tool("engram_memory_search",
                                      {"query": query, "purpose_ref": purpose, **extra})
    return action


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "granted",
    [ALL, ["search", "get"], ["capture"], ["withdraw", "forget"], []],
)
def test_list_tools_shows_exactly_the_granted_tools(
    service: RunningService, mode: str, granted: list[str]
) -> None:
    names = run(service, token(service, capabilities=granted), mode, list_names)
    assert names == [f"engram_memory_{g}" for g in ALL if g in granted]


@pytest.mark.parametrize("mode", MODES)
def test_published_tools_carry_schemas_titles_and_hints(service: RunningService, mode: str) -> None:
    async def tools(client: Any) -> Any:
        return {t.name: t for t in (await client.list_tools()).tools}

    listed = run(service, token(service), mode, tools)
    search_tool = listed["engram_memory_search"]
    assert search_tool.input_schema["additionalProperties"] is False
    assert search_tool.output_schema["type"] == "object"
    assert search_tool.title
    assert search_tool.annotations.read_only_hint is True
    assert listed["engram_memory_forget"].annotations.destructive_hint is True
    assert listed["engram_memory_withdraw"].annotations.destructive_hint is True
    assert listed["engram_memory_capture"].annotations.read_only_hint is False
    assert "Search before" in listed["engram_memory_search"].description or \
        "before capturing" in listed["engram_memory_search"].description


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["engram_memory_forget", "engram_memory_admin", "search"])
def test_calling_an_ungranted_or_unknown_tool_is_unknown_tool(
    service: RunningService, mode: str, name: str
) -> None:
    async def call(client: Any) -> Any:
        return await client.call_tool(name, {})

    tok = token(service, capabilities=["search", "get"])
    assert protocol_error(service, tok, mode, call) == (-32602, "Unknown tool")


UNTRUSTED = (-32603, "Trusted invocation context unavailable")
OTHER_KEY = ed25519.Ed25519PrivateKey.generate()


def untrusted_tokens(service: RunningService) -> dict[str, str | None]:
    now = time.time()
    ident = service.identity
    base = {"workspace": WORKSPACE, "purpose_ref": PURPOSE, "capabilities": ALL}
    return {
        "missing": None,
        "malformed": "not-a-jwt",
        "expired": token(service, now=now - 400),
        "not yet valid": token(service, now=now + 120),
        "wrong signature": mint_agent_token(OTHER_KEY, issuer=ident.issuer,
                                            audience=ident.audience, tenant=ident.tenant,
                                            now=now, **base),
        "wrong issuer": token(service, extra_claims={"iss": "urn:another-host"}),
        "wrong tenant": token(service, extra_claims={"tenant": "someone-else"}),
        "wrong audience": token(service, extra_claims={"aud": "urn:other-deployment"}),
        "foreign workspace": token(service, workspace="ws9"),
        "lifetime over 300 s": token(service, ttl_s=600),
        "maintain permission": token(service, extra_claims={"perm": ["read", "maintain"]}),
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "cause",
    ["missing", "malformed", "expired", "not yet valid", "wrong signature", "wrong issuer",
     "wrong tenant", "wrong audience", "foreign workspace", "lifetime over 300 s",
     "maintain permission"],
)
def test_every_untrusted_context_is_refused_with_32603(
    service: RunningService, mode: str, cause: str
) -> None:
    tok = untrusted_tokens(service)[cause]
    assert protocol_error(service, tok, mode, list_names) == UNTRUSTED
    assert protocol_error(service, tok, mode, search()) == UNTRUSTED


@pytest.mark.parametrize("mode", MODES)
def test_a_purpose_mismatch_in_search_arguments_is_refused_with_32603(
    service: RunningService, mode: str
) -> None:
    assert protocol_error(service, token(service), mode, search(purpose="purpose:other")) \
        == UNTRUSTED


@pytest.mark.parametrize("mode", MODES)
def test_a_purpose_mismatch_in_the_capture_payload_is_refused_with_32603(
    service: RunningService, mode: str
) -> None:
    async def capture(client: Any) -> Any:
        return await client.call_tool("engram_memory_capture", {
            "idempotency_key": "k" * 20, "payload": {"purpose_ref": "purpose:other"},
            "evidence": {}})

    assert protocol_error(service, token(service), mode, capture) == UNTRUSTED


@pytest.mark.parametrize("mode", MODES)
def test_a_passed_deadline_is_a_deadline_exceeded_envelope_with_the_host_audit_id(
    service: RunningService, mode: str
) -> None:
    tok = token(service, deadline_ms=int(time.time() * 1000) - 1, audit_id="audit-deadline")
    result = run(service, tok, mode, search())
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "DEADLINE_EXCEEDED"
    assert result.structured_content["error"]["retriable"] is True
    assert result.structured_content["auditId"] == "audit-deadline"
    assert json.loads(result.content[0].text) == result.structured_content


def test_the_protected_resource_metadata_is_published(service: RunningService) -> None:
    response = httpx2.get(service.base_url + "/.well-known/oauth-protected-resource")
    assert response.status_code == 200
    body = response.json()
    assert body["resource"] == service.mcp_url
    assert body["authorization_servers"] == [service.identity.issuer]
    assert body["bearer_methods_supported"] == ["header"]


def test_a_request_naming_a_foreign_host_is_refused(service: RunningService) -> None:
    response = httpx2.post(service.mcp_url, headers={
        "Host": "evil.example", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"}, content=b"{}")
    assert response.status_code in (400, 403, 421)


def withdraw_call(client: Any) -> Any:
    return client.call_tool("engram_memory_withdraw", {
        "candidate_id": "cand_" + "a" * 52, "idempotency_key": "withdraw-key-e2e-0001",
        "reason_ref": "reason:e2e"})


@pytest.mark.parametrize("mode", MODES)
def test_a_gated_call_without_a_confirmation_reference_is_refused_with_32603(
    service: RunningService, mode: str
) -> None:
    # Issue 15 item 1: this reached the tool and came back as a gate_failed envelope.
    assert protocol_error(service, token(service), mode, withdraw_call) == UNTRUSTED


@pytest.mark.parametrize("mode", MODES)
def test_a_present_but_unapproved_confirmation_reference_stays_gate_failed(
    service: RunningService, mode: str
) -> None:
    result = run(service, token(service, confirmation_ref="ref-never-approved"), mode,
                 withdraw_call)
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "gate_failed"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("purpose", [7, ["purpose:e2e"], {"ref": "purpose:e2e"}, True])
def test_a_purpose_ref_of_the_wrong_type_is_an_invalid_schema_envelope(
    service: RunningService, mode: str, purpose: Any
) -> None:
    # Issue 15 item 6: a purpose of the wrong JSON type was refused with -32603.
    result = run(service, token(service), mode, search(purpose=purpose))
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "INVALID_SCHEMA"


@pytest.mark.parametrize("mode", MODES)
def test_the_initialize_instructions_name_the_purpose_of_the_request_token(
    service: RunningService, mode: str
) -> None:
    # Issue 15 item 9: the official client reads the instructions of the handshake
    # (initialize, or server/discover in the 2026 era); they named no purpose.
    async def instructions(client: Any) -> str:
        return str(client.instructions)

    billing = run(service, token(service, purpose_ref="purpose:billing"), mode, instructions)
    support = run(service, token(service, purpose_ref="purpose:support"), mode, instructions)
    assert '"purpose:billing"' in billing
    assert "purpose:support" not in billing
    assert '"purpose:support"' in support
    anonymous = run(service, None, mode, instructions)
    assert "purpose:" not in anonymous
