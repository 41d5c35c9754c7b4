"""lexical_and_semantic end to end: the local service (as `make serve` starts it), the
official MCP client, the committed ONNX model, moto's S3 Vectors; nothing fetched."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Any

from engram_memory.local.service import RunningService

from tests.support.semantic import MODEL_DIR

from .conftest import PURPOSE, connect
from .test_memory_flow import capture_arguments, value

RECORD = "Backoff policy for the billing service: exponential, capped at five attempts."
QUERY = "what did we agree on for payment failures"
BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}


def test_a_paraphrase_is_found_over_mcp_with_the_semantic_channel(
    service: RunningService,
) -> None:
    tok = service.mint(workspace="ws2", purpose_ref=PURPOSE,
                       capabilities=["search", "capture", "request_admission"])
    model_sha = json.loads((MODEL_DIR / "MANIFEST.json").read_text())["files"]["model.onnx"]

    async def journey() -> tuple[str, dict[str, Any], dict[str, Any]]:
        async with connect(service.mcp_url, tok, "auto") as client:
            captured = value(await client.call_tool(
                "engram_memory_capture", capture_arguments(f"{RECORD} ({secrets.token_hex(3)})")))
            admitted = value(await client.call_tool("engram_memory_request_admission", {
                "candidate_id": captured["candidate_id"],
                "idempotency_key": "e2e-sem-admit-" + secrets.token_hex(8)}))
            record_id = str(admitted["outcome"]["record_id"])
            deadline = time.monotonic() + 30
            while True:  # the projector (embedding included) is asynchronous
                found = value(await client.call_tool("engram_memory_search", {
                    "query": QUERY, "purpose_ref": PURPOSE, "capability_policy": BOTH}))
                ids = [p["record"]["record_id"] for p in found["records"]]
                if record_id in ids or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.3)
            lexical = value(await client.call_tool("engram_memory_search", {
                "query": QUERY, "purpose_ref": PURPOSE}))
            return record_id, found, lexical

    record_id, found, lexical = asyncio.run(journey())
    assert found["records"][0]["record"]["record_id"] == record_id
    semantic = [c for c in found["rank_receipt"]["channels"] if c["channel"] == "semantic"]
    assert semantic[0]["version"] == "sha256:" + model_sha
    assert record_id not in [p["record"]["record_id"] for p in lexical["records"]]
