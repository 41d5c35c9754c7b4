"""A maintainer token scoped to workspaces acts on those only (issue 35 item 2).

Driven through the real host_api Lambda handler (moto): every host route on a workspace the
token does not cover answers the constant 403 and changes nothing; on its own workspace the
same token works, and a tenant-wide token still covers every workspace.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import jwt
import pytest
from engram_memory import bootstrap
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.host_api.handler import lambda_handler
from tests.integration.gate.conftest import _HOST_KEY, GateEnv
from tests.integration.gate.host import host_call, host_event, request_confirmation
from tests.integration.write_path.support import withdraw_args
from tests.support.events import PRINCIPAL, WORKSPACE_ID
from tests.support.host_tokens import key_id

OTHER = "ws-other"  # served by the same deployment (tests/integration/conftest.py)
FORBIDDEN = {"error": {"code": "FORBIDDEN", "message": "The maintain permission is required."}}


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def _args() -> dict[str, Any]:
    return withdraw_args("cand_" + "c" * 52, key=f"withdraw-key-{secrets.token_hex(8)}")


def _calls(ref: str, workspace: str) -> list[tuple[str, str, Any, dict[str, str] | None]]:
    """One call of every host route, each on ``workspace``."""
    candidate = "cand_" + "d" * 52
    return [
        ("POST", "/host/confirmations", {"workspace_id": workspace, "capability": "withdraw",
                                         "principal": PRINCIPAL, "arguments": _args(),
                                         "ttl_seconds": 20}, None),
        ("POST", f"/host/confirmations/{ref}/decision",
         {"workspace_id": workspace, "decision": "approve", "approver": "mallory"}, None),
        ("GET", f"/host/confirmations/{ref}", None, {"workspace_id": workspace}),
        ("GET", "/host/confirmations", None, {"workspace_id": workspace, "state": "pending"}),
        ("GET", "/host/adjudications", None, {"workspace_id": workspace}),
        ("GET", f"/host/adjudications/{candidate}", None, {"workspace_id": workspace}),
        ("POST", f"/host/adjudications/{candidate}",
         {"workspace_id": workspace, "decision": "accept"}, None),
        ("GET", "/host/export", None, {"workspace_id": workspace}),
        ("POST", "/host/migrations/mem0",
         {"workspace_id": workspace, "purpose_ref": "purpose:mem0-import",
          "memories": [{"id": "scope-check-1", "memory": "m", "created_at_ms": 1}]}, None),
    ]


def test_a_scoped_token_is_forbidden_on_every_route_of_another_workspace(
    gate_env: GateEnv,
) -> None:
    tenant_wide = gate_env.maintainer_token()
    ref = request_confirmation(tenant_wide, OTHER, "withdraw", PRINCIPAL, _args())
    scoped = gate_env.maintainer_token(workspaces=[WORKSPACE_ID])
    for method, path, body, query in _calls(ref, OTHER):
        assert host_call(method, path, scoped, body, query) == (403, FORBIDDEN), (method, path)
    # Nothing was decided: the other team's confirmation still waits (the workflow may have
    # moved it from requested to awaiting_decision meanwhile, nothing more).
    status, after = host_call("GET", f"/host/confirmations/{ref}", tenant_wide,
                              query={"workspace_id": OTHER})
    assert status == 200
    assert after["state"] in ("requested", "awaiting_decision")
    assert "approver" not in after


def test_a_scoped_token_acts_on_its_own_workspaces(gate_env: GateEnv) -> None:
    scoped = gate_env.maintainer_token(workspaces=[WORKSPACE_ID, "ws-elsewhere"])
    ref = request_confirmation(scoped, WORKSPACE_ID, "withdraw", PRINCIPAL, _args())
    status, listed = host_call("GET", "/host/confirmations", scoped,
                               query={"workspace_id": WORKSPACE_ID, "state": "pending"})
    assert status == 200
    assert ref in [item["elicitationRef"] for item in listed["items"]]
    status, settled = host_call("POST", f"/host/confirmations/{ref}/decision", scoped,
                                {"workspace_id": WORKSPACE_ID, "decision": "reject",
                                 "approver": "alice"})
    assert (status, settled["state"]) == (200, "rejected")


def test_a_tenant_wide_token_covers_every_workspace_of_the_deployment(
    gate_env: GateEnv,
) -> None:
    token = gate_env.maintainer_token()
    for workspace in (WORKSPACE_ID, OTHER):
        status, _ = host_call("GET", "/host/confirmations", token,
                              query={"workspace_id": workspace, "state": "pending"})
        assert status == 200


def test_a_maintainer_token_without_a_scope_claim_is_unauthenticated(gate_env: GateEnv) -> None:
    # The claim set minted before scopes existed: no longer tenant-wide by default.
    claims = jwt.decode(gate_env.maintainer_token(), options={"verify_signature": False})
    del claims["tenant_wide"]
    token = jwt.encode(claims, _HOST_KEY, algorithm="EdDSA", headers={"kid": key_id(_HOST_KEY)})
    assert host_call("GET", "/host/confirmations", jwt.encode(
        {**claims, "tenant_wide": True}, _HOST_KEY, algorithm="EdDSA",
        headers={"kid": key_id(_HOST_KEY)}), query={"workspace_id": WORKSPACE_ID,
                                                    "state": "pending"})[0] == 200
    status, body = host_call("GET", "/host/confirmations", token,
                             query={"workspace_id": WORKSPACE_ID, "state": "pending"})
    assert status == 401
    assert body["error"]["code"] == "UNAUTHENTICATED"


# --- GET /host/whoami: what the pasted token covers (the review page shows it) ----------

def _whoami(token: str | None, query: dict[str, str] | None = None,
            method: str = "GET") -> tuple[int, dict[str, Any], dict[str, str]]:
    response = lambda_handler(host_event(method, "/host/whoami", token, query=query),
                              LocalLambdaContext("engram-host-api"))
    return (int(response["statusCode"]), json.loads(response["body"]),
            {k.lower(): v for k, v in response["headers"].items()})


def test_whoami_names_the_workspaces_a_scoped_token_covers(gate_env: GateEnv) -> None:
    token = gate_env.maintainer_token(workspaces=["ws-b", WORKSPACE_ID, "ws-a"],
                                      subject="alice")
    status, body, headers = _whoami(token)
    assert status == 200
    assert body == {"tenantId": gate_env.settings.tenant_id, "subject": "alice",
                    "tenantWide": False,
                    "workspaces": sorted(["ws-b", WORKSPACE_ID, "ws-a"])}
    assert headers["cache-control"] == "no-store"


def test_whoami_says_tenant_wide_and_lists_no_workspace(gate_env: GateEnv) -> None:
    status, body, headers = _whoami(gate_env.maintainer_token(subject="root-reviewer"))
    assert status == 200
    assert body == {"tenantId": gate_env.settings.tenant_id, "subject": "root-reviewer",
                    "tenantWide": True}
    assert headers["cache-control"] == "no-store"


def test_whoami_refuses_as_every_host_route_does(gate_env: GateEnv) -> None:
    scoped = gate_env.maintainer_token(workspaces=[WORKSPACE_ID])
    assert _whoami(None)[:2] == (401, {"error": {
        "code": "UNAUTHENTICATED", "message": "A valid host maintainer token is required."}})
    assert _whoami("not-a-jwt")[0] == 401
    assert _whoami(gate_env.maintainer_token(tenant="tenant-b"))[0] == 401
    # An agent token is authenticated but never maintains, whatever workspace it names.
    assert _whoami(gate_env.agent_token(WORKSPACE_ID))[:2] == (403, FORBIDDEN)
    # Closed: no query parameter is read (so none names another workspace), no other method.
    bad = {"error": {"code": "INVALID_REQUEST", "message": "The request body is invalid."}}
    assert _whoami(scoped, {"workspace_id": OTHER})[:2] == (400, bad)
    assert _whoami(scoped, method="POST")[:2] == (404, {"error": {
        "code": "NOT_FOUND", "message": "No such route."}})
