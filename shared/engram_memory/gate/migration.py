"""``POST /host/migrations/mem0``: bring a batch of mem0 memories in as captures.

Each memory goes through the very capture and request_admission functions an agent's call
reaches (invoked like the host adjudication, never a write path of its own), under the
service principal ``host:migration``: the capture screens secrets and seals the content,
admission applies the workspace's policy. The capture's idempotency key is derived from the
mem0 id (``migration:mem0:{id}``), and its reservation, committed in the capture's own
transaction and never expired, is the migration ledger: a rerun replays it (nothing is
written twice), and the same id with other content is a digest conflict, reported as
MIGRATION_LEDGER_INVALID. Results carry ids and contract codes only, never content.

Work per request is bounded twice: at most ``MAX_BATCH`` memories (and the host API's body
cap), and a memory is only started while the invocation has ``SECONDS_PER_MEMORY`` left.
What is not started is answered ``deferred``; a retriable failure is answered ``retry`` and
defers the rest. The client sends both again; the ledger makes that safe, so time decides
how much one request does, never what the migration writes.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from engram_memory.contract.invocation import ContextModel, ToolInvocation
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import EngramError, MigrationLedgerInvalid
from engram_memory.domain.principals import MIGRATION_PRINCIPAL
from engram_memory.gate.adjudication import value_of
from engram_memory.mcp.dispatch import ToolInvoker
from engram_memory.screening.secrets import find_secret

logger = logging.getLogger(__name__)

MAX_BATCH = 25
"""Memories per request at most (two function invocations each)."""
MAX_BATCH_BYTES = 512 * 1024
"""Largest batch body the client sends (the route itself takes the host API's 4 MiB cap)."""
SECONDS_PER_MEMORY = 8
"""A memory is only started while an invoke may still wait this long (two invocations and
the answer): otherwise it, and the rest of the batch, are ``deferred``."""
SOURCE_PREFIX = "mem0:"
CAPTURE_KEY_PREFIX = "migration:mem0:"
ADMISSION_KEY_PREFIX = "migration:mem0:admit:"
CITATION_ID = "cit-mem0"
COMPONENT_ID = "c-memory"
INVOCATION_BUDGET_MS = 20_000
MEM0_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$"


def _text(value: str) -> str:
    size = len(value.encode("utf-8", errors="strict"))
    if not 1 <= size <= 65_536 or not unicodedata.is_normalized("NFC", value):
        raise ValueError("not a memory text")
    return value


def _owner(value: str) -> str:
    size = len(value.encode("utf-8", errors="strict"))
    if not 1 <= size <= 256 or not unicodedata.is_normalized("NFC", value):
        raise ValueError("not an owner id")
    return value


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Mem0Memory(_Closed):
    """One mem0 memory as the import sends it (the fields that are mapped, nothing else)."""

    id: Annotated[str, Field(pattern=MEM0_ID_PATTERN)]
    memory: Annotated[str, AfterValidator(_text)]
    created_at_ms: Annotated[int, Field(ge=0, le=2**53 - 1)] | None = None
    updated_at_ms: Annotated[int, Field(ge=0, le=2**53 - 1)] | None = None
    user_id: Annotated[str, AfterValidator(_owner)] | None = None
    agent_id: Annotated[str, AfterValidator(_owner)] | None = None

    @model_validator(mode="after")
    def _has_a_time(self) -> Mem0Memory:
        if self.created_at_ms is None and self.updated_at_ms is None:
            raise ValueError("a memory needs created_at or updated_at")
        return self

    @property
    def valid_from_ms(self) -> int:
        """When the memory, as worded, became true: its last update, else its creation."""
        found = self.updated_at_ms if self.updated_at_ms is not None else self.created_at_ms
        assert found is not None  # the validator guarantees one
        return found


class Mem0Batch(_Closed):
    """``POST /host/migrations/mem0``: up to ``MAX_BATCH`` memories for one workspace."""

    workspace_id: Annotated[str, Field(min_length=1, max_length=512, pattern=r"^[^#]+$")]
    purpose_ref: Annotated[str, Field(min_length=1, max_length=512)]
    memories: Annotated[list[Mem0Memory], Field(min_length=1, max_length=MAX_BATCH)]


Status = Literal["imported", "already_present", "held", "rejected", "refused", "retry",
                 "deferred"]


class MigrationItem(_Closed):
    """What became of one memory: ids and contract codes only."""

    id: str
    status: Status
    code: str | None = None
    record_id: str | None = None
    candidate_id: str | None = None


class MigrationBatchResult(_Closed):
    """The answer to one batch, in the order the memories came."""

    results: list[MigrationItem]


def sha256(text: str) -> str:
    """The ``sha256:`` digest of a text's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _locator(memory: Mem0Memory) -> dict[str, str]:
    if memory.agent_id is not None:
        return {"scheme": "mem0-agent", "value": memory.agent_id}
    if memory.user_id is not None:
        return {"scheme": "mem0-user", "value": memory.user_id}
    return {"scheme": "mem0", "value": memory.id}


def capture_arguments(purpose_ref: str, memory: Mem0Memory) -> dict[str, Any]:
    """The capture a mem0 memory becomes: one context component citing ``mem0:<id>``."""
    at = memory.valid_from_ms
    source = SOURCE_PREFIX + memory.id
    content_digest = sha256(memory.memory)
    return {
        "idempotency_key": CAPTURE_KEY_PREFIX + memory.id,
        "payload": {
            "schema_version": 2,
            "purpose_ref": purpose_ref,
            "valid_time": {"t": at},
            "components": [{"component_id": COMPONENT_ID, "kind": "context",
                            "text": memory.memory, "citation_ids": [CITATION_ID]}],
            "primary_component_id": COMPONENT_ID,
            "primary_event": {"at": at, "type_ref": "event:mem0-memory",
                              "citation_id": CITATION_ID},
            "citations": [{"citation_id": CITATION_ID, "source_ref": source,
                           "locator": _locator(memory), "content_digest": content_digest}],
        },
        "evidence": {"evidence_ref": source, "evidence_digest": content_digest,
                     "citation_ids": [CITATION_ID]},
    }


def carries_secret(memory: Mem0Memory) -> bool:
    """True when any text of the memory that would be stored holds a credential."""
    texts = (memory.memory, memory.id, memory.user_id or "", memory.agent_id or "")
    return any(find_secret(text) is not None for text in texts)


class Mem0Migrator:
    """Imports batches through the capture and request_admission functions."""

    def __init__(self, invoker: ToolInvoker, now_ms: Callable[[], int],
                 new_audit_id: Callable[[], str],
                 seconds_left: Callable[[], float] = lambda: float("inf")) -> None:
        """Bind the invoker (lambda:Invoke or in-process), the clock, audit ids and the time
        an invoke may still wait in the current request (unbounded unless told)."""
        self._invoker = invoker
        self._now_ms = now_ms
        self._new_audit_id = new_audit_id
        self._seconds_left = seconds_left

    def __call__(self, scope: Scope, batch: Mem0Batch, operator: str) -> dict[str, Any]:
        """Import the batch in order, as far as this request may go; the JSON-ready result."""
        items: list[MigrationItem] = []
        for index, memory in enumerate(batch.memories):
            if index and (items[-1].status == "retry"
                          or self._seconds_left() < SECONDS_PER_MEMORY):
                items += [MigrationItem(id=later.id, status="deferred")
                          for later in batch.memories[index:]]
                break
            items.append(self._one(scope, batch.purpose_ref, memory, operator))
        return MigrationBatchResult(results=items).model_dump(exclude_none=True)

    def _one(self, scope: Scope, purpose_ref: str, memory: Mem0Memory,
             operator: str) -> MigrationItem:
        if carries_secret(memory):
            return MigrationItem(id=memory.id, status="refused", code="INVALID_SCHEMA")
        try:
            captured = self._invoke(scope, purpose_ref, operator, Tool.CAPTURE,
                                    capture_arguments(purpose_ref, memory))
            candidate_id = str(captured["candidate_id"])
            admitted = self._invoke(scope, purpose_ref, operator, Tool.REQUEST_ADMISSION, {
                "candidate_id": candidate_id,
                "idempotency_key": ADMISSION_KEY_PREFIX + memory.id})
        except EngramError as exc:
            if exc.retriable:  # nothing is known to be half done: the ledger replays it
                logger.info("migration item to retry", extra={"error_code": exc.code})
                return MigrationItem(id=memory.id, status="retry", code=exc.code)
            code = (MigrationLedgerInvalid.code if exc.code == "DIGEST_CONFLICT" else exc.code)
            logger.info("migration item refused", extra={"error_code": code})
            return MigrationItem(id=memory.id, status="refused", code=code)
        outcome = admitted["outcome"]
        record_id = outcome.get("record_id")
        return MigrationItem(id=memory.id, status=_status(admitted),
                             record_id=record_id if isinstance(record_id, str) else None,
                             candidate_id=candidate_id)

    def _invoke(self, scope: Scope, purpose_ref: str, operator: str, tool: Tool,
                arguments: dict[str, Any]) -> dict[str, Any]:
        budget_ms = min(INVOCATION_BUDGET_MS, max(0.0, self._seconds_left()) * 1000)
        context = ContextModel(
            tenant_id=scope.tenant_id, workspace_id=scope.workspace_id,
            principal=MIGRATION_PRINCIPAL, agent_id="mem0-import", session_id=operator,
            purpose_ref=purpose_ref, audit_id=self._new_audit_id(),
            deadline_ms=self._now_ms() + int(budget_ms),
            capabilities=sorted((Tool.CAPTURE.value, Tool.REQUEST_ADMISSION.value)))
        event = ToolInvocation(tool=tool, context=context, arguments=arguments)
        return value_of(self._invoker.invoke(tool, event.model_dump(mode="json")))


def _status(admitted: Mapping[str, Any]) -> Status:
    """An acceptance committed by this request is ``imported``; one the ledger replays
    (settled by an earlier run or attempt) is ``already_present``."""
    found = admitted["outcome"].get("status")
    if found == "pending_adjudication":
        return "held"
    if found == "rejected":
        return "rejected"
    if found == "accepted" and admitted.get("replayed") is not True:
        return "imported"
    return "already_present"
