"""The host's adjudication event, as the request_admission Lambda receives it, on moto.

Only the host API sends ``{kind: "adjudication", ...}``; the agent's path (a
``ToolInvocation`` from the MCP endpoint) can never be read as one.
"""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.domain.context import Tool

from tests.integration.conftest import AwsEnv
from tests.integration.write_path.adjudication_support import (
    adjudicate,
    adjudication_event,
    candidate_state,
    held,
    maintainer,
)
from tests.integration.write_path.support import (
    call,
    code,
    value,
)
from tests.support.events import make_event


def _event(candidate: str, **overrides: Any) -> dict[str, Any]:
    return adjudication_event(candidate, maintainer(), **overrides)


def test_the_admission_function_accepts_a_held_candidate_on_the_hosts_event(
        aws: AwsEnv) -> None:
    candidate = held(aws)
    envelope = adjudicate(_event(candidate))
    outcome = value(envelope)["outcome"]
    assert outcome["status"] == "accepted"
    assert outcome["record_id"].startswith("mem_")
    assert envelope["auditId"] == "adj-audit-0001"
    replay = value(adjudicate(_event(candidate, audit_id="adj-audit-0002")))
    assert replay["replayed"] is True
    assert replay["outcome"] == outcome


def test_a_rejection_from_the_host_leaves_the_candidate_rejected(aws: AwsEnv) -> None:
    candidate = held(aws)
    outcome = value(adjudicate(_event(candidate, decision="reject")))["outcome"]
    assert outcome["status"] == "rejected"
    assert code(adjudicate(_event(candidate, decision="accept"))) == "DIGEST_CONFLICT"


@pytest.mark.parametrize("overrides", [
    {"tenant_id": "tenant-b"}, {"workspace_id": "ws-elsewhere"},
], ids=["another-tenant", "a-workspace-outside-the-deployment"])
def test_an_adjudication_for_a_scope_this_deployment_does_not_serve_is_unauthorized(
        aws: AwsEnv, overrides: dict[str, str]) -> None:
    candidate = held(aws)
    assert code(adjudicate(_event(candidate, **overrides))) == "UNAUTHORIZED"
    assert candidate_state(aws, candidate) == "pending"


@pytest.mark.parametrize("overrides", [
    {"decision": "approve"}, {"decision": True}, {"approver": ""}, {"extra": "field"},
    {"kind": "admission"}, {"workspace_id": "ws-main#other"}, {"candidate_id": "mem_abc"},
    {"tool": "request_admission"},
], ids=["unknown-decision", "boolean-decision", "empty-approver", "extra-field",
        "another-kind", "key-separator", "a-record-id", "tool-field-too"])
def test_a_malformed_adjudication_event_is_invalid_schema_and_changes_nothing(
        aws: AwsEnv, overrides: dict[str, Any]) -> None:
    candidate = held(aws)
    envelope = adjudicate(_event(candidate, **overrides))
    assert code(envelope) == "INVALID_SCHEMA"
    assert candidate_state(aws, candidate) == "pending"


def test_the_agent_path_cannot_turn_a_tool_call_into_an_adjudication(aws: AwsEnv) -> None:
    candidate = held(aws)
    shaped = {key: val for key, val in _event(candidate).items() if key != "audit_id"}
    # Adjudication-shaped arguments inside the agent's ToolInvocation: the closed
    # request_admission schema refuses them.
    assert code(call(Tool.REQUEST_ADMISSION, shaped)) == "INVALID_SCHEMA"
    # A ToolInvocation smuggling a top-level kind is no longer a ToolInvocation either.
    smuggled = {**make_event(Tool.REQUEST_ADMISSION, {"candidate_id": candidate,
                                                      "idempotency_key": "k" * 20}),
                **_event(candidate)}
    assert code(adjudicate(smuggled)) == "INVALID_SCHEMA"
    assert candidate_state(aws, candidate) == "pending"
