"""GET /host/confirmations?state=pending and GET /host/adjudications: what waits, paged.

Driven through the real host_api Lambda handler on a moto server whose Step Functions
executes the real ASL, so the sparse waiting index is filled and emptied by the very
workflow states (and admission transaction) that do it in AWS.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from engram_memory import bootstrap

from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import decide, host_call, request_confirmation
from tests.integration.write_path.support import admit, capture, value, withdraw_args
from tests.support.events import PRINCIPAL, WORKSPACE_ID

PENDING = "/host/confirmations"
HELD = "/host/adjudications"
BAD = {"error": {"code": "INVALID_REQUEST", "message": "The request body is invalid."}}


_FRESH: list[str] = []


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Fresh workspaces per test keep the lists independent; the deployment serves them.
    _FRESH[:] = ["ws-" + secrets.token_hex(6) for _ in range(2)]
    monkeypatch.setenv("ENGRAM_WORKSPACE_IDS", ",".join([WORKSPACE_ID, *_FRESH]))
    bootstrap.reset()
    yield
    bootstrap.reset()


def _workspace() -> str:
    return _FRESH.pop()


def _withdraw(reason: str = "reason:owner-request") -> dict[str, Any]:
    args = withdraw_args("cand_" + "c" * 52, key=f"withdraw-key-{secrets.token_hex(8)}")
    args["reason_ref"] = reason
    return args


def _pending(token: str, workspace: str, **query: str) -> tuple[int, dict[str, Any]]:
    return host_call("GET", PENDING, token, query={"workspace_id": workspace,
                                                   "state": "pending", **query})


def test_a_requested_confirmation_is_listed_until_it_is_decided(gate_env: GateEnv) -> None:
    token, workspace = gate_env.maintainer_token(), _workspace()
    arguments = _withdraw(reason="reason:<img src=x onerror=alert(1)>")
    ref = request_confirmation(token, workspace, "withdraw", PRINCIPAL, arguments,
                               ttl_seconds=60)
    status, listed = _pending(token, workspace)
    assert status == 200
    [item] = listed["items"]
    assert "nextCursor" not in listed
    assert item["elicitationRef"] == ref
    assert item["capability"] == "withdraw"
    assert item["target"] == arguments["candidate_id"]
    assert item["reason"] == "reason:<img src=x onerror=alert(1)>"
    assert item["principal"] == PRINCIPAL
    assert item["state"] in ("requested", "awaiting_decision")
    assert item["expiresAtMs"] - item["createdAtMs"] == 60_000
    assert set(item) == {"elicitationRef", "state", "capability", "target", "reason",
                         "principal", "requestedBy", "createdAtMs", "expiresAtMs"}
    assert decide(token, workspace, ref, "reject")["state"] == "rejected"
    assert _pending(token, workspace) == (200, {"items": []})


def test_an_approved_confirmation_leaves_the_list(gate_env: GateEnv) -> None:
    token, workspace = gate_env.maintainer_token(), _workspace()
    ref = request_confirmation(token, workspace, "withdraw", PRINCIPAL, _withdraw())
    assert decide(token, workspace, ref, "approve")["state"] == "approved"
    assert _pending(token, workspace) == (200, {"items": []})
    item = gate_env.confirmation_item(workspace, ref)
    assert item is not None
    assert "waiting_pk" not in item
    assert "waiting_sk" not in item


def test_an_expired_confirmation_leaves_the_list(gate_env: GateEnv) -> None:
    token, workspace = gate_env.maintainer_token(), _workspace()
    ref = request_confirmation(token, workspace, "withdraw", PRINCIPAL, _withdraw(),
                               ttl_seconds=1)
    gate_env.wait_for_state(workspace, ref, "expired", timeout_s=10)
    assert _pending(token, workspace) == (200, {"items": []})


def test_pages_follow_the_opaque_cursor_soonest_expiry_first(gate_env: GateEnv) -> None:
    token, workspace = gate_env.maintainer_token(), _workspace()
    refs = [request_confirmation(token, workspace, "withdraw", PRINCIPAL, _withdraw(),
                                 ttl_seconds=ttl) for ttl in (90, 60, 30)]
    status, first = _pending(token, workspace, limit="2")
    assert status == 200
    assert [i["elicitationRef"] for i in first["items"]] == [refs[2], refs[1]]
    status, second = _pending(token, workspace, limit="2", cursor=first["nextCursor"])
    assert status == 200
    assert [i["elicitationRef"] for i in second["items"]] == [refs[0]]
    for ref in refs:
        decide(token, workspace, ref, "reject")


def test_a_workspace_sees_only_its_own_waiting_items(gate_env: GateEnv) -> None:
    token, mine, theirs = gate_env.maintainer_token(), _workspace(), _workspace()
    request_confirmation(token, theirs, "withdraw", PRINCIPAL, _withdraw())
    assert _pending(token, mine) == (200, {"items": []})


@pytest.mark.parametrize("query", [
    {}, {"workspace_id": WORKSPACE_ID}, {"workspace_id": WORKSPACE_ID, "state": "approved"},
    {"workspace_id": WORKSPACE_ID, "state": "pending", "limit": "0"},
    {"workspace_id": WORKSPACE_ID, "state": "pending", "limit": "101"},
    {"workspace_id": WORKSPACE_ID, "state": "pending", "limit": "ten"},
    {"workspace_id": WORKSPACE_ID, "state": "pending", "cursor": "!!"},
    {"workspace_id": WORKSPACE_ID, "state": "pending",
     "cursor": "QSMwMDAwMDAwMDAwMDAwMDAjY2FuZF94"},
    {"workspace_id": WORKSPACE_ID, "state": "pending", "extra": "1"},
    {"workspace_id": "a#b", "state": "pending"},
], ids=["nothing", "no-state", "other-state", "limit-0", "limit-101", "limit-text",
        "cursor-garbage", "cursor-of-the-other-list", "extra", "hash-in-workspace"])
def test_a_bad_listing_query_gets_the_constant_400(gate_env: GateEnv,
                                                     query: dict[str, str]) -> None:
    status, body = host_call("GET", PENDING, gate_env.maintainer_token(), query=query or None)
    assert (status, body) == (400, BAD)


def test_listing_needs_a_maintainer_token(gate_env: GateEnv) -> None:
    query = {"workspace_id": WORKSPACE_ID, "state": "pending"}
    status, _ = host_call("GET", PENDING, None, query=query)
    assert status == 401
    status, body = host_call("GET", HELD, gate_env.agent_token(WORKSPACE_ID),
                             query={"workspace_id": WORKSPACE_ID})
    assert status == 403
    assert body["error"]["code"] == "FORBIDDEN"


def test_a_held_candidate_is_listed_until_the_host_adjudicates_it(
    gate_env: GateEnv, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("ENGRAM_ADMISSION_MODE", "adjudicate")
    bootstrap.reset()
    secret_text = f"Held fact nobody may log {secrets.token_hex(8)}."
    candidate = str(capture(text=secret_text,
                            key=f"capture-key-{secrets.token_hex(8)}")["candidate_id"])
    outcome = value(admit(candidate, key=f"admission-key-{secrets.token_hex(8)}"))
    assert outcome["outcome"]["status"] == "pending_adjudication"
    token = gate_env.maintainer_token()
    status, listed = host_call("GET", HELD, token, query={"workspace_id": WORKSPACE_ID})
    assert status == 200
    [held] = [i for i in listed["items"] if i["candidateId"] == candidate]
    assert held["principal"] == PRINCIPAL
    assert held["heldAtMs"] >= held["capturedAtMs"]
    assert set(held) == {"candidateId", "principal", "capturedAtMs", "heldAtMs", "policyId",
                         "policyVersion", "payloadDigest"}
    # The reviewer reads the payload (decrypted by request_admission, never logged).
    status, shown = host_call("GET", f"{HELD}/{candidate}", token,
                              query={"workspace_id": WORKSPACE_ID})
    assert status == 200, shown
    assert shown["candidateId"] == candidate
    assert secret_text in [c["text"] for c in shown["payload"]["components"]]
    agent = gate_env.agent_token(WORKSPACE_ID)
    assert host_call("GET", f"{HELD}/{candidate}", agent,
                     query={"workspace_id": WORKSPACE_ID})[0] == 403
    assert host_call("GET", f"{HELD}/{candidate}", token,
                     query={"workspace_id": WORKSPACE_ID, "x": "1"})[0] == 400
    assert host_call("GET", f"{HELD}/cand_{'z' * 52}", token,
                     query={"workspace_id": WORKSPACE_ID})[0] == 404
    status, decided = host_call("POST", f"{HELD}/{candidate}", token, {
        "workspace_id": WORKSPACE_ID, "decision": "reject", "approver": "carol@example.test"})
    assert status == 200, decided
    status, after = host_call("GET", HELD, token, query={"workspace_id": WORKSPACE_ID})
    assert status == 200
    assert candidate not in [i["candidateId"] for i in after["items"]]
    # Rejected: shredded, so nothing can be read any more.
    assert host_call("GET", f"{HELD}/{candidate}", token,
                     query={"workspace_id": WORKSPACE_ID})[0] == 404
    assert secret_text not in caplog.text


def test_a_pending_candidate_not_held_is_not_readable_through_the_review_route(
        gate_env: GateEnv) -> None:
    # Captured, never held by an admission: the agent's candidate, not the host's to read.
    secret_text = f"Pending fact nobody held {secrets.token_hex(8)}."
    candidate = str(capture(text=secret_text,
                            key=f"capture-key-{secrets.token_hex(8)}")["candidate_id"])
    token, query = gate_env.maintainer_token(), {"workspace_id": WORKSPACE_ID}
    missing = host_call("GET", f"{HELD}/cand_{'z' * 52}", token, query=query)
    pending = host_call("GET", f"{HELD}/{candidate}", token, query=query)
    assert pending == missing
    assert pending[0] == 404
    assert secret_text not in str(pending)


def test_a_held_listing_refuses_a_confirmation_cursor(gate_env: GateEnv) -> None:
    token, workspace = gate_env.maintainer_token(), _workspace()
    for _ in range(2):
        request_confirmation(token, workspace, "withdraw", PRINCIPAL, _withdraw())
    _, first = _pending(token, workspace, limit="1")
    status, body = host_call("GET", HELD, token, query={"workspace_id": workspace,
                                                        "cursor": first["nextCursor"]})
    assert (status, body) == (400, BAD)
