"""Posting blocks and their per-term df counters, written together so df is always exact.

A posting lives in one block (``domain/posting_blocks.py``); changing it rewrites that
block. Each change is read (consistently), recomputed and written back in a transaction
whose ``Put``/``Delete`` of the block is conditioned on the block still holding exactly the
bytes that were read, beside ``ADD df ±1`` on the term's counter when the record's posting
appeared or disappeared. So ``df(term)`` = the number of postings in the term's blocks at
every instant; a replay (the posting already there, or already gone) writes nothing; two
writers of one block never lose each other's posting (the loser's condition fails, it
reads again and retries). Changes go 25 to a transaction, one per term (one counter per
term); after a cancellation, a conflict or throttling, the chunk is read and planned again
after a backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
from engram_memory.domain.errors import RateLimited, StoreUnavailable
from engram_memory.domain.posting_blocks import (
    BlockPosting,
    block_key,
    decode,
    with_posting,
    without_record,
)

_CHANGES_PER_TRANSACTION = 25
_MAX_ATTEMPTS = 8
BLOCK_ATTRIBUTE = "p"


def df_key(scope_key: str, term: str) -> dict[str, Any]:
    """Key of a term's df counter (its own partition: no scope-wide hot key)."""
    return {"pk": {"S": f"DF#{scope_key}#{term}"}, "sk": {"S": "DF"}}


def block_item_key(scope_key: str, term: str, code: int, record_id: str) -> dict[str, Any]:
    """Key of the block holding the record's posting of ``term`` (impact ``code``)."""
    return {"pk": {"S": f"POST#{scope_key}#{term}"}, "sk": {"S": block_key(code, record_id)}}


@dataclass(frozen=True, slots=True)
class PostingChange:
    """Put ``entry`` (the record's posting of ``term``) or, when None, delete the record's
    posting from the block of impact ``code``."""

    term: str
    record_id: str
    code: int
    entry: BlockPosting | None = None


def _cache_key(key: Mapping[str, Any]) -> tuple[str, str]:
    return key["pk"]["S"], key["sk"]["S"]


class PostingWriter:
    """Applies posting changes to their blocks with their df counters, replay-safely."""

    def __init__(self, client: Any, table_name: str, scope_key: str,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._table = table_name
        self._scope_key = scope_key
        self._sleep = sleep

    def key(self, change: PostingChange) -> dict[str, Any]:
        """The block item key a change rewrites."""
        return block_item_key(self._scope_key, change.term, change.code, change.record_id)

    def apply(self, changes: Sequence[PostingChange]) -> None:
        """Apply every change; one already applied (a replay) writes nothing."""
        for chunk in _chunks(changes):
            self._apply_chunk(chunk)

    def _apply_chunk(self, chunk: list[PostingChange]) -> None:
        for attempt in range(_MAX_ATTEMPTS):
            actions = self.plan(chunk, self.read_blocks(chunk))
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

    def read_blocks(self, changes: Sequence[PostingChange]) -> dict[tuple[str, str], bytes]:
        """The current bytes of every block the changes touch (consistent; absent = missing)."""
        keys = list({_cache_key(k): k for k in map(self.key, changes)}.values())
        found: dict[tuple[str, str], bytes] = {}
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {self._table: {
                "Keys": keys[start:start + 100], "ConsistentRead": True,
                "ProjectionExpression": "pk, sk, #p",
                "ExpressionAttributeNames": {"#p": BLOCK_ATTRIBUTE}}}
            for attempt in range(_MAX_ATTEMPTS):
                try:
                    response = self._client.batch_get_item(RequestItems=pending)
                except AWS_FAILURES as exc:
                    raise translate(exc) from exc
                for item in response.get("Responses", {}).get(self._table, []):
                    found[_cache_key(item)] = bytes(item[BLOCK_ATTRIBUTE]["B"])
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
                self._sleep(min(0.05 * 2**attempt, 1.0))
            else:
                raise RateLimited
        return found

    def plan(self, changes: Sequence[PostingChange],
             current: Mapping[tuple[str, str], bytes]) -> list[dict[str, Any]]:
        """Transaction actions that take the blocks from ``current`` to the changes applied:
        per changed block a conditional Put (or Delete when emptied) and, when the record's
        posting appeared or disappeared, its df delta. Changes already applied give none."""
        blocks = dict(current)
        deltas: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
        df_deltas: dict[str, int] = {}
        for change in changes:
            key = self.key(change)
            where = _cache_key(key)
            old = blocks.get(where)
            had = old is not None and any(
                e.posting.record_id == change.record_id for e in decode(old))
            new = (with_posting(old, change.entry) if change.entry is not None
                   else without_record(old, change.record_id))
            if new == (old or b""):
                continue
            blocks[where] = new
            deltas[where] = (key, change.term)
            df_deltas[change.term] = (df_deltas.get(change.term, 0)
                                      + (change.entry is not None) - had)
        actions = [self._block_action(key, current.get(where), blocks[where])
                   for where, (key, _term) in deltas.items()]
        actions += [self._df_action(term, delta) for term, delta in df_deltas.items() if delta]
        return actions

    def _block_action(self, key: dict[str, Any], old: bytes | None,
                      new: bytes) -> dict[str, Any]:
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(pk)"} if old is None else
            {"ConditionExpression": "#p = :old",
             "ExpressionAttributeNames": {"#p": BLOCK_ATTRIBUTE},
             "ExpressionAttributeValues": {":old": {"B": old}}})
        if not new:
            return {"Delete": {"TableName": self._table, "Key": key, **condition}}
        return {"Put": {"TableName": self._table,
                        "Item": {**key, BLOCK_ATTRIBUTE: {"B": new}}, **condition}}

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
    for change in changes:
        for chunk, terms in zip(chunks, open_terms, strict=True):
            if len(chunk) < _CHANGES_PER_TRANSACTION and change.term not in terms:
                chunk.append(change)
                terms.add(change.term)
                break
        else:
            chunks.append([change])
            open_terms.append({change.term})
    return chunks
