"""Postings and their per-term df counters, written together so df is always exact.

Every posting write is one transaction pair: ``Put`` the posting only if it is absent plus
``ADD df 1`` on the term's counter; every delete: ``Delete`` only if present plus
``ADD df -1``. So ``df(term)`` = the number of posting items of the term at every instant,
and a replayed write (posting already there, or already gone) cancels instead of counting
twice. Pairs go 25 to a transaction (50 actions, under the 100-action limit); a cancelled
transaction is retried without the pairs whose condition failed (read from its
CancellationReasons), and after a conflict or throttling with backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engram_memory.adapters.aws_errors import (
    AWS_FAILURES,
    AwsFailure,
    cancellation_codes,
    is_cancelled,
    is_retriable_reason,
    is_throttling,
    is_transaction_busy,
    translate,
)
from engram_memory.domain.errors import RateLimited, StoreUnavailable

_PAIRS_PER_TRANSACTION = 25
_MAX_ATTEMPTS = 8


def df_key(scope_key: str, term: str) -> dict[str, Any]:
    """Key of a term's df counter (its own partition: no scope-wide hot key)."""
    return {"pk": {"S": f"DF#{scope_key}#{term}"}, "sk": {"S": "DF"}}


@dataclass(frozen=True, slots=True)
class PostingChange:
    """One posting to put (with its item) or delete (item None), under ``term``."""

    term: str
    key: dict[str, Any]
    item: dict[str, Any] | None = None


class PostingWriter:
    """Applies posting changes with their df counter, replay-safely."""

    def __init__(self, client: Any, table_name: str, scope_key: str,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._table = table_name
        self._scope_key = scope_key
        self._sleep = sleep

    def apply(self, changes: Sequence[PostingChange]) -> None:
        """Apply every change; one already applied (a replay) is skipped, not recounted."""
        for chunk in _chunks(changes):
            self._apply_chunk(chunk)

    def _apply_chunk(self, chunk: list[PostingChange]) -> None:
        pending = chunk
        for attempt in range(_MAX_ATTEMPTS):
            if not pending:
                return
            try:
                self._client.transact_write_items(
                    TransactItems=[a for c in pending for a in self.actions(c)])
                return
            except AWS_FAILURES as exc:
                pending = self._after_cancel(exc, pending)
            # Conflicts and throttling clear with time: back off before the retry.
            self._sleep(min(0.02 * 2**attempt, 1.0))
        if pending:
            raise RateLimited

    def _after_cancel(self, exc: AwsFailure, pending: list[PostingChange]) -> list[PostingChange]:
        """The changes still to apply after a failed transaction (raises if fatal)."""
        if is_throttling(exc) or is_transaction_busy(exc):
            return pending
        if not is_cancelled(exc):
            raise translate(exc) from exc
        reasons = cancellation_codes(exc)
        if len(reasons) != 2 * len(pending):
            if len(pending) == 1:
                raise StoreUnavailable from exc
            # Reasons not itemized: isolate each change in its own transaction.
            for change in pending:
                self._apply_chunk([change])
            return []
        remaining: list[PostingChange] = []
        for i, change in enumerate(pending):
            posting_code, counter_code = reasons[2 * i], reasons[2 * i + 1]
            if posting_code == "ConditionalCheckFailed":
                continue  # already applied by an earlier attempt: nothing to count
            if any(code != "None" and not is_retriable_reason(code)
                   for code in (posting_code, counter_code)):
                raise StoreUnavailable from exc
            remaining.append(change)
        return remaining

    def actions(self, change: PostingChange) -> list[dict[str, Any]]:
        """The change's two transaction actions: the conditional posting write, its df."""
        if change.item is not None:
            posting: dict[str, Any] = {"Put": {
                "TableName": self._table, "Item": change.item,
                "ConditionExpression": "attribute_not_exists(pk)",
            }}
            delta = "1"
        else:
            posting = {"Delete": {
                "TableName": self._table, "Key": change.key,
                "ConditionExpression": "attribute_exists(pk)",
            }}
            delta = "-1"
        counter = {"Update": {
            "TableName": self._table, "Key": df_key(self._scope_key, change.term),
            "UpdateExpression": "ADD df :d",
            "ExpressionAttributeValues": {":d": {"N": delta}},
        }}
        return [posting, counter]


def _chunks(changes: Sequence[PostingChange]) -> list[list[PostingChange]]:
    """Transactions of at most 25 changes, never two on one term (one counter per item)."""
    chunks: list[list[PostingChange]] = []
    open_terms: list[set[str]] = []
    for change in changes:
        for chunk, terms in zip(chunks, open_terms, strict=True):
            if len(chunk) < _PAIRS_PER_TRANSACTION and change.term not in terms:
                chunk.append(change)
                terms.add(change.term)
                break
        else:
            chunks.append([change])
            open_terms.append({change.term})
    return chunks
