"""Shared helpers for the host-adjudication tests of the request_admission Lambda."""

from __future__ import annotations

import json
import time
from typing import Any

from engram_memory.domain.context import Tool

from functions.request_admission.handler import lambda_handler as admission_handler
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import admit, capture, lambda_context, value
from tests.support.events import TENANT_ID, WORKSPACE_ID
from tests.support.host_tokens import generate_host_key, mint_maintainer_token, public_pem

ISSUER = "https://host.example.test"
AUDIENCE = "engram-memory-adjudication-tests"
HOST_KEY = generate_host_key()


def maintainer(**overrides: Any) -> str:
    """A maintainer token of this tenant (claims and ``key`` overridable)."""
    claims: dict[str, Any] = {"issuer": ISSUER, "audience": AUDIENCE, "tenant": TENANT_ID,
                              "now": time.time()}
    if "workspaces" not in overrides:
        claims["tenant_wide"] = True
    claims.update(overrides)
    key = claims.pop("key", HOST_KEY)
    return mint_maintainer_token(key, **claims)


def held(aws: AwsEnv) -> str:
    """A candidate the host policy left pending_adjudication (host key registered)."""
    aws.configure(ENGRAM_ADMISSION_MODE="adjudicate", ENGRAM_HOST_ISSUER=ISSUER,
                  ENGRAM_AUDIENCE=AUDIENCE, ENGRAM_HOST_PUBLIC_KEY_PEM=public_pem(HOST_KEY))
    candidate = str(capture()["candidate_id"])
    assert value(admit(candidate))["outcome"]["status"] == "pending_adjudication"
    return candidate


def adjudication_event(candidate: str, token: str | None, **overrides: Any) -> dict[str, Any]:
    """The event the host API sends (an accept by default), with ``token`` when given."""
    event: dict[str, Any] = {
        "kind": "adjudication", "tenant_id": TENANT_ID, "workspace_id": WORKSPACE_ID,
        "candidate_id": candidate, "decision": "accept", "approver": "host:reviewer",
        "audit_id": "adj-audit-0001",
    }
    if token is not None:
        event["maintainer_token"] = token
    event.update(overrides)
    return event


def adjudicate(event: dict[str, Any]) -> dict[str, Any]:
    """Run the request_admission Lambda on ``event``; its JSON envelope."""
    envelope = admission_handler(json.loads(json.dumps(event)),
                                 lambda_context(Tool.REQUEST_ADMISSION))
    return dict(json.loads(json.dumps(envelope)))


def candidate_state(aws: AwsEnv, candidate_id: str) -> str:
    """The candidate item's state, read consistently."""
    item = aws.dynamodb.get_item(
        TableName=aws.settings.table_name, ConsistentRead=True,
        Key={"pk": {"S": f"SCOPE#{TENANT_ID}#{WORKSPACE_ID}"},
             "sk": {"S": f"CAND#{candidate_id}"}})["Item"]
    return str(item["state"]["S"])
