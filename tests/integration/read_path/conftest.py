"""Read-path fixtures: real write-path handlers create records, the projector is drained.

Records are created through the capture and request_admission Lambda handlers, forgotten
through the forget handler with a real approved confirmation item consumed by the real
DynamoDB confirmation gate, and projected by draining the main table's stream into the
projector handler. Time is a controllable clock shared by every service.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Scope, Tool
from engram_memory.local.inprocess_invoker import (
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.projector_pump import drain

from tests.fixtures.contract_fixtures import (
    PURPOSE_REF,
    VALID_T_MS,
    valid_capture_args,
    valid_forget_args,
)
from tests.integration.conftest import AwsEnv
from tests.support.confirmations import approved_item
from tests.support.events import PRINCIPAL, make_event

START_MS = VALID_T_MS + 30 * 24 * 3600 * 1000  # one month inside every record's valid time


@dataclass
class ManualClock:
    """A clock the test moves."""

    now: int = START_MS

    def now_ms(self) -> int:
        """The current test time."""
        return self.now


def payload_args(text: str, key: str, decision_text: str | None = None,
                 **payload_changes: Any) -> dict[str, Any]:
    """Capture arguments with a distinct context text and idempotency key."""
    args = valid_capture_args(text=text, idempotency_key=key)
    if decision_text is not None:
        args = valid_capture_args(text=text, idempotency_key=key, decision_text=decision_text)
    args["payload"].update(copy.deepcopy(payload_changes))
    return args


@dataclass
class ReadPath:
    """Drives the Lambda handlers of one mocked tenant."""

    aws: AwsEnv
    clock: ManualClock
    handlers: dict[str, Any] = field(default_factory=dict)
    counter: int = 0

    def handler(self, name: str) -> Any:
        """``lambda_handler`` of ``functions/<name>/handler.py``."""
        handler = self.handlers.get(name)
        if handler is None:
            handler = load_handler(default_functions_dir(), name)
            assert handler is not None
            self.handlers[name] = handler
        return handler

    def call(self, tool: Tool, args: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        """Invoke ``functions/<tool>/handler.py`` with an internal event; the envelope."""
        envelope: dict[str, Any] = self.handler(tool.value)(
            make_event(tool, args, **ctx), LocalLambdaContext(function_name=tool.value))
        return envelope

    def admit(self, text: str, decision_text: str | None = None, **payload_changes: Any) -> str:
        """Capture + request admission (policy accepts); the new record id."""
        self.counter += 1
        key = f"read-path-capture-{self.counter:04d}"
        captured = self.call(Tool.CAPTURE,
                             payload_args(text, key, decision_text, **payload_changes))
        assert captured["ok"], captured
        candidate_id = captured["output"]["value"]["candidate_id"]
        admitted = self.call(Tool.REQUEST_ADMISSION, {
            "candidate_id": candidate_id, "idempotency_key": f"read-path-admit-{self.counter:04d}",
        })
        assert admitted["ok"], admitted
        outcome = admitted["output"]["value"]["outcome"]
        assert outcome["status"] == "accepted", outcome
        return str(outcome["record_id"])

    def call_capture_only(self, text: str) -> dict[str, Any]:
        """Capture without asking for admission (the candidate stays pending)."""
        self.counter += 1
        return self.call(Tool.CAPTURE, payload_args(text, f"read-path-pending-{self.counter:04d}"))

    def call_search_with_purpose(self, query: str, purpose_ref: str) -> dict[str, Any]:
        """Search whose argument purpose differs from the host-bound one."""
        return self.call(Tool.SEARCH, {"query": query, "purpose_ref": purpose_ref})

    def record_item(self, record_id: str) -> dict[str, Any]:
        """The raw main-table record item."""
        s = self.aws.settings
        item = self.aws.dynamodb.get_item(TableName=s.table_name, ConsistentRead=True, Key={
            "pk": {"S": f"SCOPE#{s.tenant_id}#ws-main"}, "sk": {"S": f"REC#{record_id}"},
        })["Item"]
        return dict(item)

    def forget(self, record_id: str) -> dict[str, Any]:
        """Forget with a human approval already recorded for exactly this call."""
        self.counter += 1
        args = valid_forget_args(record_id=record_id,
                                 idempotency_key=f"read-path-forget-{self.counter:04d}")
        ref = f"approval-{self.counter:04d}"
        s = self.aws.settings
        self.aws.dynamodb.put_item(TableName=s.table_name, Item=approved_item(
            Scope(s.tenant_id, "ws-main"), ref, Tool.FORGET, args, principal=PRINCIPAL,
            now_ms=self.clock.now_ms()))
        envelope = self.call(Tool.FORGET, args, confirmation_ref=ref)
        assert envelope["ok"], envelope
        return envelope

    def search(self, query: str, **args: Any) -> dict[str, Any]:
        """engram_memory_search with the default purpose."""
        return self.call(Tool.SEARCH, {"query": query, "purpose_ref": PURPOSE_REF, **args})

    def call_search(self, args: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        """engram_memory_search with the default purpose and context overrides."""
        return self.call(Tool.SEARCH, {"purpose_ref": PURPOSE_REF, **args}, **ctx)

    def call_get(self, args: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        """engram_memory_get with the default purpose and context overrides."""
        return self.call(Tool.GET, {"purpose_ref": PURPOSE_REF, **args}, **ctx)

    def get(self, record_id: str, **ctx: Any) -> dict[str, Any]:
        """engram_memory_get with the default purpose."""
        return self.call(Tool.GET, {"record_id": record_id, "purpose_ref": PURPOSE_REF}, **ctx)

    def rewire(self) -> None:
        """Re-apply the test ports after the environment changed (bootstrap was reset)."""
        bootstrap.override(clock=self.clock)
        self.handlers.clear()

    def project(self) -> int:
        """Run the projector until the stream is empty."""
        return drain(self.aws.settings)


def ids(envelope: dict[str, Any]) -> list[str]:
    """Record ids of a successful search envelope, in rank order."""
    assert envelope["ok"], envelope
    return [p["record"]["record_id"] for p in envelope["output"]["value"]["records"]]


def error_code(envelope: dict[str, Any]) -> str:
    """The error code of a failure envelope."""
    assert not envelope["ok"], envelope
    return str(envelope["error"]["code"])


@pytest.fixture
def read_path(aws: AwsEnv) -> ReadPath:
    """Handlers wired with a manual clock and the real DynamoDB confirmation gate."""
    path = ReadPath(aws=aws, clock=ManualClock())
    path.rewire()
    return path
