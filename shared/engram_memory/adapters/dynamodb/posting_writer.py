"""Posting blocks and their per-term df counters, written together so df is always exact.

A posting lives in one block (``domain/posting_blocks.py``); changing it rewrites that
block, and the block before it when the record starts a block (a split or a merge). Each
change reads those two blocks (one consistent descending Query of two keys; the changes of
a transaction all at once), recomputes them and writes them back in a transaction whose
``Put``/``Delete`` of each block is conditioned on the block's version still being the one
read (or on there being no such block) and bumps it, beside ``ADD df ±1`` on the term's
counter when the record's posting appeared or disappeared. A split or a merge writes the
block below even when its postings stay the same, so a concurrent writer that planned
against it fails its condition (``posting_blocks.change`` says why that is enough). So
``df(term)`` = the number of postings in the term's blocks at every instant; a replay (the
posting already there, or already gone) writes nothing; two writers never lose each
other's posting nor leave a posting in the wrong block (the loser's condition fails, it
reads again and retries). Changes go 25 to a transaction, one per term (one counter per
term); after a cancellation, a conflict or throttling, the chunk is read and planned again
after a backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from engram_memory.adapters.aws_errors import (
    AWS_FAILURES,
    cancellation_codes,
    is_cancelled,
    is_retriable_reason,
    is_throttling,
    is_transaction_busy,
    translate,
)
from engram_memory.concurrency import in_background
from engram_memory.domain.errors import RateLimited, StoreUnavailable
from engram_memory.domain.posting_blocks import BlockPosting, change, near_range

_CHANGES_PER_TRANSACTION = 25
_MAX_ATTEMPTS = 8
NEAR_READERS = 8
"""A transaction's block reads in flight at once (its changes are on distinct terms)."""
BLOCK_ATTRIBUTE = "p"
"""A block's postings (binary; absent on an empty head block)."""
VERSION_ATTRIBUTE = "v"
"""A block's version: every write conditions on the one it read and bumps it."""


@dataclass(frozen=True, slots=True)
class NearBlock:
    """A block as a change read it."""

    key: str
    data: bytes
    version: int


Near = dict[str, list[NearBlock]]
"""Per term, the blocks a change of it may touch, highest key first."""


def block_bytes(item: dict[str, Any]) -> bytes:
    """The postings of a block item (empty for an empty head)."""
    value = item.get(BLOCK_ATTRIBUTE)
    return bytes(value["B"]) if value else b""


def block_item(key: dict[str, Any], data: bytes, version: int) -> dict[str, Any]:
    """A block item: its key, its postings (none on an empty head) and its version."""
    item = {**key, VERSION_ATTRIBUTE: {"N": str(version)}}
    if data:
        item[BLOCK_ATTRIBUTE] = {"B": data}
    return item


def df_key(scope_key: str, term: str) -> dict[str, Any]:
    """Key of a term's df counter (its own partition: no scope-wide hot key)."""
    return {"pk": {"S": f"DF#{scope_key}#{term}"}, "sk": {"S": "DF"}}


@dataclass(frozen=True, slots=True)
class PostingChange:
    """Put ``entry`` (the record's posting of ``term``) or, when None, delete the record's
    posting from the block of impact ``code``."""

    term: str
    record_id: str
    code: int
    entry: BlockPosting | None = None


