"""The ONLY code that reads AWS error codes (botocore ``ClientError``) and maps them to
contract errors; every adapter on an AWS client calls it.

One rule for every service: throttling → RATE_LIMITED; a service's own refusal codes (a KMS
key disabled, a Step Functions task no longer awaiting, …) → the error its table names;
anything else from the service or the network (EndpointConnectionError, ConnectTimeoutError,
ReadTimeoutError, …) → STORE_UNAVAILABLE. So one AWS failure reaches the agent as the same
contract code whichever adapter met it.

DynamoDB adds two readings. Conditional single-item writes (confirmation items): a failed
condition → the caller's error, anything else as above. Commits (TransactWriteItems):
cancellation reasons are read by element index — a failed condition on the idempotency item,
the journal head/event, the state items or the confirmation item becomes CommitConflict (the
service re-reads) or GateFailed; a transport failure (timeout, dropped connection) or a
service error other than a cancellation or throttling means the commit may have happened →
MUTATION_OUTCOME_UNKNOWN, and a retry with the same key then returns the stored result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.adapters.dynamodb.items import ElementKind
from engram_memory.domain.errors import (
    BlobMissing,
    CapabilityUnavailable,
    EngramError,
    GateFailed,
    IllegalTransition,
    MutationOutcomeUnknown,
    RateLimited,
    StoreUnavailable,
)
from engram_memory.domain.journal import JournalHead
from engram_memory.services.ports.write import CommitConflict, ConflictKind

AwsFailure = ClientError | BotoCoreError
AWS_FAILURES: Final = (ClientError, BotoCoreError)
"""What a boto3 call raises when AWS (or the way to it) fails: catch this tuple."""

THROTTLING_CODES: Final = frozenset({
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "LimitExceededException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceeded",  # as a cancellation reason code
    "ThrottlingError",  # as a cancellation reason code
})
_TRANSACTION_BUSY: Final = frozenset({
    # Another transaction holds the item, or an idempotent transaction is still running.
    "TransactionConflictException", "TransactionInProgressException",
})
_RETRIABLE_REASONS: Final = frozenset({
    "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
})
CONDITION_FAILED: Final = "ConditionalCheckFailedException"
_CANCELLED: Final = "TransactionCanceledException"

Refusals = Mapping[str, Callable[[], EngramError]]

KMS_REFUSALS: Final[Refusals] = {
    **dict.fromkeys(("DisabledException", "KMSInvalidStateException", "NotFoundException",
                     "KeyUnavailableException", "AccessDeniedException"),
                    CapabilityUnavailable),
    # The wrapped key does not open under this key and context: the material is gone.
    **dict.fromkeys(("InvalidCiphertextException", "IncorrectKeyException"), BlobMissing),
}
SECRETS_REFUSALS: Final[Refusals] = dict.fromkeys(
    # Paging cannot be offered safely without the cursor secret.
    ("ResourceNotFoundException", "AccessDeniedException", "AccessDeniedFault",
     "DecryptionFailure", "InvalidRequestException"),
    CapabilityUnavailable,
)
STEPFUNCTIONS_REFUSALS: Final[Refusals] = dict.fromkeys(
    # The task is gone (timed out, already decided) or the token is not ours.
    # (ExecutionAlreadyExists with another input would mean a reused ref: STORE_UNAVAILABLE.)
    ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken"),
    IllegalTransition,
)
_CONFLICT_BY_KIND = {
    ElementKind.IDEMPOTENCY: ConflictKind.IDEMPOTENCY,
    ElementKind.HEAD: ConflictKind.HEAD,
    ElementKind.STATE: ConflictKind.STATE,
}


def error_code(exc: AwsFailure) -> str:
    """The service error code of a ClientError ("" for a transport failure)."""
    if not isinstance(exc, ClientError):
        return ""
    return str(exc.response.get("Error", {}).get("Code", ""))


def sdk_retried(exc: AwsFailure) -> bool:
    """True when botocore sent the request more than once before this answer."""
    if not isinstance(exc, ClientError):
        return False
    return int(exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0) > 0


def is_throttling(exc: AwsFailure) -> bool:
    """True when AWS refused the call for its rate (nothing was applied)."""
    return error_code(exc) in THROTTLING_CODES


def is_transaction_busy(exc: AwsFailure) -> bool:
    """True when a DynamoDB item was inside another transaction: retry after a pause."""
    return error_code(exc) in _TRANSACTION_BUSY


def is_cancelled(exc: AwsFailure) -> bool:
    """True for a cancelled TransactWriteItems (its reasons: :func:`cancellation_codes`)."""
    return error_code(exc) == _CANCELLED


def cancellation_codes(exc: AwsFailure) -> list[str]:
    """The reason code of each element of a cancelled transaction, in element order."""
    if not isinstance(exc, ClientError):
        return []
    reasons = exc.response.get("CancellationReasons") or []
    return [str(reason.get("Code", "None")) for reason in reasons]


def is_retriable_reason(code: str) -> bool:
    """True when a cancellation reason clears with time (a conflict, throttling)."""
    return code in _RETRIABLE_REASONS


def condition_failed(exc: AwsFailure) -> bool:
    """True when a write's condition failed (single item, or any element of a transaction)."""
    code = error_code(exc)
    if code == CONDITION_FAILED:
        return True
    return code == _CANCELLED and "ConditionalCheckFailed" in cancellation_codes(exc)


