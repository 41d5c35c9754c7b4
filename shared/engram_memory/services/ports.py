"""The ports the write-path services need, as Protocols injected by argument.

Adapters implement them (``adapters/dynamodb``, ``adapters/kms``, ``adapters/crypto``);
``bootstrap`` wires concrete ones. A store commit is described store-neutrally by a
:class:`MutationPlan` (idempotency entry, journal event, state changes, consumed
confirmation); the DynamoDB adapter maps it to ONE ``TransactWriteItems``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from engram_memory.domain.errors import FenceLost, GateFailed
from engram_memory.services.confirmation import REF_RE, Confirmation

if TYPE_CHECKING:
    from engram_memory.domain.context import InvocationContext, Scope, Tool
    from engram_memory.domain.journal import JournalEvent, JournalHead
    from engram_memory.domain.records import Record


class Clock(Protocol):
    """The time source (tests control it)."""

    def now_ms(self) -> int:
        """Epoch milliseconds."""
        ...


@dataclass(frozen=True, slots=True)
class DataKey:
    """A fresh data key: the plaintext (memory only) and its KMS-wrapped form."""

    plaintext: bytes
    wrapped: bytes
    key_id: str


class KeyVault(Protocol):
    """Envelope-encryption keys under the tenant key."""

    def generate_data_key(self, context: Mapping[str, str]) -> DataKey:
        """A new AES-256 data key bound to the encryption ``context``."""
        ...

    def decrypt_data_key(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        """Unwrap a data key (the same ``context`` must be given)."""
        ...


class Sealer(Protocol):
    """Authenticated encryption of candidate material."""

    def seal(self, key: bytes, plaintext: bytes, aad: bytes) -> bytes:
        """Encrypt and authenticate ``plaintext`` bound to ``aad``."""
        ...

    def open(self, key: bytes, sealed: bytes, aad: bytes) -> bytes:
        """Decrypt ``sealed``; BlobMissing when it does not authenticate."""
        ...


@dataclass(frozen=True, slots=True)
class PolicyDescriptor:
    """Which admission policy decides, and which version of it."""

    policy_id: str
    version: str


class PolicyDecision(StrEnum):
    """What an admission policy may decide."""

    ACCEPT = "accept"
    REJECT = "reject"
    ADJUDICATE = "adjudicate"


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """What a policy and a verifier see: the decrypted candidate, in memory only."""

    scope: Scope
    candidate_id: str
    payload: Mapping[str, Any]
    evidence: Mapping[str, Any]


class AdmissionPolicy(Protocol):
    """The host's admission policy (PolicyUnavailable when it cannot be reached)."""

    def descriptor(self) -> PolicyDescriptor:
        """The policy id and version this function currently runs."""
        ...

    def decide(self, request: AdmissionRequest) -> PolicyDecision:
        """Accept, reject or ask a human to adjudicate."""
        ...


@dataclass(frozen=True, slots=True)
class TrustVerdict:
    """The trust class the host assigns (never the agent) and who assigned it."""

    trust_class: str
    verifier_id: str


class EvidenceVerifier(Protocol):
    """Checks citations and evidence; assigns the trust class."""

    def verify(self, request: AdmissionRequest) -> TrustVerdict:
        """The verdict on a candidate's evidence."""
        ...


@dataclass(frozen=True, slots=True)
class GateConsumption:
    """The human approval a gated commit consumes, in the same atomic commit.

    The store commits it only if the confirmation ``confirmation_ref`` is approved for
    exactly this tool, target, operation digest and principal, inside its window at
    ``at_ms``, and not yet consumed; otherwise the whole commit fails with GateFailed.
    """

    scope: Scope
    confirmation_ref: str
    tool: Tool
    target: str
    operation_digest: str
    principal: str
    audit_id: str
    at_ms: int

    @classmethod
    def of(cls, ctx: InvocationContext, tool: Tool, target: str, operation_digest: str,
           now_ms: int) -> GateConsumption:
        """The approval ``ctx`` names for this call; GateFailed when it names none.

        Whether that approval exists, is this call's and is unused is the commit's own
        condition, so a call that goes through reads nothing here.
        """
        ref = ctx.confirmation_ref
        if ref is None or REF_RE.fullmatch(ref) is None:
            raise GateFailed
        return cls(scope=ctx.scope, confirmation_ref=ref, tool=tool, target=target,
                   operation_digest=operation_digest, principal=ctx.principal,
                   audit_id=ctx.audit_id, at_ms=now_ms)