class PostingWriter:
    """Applies posting changes to their blocks with their df counters, replay-safely."""

    def __init__(self, client: Any, table_name: str, scope_key: str,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._table = table_name
        self._scope_key = scope_key
        self._sleep = sleep

    def post_key(self, term: str) -> dict[str, Any]:
        """The partition key of a term's blocks."""
        return {"S": f"POST#{self._scope_key}#{term}"}

    def apply(self, changes: Sequence[PostingChange]) -> None:
        """Apply every change; one already applied (a replay) writes nothing."""
        for chunk in _chunks(changes):
            self._apply_chunk(chunk)

    def _apply_chunk(self, chunk: list[PostingChange]) -> None:
        for attempt in range(_MAX_ATTEMPTS):
            actions = self.plan(chunk, self.read_near(chunk))
            if not actions:
                return
            try:
                self._client.transact_write_items(TransactItems=actions)
                return
            except AWS_FAILURES as exc:
                self._check_retriable(exc)
            # Another writer changed a block, or throttling: read again after a pause.
            self._sleep(min(0.02 * 2**attempt, 1.0))
        raise RateLimited

    @staticmethod
    def _check_retriable(exc: Any) -> None:
        """Return when the failed transaction may be planned again; raise otherwise."""
        if is_throttling(exc) or is_transaction_busy(exc):
            return
        if not is_cancelled(exc):
            raise translate(exc) from exc
        codes = cancellation_codes(exc)
        if any(code not in ("None", "ConditionalCheckFailed") and not is_retriable_reason(code)
               for code in codes):
            raise StoreUnavailable from exc

    def read_near(self, changes: Sequence[PostingChange]) -> Near:
        """For every change, the blocks it may touch (consistent reads, all in flight at
        once; ``posting_blocks.near_range``). At most one change per term."""
        futures = {change.term: in_background(partial(self._near, change), width=NEAR_READERS)
                   for change in changes}
        return {term: future.result() for term, future in futures.items()}

    def _near(self, posting: PostingChange) -> list[NearBlock]:
        low, high = near_range(posting.code, posting.record_id)
        try:
            response = self._client.query(
                TableName=self._table, ConsistentRead=True, ScanIndexForward=False, Limit=2,
                KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
                ExpressionAttributeValues={":pk": self.post_key(posting.term),
                                           ":low": {"S": low}, ":high": {"S": high}},
                ProjectionExpression="sk, #p, #v",
                ExpressionAttributeNames={"#p": BLOCK_ATTRIBUTE, "#v": VERSION_ATTRIBUTE})
        except AWS_FAILURES as exc:
            raise translate(exc) from exc
        return [NearBlock(item["sk"]["S"], block_bytes(item), int(item[VERSION_ATTRIBUTE]["N"]))
                for item in response.get("Items", [])[:2]]

    def plan(self, changes: Sequence[PostingChange], near: Near) -> list[dict[str, Any]]:
        """Transaction actions that take the blocks from ``near`` to the changes applied:
        per block written a Put (or Delete) conditioned on the version read (or on there
        being no such block) that bumps the version, and, when the record's posting
        appeared or disappeared, its df delta. Changes already applied give none."""
        actions: list[dict[str, Any]] = []
        for posting in changes:
            blocks = near.get(posting.term, [])
            versions = {block.key: block.version for block in blocks}
            done = change(posting.code, posting.record_id, posting.entry,
                          [(block.key, block.data) for block in blocks])
            pk = self.post_key(posting.term)
            actions.extend(self._block_action({"pk": pk, "sk": {"S": sk}}, versions.get(sk), new)
                           for sk, (_, new) in sorted(done.writes.items()))
            if done.has != done.had:
                actions.append(self._df_action(posting.term, 1 if done.has else -1))
        return actions

    def _block_action(self, key: dict[str, Any], version: int | None,
                      new: bytes | None) -> dict[str, Any]:
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(pk)"} if version is None else
            {"ConditionExpression": "#v = :v",
             "ExpressionAttributeNames": {"#v": VERSION_ATTRIBUTE},
             "ExpressionAttributeValues": {":v": {"N": str(version)}}})
        if new is None:
            return {"Delete": {"TableName": self._table, "Key": key, **condition}}
        return {"Put": {"TableName": self._table,
                        "Item": block_item(key, new, (version or 0) + 1), **condition}}

    def _df_action(self, term: str, delta: int) -> dict[str, Any]:
        return {"Update": {
            "TableName": self._table, "Key": df_key(self._scope_key, term),
            "UpdateExpression": "ADD df :d",
            "ExpressionAttributeValues": {":d": {"N": str(delta)}},
        }}


def _chunks(changes: Sequence[PostingChange]) -> list[list[PostingChange]]:
    """Transactions of at most 25 changes, never two on one term (one counter per item)."""
    chunks: list[list[PostingChange]] = []
    open_terms: list[set[str]] = []
    for posting in changes:
        for chunk, terms in zip(chunks, open_terms, strict=True):
            if len(chunk) < _CHANGES_PER_TRANSACTION and posting.term not in terms:
                chunk.append(posting)
                terms.add(posting.term)
                break
        else:
            chunks.append([posting])
            open_terms.append({posting.term})
    return chunks
