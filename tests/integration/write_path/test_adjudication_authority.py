"""Only a maintainer may adjudicate, whoever invokes the request_admission function.

The internet-facing MCP endpoint's role may invoke request_admission too, so the IAM
principal proves nothing: an adjudication event must carry a maintainer token of this
tenant, which the function verifies itself. Anything else is UNAUTHORIZED and the held
candidate stays pending.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from engram_memory.domain.context import Tool

from tests.integration.conftest import AwsEnv
from tests.integration.write_path.adjudication_support import (
    AUDIENCE,
    HOST_KEY,
    ISSUER,
    adjudicate,
    adjudication_event,
    candidate_state,
    held,
    maintainer,
)
from tests.integration.write_path.support import code, value
from tests.support.events import TENANT_ID, WORKSPACE_ID
from tests.support.host_tokens import (
    generate_host_key,
    mint_agent_token,
)

ELSEWHERE_KEY = generate_host_key()


def _agent() -> str:
    return mint_agent_token(HOST_KEY, issuer=ISSUER, audience=AUDIENCE, tenant=TENANT_ID,
                            workspace=WORKSPACE_ID, purpose_ref="purpose:engineering-notes",
                            capabilities=[t.value for t in Tool], now=time.time())


def _adjudicate(candidate: str, token: str | None) -> dict[str, Any]:
    return adjudicate(adjudication_event(candidate, token))


def test_an_adjudication_with_this_tenants_maintainer_token_is_decided(aws: AwsEnv) -> None:
    candidate = held(aws)
    outcome = value(_adjudicate(candidate, maintainer()))["outcome"]
    assert outcome["status"] == "accepted"
    assert candidate_state(aws, candidate) == "accepted"


@pytest.mark.parametrize("token", [
    lambda: None,
    _agent,
    lambda: maintainer(tenant="tenant-b"),
    lambda: maintainer(key=ELSEWHERE_KEY),
    lambda: maintainer(perm=("read",)),
    lambda: maintainer(now=time.time() - 3600),
    lambda: "not-a-jwt",
], ids=["no-token", "an-agent-token", "another-tenants-maintainer", "another-signer",
        "without-maintain", "expired", "garbage"])
def test_an_adjudication_without_a_valid_maintainer_token_is_unauthorized_and_changes_nothing(
        aws: AwsEnv, token: Any) -> None:
    candidate = held(aws)
    assert code(_adjudicate(candidate, token())) == "UNAUTHORIZED"
    assert candidate_state(aws, candidate) == "pending"
