"""A decision whose workflow signal failed can be sent again; a confirmation bound to the
same call with other arguments is DIGEST_CONFLICT (CONTRACT §3.5), any other mismatch
gate_failed.

The signal faults are botocore hooks on the host API's own Step Functions client; the
workflow, the queue consumer and the gated tools run for real on the moto server.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from engram_memory import bootstrap
from engram_memory.domain.context import Tool

from tests.integration.gate.botocore_hooks import default_session_hooks
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import decide, host_call, request_confirmation
from tests.integration.write_path.support import (
    FixedClock,
    admit,
    call,
    capture,
    code,
    forget_args,
    value,
    withdraw_args,
)
from tests.support.events import PRINCIPAL, WORKSPACE_ID

SEND_SUCCESS = "before-send.sfn.SendTaskSuccess"
LOST_ANSWER = "after-call.sfn.SendTaskSuccess"


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def _unique() -> str:
    return secrets.token_hex(8)


def _timeout(request: Any = None, **_: Any) -> None:
    raise ReadTimeoutError(endpoint_url=getattr(request, "url", "sfn"))


def _post_decision(token: str, ref: str, decision: str) -> tuple[int, dict[str, Any]]:
    return host_call("POST", f"/host/confirmations/{ref}/decision", token, {
        "workspace_id": WORKSPACE_ID, "decision": decision, "approver": "alice@example.test"})


def _awaiting(gate_env: GateEnv) -> tuple[str, str]:
    token = gate_env.maintainer_token()
    args = withdraw_args("cand_" + "e" * 52, key=f"withdraw-key-{_unique()}")
    ref = request_confirmation(token, WORKSPACE_ID, "withdraw", PRINCIPAL, args)
    gate_env.wait_for_state(WORKSPACE_ID, ref, "awaiting_decision")
    return token, ref


def test_an_approval_whose_signal_failed_is_approved_when_the_host_sends_it_again(
    gate_env: GateEnv,
) -> None:
    token, ref = _awaiting(gate_env)
    with default_session_hooks({SEND_SUCCESS: _timeout}):
        status, _ = _post_decision(token, ref, "approve")
    assert status == 503
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert item["state"]["S"] == "awaiting_decision"
    settled = decide(token, WORKSPACE_ID, ref, "approve")
    assert settled["state"] == "approved"
    assert settled["approver"] == "alice@example.test"


def test_after_a_failed_approval_signal_a_rejection_is_still_refused(gate_env: GateEnv) -> None:
    token, ref = _awaiting(gate_env)
    with default_session_hooks({SEND_SUCCESS: _timeout}):
        assert _post_decision(token, ref, "approve")[0] == 503
    status, refused = _post_decision(token, ref, "reject")
    assert status == 409
    assert refused["error"]["code"] == "ILLEGAL_TRANSITION"
    assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"


def test_an_approval_that_landed_but_whose_answer_was_lost_is_reported_on_retry(
    gate_env: GateEnv,
) -> None:
    token, ref = _awaiting(gate_env)
    with default_session_hooks({LOST_ANSWER: _timeout}):
        assert _post_decision(token, ref, "approve")[0] == 503
    gate_env.wait_for_state(WORKSPACE_ID, ref, "approved")
    assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"
    assert _post_decision(token, ref, "reject")[0] == 409


# --- the digest binding --------------------------------------------------------------


def _record() -> str:
    text = f"The ingest queue retries with backoff, variant {_unique()}."
    candidate = str(capture(text=text, key=f"capture-key-{_unique()}")["candidate_id"])
    admitted = value(admit(candidate, key=f"admission-key-{_unique()}"))
    return str(admitted["outcome"]["record_id"])


def _forget(record_id: str, reason_ref: str) -> dict[str, Any]:
    return {**forget_args(record_id, key=f"forget-key-{_unique()}"), "reason_ref": reason_ref}


def _approve(gate_env: GateEnv, tool: Tool, args: dict[str, Any],
             principal: str = PRINCIPAL) -> str:
    token = gate_env.maintainer_token()
    ref = request_confirmation(token, WORKSPACE_ID, tool.value, principal, args)
    assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"
    return ref


def _still_approved(gate_env: GateEnv, ref: str) -> bool:
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    return item is not None and item["state"]["S"] == "approved"


def test_a_forget_with_other_arguments_than_the_approved_one_is_a_digest_conflict(
    gate_env: GateEnv,
) -> None:
    record_id = _record()
    approved = _forget(record_id, "reason:user-request")
    ref = _approve(gate_env, Tool.FORGET, approved)
    sent = {**approved, "reason_ref": "reason:retention-review"}
    assert code(call(Tool.FORGET, sent, confirmation_ref=ref)) == "DIGEST_CONFLICT"
    # Nothing changed: the approval is unspent and the approved call still runs.
    assert _still_approved(gate_env, ref)
    forgotten = value(call(Tool.FORGET, approved, confirmation_ref=ref))
    assert forgotten["receipt"]["to_state"] == "tombstoned"


def test_an_approved_call_touches_its_confirmation_only_inside_its_commit(
    gate_env: GateEnv,
) -> None:
    args = _forget(_record(), "reason:user-request")
    ref = _approve(gate_env, Tool.FORGET, args)
    reads: list[str] = []

    def watch(params: dict[str, Any], **_: Any) -> None:
        if str(params["Key"]["pk"]["S"]).startswith("CONF#"):
            reads.append(params["Key"]["sk"]["S"])

    events = bootstrap.dynamodb_client().meta.events
    event = "before-parameter-build.dynamodb.GetItem"
    events.register(event, watch, unique_id="confirmation-reads")
    try:
        forgotten = value(call(Tool.FORGET, args, confirmation_ref=ref))
    finally:
        events.unregister(event, unique_id="confirmation-reads")
    assert forgotten["receipt"]["to_state"] == "tombstoned"
    # The approval is read back only to name a refusal (DIGEST_CONFLICT vs gate_failed).
    assert reads == []


@pytest.mark.parametrize("mismatch", ["target", "principal", "window"])
def test_an_approval_for_another_target_principal_or_moment_stays_gate_failed(
    gate_env: GateEnv, mismatch: str
) -> None:
    record_id = _record()
    sent = _forget(record_id, "reason:retention-review")
    if mismatch == "target":
        ref = _approve(gate_env, Tool.FORGET, _forget(_record(), "reason:user-request"))
    elif mismatch == "principal":
        ref = _approve(gate_env, Tool.FORGET, _forget(record_id, "reason:user-request"),
                       principal="user:mallory")
    else:
        ref = _approve(gate_env, Tool.FORGET, _forget(record_id, "reason:user-request"))
        item = gate_env.confirmation_item(WORKSPACE_ID, ref)
        assert item is not None
        bootstrap.override(clock=FixedClock(int(item["window_ends_at_ms"]["N"]) + 1))
    assert code(call(Tool.FORGET, sent, confirmation_ref=ref)) == "gate_failed"
    assert _still_approved(gate_env, ref)


def test_an_approval_for_another_tool_on_the_same_target_stays_gate_failed(
    gate_env: GateEnv,
) -> None:
    candidate = str(capture(text=f"Gate tool binding {_unique()}.",
                            key=f"capture-key-{_unique()}")["candidate_id"])
    args = withdraw_args(candidate, key=f"withdraw-key-{_unique()}")
    ref = _approve(gate_env, Tool.REQUEST_ADMISSION, {
        "candidate_id": candidate, "idempotency_key": args["idempotency_key"]})
    assert code(call(Tool.WITHDRAW, args, confirmation_ref=ref)) == "gate_failed"
    assert _still_approved(gate_env, ref)