class ConfirmationGate(Protocol):
    """Reads of the confirmation gate: why a gated call was refused.

    The approval itself is consumed by the commit (:class:`GateConsumption`), so a gated
    call that goes through reads nothing here. (withdraw and forget read their approval
    beside their target, ``ReadRequest.confirmation_ref``, to refuse before the state.)
    """

    def explain_refusal(
        self,
        ctx: InvocationContext,
        tool: Tool,
        target: str,
        operation_digest: str,
        now_ms: int,
    ) -> None:
        """After the element cancelled a commit: DigestConflict when it was an approval of
        this very call with other arguments (CONTRACT §3.5); otherwise return (gate_failed).
        """
        ...


# --- the store --------------------------------------------------------------------------


class ConflictKind(StrEnum):
    """Why a commit was cancelled by a concurrent writer."""

    IDEMPOTENCY = "idempotency"  # the key was taken meanwhile: re-read → replay or conflict
    HEAD = "head"  # the journal moved: rebuild the event on the new head
    STATE = "state"  # the target's state moved: re-read and report the contract outcome


class CommitConflict(FenceLost):
    """A commit lost a race; the service re-reads (escaping, it is FENCE_LOST).

    ``head``: the journal head that beat this commit, when the store could tell (DynamoDB
    hands back the head item with the cancellation), so the rebuild needs no re-read.
    """

    def __init__(self, kinds: frozenset[ConflictKind], head: JournalHead | None = None) -> None:
        self.kinds = kinds
        self.head = head
        super().__init__()


@dataclass(frozen=True, slots=True)
class IdempotencyEntry:
    """A committed idempotency reservation and the result it returns on replay."""

    tool: str
    intent_digest: str
    result: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CandidateEntry:
    """A candidate's metadata (never its content)."""

    candidate_id: str
    state: str
    blob_chunks: int
    record_digest: str
    payload_digest: str
    policy_id: str
    policy_version: str
    captured_at_ms: int
    held: bool = False
    """Pending and held for the host's adjudication (``pending_adjudication``: the admission
    policy left it to a human); a candidate no admission has looked at yet is not held."""


@dataclass(frozen=True, slots=True)
class RecordEntry:
    """A record's state and digests (the content stays in the item)."""

    record_id: str
    state: str
    record_digest: str
    payload_digest: str
    parts: int


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """Items of one scope a use case needs at once, read in ONE round trip.

    Each field names an item to read (None: not wanted). ``chunks`` reads the first
    ``count`` ciphertext chunks of a candidate, ``head`` the journal head.
    """

    idempotency: tuple[str, str] | None = None  # (principal, key)
    candidate_id: str | None = None
    wrapped_key_of: str | None = None
    chunks: tuple[str, int] | None = None  # (candidate_id, count)
    record_id: str | None = None
    tombstone_of: str | None = None  # a payload digest
    head: bool = False
    confirmation_ref: str | None = None  # a well-formed ref (REF_RE): the gate's approval item


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What a ``ReadRequest`` found (None / False / a short ``chunks`` when absent)."""

    idempotency: IdempotencyEntry | None = None
    candidate: CandidateEntry | None = None
    wrapped_key: bytes | None = None
    chunks: tuple[bytes, ...] = ()
    record: RecordEntry | None = None
    tombstone: bool = False
    head: JournalHead | None = None
    confirmation: Confirmation | None = None


@dataclass(frozen=True, slots=True)
class PutCandidate:
    """Capture: a new pending candidate, its sealed material and its wrapped key."""

    entry: CandidateEntry
    sealed: bytes
    wrapped_key: bytes
    key_id: str
    cursor: int


@dataclass(frozen=True, slots=True)
class MoveCandidate:
    """A candidate state change; ``shred`` deletes its wrapped key and ciphertext."""

    candidate_id: str
    from_state: str
    to_state: str
    shred: bool
    blob_chunks: int
    decision_receipt: Mapping[str, Any] | None = None
    record_id: str | None = None

    @property
    def is_hold(self) -> bool:
        """A hold: the candidate stays pending, now waiting for the host's adjudication."""
        return self.to_state == self.from_state


