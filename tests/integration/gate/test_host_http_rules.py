"""HTTP rules of the host routes Lambda (issue 35): no caching, authentication before the
path, a repeated query parameter refused. Driven with the v2 events API Gateway sends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.host_api.handler import lambda_handler
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import host_event
from tests.support.events import WORKSPACE_ID

UNAUTHENTICATED = {"error": {"code": "UNAUTHENTICATED",
                             "message": "A valid host maintainer token is required."}}
BAD_REQUEST = {"error": {"code": "INVALID_REQUEST", "message": "The request body is invalid."}}


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def answer(event: dict[str, Any]) -> dict[str, Any]:
    """The handler's v2 response to ``event``."""
    response: dict[str, Any] = lambda_handler(event, LocalLambdaContext("engram-host-api"))
    return response


def listing(token: str | None, raw_query: str, parameters: dict[str, str]) -> dict[str, Any]:
    """GET /host/confirmations with this raw query and API Gateway's joined parameters."""
    event = host_event("GET", "/host/confirmations", token)
    event["rawQueryString"] = raw_query
    event["queryStringParameters"] = parameters
    return event


def test_every_host_response_is_no_store(gate_env: GateEnv) -> None:
    maintainer, agent = gate_env.maintainer_token(), gate_env.agent_token(WORKSPACE_ID)
    pending = {"workspace_id": WORKSPACE_ID, "state": "pending"}
    foreign = host_event("GET", "/host/confirmations", maintainer)
    foreign["headers"]["host"] = "attacker.example"
    events = {
        200: listing(maintainer, f"workspace_id={WORKSPACE_ID}&state=pending", pending),
        400: host_event("POST", "/host/confirmations", maintainer, "{not json"),
        401: host_event("GET", "/host/confirmations", None),
        403: host_event("GET", "/host/confirmations", agent),
        404: host_event("GET", "/host/nowhere", maintainer),
        421: foreign,
    }
    for status, event in events.items():
        response = answer(event)
        assert response["statusCode"] == status
        assert response["headers"]["cache-control"] == "no-store", status


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/host/confirmations"), ("GET", "/host/nowhere"), ("PUT", "/host/confirmations"),
    ("POST", "/host/confirmations/conf_x/decision/extra"), ("GET", "/host"),
    ("OPTIONS", "/host/adjudications"),
])
def test_an_anonymous_caller_gets_the_same_401_for_real_and_unknown_paths(
    gate_env: GateEnv, method: str, path: str,
) -> None:
    response = answer(host_event(method, path, None))
    assert response["statusCode"] == 401
    assert json.loads(response["body"]) == UNAUTHENTICATED


def test_a_maintainer_still_gets_404_for_an_unknown_path(gate_env: GateEnv) -> None:
    response = answer(host_event("PUT", "/host/confirmations", gate_env.maintainer_token()))
    assert response["statusCode"] == 404


@pytest.mark.parametrize(("raw_query", "parameters"), [
    (f"workspace_id={WORKSPACE_ID}&workspace_id=ws-other&state=pending",
     {"workspace_id": f"{WORKSPACE_ID},ws-other", "state": "pending"}),
    (f"workspace_id={WORKSPACE_ID}&workspace_id={WORKSPACE_ID}&state=pending",
     {"workspace_id": f"{WORKSPACE_ID},{WORKSPACE_ID}", "state": "pending"}),
    (f"workspace%5Fid={WORKSPACE_ID}&workspace_id=ws-other&state=pending",
     {"workspace_id": f"{WORKSPACE_ID},ws-other", "state": "pending"}),
    (f"workspace_id={WORKSPACE_ID}&state=pending&state=pending",
     {"workspace_id": WORKSPACE_ID, "state": "pending,pending"}),
], ids=["two-workspaces", "same-twice", "encoded-name", "state-twice"])
def test_a_repeated_query_parameter_is_the_constant_400(
    gate_env: GateEnv, raw_query: str, parameters: dict[str, str],
) -> None:
    # API Gateway joins repeated values with a comma: only rawQueryString tells.
    response = answer(listing(gate_env.maintainer_token(), raw_query, parameters))
    assert response["statusCode"] == 400
    assert json.loads(response["body"]) == BAD_REQUEST
