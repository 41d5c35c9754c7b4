"""Issue 26 item 3: search keeps answering, fresh, through a burst of 500 writes.

The local service runs as `make serve` does: its stream pump feeds the projector handler
in a thread while 250 capture + admission pairs go through the tool handlers (in process,
as bench/harness.Bench.direct calls them, in a workspace of its own). A search every 10
pairs and right after the burst must find the record just admitted, never
PROJECTION_STALE. Before issue 26 the projector fell more than 200 events (the old tail
bound) behind in such a burst.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.domain.context import Scope, Tool
from engram_memory.local.inprocess_invoker import (
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.service import RunningService

from tests.fixtures.contract_fixtures import valid_capture_args
from tests.support.events import make_event

from .conftest import PURPOSE, TENANT

WORKSPACE = "ws2"
PAIRS = 250  # two writes each: 500 writes
SEARCH_EVERY = 10
BURST_SECONDS = 900.0  # the loop's bound in time; a few minutes on the shared 2-core box


def _call(tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
    handler = load_handler(default_functions_dir(), tool.value)
    assert handler is not None
    event = make_event(tool, args, tenant_id=TENANT, workspace_id=WORKSPACE,
                       purpose_ref=PURPOSE, principal="user:importer")
    envelope: dict[str, Any] = handler(json.loads(json.dumps(event)),
                                       LocalLambdaContext(tool.value))
    return envelope


def _admit(n: int) -> str:
    note = f"Burst note {n}: the kestrel{n} importer copies wiki pages into memory."
    captured = _call(Tool.CAPTURE, valid_capture_args(
        text=note, decision_text=note, purpose_ref=PURPOSE,
        idempotency_key=f"burst-capture-{n:06d}"))
    assert captured["ok"], captured
    admitted = _call(Tool.REQUEST_ADMISSION, {
        "candidate_id": captured["output"]["value"]["candidate_id"],
        "idempotency_key": f"burst-admission-{n:06d}"})
    assert admitted["ok"], admitted
    return str(admitted["output"]["value"]["outcome"]["record_id"])


def _search(query: str, **args: Any) -> dict[str, Any]:
    return _call(Tool.SEARCH, {"query": query, "purpose_ref": PURPOSE, **args})


def _ids(envelope: dict[str, Any]) -> list[str]:
    assert envelope["ok"], envelope  # never PROJECTION_STALE, nor any other error
    return [p["record"]["record_id"] for p in envelope["output"]["value"]["records"]]


def _lag(service: RunningService) -> int:
    """Events the projector is behind: journal head minus the projection's watermark."""
    scope = Scope(TENANT, WORKSPACE)
    client = bootstrap.dynamodb_client()
    head = client.get_item(TableName=service.settings.table_name, ConsistentRead=True, Key={
        "pk": {"S": f"JOURNAL#{scope.key}"}, "sk": {"S": "HEAD"}}).get("Item", {})
    stats = client.get_item(TableName=service.settings.projection_table_name,
                            ConsistentRead=True, Key={"pk": {"S": f"STATS#{space(scope)}"},
                                                      "sk": {"S": "STATS"}}).get("Item", {})
    return int(head.get("cursor", {"N": "0"})["N"]) - int(stats.get("wm", {"N": "0"})["N"])


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_search_answers_fresh_results_through_a_burst_of_500_writes(
        service: RunningService) -> None:
    assert not service.stop_event.is_set()  # the projector pump is running
    started = time.monotonic()
    lags: list[int] = []
    record_id = ""
    for n in range(PAIRS):
        assert time.monotonic() - started < BURST_SECONDS, f"{n} pairs only"
        record_id = _admit(n)
        if n % SEARCH_EVERY == SEARCH_EVERY - 1:
            lags.append(_lag(service))
            assert _ids(_search(f"kestrel{n} importer"))[0] == record_id, (n, lags)
    lags.append(_lag(service))
    # Right after the burst: the newest record, and the burst by its common words.
    assert _ids(_search(f"kestrel{PAIRS - 1}"))[0] == record_id
    assert len(_ids(_search("importer wiki", limit=50, max_packet_bytes=1_048_576))) == 50
    print(f"burst: {PAIRS} pairs ({2 * PAIRS} writes) in {time.monotonic() - started:.1f} s;"
          f" projector lag at each search (events): max {max(lags)}, {lags}")
