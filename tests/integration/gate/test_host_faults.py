"""Host routes when the network fails: retriable, constant answers, never a generic 500.

Faults are injected with botocore ``before-send`` hooks on the host API's own clients
(moto serves everything else), so botocore's retries run first, as they would in AWS.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from tests.integration.gate.botocore_hooks import default_session_hooks, throttled
from tests.integration.gate.conftest import GateEnv
from tests.integration.gate.host import decide, host_call, request_confirmation
from tests.integration.write_path.support import withdraw_args
from tests.support.events import PRINCIPAL, WORKSPACE_ID

STORE_UNAVAILABLE = {"error": {"code": "STORE_UNAVAILABLE", "retriable": True,
                               "message": "The memory store is unavailable."}}
FAULTS = {
    "endpoint-connection": EndpointConnectionError,
    "connect-timeout": ConnectTimeoutError,
    "read-timeout": ReadTimeoutError,
}
UNKNOWN_REF = "conf_" + "0" * 32


def _failing(fault: type[Exception]) -> Any:
    def hook(request: Any, **_: Any) -> None:
        raise fault(endpoint_url=request.url)

    return hook


def _show(gate_env: GateEnv, ref: str) -> tuple[int, dict[str, Any]]:
    return host_call("GET", f"/host/confirmations/{ref}", gate_env.maintainer_token(),
                     query={"workspace_id": WORKSPACE_ID})


def _withdraw_args() -> dict[str, Any]:
    return withdraw_args("cand_" + "d" * 52, key=f"withdraw-key-{secrets.token_hex(8)}")


@pytest.mark.parametrize("fault", list(FAULTS.values()), ids=list(FAULTS))
def test_an_unreachable_confirmation_store_is_a_constant_503(
        gate_env: GateEnv, fault: type[Exception]) -> None:
    with default_session_hooks({"before-send.dynamodb.GetItem": _failing(fault)}):
        status, answer = _show(gate_env, UNKNOWN_REF)
    assert status == 503
    assert answer == STORE_UNAVAILABLE
    # Once the store answers again, the same request gets its ordinary answer.
    assert _show(gate_env, UNKNOWN_REF)[0] == 404


def test_a_throttled_confirmation_store_is_rate_limited(gate_env: GateEnv) -> None:
    with default_session_hooks({"before-send.dynamodb.GetItem": throttled}):
        status, answer = _show(gate_env, UNKNOWN_REF)
    assert status == 429
    assert answer == {"error": {"code": "RATE_LIMITED", "retriable": True,
                                "message": "Too many requests; back off and retry."}}


def test_a_decision_the_store_cannot_record_is_a_503_and_can_be_sent_again(
        gate_env: GateEnv) -> None:
    token = gate_env.maintainer_token()
    ref = request_confirmation(token, WORKSPACE_ID, "withdraw", PRINCIPAL, _withdraw_args())
    gate_env.wait_for_state(WORKSPACE_ID, ref, "awaiting_decision")
    hooks = {"before-send.dynamodb.UpdateItem": _failing(EndpointConnectionError)}
    with default_session_hooks(hooks):
        status, answer = host_call("POST", f"/host/confirmations/{ref}/decision", token, {
            "workspace_id": WORKSPACE_ID, "decision": "approve",
            "approver": "alice@example.test"})
    assert status == 503
    assert answer == STORE_UNAVAILABLE
    assert decide(token, WORKSPACE_ID, ref, "approve")["state"] == "approved"


def test_an_unreachable_workflow_service_is_a_503(gate_env: GateEnv) -> None:
    hooks = {"before-send.sfn.StartExecution": _failing(ConnectTimeoutError)}
    with default_session_hooks(hooks):
        status, answer = host_call("POST", "/host/confirmations", gate_env.maintainer_token(), {
            "workspace_id": WORKSPACE_ID, "capability": "withdraw", "principal": PRINCIPAL,
            "arguments": _withdraw_args(), "ttl_seconds": 20})
    assert status == 503
    assert answer == STORE_UNAVAILABLE
