"""The contract's error catalog as one exception hierarchy.

Every error carries the contract ``code``, whether it is ``retriable`` and a constant,
sanitized ``message`` as class attributes. The edge maps an exception to the failure
envelope by class (walking ``__mro__``), never by message text, and never shows
``str(exc)`` of anything that is not an ``EngramError``.
"""

from __future__ import annotations

from typing import ClassVar


class EngramError(Exception):
    """Root of every error the contract can report."""

    code: ClassVar[str] = "STORE_UNAVAILABLE"
    retriable: ClassVar[bool] = True
    message: ClassVar[str] = "The memory store is unavailable."

    def __init__(self) -> None:
        # The constant message only: a caller's detail never travels with the error.
        super().__init__(self.message)




class InvalidSchema(EngramError):
    """The arguments violate the closed schema, a bound or a cross-reference."""

    code = "INVALID_SCHEMA"
    retriable = False
    message = "The arguments do not match the tool's schema."


class InvalidDigest(EngramError):
    """A digest is not `sha256:` followed by 64 lowercase hex digits."""

    code = "INVALID_DIGEST"
    retriable = False
    message = "A digest is malformed."


class Unauthorized(EngramError):
    """The bound principal lacks the permission for this operation."""

    code = "UNAUTHORIZED"
    retriable = False
    message = "The operation is not authorized."


class AuthorizationExpired(EngramError):
    """The authorization expired."""

    code = "AUTHORIZATION_EXPIRED"
    retriable = False
    message = "The authorization has expired."


class AuthorizationRevoked(EngramError):
    """The authorization was revoked."""

    code = "AUTHORIZATION_REVOKED"
    retriable = False
    message = "The authorization has been revoked."


class NotFound(EngramError):
    """Unknown, out of scope, or not currently eligible: indistinguishable by design."""

    code = "NOT_FOUND"
    retriable = False
    message = "The target is not available."


class DigestConflict(EngramError):
    """The idempotency key was already used with another intent."""

    code = "DIGEST_CONFLICT"
    retriable = False
    message = "The idempotency key was already used for a different operation."


class IllegalTransition(EngramError):
    """The lifecycle state forbids this move."""

    code = "ILLEGAL_TRANSITION"
    retriable = False
    message = "The lifecycle state does not allow this operation."


class AlreadyTerminal(EngramError):
    """The target is in a terminal lifecycle state."""

    code = "ALREADY_TERMINAL"
    retriable = False
    message = "The target is already in a terminal state."


class MutationOutcomeUnknown(EngramError):
    """The mutation may have committed; retry with the same key and arguments."""

    code = "MUTATION_OUTCOME_UNKNOWN"
    retriable = True
    message = "The outcome of the mutation is unknown; retry with the same idempotency key."


class GateFailed(EngramError):
    """No valid host confirmation (or policy gate) for this operation."""

    code = "gate_failed"
    retriable = False
    message = "The confirmation gate is not satisfied."


class StalePage(EngramError):
    """The page cursor no longer matches; start a new search."""

    code = "STALE_PAGE"
    retriable = False
    message = "The page cursor is stale; start a new search without page_cursor."


class ResultTooLarge(EngramError):
    """The page cannot fit the packet budget."""

    code = "RESULT_TOO_LARGE"
    retriable = False
    message = "The result does not fit the packet budget."


class ProjectionOversized(EngramError):
    """A single record cannot fit the packet budget."""

    code = "PROJECTION_OVERSIZED"
    retriable = False
    message = "A record does not fit the packet budget."


class RateLimited(EngramError):
    """Too many requests."""

    code = "RATE_LIMITED"
    retriable = True
    message = "Too many requests; back off and retry."


class DeadlineExceeded(EngramError):
    """The host deadline passed before the operation completed."""

    code = "DEADLINE_EXCEEDED"
    retriable = True
    message = "The deadline was exceeded."


class Cancelled(EngramError):
    """The host cancelled the operation."""

    code = "CANCELLED"
    retriable = True
    message = "The operation was cancelled."


class StoreUnavailable(EngramError):
    """The store could not be reached or failed transiently."""

    code = "STORE_UNAVAILABLE"
    retriable = True
    message = "The memory store is unavailable."


class FenceLost(EngramError):
    """The scope head kept moving; the write lost its fence."""

    code = "FENCE_LOST"
    retriable = True
    message = "A concurrent write won; retry with the same idempotency key."


class CursorGap(EngramError):
    """The journal cursor has a gap."""

    code = "CURSOR_GAP"
    retriable = True
    message = "The journal cursor has a gap."


class PolicyUnavailable(EngramError):
    """The host admission or retention policy cannot be reached."""

    code = "POLICY_UNAVAILABLE"
    retriable = True
    message = "The host policy is unavailable."


class PolicyStale(EngramError):
    """The host policy changed since the candidate was captured."""

    code = "POLICY_STALE"
    retriable = True
    message = "The host policy changed; retry."


class ProjectionStale(EngramError):
    """The search projection is behind canonical state."""

    code = "PROJECTION_STALE"
    retriable = True
    message = "The search projection is stale; retry."


class RankingUnavailable(EngramError):
    """A required ranking channel is unavailable; no silent fallback."""

    code = "RANKING_UNAVAILABLE"
    retriable = True
    message = "A required ranking channel is unavailable."


class CapabilityUnavailable(EngramError):
    """A capability the operation needs is not available in this deployment."""

    code = "CAPABILITY_UNAVAILABLE"
    retriable = False
    message = "A required capability is unavailable."


class JournalCorrupt(EngramError):
    """The journal hash chain does not verify."""

    code = "JOURNAL_CORRUPT"
    retriable = False
    message = "The journal failed verification."


class BlobMissing(EngramError):
    """Stored material that must exist is missing."""

    code = "BLOB_MISSING"
    retriable = False
    message = "Stored material is missing."


class RegistryVersionUnavailable(EngramError):
    """The registry version is unavailable."""

    code = "REGISTRY_VERSION_UNAVAILABLE"
    retriable = False
    message = "The registry version is unavailable."


class BackupInvalid(EngramError):
    """A backup failed verification."""

    code = "BACKUP_INVALID"
    retriable = False
    message = "The backup is invalid."


class RestoreRefused(EngramError):
    """A restore was refused."""

    code = "RESTORE_REFUSED"
    retriable = False
    message = "The restore was refused."


class MigrationLedgerInvalid(EngramError):
    """The migration ledger failed verification."""

    code = "MIGRATION_LEDGER_INVALID"
    retriable = False
    message = "The migration ledger is invalid."


ALL_ERRORS: tuple[type[EngramError], ...] = tuple(
    cls for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, EngramError) and cls is not EngramError
)
CATALOG: dict[str, type[EngramError]] = {cls.code: cls for cls in ALL_ERRORS}
