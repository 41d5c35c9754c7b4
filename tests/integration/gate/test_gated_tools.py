"""The gated tools against the real confirmation workflow (moto Step Functions execution).

A human approval obtained through the host routes lets exactly one matching call run;
anything else is gate_failed with nothing changed.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Tool
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from tests.integration.gate.conftest import WINDOW_SECONDS, GateEnv
from tests.integration.gate.host import decide, request_confirmation
from tests.integration.write_path.support import (
    FixedClock,
    call,
    capture,
    code,
    forget_args,
    value,
    withdraw_args,
)
from tests.support.events import PRINCIPAL, WORKSPACE_ID


@pytest.fixture(autouse=True)
def _fresh_wiring(gate_env: GateEnv) -> Any:
    bootstrap.reset()
    yield
    bootstrap.reset()


def _unique() -> str:
    return secrets.token_hex(8)


def _candidate() -> str:
    text = f"The ingest queue retries with backoff, variant {_unique()}."
    return str(capture(text=text, key=f"capture-key-{_unique()}")["candidate_id"])


def _withdraw_call(candidate_id: str) -> dict[str, Any]:
    return withdraw_args(candidate_id, key=f"withdraw-key-{_unique()}")


def _approved(gate_env: GateEnv, tool: Tool, args: dict[str, Any], **kw: Any) -> str:
    token = gate_env.maintainer_token()
    ref = request_confirmation(token, WORKSPACE_ID, tool.value, kw.get("principal", PRINCIPAL),
                               args, ttl_seconds=kw.get("ttl_seconds", 30))
    assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"
    return ref


def test_an_approved_withdraw_runs_once_and_its_reference_is_then_spent(
    gate_env: GateEnv,
) -> None:
    candidate = _candidate()
    args = _withdraw_call(candidate)
    ref = _approved(gate_env, Tool.WITHDRAW, args)
    first = value(call(Tool.WITHDRAW, args, confirmation_ref=ref))
    assert first["receipt"]["to_state"] == "withdrawn"
    assert first["replayed"] is False
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert item["state"]["S"] == "consumed"
    other = _candidate()
    assert code(call(Tool.WITHDRAW, _withdraw_call(other), confirmation_ref=ref)) == (
        "gate_failed")


def test_a_replayed_withdraw_returns_the_stored_result_without_a_new_confirmation(
    gate_env: GateEnv,
) -> None:
    args = _withdraw_call(_candidate())
    ref = _approved(gate_env, Tool.WITHDRAW, args)
    first = value(call(Tool.WITHDRAW, args, confirmation_ref=ref))
    again = value(call(Tool.WITHDRAW, args, confirmation_ref=ref))
    assert again["replayed"] is True
    assert again["receipt"] == first["receipt"]
    assert value(call(Tool.WITHDRAW, args))["replayed"] is True


def test_a_rejected_withdraw_fails_the_gate_and_leaves_the_candidate_pending(
    gate_env: GateEnv,
) -> None:
    candidate = _candidate()
    args = _withdraw_call(candidate)
    token = gate_env.maintainer_token()
    ref = request_confirmation(token, WORKSPACE_ID, "withdraw", PRINCIPAL, args)
    assert decide(token, WORKSPACE_ID, ref, "reject")["state"] == "rejected"
    assert code(call(Tool.WITHDRAW, args, confirmation_ref=ref)) == "gate_failed"
    # Nothing changed: the same call, properly approved, still withdraws the candidate.
    retry = _withdraw_call(candidate)
    approved = _approved(gate_env, Tool.WITHDRAW, retry)
    assert value(call(Tool.WITHDRAW, retry, confirmation_ref=approved))["replayed"] is False


def test_a_confirmation_left_undecided_past_its_ttl_fails_the_gate(gate_env: GateEnv) -> None:
    args = _withdraw_call(_candidate())
    ref = request_confirmation(gate_env.maintainer_token(), WORKSPACE_ID, "withdraw",
                               PRINCIPAL, args, ttl_seconds=1)
    gate_env.wait_for_state(WORKSPACE_ID, ref, "expired", timeout_s=8)
    assert code(call(Tool.WITHDRAW, args, confirmation_ref=ref)) == "gate_failed"


def test_an_approval_unused_until_its_window_closes_fails_the_gate(gate_env: GateEnv) -> None:
    args = _withdraw_call(_candidate())
    ref = _approved(gate_env, Tool.WITHDRAW, args)
    gate_env.wait_for_state(WORKSPACE_ID, ref, "expired", timeout_s=WINDOW_SECONDS + 5)
    assert code(call(Tool.WITHDRAW, args, confirmation_ref=ref)) == "gate_failed"


def test_an_approval_older_than_its_window_fails_the_gate_even_before_the_workflow_expires_it(
    gate_env: GateEnv,
) -> None:
    args = _withdraw_call(_candidate())
    ref = _approved(gate_env, Tool.WITHDRAW, args)
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert item["state"]["S"] == "approved"
    bootstrap.override(clock=FixedClock(int(item["window_ends_at_ms"]["N"]) + 1))
    assert code(call(Tool.WITHDRAW, args, confirmation_ref=ref)) == "gate_failed"
    assert gate_env.confirmation_item(WORKSPACE_ID, ref)["state"]["S"] == "approved"  # type: ignore[index]


@pytest.mark.parametrize("mismatch", ["target", "tool", "digest", "principal"])
def test_an_approval_bound_to_another_call_fails_the_gate(
    gate_env: GateEnv, mismatch: str
) -> None:
    candidate = _candidate()
    args = _withdraw_call(candidate)
    ctx: dict[str, Any] = {}
    if mismatch == "target":
        ref = _approved(gate_env, Tool.WITHDRAW, _withdraw_call(_candidate()))
    elif mismatch == "tool":
        ref = _approved(gate_env, Tool.REQUEST_ADMISSION, {
            "candidate_id": candidate, "idempotency_key": args["idempotency_key"]})
    elif mismatch == "digest":
        ref = _approved(gate_env, Tool.WITHDRAW, {**args, "reason_ref": "reason:other"})
    else:
        ref = _approved(gate_env, Tool.WITHDRAW, args, principal="user:mallory")
    # CONTRACT §3.5: the same approved call with other arguments is a digest conflict.
    expected = "DIGEST_CONFLICT" if mismatch == "digest" else "gate_failed"
    assert code(call(Tool.WITHDRAW, args, confirmation_ref=ref, **ctx)) == expected
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert item["state"]["S"] == "approved"


def test_a_withdraw_without_a_confirmation_reference_fails_the_gate(gate_env: GateEnv) -> None:
    assert code(call(Tool.WITHDRAW, _withdraw_call(_candidate()))) == "gate_failed"


def test_a_capture_the_host_marks_as_confirmed_fails_the_gate_without_a_confirmation(
    gate_env: GateEnv,
) -> None:
    from tests.fixtures.contract_fixtures import valid_capture_args

    args = valid_capture_args(text=f"Gated capture {_unique()}.",
                              idempotency_key=f"capture-key-{_unique()}")
    assert code(call(Tool.CAPTURE, args, confirmation_required=["capture"])) == "gate_failed"
    ref = _approved(gate_env, Tool.CAPTURE, args)
    captured = value(call(Tool.CAPTURE, args, confirmation_required=["capture"],
                          confirmation_ref=ref))
    assert captured["status"] == "committed_pending"


def test_a_confirmed_forget_tombstones_the_record(gate_env: GateEnv) -> None:
    from tests.integration.write_path.support import admit

    candidate = _candidate()
    admitted = value(admit(candidate, key=f"admission-key-{_unique()}"))
    record_id = admitted["outcome"]["record_id"]
    args = forget_args(record_id, key=f"forget-key-{_unique()}")
    assert code(call(Tool.FORGET, args)) == "gate_failed"
    ref = _approved(gate_env, Tool.FORGET, args)
    forgotten = value(call(Tool.FORGET, args, confirmation_ref=ref))
    assert forgotten["receipt"]["to_state"] == "tombstoned"
    assert code(call_get(record_id)) == "NOT_FOUND"


def call_get(record_id: str) -> dict[str, Any]:
    """engram_memory_get through its Lambda handler."""
    from functions.get.handler import lambda_handler as get_handler
    from tests.fixtures.contract_fixtures import valid_get_args
    from tests.support.events import make_event

    event = make_event(Tool.GET, valid_get_args(record_id=record_id))
    return dict(get_handler(event, LocalLambdaContext("engram-get")))
