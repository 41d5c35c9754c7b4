"""The four write use cases wired to the in-memory adapters (no AWS, no moto).

Only the KMS key vault and the store/gate are in-memory adapters; the services, the
sealer, the policy and the verifier are the production ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engram_memory.adapters.crypto.aead import AesGcmSealer
from engram_memory.adapters.memory.gate import MemoryConfirmationGate
from engram_memory.adapters.memory.key_vault import MemoryKeyVault
from engram_memory.adapters.memory.store import InMemoryStore
from engram_memory.adapters.memory.tables import MemoryTables
from engram_memory.contract.invocation import ContextModel
from engram_memory.contract.validation import canonical_arguments, validate_arguments
from engram_memory.domain.context import InvocationContext, Scope, Tool
from engram_memory.domain.intent import operation_digest, target_of
from engram_memory.services.admission import AdmissionService
from engram_memory.services.capture import CaptureLimits, CaptureService
from engram_memory.services.forget import ForgetService
from engram_memory.services.policy import AssertedEvidenceVerifier, SettingsAdmissionPolicy
from engram_memory.services.withdraw import WithdrawService

from tests.fixtures.contract_fixtures import (
    valid_capture_args,
    valid_forget_args,
    valid_request_admission_args,
    valid_withdraw_args,
)
from tests.support.events import PRINCIPAL, TENANT_ID, WORKSPACE_ID, make_context

SCOPE = Scope(TENANT_ID, WORKSPACE_ID)
NOW_MS = 1_800_000_000_000


@dataclass
class ManualClock:
    """Epoch ms the test sets."""

    now: int = NOW_MS

    def now_ms(self) -> int:
        """The pinned instant."""
        return self.now


@dataclass
class MemoryWorld:
    """One tenant's write path in memory: call a tool, approve a call, look at the items."""

    mode: str = "accept"
    tables: MemoryTables = field(default_factory=MemoryTables)
    clock: ManualClock = field(default_factory=ManualClock)

    def __post_init__(self) -> None:
        ports: dict[str, Any] = {"store": InMemoryStore(self.tables),
                                 "gate": MemoryConfirmationGate(self.tables),
                                 "clock": self.clock, "sleep": lambda _: None}
        crypto: dict[str, Any] = {"key_vault": MemoryKeyVault(), "sealer": AesGcmSealer(),
                                  "policy": SettingsAdmissionPolicy("default", "1", self.mode)}
        self.store = ports["store"]
        self.services: dict[Tool, Any] = {
            Tool.CAPTURE: CaptureService(limits=CaptureLimits(False, 365 * 86_400_000,
                                                              frozenset()), **crypto, **ports),
            Tool.REQUEST_ADMISSION: AdmissionService(verifier=AssertedEvidenceVerifier(),
                                                     **crypto, **ports),
            Tool.WITHDRAW: WithdrawService(**ports),
            Tool.FORGET: ForgetService(**ports),
        }

    def call(self, tool: Tool, args: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        """Run ``tool``'s use case as its handler would; its value (errors raise)."""
        context: InvocationContext = ContextModel(**make_context(**ctx)).to_context()
        model = validate_arguments(tool, args)
        result: dict[str, Any] = self.services[tool].execute(context, model)
        return result

    def approve(self, tool: Tool, args: dict[str, Any], ref: str,
                principal: str = PRINCIPAL) -> str:
        """A human approval of exactly this call; its reference."""
        canonical = canonical_arguments(validate_arguments(tool, args))
        self.tables.approve(SCOPE, ref, tool=tool, target=target_of(tool, canonical),
                            operation_digest=operation_digest(tool, canonical),
                            principal=principal, approved_at_ms=self.clock.now - 1000)
        return ref

    def capture(self, text: str, key: str = "capture-key-0001-unit") -> str:
        """A pending candidate; its id."""
        return str(self.call(Tool.CAPTURE, valid_capture_args(
            text=text, idempotency_key=key))["candidate_id"])

    def admit(self, candidate_id: str, key: str = "admission-key-0001-unit") -> dict[str, Any]:
        """request_admission's outcome."""
        args = valid_request_admission_args(candidate_id=candidate_id, idempotency_key=key)
        return dict(self.call(Tool.REQUEST_ADMISSION, args)["outcome"])


def withdraw_args(candidate_id: str, key: str = "withdraw-key-0001-unit") -> dict[str, Any]:
    """Valid withdraw arguments."""
    return valid_withdraw_args(candidate_id=candidate_id, idempotency_key=key)


def forget_args(record_id: str, key: str = "forget-key-0001-unit") -> dict[str, Any]:
    """Valid forget arguments."""
    return valid_forget_args(record_id=record_id, idempotency_key=key)
