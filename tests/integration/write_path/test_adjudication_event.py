"""The host's adjudication event, as the request_admission Lambda receives it, on moto.

Only the host API sends ``{kind: "adjudication", ...}``; the agent's path (a
``ToolInvocation`` from the MCP endpoint) can never be read as one.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from engram_memory.domain.context import Tool
from engram_memory.local.tokens import generate_host_key, mint_maintainer_token, public_pem

from functions.request_admission.handler import lambda_handler as admission_handler
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    admit,
    call,
    capture,
    code,
    lambda_context,
    value,
)
from tests.support.events import TENANT_ID, WORKSPACE_ID, make_event


def _held(aws: AwsEnv) -> str:
    """A candidate the host policy left pending_adjudication."""
    aws.configure(ENGRAM_ADMISSION_MODE="adjudicate", ENGRAM_HOST_ISSUER=ISSUER,
                  ENGRAM_AUDIENCE=AUDIENCE, ENGRAM_HOST_PUBLIC_KEY_PEM=public_pem(HOST_KEY))
    candidate = str(capture()["candidate_id"])
    assert value(admit(candidate))["outcome"]["status"] == "pending_adjudication"
    return candidate


ISSUER = "https://host.example.test"
AUDIENCE = "engram-memory-adjudication-event-tests"
HOST_KEY = generate_host_key()


def _event(candidate: str, **overrides: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "kind": "adjudication", "tenant_id": TENANT_ID, "workspace_id": WORKSPACE_ID,
        "candidate_id": candidate, "decision": "accept", "approver": "host:reviewer",
        "audit_id": "adj-audit-0001",
        "maintainer_token": mint_maintainer_token(
            HOST_KEY, issuer=ISSUER, audience=AUDIENCE, tenant=TENANT_ID, now=time.time()),
    }
    event.update(overrides)
    return event


def _adjudicate(event: dict[str, Any]) -> dict[str, Any]:
    envelope = admission_handler(json.loads(json.dumps(event)),
                                 lambda_context(Tool.REQUEST_ADMISSION))
    return dict(json.loads(json.dumps(envelope)))


def _state(aws: AwsEnv, candidate_id: str) -> str:
    item = aws.dynamodb.get_item(
        TableName=aws.settings.table_name, ConsistentRead=True,
        Key={"pk": {"S": f"SCOPE#{TENANT_ID}#{WORKSPACE_ID}"},
             "sk": {"S": f"CAND#{candidate_id}"}})["Item"]
    return str(item["state"]["S"])


def test_the_admission_function_accepts_a_held_candidate_on_the_hosts_event(
        aws: AwsEnv) -> None:
    candidate = _held(aws)
    envelope = _adjudicate(_event(candidate))
    outcome = value(envelope)["outcome"]
    assert outcome["status"] == "accepted"
    assert outcome["record_id"].startswith("mem_")
    assert envelope["auditId"] == "adj-audit-0001"
    replay = value(_adjudicate(_event(candidate, audit_id="adj-audit-0002")))
    assert replay["replayed"] is True
    assert replay["outcome"] == outcome


def test_a_rejection_from_the_host_leaves_the_candidate_rejected(aws: AwsEnv) -> None:
    candidate = _held(aws)
    outcome = value(_adjudicate(_event(candidate, decision="reject")))["outcome"]
    assert outcome["status"] == "rejected"
    assert code(_adjudicate(_event(candidate, decision="accept"))) == "DIGEST_CONFLICT"


@pytest.mark.parametrize("overrides", [
    {"tenant_id": "tenant-b"}, {"workspace_id": "ws-elsewhere"},
], ids=["another-tenant", "a-workspace-outside-the-deployment"])
def test_an_adjudication_for_a_scope_this_deployment_does_not_serve_is_unauthorized(
        aws: AwsEnv, overrides: dict[str, str]) -> None:
    candidate = _held(aws)
    assert code(_adjudicate(_event(candidate, **overrides))) == "UNAUTHORIZED"
    assert _state(aws, candidate) == "pending"


@pytest.mark.parametrize("overrides", [
    {"decision": "approve"}, {"decision": True}, {"approver": ""}, {"extra": "field"},
    {"kind": "admission"}, {"workspace_id": "ws-main#other"}, {"candidate_id": "mem_abc"},
    {"tool": "request_admission"},
], ids=["unknown-decision", "boolean-decision", "empty-approver", "extra-field",
        "another-kind", "key-separator", "a-record-id", "tool-field-too"])
def test_a_malformed_adjudication_event_is_invalid_schema_and_changes_nothing(
        aws: AwsEnv, overrides: dict[str, Any]) -> None:
    candidate = _held(aws)
    envelope = _adjudicate(_event(candidate, **overrides))
    assert code(envelope) == "INVALID_SCHEMA"
    assert _state(aws, candidate) == "pending"


def test_the_agent_path_cannot_turn_a_tool_call_into_an_adjudication(aws: AwsEnv) -> None:
    candidate = _held(aws)
    shaped = {key: val for key, val in _event(candidate).items() if key != "audit_id"}
    # Adjudication-shaped arguments inside the agent's ToolInvocation: the closed
    # request_admission schema refuses them.
    assert code(call(Tool.REQUEST_ADMISSION, shaped)) == "INVALID_SCHEMA"
    # A ToolInvocation smuggling a top-level kind is no longer a ToolInvocation either.
    smuggled = {**make_event(Tool.REQUEST_ADMISSION, {"candidate_id": candidate,
                                                      "idempotency_key": "k" * 20}),
                **_event(candidate)}
    assert code(_adjudicate(smuggled)) == "INVALID_SCHEMA"
    assert _state(aws, candidate) == "pending"
