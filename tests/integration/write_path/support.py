"""Helpers for the write-path integration tests: call handlers, gates, scans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engram_memory import bootstrap
from engram_memory.contract.validation import canonical_arguments, validate_arguments
from engram_memory.domain.context import InvocationContext, Scope, Tool
from engram_memory.domain.intent import operation_digest
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.capture.handler import lambda_handler as capture_handler
from functions.forget.handler import lambda_handler as forget_handler
from functions.request_admission.handler import lambda_handler as admission_handler
from functions.withdraw.handler import lambda_handler as withdraw_handler
from tests.fixtures.contract_fixtures import (
    valid_capture_args,
    valid_forget_args,
    valid_request_admission_args,
    valid_withdraw_args,
)
from tests.support.events import PRINCIPAL, TENANT_ID, WORKSPACE_ID, make_event

HANDLERS = {
    Tool.CAPTURE: capture_handler,
    Tool.REQUEST_ADMISSION: admission_handler,
    Tool.WITHDRAW: withdraw_handler,
    Tool.FORGET: forget_handler,
}
SCOPE = Scope(TENANT_ID, WORKSPACE_ID)


def lambda_context(tool: Tool) -> LocalLambdaContext:
    """The Lambda context the tool's function receives (Powertools reads it)."""
    return LocalLambdaContext(f"engram-{tool.value}")


def call(tool: Tool, args: Any, **ctx: Any) -> dict[str, Any]:
    """Invoke the tool's Lambda handler with a realistic internal event."""
    envelope = HANDLERS[tool](make_event(tool, args, **ctx), lambda_context(tool))
    # Every envelope must survive JSON: it crosses lambda:Invoke.
    return json.loads(json.dumps(envelope))


def value(envelope: dict[str, Any]) -> dict[str, Any]:
    """The success value (fails the test with the error code otherwise)."""
    assert envelope["ok"] is True, envelope.get("error")
    return dict(envelope["output"]["value"])


def code(envelope: dict[str, Any]) -> str:
    """The failure code (fails the test on success)."""
    assert envelope["ok"] is False, envelope
    return str(envelope["error"]["code"])


def capture(text: str = "The ingest queue retries three times with exponential backoff.",
            key: str = "capture-key-0001-ingest", **ctx: Any) -> dict[str, Any]:
    """Capture distinct content; the value."""
    return value(call(Tool.CAPTURE, valid_capture_args(text=text, idempotency_key=key), **ctx))


def admit(candidate_id: str, key: str = "admission-key-0001-ingest",
          **ctx: Any) -> dict[str, Any]:
    """Request admission; the envelope."""
    args = valid_request_admission_args(candidate_id=candidate_id, idempotency_key=key)
    return call(Tool.REQUEST_ADMISSION, args, **ctx)


def withdraw_args(candidate_id: str, key: str = "withdraw-key-0001-ingest") -> dict[str, Any]:
    """Valid withdraw arguments for ``candidate_id``."""
    return valid_withdraw_args(candidate_id=candidate_id, idempotency_key=key)


def forget_args(record_id: str, key: str = "forget-key-0001-ingest") -> dict[str, Any]:
    """Valid forget arguments for ``record_id``."""
    return valid_forget_args(record_id=record_id, idempotency_key=key)


def op_digest(tool: Tool, args: dict[str, Any]) -> str:
    """The operation digest a human approves for this exact call (host side)."""
    return operation_digest(tool, canonical_arguments(validate_arguments(tool, args)))


@dataclass
class FixedClock:
    """A Clock the test moves by hand."""

    now: int

    def now_ms(self) -> int:
        """The pinned time."""
        return self.now


class ApprovalGate:
    """A ConfirmationGate over approval items the test puts as the workflow would.

    The commit consumes the item through the store's real consuming element (single use,
    bound to tool, target, operation digest and principal); the approval window is open
    for any clock a test pins. A refusal of this gate is always gate_failed.
    """

    def __init__(self, table_name: str, client: Any) -> None:
        self.table_name = table_name
        self.client = client

    def approve(self, dynamodb: Any, ref: str, tool: Tool, target: str, digest: str,
                principal: str = PRINCIPAL) -> None:
        """Record a human approval for one exact call."""
        dynamodb.put_item(TableName=self.table_name, Item={
            "pk": {"S": f"CONF#{SCOPE.key}"}, "sk": {"S": f"REF#{ref}"},
            "elicitation_ref": {"S": ref}, "state": {"S": "approved"},
            "tool": {"S": tool.value}, "target": {"S": target},
            "operation_digest": {"S": digest}, "principal": {"S": principal},
            "created_at_ms": {"N": "0"}, "expires_at_ms": {"N": str(2**53)},
            "window_seconds": {"N": "30"},
            "approved_at_ms": {"N": "0"}, "window_ends_at_ms": {"N": str(2**53)},
        })

    def explain_refusal(self, ctx: InvocationContext, tool: Tool, target: str,
                        operation_digest: str, now_ms: int) -> None:
        """A refusal of this gate is always gate_failed."""


def install_approval_gate(table_name: str) -> ApprovalGate:
    """Wire an ApprovalGate into the composition root."""
    gate = ApprovalGate(table_name, bootstrap.dynamodb_client())
    bootstrap.override(gate=gate)
    return gate


def attribute_blobs(item: dict[str, Any]) -> Iterator[bytes]:
    """Every string and binary value of a low-level item, as bytes (nested too)."""
    for attribute in item.values():
        yield from _values(attribute)


def _values(attribute: dict[str, Any]) -> Iterator[bytes]:
    for kind, raw in attribute.items():
        if kind == "S":
            yield str(raw).encode("utf-8")
        elif kind == "B":
            yield bytes(raw)
        elif kind == "M":
            for nested in raw.values():
                yield from _values(nested)
        elif kind == "L":
            for nested in raw:
                yield from _values(nested)
