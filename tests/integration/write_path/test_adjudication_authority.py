"""Only a maintainer may adjudicate, whoever invokes the request_admission function.

The internet-facing MCP endpoint's role may invoke request_admission too, so the IAM
principal proves nothing: an adjudication event must carry a maintainer token of this
tenant, which the function verifies itself. Anything else is UNAUTHORIZED and the held
candidate stays pending.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from engram_memory.domain.context import Tool
from engram_memory.local.tokens import (
    generate_host_key,
    mint_agent_token,
    mint_maintainer_token,
    public_pem,
)

from functions.request_admission.handler import lambda_handler as admission_handler
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import admit, capture, code, lambda_context, value
from tests.support.events import TENANT_ID, WORKSPACE_ID

ISSUER = "https://host.example.test"
AUDIENCE = "engram-memory-adjudication-tests"
HOST_KEY = generate_host_key()
ELSEWHERE_KEY = generate_host_key()


def _maintainer(**overrides: Any) -> str:
    claims: dict[str, Any] = {"issuer": ISSUER, "audience": AUDIENCE, "tenant": TENANT_ID,
                              "now": time.time()}
    claims.update(overrides)
    key = claims.pop("key", HOST_KEY)
    return mint_maintainer_token(key, **claims)


def _agent() -> str:
    return mint_agent_token(HOST_KEY, issuer=ISSUER, audience=AUDIENCE, tenant=TENANT_ID,
                            workspace=WORKSPACE_ID, purpose_ref="purpose:engineering-notes",
                            capabilities=[t.value for t in Tool], now=time.time())


def _held(aws: AwsEnv) -> str:
    """A candidate the host policy left pending_adjudication (host key registered)."""
    aws.configure(ENGRAM_ADMISSION_MODE="adjudicate", ENGRAM_HOST_ISSUER=ISSUER,
                  ENGRAM_AUDIENCE=AUDIENCE, ENGRAM_HOST_PUBLIC_KEY_PEM=public_pem(HOST_KEY))
    candidate = str(capture()["candidate_id"])
    assert value(admit(candidate))["outcome"]["status"] == "pending_adjudication"
    return candidate


def _adjudicate(candidate: str, token: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "kind": "adjudication", "tenant_id": TENANT_ID, "workspace_id": WORKSPACE_ID,
        "candidate_id": candidate, "decision": "accept", "approver": "host:reviewer",
        "audit_id": "adj-audit-0001",
    }
    if token is not None:
        event["maintainer_token"] = token
    envelope = admission_handler(json.loads(json.dumps(event)),
                                 lambda_context(Tool.REQUEST_ADMISSION))
    return dict(json.loads(json.dumps(envelope)))


def _state(aws: AwsEnv, candidate_id: str) -> str:
    item = aws.dynamodb.get_item(
        TableName=aws.settings.table_name, ConsistentRead=True,
        Key={"pk": {"S": f"SCOPE#{TENANT_ID}#{WORKSPACE_ID}"},
             "sk": {"S": f"CAND#{candidate_id}"}})["Item"]
    return str(item["state"]["S"])


def test_an_adjudication_with_this_tenants_maintainer_token_is_decided(aws: AwsEnv) -> None:
    candidate = _held(aws)
    outcome = value(_adjudicate(candidate, _maintainer()))["outcome"]
    assert outcome["status"] == "accepted"
    assert _state(aws, candidate) == "accepted"


@pytest.mark.parametrize("token", [
    lambda: None,
    _agent,
    lambda: _maintainer(tenant="tenant-b"),
    lambda: _maintainer(key=ELSEWHERE_KEY),
    lambda: _maintainer(perm=("read",)),
    lambda: _maintainer(now=time.time() - 3600),
    lambda: "not-a-jwt",
], ids=["no-token", "an-agent-token", "another-tenants-maintainer", "another-signer",
        "without-maintain", "expired", "garbage"])
def test_an_adjudication_without_a_valid_maintainer_token_is_unauthorized_and_changes_nothing(
        aws: AwsEnv, token: Any) -> None:
    candidate = _held(aws)
    assert code(_adjudicate(candidate, token())) == "UNAUTHORIZED"
    assert _state(aws, candidate) == "pending"
