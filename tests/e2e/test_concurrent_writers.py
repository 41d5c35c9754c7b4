"""Concurrent writers on the local service: every acknowledged capture is committed.

moto as it ships serves requests from several threads at once, and a TransactWriteItems
whose condition fails restores table copies over whatever another thread committed
meanwhile: captures were acknowledged and then gone from the store. The local service
makes its moto serializable (engram_memory.local.moto_dynamodb); this drives it with
several SDK clients at once, each its own session, over HTTP.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.context import Scope
from engram_memory.domain.journal import verify_chain
from engram_memory.local.service import RunningService

from .conftest import PURPOSE, TENANT, connect
from .test_memory_flow import capture_arguments

WORKSPACE = "ws2"
CLIENTS = 8
CAPTURES_PER_CLIENT = 5


async def _writer(url: str, token: str, writer: int) -> list[str]:
    """Capture in a loop; the candidate ids the service acknowledged."""
    acknowledged = []
    async with connect(url, token, "auto") as client:
        for n in range(CAPTURES_PER_CLIENT):
            text = f"Concurrent note {writer}.{n} on queue retries {secrets.token_hex(4)}."
            result = await client.call_tool("engram_memory_capture", capture_arguments(text))
            envelope: dict[str, Any] = result.structured_content
            # The journal head is contended: the service retries a lost commit itself,
            # so at this concurrency no agent is told FENCE_LOST (issue 25).
            assert envelope["ok"], envelope["error"]
            acknowledged.append(str(envelope["output"]["value"]["candidate_id"]))
    return acknowledged


async def _all_writers(url: str, token: str) -> list[str]:
    batches = await asyncio.gather(*(_writer(url, token, w) for w in range(CLIENTS)))
    return [candidate for batch in batches for candidate in batch]


def test_every_capture_acknowledged_to_concurrent_clients_is_committed(
        service: RunningService) -> None:
    token = service.mint(workspace=WORKSPACE, purpose_ref=PURPOSE, capabilities=["capture"])
    acknowledged = asyncio.run(_all_writers(service.mcp_url, token))
    assert len(acknowledged) == CLIENTS * CAPTURES_PER_CLIENT
    events = bootstrap.store().journal_events(Scope(TENANT, WORKSPACE))
    verify_chain(events)
    journaled = {e.body["subject"]["candidate_id"] for e in events
                 if e.body["operation"] == "capture"}
    assert set(acknowledged) <= journaled
    assert len(set(acknowledged)) == len(acknowledged)