def translate(exc: AwsFailure, refusals: Refusals | None = None) -> EngramError:
    """An AWS failure → throttling RATE_LIMITED, a code of ``refusals`` its error, else
    STORE_UNAVAILABLE (retriable)."""
    code = error_code(exc)
    if code in THROTTLING_CODES:
        return RateLimited()
    if refusals and code in refusals:
        return refusals[code]()
    return StoreUnavailable()


def translate_kms(exc: AwsFailure) -> EngramError:
    """A failed KMS call (GenerateDataKey, Decrypt)."""
    return translate(exc, KMS_REFUSALS)


def translate_secrets(exc: AwsFailure) -> EngramError:
    """A failed Secrets Manager GetSecretValue."""
    return translate(exc, SECRETS_REFUSALS)


def translate_stepfunctions(exc: AwsFailure) -> EngramError:
    """A failed Step Functions StartExecution / SendTaskSuccess / SendTaskFailure."""
    return translate(exc, STEPFUNCTIONS_REFUSALS)


def translate_read(exc: AwsFailure) -> EngramError:
    """A failed DynamoDB read (or non-transactional write) → the contract's retriable error."""
    return translate(exc)


def translate_conditional(exc: AwsFailure, on_condition: type[EngramError]) -> EngramError:
    """A failed conditional single-item write → ``on_condition``, else as a read.

    A connection or timeout failure is STORE_UNAVAILABLE (retriable): the single item's
    condition makes a retry of a write that did land fail as ``on_condition``.
    """
    if error_code(exc) == CONDITION_FAILED:
        return on_condition()
    return translate(exc)


def translate_commit(
    exc: AwsFailure,
    kinds: Sequence[ElementKind],
    head_of: Callable[[Mapping[str, Any]], JournalHead] | None = None,
) -> EngramError:
    """A failed TransactWriteItems → conflict, gate failure, or retriable/unknown outcome.

    With ``head_of``, a conflict on the journal head alone carries the head that won (the
    head element asks for ALL_OLD on a failed condition), so the caller rebuilds on it
    without reading it again.
    """
    if not isinstance(exc, ClientError):
        # The request may have reached DynamoDB and committed before the failure.
        return MutationOutcomeUnknown()
    if not is_cancelled(exc):
        # Throttling is a refusal before anything is applied; any other service error (a
        # 500 after the SDK's retries, ...) may follow a commit that landed: unknown.
        if is_throttling(exc):
            return RateLimited()
        return MutationOutcomeUnknown()
    reasons = exc.response.get("CancellationReasons") or []
    codes = cancellation_codes(exc)
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
