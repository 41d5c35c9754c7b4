"""A host platform plugging engram-memory into its agents, with the Python host kit.

Each agent turn gets its own short-lived token (``mint_agent_token``), carried by an MCP
session that mints afresh when the token nears expiry (``memory_session``). The host's own
routes (``HostClient``) ask a human to confirm the forget; the agent's last turn carries
the confirmation reference. Against ``make serve`` (see README.md in this folder):

    .venv/bin/python examples/host-python/host.py

Only ``engram_memory_host`` (and the MCP SDK it depends on) is imported: a host platform
needs nothing of the server.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_memory_host import (
    WAITING_STATES,
    HostClient,
    HostKey,
    memory_session,
    mint_agent_token,
    mint_maintainer_token,
)

PURPOSE = "purpose:host-example"
PRINCIPAL = "user-42"
TOOLS = ["search", "get", "capture", "request_admission", "withdraw", "forget"]
FACT = "The staging database is refreshed from production every Sunday at 02:00 UTC."


@dataclass(frozen=True)
class Deployment:
    """What the tenant registered: the endpoint, and the host's issuer, audience, tenant."""

    mcp_url: str
    issuer: str
    audience: str
    tenant: str
    key: HostKey
    workspace: str

    @property
    def base_url(self) -> str:
        """The host routes' base (the MCP URL without ``/mcp``)."""
        return self.mcp_url.rsplit("/mcp", 1)[0]


def local_deployment(home: Path, workspace: str) -> Deployment:
    """The local service's registration (``make serve`` writes it in its home)."""
    saved = json.loads((home / "local.json").read_text(encoding="utf-8"))
    if not saved.get("endpoint"):
        raise SystemExit(f"no running service recorded in {home}: start `make serve` first")
    return Deployment(saved["endpoint"], saved["issuer"], saved["audience"], saved["tenant"],
                      HostKey.load(home / "host_key.pem"), workspace)


def agent_turn_minter(deployment: Deployment, agent_id: str,
                      confirmation_ref: str | None = None) -> Callable[[], str]:
    """What the platform calls for one agent turn: a fresh token each time it is asked."""
    return functools.partial(
        mint_agent_token, deployment.key, issuer=deployment.issuer,
        audience=deployment.audience, tenant=deployment.tenant,
        workspace=deployment.workspace, purpose_ref=PURPOSE, capabilities=TOOLS,
        principal=PRINCIPAL, agent_id=agent_id,
        session="turn-" + secrets.token_hex(6), confirmation_ref=confirmation_ref,
        ttl_s=120)


def host_client(deployment: Deployment) -> HostClient:
    """The host routes, each request under a freshly minted maintainer token."""
    return HostClient(deployment.base_url, functools.partial(
        mint_maintainer_token, deployment.key, issuer=deployment.issuer,
        audience=deployment.audience, tenant=deployment.tenant, subject="host-example",
        workspaces=[deployment.workspace], ttl_s=60))


def capture_arguments(text: str) -> dict[str, Any]:
    """One decision with one citation."""
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    now_ms = int(time.time() * 1000)
    return {
        "idempotency_key": "host-example-" + secrets.token_hex(8),
        "payload": {
            "schema_version": 2, "purpose_ref": PURPOSE, "valid_time": {"t": now_ms - 60_000},
            "components": [{"component_id": "c1", "kind": "decision", "text": text,
                            "citation_ids": ["cit1"]}],
            "primary_component_id": "c1",
            "primary_event": {"at": now_ms, "type_ref": "event:decided", "citation_id": "cit1"},
            "citations": [{"citation_id": "cit1", "source_ref": "doc:ops-calendar",
                           "locator": {"scheme": "url", "value": "https://wiki.example/ops"},
                           "content_digest": digest}],
        },
        "evidence": {"evidence_ref": "ev:ops-calendar", "evidence_digest": digest,
                     "citation_ids": ["cit1"]},
    }


