"""capture → request_admission → search → get against a running local service.

    make serve                                   # terminal 1
    export TOKEN=$(.venv/bin/engram-memory token --purpose purpose:demo \\
        --capabilities search,get,capture,request_admission)
    .venv/bin/python examples/quickstart.py      # terminal 2

Uses the official MCP Python SDK client over streamable HTTP (``--mode legacy`` speaks the
initialize-era protocol, ``auto`` negotiates).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import secrets
import time
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TEXT = "Deploys go out from the release branch only, after the smoke suite passes."


def capture_arguments(purpose: str) -> dict[str, Any]:
    """A capture of one decision with one citation (a fresh idempotency key per run)."""
    digest = "sha256:" + hashlib.sha256(TEXT.encode()).hexdigest()
    now_ms = int(time.time() * 1000)
    return {
        "idempotency_key": "quickstart-capture-" + secrets.token_hex(8),
        "payload": {
            "schema_version": 2,
            "purpose_ref": purpose,
            "valid_time": {"t": now_ms - 60_000},
            "components": [{"component_id": "c1", "kind": "decision", "text": TEXT,
                            "citation_ids": ["cit1"]}],
            "primary_component_id": "c1",
            "primary_event": {"at": now_ms, "type_ref": "event:decided", "citation_id": "cit1"},
            "citations": [{"citation_id": "cit1", "source_ref": "doc:release-runbook",
                           "locator": {"scheme": "url", "value": "https://wiki.example/runbook"},
                           "content_digest": digest}],
        },
        "evidence": {"evidence_ref": "ev:runbook", "evidence_digest": digest,
                     "citation_ids": ["cit1"]},
    }


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool and print its envelope; the envelope's value (raises on a failure)."""
    result = await client.call_tool(tool, arguments)
    envelope: dict[str, Any] = result.structured_content or {}
    print(f"{tool}: {json.dumps(envelope)[:300]}")
    if not envelope.get("ok"):
        raise SystemExit(f"{tool} failed: {envelope.get('error')}")
    value: dict[str, Any] = envelope["output"]["value"]
    return value


async def run(url: str, token: str, purpose: str, mode: str) -> str:
    """The four steps; the record id found by search and read by get."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        print("tools:", [t.name for t in (await client.list_tools()).tools])
        captured = await call(client, "engram_memory_capture", capture_arguments(purpose))
        admitted = await call(client, "engram_memory_request_admission", {
            "candidate_id": captured["candidate_id"],
            "idempotency_key": "quickstart-admit-" + secrets.token_hex(8),
        })
        record_id = str(admitted["outcome"]["record_id"])
        # Search sees its writes at once: no wait, no retry (docs/search.md).
        found = await call(client, "engram_memory_search",
                           {"query": "release branch smoke suite", "purpose_ref": purpose})
        if not any(p["record"]["record_id"] == record_id for p in found["records"]):
            raise SystemExit("the admitted record was not in the first search")
        got = await call(client, "engram_memory_get",
                         {"record_id": record_id, "purpose_ref": purpose})
        return str(got["record"]["record_id"])


def main() -> None:
    """Parse flags and run the session."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8787/mcp")
    parser.add_argument("--purpose", default="purpose:demo")
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"])
    args = parser.parse_args()
    record_id = asyncio.run(run(args.url, os.environ["TOKEN"], args.purpose, args.mode))
    print("ok: found and read", record_id)


if __name__ == "__main__":
    main()
