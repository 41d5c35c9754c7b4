"""Independent reads in one round trip: a strongly consistent BatchGetItem over both tables.

A use case names the items it needs at once (``ReadRequest``); they are fetched together
and mapped back (``ReadResult``). BatchGetItem reads each item consistently but not as one
snapshot; the services check what must agree, and every decision is fenced by the commit's
conditions anyway (docs/write_path.md, "Round trips"). Keys DynamoDB leaves unprocessed
(throttling, the 16 MB response cap) are asked for again, with backoff, a bounded number
of times; past that the read is ``RATE_LIMITED`` like any throttled read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate_read
from engram_memory.adapters.dynamodb import items as it
from engram_memory.adapters.dynamodb.confirmations import confirmation_from_item, confirmation_key
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import RateLimited
from engram_memory.domain.journal import JournalHead
from engram_memory.services.ports.write import ReadRequest, ReadResult

MAX_KEYS_PER_CALL = 100  # DynamoDB's BatchGetItem limit
UNPROCESSED_ATTEMPTS = 5
_BASE_DELAY_S = 0.02

ItemKey = tuple[str, str, str]  # (table, pk, sk)


def batch_get(client: Any, wanted: Sequence[ItemKey],
              sleep: Callable[[float], None] = time.sleep) -> dict[ItemKey, dict[str, Any]]:
    """The items found among ``wanted`` (strongly consistent), by (table, pk, sk)."""
    found: dict[ItemKey, dict[str, Any]] = {}
    unique = list(dict.fromkeys(wanted))
    for start in range(0, len(unique), MAX_KEYS_PER_CALL):
        _fetch(client, unique[start:start + MAX_KEYS_PER_CALL], found, sleep)
    return found


def _fetch(client: Any, keys: Sequence[ItemKey], found: dict[ItemKey, dict[str, Any]],
           sleep: Callable[[float], None]) -> None:
    request: dict[str, Any] = {}
    for table, pk, sk in keys:
        request.setdefault(table, {"Keys": [], "ConsistentRead": True})["Keys"].append(
            it.key(pk, sk))
    for attempt in range(UNPROCESSED_ATTEMPTS):
        try:
            response = client.batch_get_item(RequestItems=request)
        except AWS_FAILURES as exc:
            raise translate_read(exc) from exc
        for table, rows in response.get("Responses", {}).items():
            for item in rows:
                found[(table, it.text(item, "pk"), it.text(item, "sk"))] = dict(item)
        request = response.get("UnprocessedKeys") or {}
        if not request:
            return
        sleep(_BASE_DELAY_S * (2 ** attempt))
    raise RateLimited


def read_together(client: Any, main: str, keys_table: str, scope: Scope,
                  request: ReadRequest) -> ReadResult:
    """Every item ``request`` names, in one BatchGetItem (more only past 100 keys)."""
    wanted = _keys_of(main, keys_table, scope, request)
    found = batch_get(client, list(wanted.values()))
    return _result(request, {name: found.get(key) for name, key in wanted.items()})


def _keys_of(main: str, keys_table: str, scope: Scope,
             request: ReadRequest) -> dict[str, ItemKey]:
    pk = it.scope_pk(scope)
    wanted: dict[str, ItemKey] = {}
    if request.idempotency is not None:
        principal, key = request.idempotency
        wanted["idempotency"] = (main, it.idempotency_pk(scope, principal), f"KEY#{key}")
    if request.candidate_id is not None:
        wanted["candidate"] = (main, pk, it.candidate_sk(request.candidate_id))
    if request.wrapped_key_of is not None:
        wanted["wrapped_key"] = (keys_table, it.key_pk(scope),
                                 it.candidate_sk(request.wrapped_key_of))
    if request.chunks is not None:
        candidate_id, count = request.chunks
        for index in range(count):
            wanted[f"chunk{index}"] = (main, pk, it.blob_sk(candidate_id, index))
    if request.record_id is not None:
        wanted["record"] = (main, pk, it.record_sk(request.record_id))
    if request.tombstone_of is not None:
        wanted["tombstone"] = (main, pk, it.tombstone_sk(request.tombstone_of))
    if request.head:
        wanted["head"] = (main, it.journal_pk(scope), it.HEAD_SK)
    if request.confirmation_ref is not None:
        approval = confirmation_key(scope, request.confirmation_ref)
        wanted["confirmation"] = (main, approval["pk"], approval["sk"])
    return wanted


def _result(request: ReadRequest, got: Mapping[str, dict[str, Any] | None]) -> ReadResult:
    idem, candidate, wrapped = got.get("idempotency"), got.get("candidate"), got.get("wrapped_key")
    record, head, confirmation = got.get("record"), got.get("head"), got.get("confirmation")
    chunks: list[bytes] = []
    for index in range(request.chunks[1] if request.chunks else 0):
        chunk = got.get(f"chunk{index}")
        if chunk is None:
            break  # the chunks read are the leading ones present
        chunks.append(bytes(chunk["ct"]["B"]))
    return ReadResult(
        idempotency=None if idem is None else it.to_idempotency(idem),
        candidate=None if candidate is None else it.to_candidate(candidate),
        wrapped_key=None if wrapped is None else bytes(wrapped["wrapped"]["B"]),
        chunks=tuple(chunks),
        record=None if record is None else it.to_record(record),
        tombstone=got.get("tombstone") is not None,
        head=(None if not request.head else JournalHead() if head is None else JournalHead(
            cursor=it.number(head, "cursor"), event_digest=it.text(head, "event_digest"))),
        confirmation=None if confirmation is None else confirmation_from_item(confirmation),
    )