async def call(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call one tool; its envelope's value (exits on a failure envelope)."""
    result = await client.call_tool(tool, arguments)
    envelope: dict[str, Any] = result.structured_content or {}
    if not envelope.get("ok"):
        raise SystemExit(f"{tool} failed: {envelope.get('error')}")
    value: dict[str, Any] = envelope["output"]["value"]
    return value


async def remember(deployment: Deployment, text: str) -> str:
    """Turn 1: list the granted tools, capture, request admission; the record id."""
    async with memory_session(deployment.mcp_url,
                              agent_turn_minter(deployment, "agent-writer")) as client:
        print("granted tools:", [t.name for t in (await client.list_tools()).tools])
        captured = await call(client, "engram_memory_capture", capture_arguments(text))
        admitted = await call(client, "engram_memory_request_admission", {
            "candidate_id": captured["candidate_id"],
            "idempotency_key": "host-example-admit-" + secrets.token_hex(8)})
        print("admission:", admitted["outcome"]["status"])
        return str(admitted["outcome"]["record_id"])


async def recall(deployment: Deployment, query: str) -> list[str]:
    """Turn 2 (another agent, another token): search; the record ids found."""
    async with memory_session(deployment.mcp_url,
                              agent_turn_minter(deployment, "agent-reader")) as client:
        found = await call(client, "engram_memory_search",
                           {"query": query, "purpose_ref": PURPOSE})
        return [packet["record"]["record_id"] for packet in found["records"]]


def human_decision(host: HostClient, workspace: str, ref: str, review_url: str,
                   approve_as: str | None, wait_s: float) -> str:
    """The confirmation's decided state: approved by ``approve_as`` (a scripted reviewer),
    or by a person on the review page while this host waits."""
    if approve_as:
        # The gate takes a decision once the request is delivered (awaiting_decision).
        host.wait_while(ref, workspace_id=workspace, states=("requested",))
        return str(host.decide_confirmation(ref, workspace_id=workspace, decision="approve",
                                            approver=approve_as)["state"])
    print(f"waiting for a human: approve {ref} on {review_url}")
    decided = host.wait_while(ref, workspace_id=workspace, states=WAITING_STATES,
                              timeout_s=wait_s, poll_s=1)
    return str(decided["state"])


async def forget(deployment: Deployment, record_id: str, approve_as: str | None,
                 wait_s: float) -> dict[str, Any]:
    """Turn 3: the host asks a human to confirm the exact forget, then the agent sends it
    under a token carrying the confirmation reference; the receipt."""
    host = host_client(deployment)
    arguments = {"record_id": record_id,
                 "idempotency_key": "host-example-forget-" + secrets.token_hex(8),
                 "reason_ref": "reason:user-request"}
    ref = str(host.request_confirmation(workspace_id=deployment.workspace,
                                        capability="forget", principal=PRINCIPAL,
                                        arguments=arguments, ttl_seconds=300)["elicitationRef"])
    state = human_decision(host, deployment.workspace, ref,
                           deployment.base_url + "/host/review", approve_as, wait_s)
    if state != "approved":
        raise SystemExit(f"the forget was not approved ({state})")
    async with memory_session(deployment.mcp_url, agent_turn_minter(
            deployment, "agent-writer", confirmation_ref=ref)) as client:
        return await call(client, "engram_memory_forget", arguments)


async def main_async(deployment: Deployment, approve_as: str | None, wait_s: float) -> None:
    """The three turns."""
    marker = "sunday" + secrets.token_hex(3)
    record_id = await remember(deployment, f"{FACT} ({marker})")
    found = await recall(deployment, f"staging database refresh {marker}")
    print("search found it:", record_id in found)
    receipt = await forget(deployment, record_id, approve_as, wait_s)
    print("forget:", receipt["receipt"]["to_state"])
    after = await recall(deployment, f"staging database refresh {marker}")
    print(f"ok: {record_id} remembered, found, forgotten" if record_id not in after
          else "still found after the forget")


def main() -> None:
    """Parse the arguments and run the three turns."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-home", type=Path, default=Path(os.environ.get(
        "ENGRAM_LOCAL_HOME", Path.home() / ".engram-memory")),
        help="the home of `make serve` (its host key and local.json)")
    parser.add_argument("--workspace", default="default")
    parser.add_argument("--approve-as", help="decide the confirmation as this approver "
                        "(default: wait for a person on the review page)")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for a human")
    args = parser.parse_args()
    deployment = local_deployment(args.local_home, args.workspace)
    asyncio.run(main_async(deployment, args.approve_as, args.wait))


if __name__ == "__main__":
    main()
