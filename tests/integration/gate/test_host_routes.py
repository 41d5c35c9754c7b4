"""The host-only routes: maintainer tokens only, closed bodies, constant refusals."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Tool
from engram_memory.domain.intent import operation_digest
from engram_memory.gate.host_api import MAX_BODY_BYTES
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.host_api.handler import lambda_handler
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import decide, host_call, host_event, request_confirmation
from tests.integration.write_path.support import admit, capture, value, withdraw_args
from tests.support.events import PRINCIPAL, WORKSPACE_ID

CONFIRMATIONS = "/host/confirmations"


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def _args() -> dict[str, Any]:
    return withdraw_args("cand_" + "c" * 52, key=f"withdraw-key-{secrets.token_hex(8)}")


def _request_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"workspace_id": WORKSPACE_ID, "capability": "withdraw",
                            "principal": PRINCIPAL, "arguments": _args(), "ttl_seconds": 20}
    body.update(overrides)
    return body


def test_an_agent_token_is_forbidden_on_every_host_route(gate_env: GateEnv) -> None:
    agent = gate_env.agent_token(WORKSPACE_ID)
    for method, path in (("POST", CONFIRMATIONS), ("GET", f"{CONFIRMATIONS}/conf_x"),
                         ("POST", f"{CONFIRMATIONS}/conf_x/decision"),
                         ("POST", "/host/adjudications/cand_x"),
                         # backup and restore (docs/backup.md): host authority only
                         ("GET", "/host/export"), ("POST", "/host/restore"),
                         ("POST", "/host/restore/lines"), ("POST", "/host/restore/commit"),
                         ("DELETE", "/host/restore"),
                         # migration from mem0 (docs/migration-mem0.md)
                         ("POST", "/host/migrations/mem0")):
        status, body = host_call(method, path, agent, _request_body(),
                                 {"workspace_id": WORKSPACE_ID})
        assert status == 403
        assert body == {"error": {"code": "FORBIDDEN",
                                  "message": "The maintain permission is required."}}


@pytest.mark.parametrize("token", [None, "not-a-jwt", ""], ids=["missing", "garbage", "empty"])
def test_a_request_without_a_valid_token_is_unauthenticated(
    gate_env: GateEnv, token: str | None
) -> None:
    status, body = host_call("POST", CONFIRMATIONS, token, _request_body())
    assert status == 401
    assert body["error"]["code"] == "UNAUTHENTICATED"


def test_a_maintainer_token_of_another_tenant_is_unauthenticated(gate_env: GateEnv) -> None:
    status, _ = host_call("POST", CONFIRMATIONS, gate_env.maintainer_token(tenant="tenant-b"),
                          _request_body())
    assert status == 401


@pytest.mark.parametrize("body", [
    "{not json", {"confirmed": True}, _request_body(extra="field"),
    _request_body(capability="search"), _request_body(ttl_seconds=301),
    _request_body(ttl_seconds="20"), _request_body(arguments=None),
    _request_body(operation_digest="sha256:" + "0" * 64),
], ids=["malformed", "unknown-field-only", "extra-field", "ungated-tool", "ttl-too-long",
        "ttl-as-string", "no-operation", "both-forms"])
def test_a_bad_request_body_gets_one_constant_400(gate_env: GateEnv, body: Any) -> None:
    status, answer = host_call("POST", CONFIRMATIONS, gate_env.maintainer_token(), body)
    assert status == 400
    assert answer == {"error": {"code": "INVALID_REQUEST",
                                "message": "The request body is invalid."}}


def test_arguments_that_fail_the_tools_schema_are_refused(gate_env: GateEnv) -> None:
    status, answer = host_call("POST", CONFIRMATIONS, gate_env.maintainer_token(),
                               _request_body(arguments={"candidate_id": "cand_x"}))
    assert status == 400
    assert answer["error"]["code"] == "INVALID_SCHEMA"


def test_a_workspace_outside_the_deployment_is_refused(gate_env: GateEnv) -> None:
    status, answer = host_call("POST", CONFIRMATIONS, gate_env.maintainer_token(),
                               _request_body(workspace_id="ws-elsewhere"))
    assert status == 403
    assert answer["error"]["code"] == "UNAUTHORIZED"


def test_the_host_can_name_the_operation_by_its_digest(gate_env: GateEnv) -> None:
    args = _args()
    digest = operation_digest(Tool.WITHDRAW, args)
    token = gate_env.maintainer_token()
    status, created = host_call("POST", CONFIRMATIONS, token, _request_body(
        arguments=None, target=args["candidate_id"], operation_digest=digest))
    assert status == 201, created
    by_args = request_confirmation(token, WORKSPACE_ID, "withdraw", PRINCIPAL, args)
    status, shown = host_call("GET", f"{CONFIRMATIONS}/{by_args}", token,
                              query={"workspace_id": WORKSPACE_ID})
    assert status == 200
    assert shown["operationDigest"] == created["operationDigest"] == digest
    assert shown["target"] == args["candidate_id"]
    assert "task_token" not in shown


def test_reading_and_deciding_follow_the_confirmation_lifecycle(gate_env: GateEnv) -> None:
    token = gate_env.maintainer_token()
    ref = request_confirmation(token, WORKSPACE_ID, "withdraw", PRINCIPAL, _args())
    assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"
    status, shown = host_call("GET", f"{CONFIRMATIONS}/{ref}", token,
                              query={"workspace_id": WORKSPACE_ID})
    assert status == 200
    assert shown["state"] == "approved"
    assert shown["approver"] == "alice@example.test"
    assert shown["windowEndsAtMs"] > shown["approvedAtMs"]
    status, again = host_call("POST", f"{CONFIRMATIONS}/{ref}/decision", token, {
        "workspace_id": WORKSPACE_ID, "decision": "reject", "approver": "bob"})
    assert status == 409
    assert again["error"]["code"] == "ILLEGAL_TRANSITION"


def test_an_unknown_confirmation_or_route_is_not_found(gate_env: GateEnv) -> None:
    token = gate_env.maintainer_token()
    status, _ = host_call("GET", f"{CONFIRMATIONS}/conf_{'0' * 32}", token,
                          query={"workspace_id": WORKSPACE_ID})
    assert status == 404
    status, _ = host_call("DELETE", f"{CONFIRMATIONS}/conf_{'0' * 32}", token)
    assert status == 404


def test_a_held_candidate_is_decided_through_the_adjudication_route(gate_env: GateEnv) -> None:
    gate_env_policy = {"ENGRAM_ADMISSION_MODE": "adjudicate"}
    patch = pytest.MonkeyPatch()
    try:
        for name, val in gate_env_policy.items():
            patch.setenv(name, val)
        bootstrap.reset()
        candidate = capture(text=f"Adjudicated fact {secrets.token_hex(8)}.",
                            key=f"capture-key-{secrets.token_hex(8)}")["candidate_id"]
        held = value(admit(candidate, key=f"admission-key-{secrets.token_hex(8)}"))
        assert held["outcome"]["status"] == "pending_adjudication"
        agent = gate_env.agent_token(WORKSPACE_ID)
        body = {"workspace_id": WORKSPACE_ID, "decision": "accept"}
        assert host_call("POST", f"/host/adjudications/{candidate}", agent, body)[0] == 403
        status, outcome = host_call("POST", f"/host/adjudications/{candidate}",
                                    gate_env.maintainer_token(), body)
        assert status == 200, outcome
        assert outcome["outcome"]["status"] == "accepted"
        assert outcome["outcome"]["record_id"].startswith("mem_")
    finally:
        patch.undo()
        bootstrap.reset()


@pytest.mark.parametrize(("header", "value", "status"), [
    ("host", "attacker.example", 421), ("origin", "https://attacker.example", 403)])
def test_a_foreign_host_or_origin_is_refused_before_anything_else(
        gate_env: GateEnv, header: str, value: str, status: int) -> None:
    event = host_event("POST", "/host/confirmations", gate_env.maintainer_token(), {})
    event["headers"][header] = value
    response = lambda_handler(event, LocalLambdaContext("engram-host-api"))
    assert response["statusCode"] == status


@pytest.mark.parametrize(("body", "encoded"), [("x" * (MAX_BODY_BYTES + 1), False),
                                               ("!!not base64!!", True)])
def test_an_operator_body_over_the_cap_or_undecodable_is_refused(
        gate_env: GateEnv, body: str, encoded: bool) -> None:
    event = host_event("POST", "/host/confirmations", gate_env.maintainer_token(), body)
    event["isBase64Encoded"] = encoded
    response = lambda_handler(event, LocalLambdaContext("engram-host-api"))
    assert response["statusCode"] == (400 if encoded else 413)
    assert "error" in json.loads(response["body"])
