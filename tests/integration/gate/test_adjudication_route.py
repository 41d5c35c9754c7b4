"""POST /host/adjudications/{candidate_id}: decided by the request_admission function.

The host API never adjudicates in its own process (it may not decrypt): it sends one
adjudication event through the invoker port, ``lambda:Invoke`` when the stack names the
function, and answers with what that function returned.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError
from engram_memory import bootstrap, env_names
from engram_memory.adapters.stepfunctions.clients import gate_clients
from engram_memory.composition.host_api import build_host_api
from engram_memory.domain.context import Scope, Tool
from engram_memory.local.inprocess_invoker import InProcessInvoker, default_functions_dir

from functions.request_admission.handler import lambda_handler as admission_handler
from tests.integration.gate.botocore_hooks import FakeLambdaService, default_session_hooks
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import host_call, host_event
from tests.integration.write_path.support import admit, capture, lambda_context, value
from tests.support.events import TENANT_ID, WORKSPACE_ID

ADMISSION_FUNCTION = "engram-tenant-a-request-admission"
BODY = {"workspace_id": WORKSPACE_ID, "decision": "accept", "approver": "carol@example.test"}


class RecordingInvoker:
    """The in-process invoker, remembering every event it carried."""

    def __init__(self) -> None:
        self.inner = InProcessInvoker(default_functions_dir())
        self.calls: list[tuple[Tool, dict[str, Any]]] = []

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Record, then run the real function handler."""
        self.calls.append((tool, invocation))
        return self.inner.invoke(tool, invocation)


@pytest.fixture
def held(gate_env: GateEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A candidate the host policy left pending_adjudication."""
    monkeypatch.setenv("ENGRAM_ADMISSION_MODE", "adjudicate")
    bootstrap.reset()
    candidate = str(capture(text=f"Adjudicated fact {secrets.token_hex(8)}.",
                            key=f"capture-key-{secrets.token_hex(8)}")["candidate_id"])
    outcome = value(admit(candidate, key=f"admission-key-{secrets.token_hex(8)}"))
    assert outcome["outcome"]["status"] == "pending_adjudication"
    yield candidate
    bootstrap.reset()


def _state(candidate: str) -> str | None:
    entry = bootstrap.store().get_candidate(Scope(TENANT_ID, WORKSPACE_ID), candidate)
    return None if entry is None else entry.state


def test_the_host_api_sends_one_adjudication_event_through_the_invoker(
        gate_env: GateEnv, held: str) -> None:
    invoker = RecordingInvoker()
    api = build_host_api(gate_env.settings, gate_clients(gate_env.settings), invoker)
    token = gate_env.maintainer_token()
    response = api.handle(host_event("POST", f"/host/adjudications/{held}", token, BODY))
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["outcome"]["status"] == "accepted"
    [(tool, event)] = invoker.calls
    assert tool is Tool.REQUEST_ADMISSION
    assert {k: v for k, v in event.items() if k != "audit_id"} == {
        "kind": "adjudication", "tenant_id": TENANT_ID, "workspace_id": WORKSPACE_ID,
        "candidate_id": held, "decision": "accept", "approver": "carol@example.test",
        "maintainer_token": token}
    assert event["audit_id"].startswith("adj_")


def _direct_event(candidate: str, token: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "kind": "adjudication", "tenant_id": TENANT_ID, "workspace_id": WORKSPACE_ID,
        "candidate_id": candidate, "decision": "accept", "approver": "mallory@example.test",
        "audit_id": "adj-direct-0001"}
    if token is not None:
        event["maintainer_token"] = token
    return event


@pytest.mark.parametrize("token_of", ["none", "agent", "other-tenant"])
def test_an_invoker_without_a_maintainer_token_of_this_tenant_cannot_adjudicate(
        gate_env: GateEnv, held: str, token_of: str) -> None:
    # What the MCP endpoint's role could send: it may invoke request_admission directly.
    token = {"none": None, "agent": gate_env.agent_token(WORKSPACE_ID),
             "other-tenant": gate_env.maintainer_token(tenant="tenant-b")}[token_of]
    envelope = admission_handler(_direct_event(held, token), lambda_context(Tool.REQUEST_ADMISSION))
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "UNAUTHORIZED"
    assert _state(held) == "pending"


def test_with_the_function_named_the_host_api_adjudicates_over_lambda_invoke(
        gate_env: GateEnv, held: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env_names.function_name(Tool.REQUEST_ADMISSION), ADMISSION_FUNCTION)
    service = FakeLambdaService({ADMISSION_FUNCTION: admission_handler})
    with default_session_hooks({"before-send.lambda.Invoke": service}):
        status, answer = host_call("POST", f"/host/adjudications/{held}",
                                   gate_env.maintainer_token(), BODY)
    assert status == 200, answer
    assert answer["outcome"]["status"] == "accepted"
    assert answer["outcome"]["record_id"].startswith("mem_")
    assert [(name, event["kind"]) for name, event in service.invocations] == [
        (ADMISSION_FUNCTION, "adjudication")]
    assert _state(held) == "accepted"


def test_an_unreachable_admission_function_is_a_503_and_nothing_is_decided(
        gate_env: GateEnv, held: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env_names.function_name(Tool.REQUEST_ADMISSION), ADMISSION_FUNCTION)

    def unreachable(request: Any, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=request.url)

    with default_session_hooks({"before-send.lambda.Invoke": unreachable}):
        status, answer = host_call("POST", f"/host/adjudications/{held}",
                                   gate_env.maintainer_token(), BODY)
    assert status == 503
    assert answer == {"error": {"code": "STORE_UNAVAILABLE", "retriable": True,
                                "message": "The memory store is unavailable."}}
    assert _state(held) == "pending"


def test_the_admission_functions_refusal_is_the_host_answer(gate_env: GateEnv) -> None:
    status, answer = host_call("POST", f"/host/adjudications/cand_{'a' * 52}",
                               gate_env.maintainer_token(), BODY)
    assert status == 404
    assert answer["error"]["code"] == "NOT_FOUND"


def test_a_malformed_candidate_id_is_refused_before_any_invocation(gate_env: GateEnv) -> None:
    invoker = RecordingInvoker()
    api = build_host_api(gate_env.settings, gate_clients(gate_env.settings), invoker)
    response = api.handle(host_event("POST", "/host/adjudications/cand_NOT-BASE32",
                                     gate_env.maintainer_token(), BODY))
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["error"]["code"] == "INVALID_SCHEMA"
    assert invoker.calls == []
