"""``engram-memory smoke --stack NAME``: the memory flow, once, against a deployed tenant.

The step after ``cdk deploy`` (docs/deploy.md). It reads the stack's outputs (the MCP
endpoint and the host routes' base URL) and the tenant identity the endpoint was deployed
with (its function's ``ENGRAM_TENANT_ID``, ``ENGRAM_HOST_ISSUER``, ``ENGRAM_AUDIENCE``,
``ENGRAM_WORKSPACE_IDS``), mints short-lived tokens with the host's private key, and runs
over MCP (the official client): capture → request_admission (→ the host's adjudication
when the policy holds it) → search until the projector indexed it → a
``lexical_and_semantic`` search → get → forget, with a confirmation requested and approved
through the host routes → get answers NOT_FOUND. Each step is printed with its latency.
It leaves nothing behind: what it captured is forgotten (or withdrawn, if the flow stopped
before admission), also when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from engram_memory_host import HostKey

PURPOSE = "purpose:smoke"
TOOLS = ("search", "get", "capture", "request_admission", "withdraw", "forget")
PRINCIPAL = "engram-smoke"
TOKEN_TTL_S = 300
INDEX_WAIT_S = 60.0
GATE_WAIT_S = 30.0
BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}


class SmokeFailed(RuntimeError):
    """A step did not answer as a healthy deployment does."""


@dataclass(frozen=True)
class Target:
    """Where the deployment answers and who it trusts."""

    mcp_url: str
    api_url: str
    tenant: str
    issuer: str
    audience: str
    workspace: str


def _outputs(cfn: Any, stack: str) -> dict[str, str]:
    [found] = cfn.describe_stacks(StackName=stack)["Stacks"]
    return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}


def _endpoint_environment(cfn: Any, aws_lambda: Any, stack: str) -> dict[str, str]:
    functions = [r["PhysicalResourceId"]
                 for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack)
                 for r in page["StackResourceSummaries"]
                 if r.get("ResourceType") == "AWS::Lambda::Function"
                 and str(r.get("LogicalResourceId", "")).startswith("FunctionsMcpEndpoint")]
    if len(functions) != 1:
        raise SmokeFailed("the stack has no MCP endpoint function")
    function = functions[0]
    config = aws_lambda.get_function_configuration(FunctionName=function)
    return dict(config.get("Environment", {}).get("Variables", {}))


def resolve_target(session: Any, stack: str, region: str | None, *, mcp_url: str = "",
                   api_url: str = "", workspace: str = "") -> Target:
    """The stack's endpoints and the tenant identity its MCP endpoint was given."""
    cfn = session.client("cloudformation", region_name=region)
    outputs = _outputs(cfn, stack)
    env = _endpoint_environment(cfn, session.client("lambda", region_name=region), stack)
    workspaces = [w for w in env.get("ENGRAM_WORKSPACE_IDS", "").split(",") if w]
    return Target(mcp_url=mcp_url or outputs["McpEndpointUrl"],
                  api_url=(api_url or outputs["ApiBaseUrl"]).rstrip("/"),
                  tenant=env["ENGRAM_TENANT_ID"], issuer=env["ENGRAM_HOST_ISSUER"],
                  audience=env["ENGRAM_AUDIENCE"],
                  workspace=workspace or (workspaces[0] if workspaces else "default"))


def _capture_arguments(text: str) -> dict[str, Any]:
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return {
        "idempotency_key": "smoke-capture-" + secrets.token_hex(8),
        "payload": {
            "schema_version": 2, "purpose_ref": PURPOSE,
            "valid_time": {"t": int(time.time() * 1000)},
            "components": [{"component_id": "c1", "kind": "decision", "text": text,
                            "citation_ids": ["cit1"]}],
            "primary_component_id": "c1",
            "primary_event": {"at": int(time.time() * 1000), "type_ref": "event:smoke",
                              "citation_id": "cit1"},
            "citations": [{"citation_id": "cit1", "source_ref": "doc:engram-smoke",
                           "locator": {"scheme": "url", "value": "https://engram.invalid/smoke"},
                           "content_digest": digest}],
        },
        "evidence": {"evidence_ref": "ev:engram-smoke", "evidence_digest": digest,
                     "citation_ids": ["cit1"]},
    }