@dataclass(frozen=True, slots=True)
class PutRecord:
    """Admission: the new record (state accepted_current)."""

    record: Record
    payload_digest: str
    valid_t: int
    valid_t_end: int | None
    expires_at_ms: int | None
    cursor: int
    trust_binding: Mapping[str, Any]
    # With an expiry, the same commit writes the sparse expiry index item (docs/expiry.md).
    derivative_rule: str = "make-ineligible"


@dataclass(frozen=True, slots=True)
class TombstoneRecord:
    """Forget: the record becomes tombstoned, its content removed, the guard written."""

    record_id: str
    from_state: str
    payload_digest: str
    parts: int
    cursor: int
    at_ms: int


@dataclass(frozen=True, slots=True)
class DueExpiry:
    """An expiry index entry: a record whose ``expires_at`` is due (docs/expiry.md)."""

    record_id: str
    expires_at_ms: int
    derivative_rule: str


@dataclass(frozen=True, slots=True)
class ExpireRecord:
    """Expiry: state → expired (content removed unless ``retain``), index entry deleted."""

    due: DueExpiry
    from_state: str
    parts: int
    remove_content: bool
    cursor: int
    at_ms: int


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A forget or withdrawal as the forget ledger keeps it (docs/forget-ledger.md).

    Ids, digests, the journal cursor and the instant: never content. Committed in the same
    transaction as the move it records, into a table a restore of the main table leaves alone.
    """

    operation: str
    subject_key: str  # "record_id" (forget) or "candidate_id" (withdraw)
    target_id: str
    cursor: int
    at_ms: int
    digests: Mapping[str, str]


Change = (PutCandidate | MoveCandidate | PutRecord | TombstoneRecord | ExpireRecord
          | LedgerEntry)


@dataclass(frozen=True, slots=True)
class MutationPlan:
    """Everything ONE atomic commit writes."""

    scope: Scope
    principal: str
    idempotency_key: str
    tool: str
    intent_digest: str
    result: Mapping[str, Any]
    head: JournalHead
    event: JournalEvent
    changes: tuple[Change, ...]
    gate: GateConsumption | None = None
    at_ms: int = 0


class MemoryStore(Protocol):
    """Canonical state: reads are strongly consistent; ``commit`` is all-or-nothing.

    ``commit`` raises CommitConflict (lost race), GateFailed (the confirmation element's
    condition failed), MutationOutcomeUnknown (it may have committed), RateLimited or
    StoreUnavailable.
    """

    def get_idempotency(self, scope: Scope, principal: str, key: str) -> IdempotencyEntry | None:
        """The committed reservation of ``key`` for ``principal``, if any."""
        ...

    def get_candidate(self, scope: Scope, candidate_id: str) -> CandidateEntry | None:
        """A candidate's metadata in ``scope``, if any."""
        ...

    def load_sealed(self, scope: Scope, candidate_id: str, chunks: int) -> bytes:
        """A candidate's sealed material (BlobMissing when a chunk is gone)."""
        ...

    def get_wrapped_key(self, scope: Scope, candidate_id: str) -> bytes | None:
        """A candidate's wrapped data key, if not shredded."""
        ...

    def get_record(self, scope: Scope, record_id: str) -> RecordEntry | None:
        """A record's state and digests in ``scope``, if any."""
        ...

    def has_tombstone(self, scope: Scope, payload_digest: str) -> bool:
        """True when a record with this effective payload digest was forgotten."""
        ...

    def journal_head(self, scope: Scope) -> JournalHead:
        """The scope's journal head (cursor 0 when empty)."""
        ...

    def read_together(self, scope: Scope, request: ReadRequest) -> ReadResult:
        """Every item ``request`` names, strongly consistent, in one round trip.

        Each item is read consistently, but not as one snapshot: a use case that needs two
        items to agree checks it (the commit's conditions fence every decision anyway).
        """
        ...

    def journal_events(self, scope: Scope) -> list[JournalEvent]:
        """Every event of the scope in cursor order (verification, audits)."""
        ...

    def commit(self, plan: MutationPlan) -> None:
        """Apply ``plan`` atomically or not at all."""
        ...
