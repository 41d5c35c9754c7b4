"""The ONLY code that reads DynamoDB ``ClientError`` codes and botocore failures.

Reads: throttling → RATE_LIMITED; anything else from the service or the network
(EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, …) → STORE_UNAVAILABLE.
Conditional single-item writes (confirmation items): a failed condition → the caller's
error, anything else as a read. Commits (TransactWriteItems): cancellation reasons are read
by element index — a failed condition on the idempotency item, the journal head/event, the state
items or the confirmation item becomes CommitConflict (the service re-reads) or GateFailed;
a transport failure (timeout, dropped connection) or a service error other than a
cancellation or throttling means the commit may have happened → MUTATION_OUTCOME_UNKNOWN,
and a retry with the same key then returns the stored result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.adapters.dynamodb.items import ElementKind
from engram_memory.domain.errors import (
    EngramError,
    GateFailed,
    MutationOutcomeUnknown,
    RateLimited,
    StoreUnavailable,
)
from engram_memory.domain.journal import JournalHead
from engram_memory.services.ports import CommitConflict, ConflictKind

THROTTLING_CODES = frozenset({
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "LimitExceededException",
    "ProvisionedThroughputExceeded",  # as a cancellation reason code
    "ThrottlingError",
})
CONDITION_FAILED = "ConditionalCheckFailedException"
_CONFLICT_BY_KIND = {
    ElementKind.IDEMPOTENCY: ConflictKind.IDEMPOTENCY,
    ElementKind.HEAD: ConflictKind.HEAD,
    ElementKind.STATE: ConflictKind.STATE,
}


def error_code(exc: ClientError) -> str:
    """The service error code of a ClientError."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def translate_read(exc: ClientError | BotoCoreError) -> EngramError:
    """A failed read (or non-transactional write) → the contract's retriable error."""
    if isinstance(exc, ClientError) and error_code(exc) in THROTTLING_CODES:
        return RateLimited()
    return StoreUnavailable()


def translate_conditional(exc: ClientError | BotoCoreError,
                          on_condition: type[EngramError]) -> EngramError:
    """A failed conditional single-item write → ``on_condition``, else as a read.

    A connection or timeout failure is STORE_UNAVAILABLE (retriable): the single item's
    condition makes a retry of a write that did land fail as ``on_condition``.
    """
    if isinstance(exc, ClientError) and error_code(exc) == CONDITION_FAILED:
        return on_condition()
    return translate_read(exc)


def translate_commit(
    exc: ClientError | BotoCoreError,
    kinds: Sequence[ElementKind],
    head_of: Callable[[Mapping[str, Any]], JournalHead] | None = None,
) -> EngramError:
    """A failed TransactWriteItems → conflict, gate failure, or retriable/unknown outcome.

    With ``head_of``, a conflict on the journal head alone carries the head that won (the
    head element asks for ALL_OLD on a failed condition), so the caller rebuilds on it
    without reading it again.
    """
    if isinstance(exc, BotoCoreError):
        # The request may have reached DynamoDB and committed before the failure.
        return MutationOutcomeUnknown()
    if error_code(exc) != "TransactionCanceledException":
        # Throttling is a refusal before anything is applied; any other service error (a
        # 500 after the SDK's retries, ...) may follow a commit that landed: unknown.
        if error_code(exc) in THROTTLING_CODES:
            return RateLimited()
        return MutationOutcomeUnknown()
    reasons = exc.response.get("CancellationReasons") or []
    codes = [str(reason.get("Code", "None")) for reason in reasons]
    failed = {kinds[i] for i, code in enumerate(codes)
              if code == "ConditionalCheckFailed" and i < len(kinds)}
    if ElementKind.IDEMPOTENCY in failed:
        # Someone committed this key meanwhile: re-reading it answers replay or conflict.
        return CommitConflict(frozenset(_CONFLICT_BY_KIND[k] for k in failed
                                        if k in _CONFLICT_BY_KIND))
    if ElementKind.CONFIRMATION in failed:
        return GateFailed()
    if failed == {ElementKind.HEAD} and head_of is not None:
        item = reasons[kinds.index(ElementKind.HEAD)].get("Item")
        return CommitConflict(frozenset({ConflictKind.HEAD}),
                              head=head_of(item) if item else None)
    if failed:
        return CommitConflict(frozenset(_CONFLICT_BY_KIND[k] for k in failed))
    if "TransactionConflict" in codes:
        # A concurrent transaction touched the same items: rebuild on a fresh head.
        return CommitConflict(frozenset({ConflictKind.HEAD}))
    if any(code in THROTTLING_CODES for code in codes):
        return RateLimited()
    return StoreUnavailable()