class Smoke:
    """One run of the flow against ``target``, printing each step to ``out``."""

    def __init__(self, target: Target, host_key: HostKey, out: TextIO) -> None:
        """``host_key``: the host's signing key (Ed25519 or EC P-256)."""
        self.target = target
        self.key = host_key
        self.out = out
        self.candidate_id = ""
        self.record_id = ""
        self.done = False

    # -- tokens and transports ---------------------------------------------------------

    def _agent_token(self, **claims: Any) -> str:
        from engram_memory_host import mint_agent_token

        t = self.target
        return mint_agent_token(self.key, issuer=t.issuer, audience=t.audience, tenant=t.tenant,
                                workspace=t.workspace, purpose_ref=PURPOSE, capabilities=TOOLS,
                                principal=PRINCIPAL, agent_id="engram-smoke",
                                ttl_s=TOKEN_TTL_S, **claims)

    def _operator_token(self) -> str:
        from engram_memory_host import mint_maintainer_token

        t = self.target
        return mint_maintainer_token(self.key, issuer=t.issuer, audience=t.audience,
                                     tenant=t.tenant, subject="engram-smoke",
                                     ttl_s=TOKEN_TTL_S, tenant_wide=True)

    @asynccontextmanager
    async def _client(self, **claims: Any) -> AsyncIterator[Any]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {self._agent_token(**claims)}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(self.target.mcp_url, http_client=http),
                   cache=None) as client,
        ):
            yield client

    async def tool(self, name: str, arguments: dict[str, Any], **claims: Any) -> dict[str, Any]:
        """One ``tools/call``: the envelope (``ok``, ``output`` or ``error``)."""
        async with self._client(**claims) as client:
            result = await client.call_tool(f"engram_memory_{name}", arguments)
        envelope = result.structured_content
        if not isinstance(envelope, dict):
            raise SmokeFailed(f"{name}: no structured result")
        return envelope

    async def host(self, method: str, path: str,
                   body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """One host route call with a fresh operator token."""
        import httpx2

        async with httpx2.AsyncClient(timeout=60) as http:
            response = await http.request(
                method, f"{self.target.api_url}{path}", json=body,
                headers={"Authorization": f"Bearer {self._operator_token()}"})
        answer = response.json() if response.content else {}
        return response.status_code, answer if isinstance(answer, dict) else {}

    # -- steps ------------------------------------------------------------------------

    async def step(self, name: str, run: Callable[[], Any]) -> Any:
        """Run one step, print its latency and outcome; raise SmokeFailed on failure."""
        started = time.perf_counter()
        try:
            detail = await run()
        except SmokeFailed as exc:
            elapsed = (time.perf_counter() - started) * 1000
            print(f"FAIL {name:<28} {elapsed:9.1f} ms  {exc}", file=self.out, flush=True)
            raise
        elapsed = (time.perf_counter() - started) * 1000
        print(f"ok   {name:<28} {elapsed:9.1f} ms  {detail}", file=self.out, flush=True)
        return detail

    @staticmethod
    def _value(name: str, envelope: dict[str, Any]) -> dict[str, Any]:
        if envelope.get("ok") is not True:
            error = envelope.get("error") or {}
            raise SmokeFailed(f"{name}: {error.get('code', 'no envelope')}")
        return dict(envelope["output"]["value"])

    async def capture(self, text: str) -> str:
        """capture."""
        value = self._value("capture", await self.tool("capture", _capture_arguments(text)))
        self.candidate_id = str(value["candidate_id"])
        return self.candidate_id

    async def admit(self) -> str:
        """request_admission, then the host's adjudication when the policy holds it."""
        value = self._value("request_admission", await self.tool("request_admission", {
            "candidate_id": self.candidate_id,
            "idempotency_key": "smoke-admit-" + secrets.token_hex(8)}))
        outcome = value["outcome"]
        if outcome["status"] == "pending_adjudication":
            status, body = await self.host(
                "POST", f"/host/adjudications/{self.candidate_id}",
                {"workspace_id": self.target.workspace, "decision": "accept",
                 "approver": "engram-smoke"})
            if status != 200:
                raise SmokeFailed(f"adjudication: HTTP {status} {body.get('code', '')}")
            outcome = body["outcome"]
        if outcome.get("status") != "accepted":
            raise SmokeFailed(f"admission: {outcome.get('status')}")
        self.record_id = str(outcome["record_id"])
        return f"{self.record_id} (policy: {value['outcome']['status']})"

    async def search(self, query: str, deadline_s: float, **extra: Any) -> str:
        """Search until the record is found (the projector is asynchronous)."""
        give_up = time.monotonic() + deadline_s
        rounds = 0
        while True:
            rounds += 1
            envelope = await self.tool("search", {"query": query, "purpose_ref": PURPOSE,
                                                  **extra})
            found = self._value("search", envelope)
            ids = [p["record"]["record_id"] for p in found["records"]]
            if self.record_id in ids:
                return f"found after {rounds} search(es)"
            if time.monotonic() > give_up:
                raise SmokeFailed(f"search: not found within {deadline_s:.0f} s")
            await asyncio.sleep(1.0)

    async def get(self) -> str:
        """get the admitted record."""
        value = self._value("get", await self.tool(
            "get", {"record_id": self.record_id, "purpose_ref": PURPOSE}))
        return str(value["record"]["record_id"])

    async def confirmation(self, capability: str, arguments: dict[str, Any]) -> str:
        """The host asks, waits for the gate to await a decision, a human approves."""
        status, requested = await self.host("POST", "/host/confirmations", {
            "workspace_id": self.target.workspace, "capability": capability,
            "principal": PRINCIPAL, "arguments": arguments, "ttl_seconds": 120})
        if status not in (200, 201):
            raise SmokeFailed(f"confirmation request: HTTP {status} {requested.get('code', '')}")
        ref = str(requested["elicitationRef"])
        give_up = time.monotonic() + GATE_WAIT_S
        query = f"?workspace_id={self.target.workspace}"
        while True:
            status, shown = await self.host("GET", f"/host/confirmations/{ref}{query}")
            if status == 200 and shown.get("state") == "awaiting_decision":
                break
            if time.monotonic() > give_up:
                raise SmokeFailed(f"confirmation: still {shown.get('state')} after "
                                  f"{GATE_WAIT_S:.0f} s (queue → notifier)")
            await asyncio.sleep(0.5)
        status, decided = await self.host("POST", f"/host/confirmations/{ref}/decision", {
            "workspace_id": self.target.workspace, "decision": "approve",
            "approver": "engram-smoke"})
        if status != 200 or decided.get("state") != "approved":
            raise SmokeFailed(f"approval: HTTP {status} {decided.get('state')}")
        return ref

    async def forget(self) -> str:
        """forget with an approved confirmation; get then answers NOT_FOUND."""
        arguments = {"record_id": self.record_id, "reason_ref": "reason:smoke-cleanup",
                     "idempotency_key": "smoke-forget-" + secrets.token_hex(8)}
        ref = await self.confirmation("forget", arguments)
        value = self._value("forget", await self.tool("forget", arguments,
                                                      confirmation_ref=ref))
        if value["receipt"]["to_state"] != "tombstoned":
            raise SmokeFailed(f"forget: {value['receipt']['to_state']}")
        gone = await self.tool("get", {"record_id": self.record_id, "purpose_ref": PURPOSE})
        if (gone.get("error") or {}).get("code") != "NOT_FOUND":
            raise SmokeFailed("forget: the record is still readable")
        self.done = True
        return "tombstoned; get answers NOT_FOUND"

    async def withdraw(self) -> str:
        """withdraw the pending candidate (cleanup when admission did not happen)."""
        arguments = {"candidate_id": self.candidate_id, "reason_ref": "reason:smoke-cleanup",
                     "idempotency_key": "smoke-withdraw-" + secrets.token_hex(8)}
        ref = await self.confirmation("withdraw", arguments)
        self._value("withdraw", await self.tool("withdraw", arguments, confirmation_ref=ref))
        self.done = True
        return "withdrawn"

    async def run(self) -> None:
        """The whole flow; cleans up what it created even when a step fails."""
        marker = "smoke" + secrets.token_hex(4)
        text = f"engram smoke check {marker}: the deployment answers end to end."
        try:
            await self.step("capture", lambda: self.capture(text))
            await self.step("request_admission", self.admit)
            await self.step("search (lexical)", lambda: self.search(marker, INDEX_WAIT_S))
            await self.step("search (lexical_and_semantic)",
                            lambda: self.search(f"deployment answers {marker}", 5.0,
                                                capability_policy=BOTH))
            await self.step("get", self.get)
            await self.step("forget (host-approved)", self.forget)
        finally:
            if not self.done and self.record_id:
                await self.step("cleanup: forget", self.forget)
            elif not self.done and self.candidate_id:
                await self.step("cleanup: withdraw", self.withdraw)


def load_host_key(path: Path) -> HostKey:
    """The host's signing key from a PEM file (its kid: the kit's default)."""
    from engram_memory_host import HostKey

    return HostKey.load(path)


def run_smoke(args: argparse.Namespace, session: Any = None, out: TextIO = sys.stdout) -> int:
    """Resolve the target, run the flow; 0 when every step passed."""
    import boto3

    session = session or boto3.Session()
    try:
        target = resolve_target(session, args.stack, args.region, mcp_url=args.mcp_url,
                                api_url=args.api_url, workspace=args.workspace)
    except Exception as exc:
        print(f"engram-memory smoke: cannot read stack {args.stack}: {type(exc).__name__} {exc}",
              file=out)
        return 1
    print(f"smoke {args.stack}: {target.mcp_url} (tenant {target.tenant}, workspace "
          f"{target.workspace}); latencies are wall-clock from this machine", file=out)
    try:
        asyncio.run(Smoke(target, load_host_key(args.host_key), out).run())
    except SmokeFailed:
        return 1
    print("smoke passed: nothing left behind", file=out)
    return 0


