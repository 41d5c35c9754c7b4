"""The confirmation workflow on moto's Step Functions executor, and the consuming element
the store commits with a gated call (adapters/dynamodb/confirmations.consumption_element).

These run the real ASL: the request is recorded by the workflow, the queue pump stores the
task token, a decision moves the item, the window and the TTL expire it. The consume
element is applied exactly as the gated tool's transaction applies it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.exceptions import ClientError
from engram_memory.adapters.dynamodb.confirmations import consumption_element
from engram_memory.adapters.stepfunctions.clients import gate_clients
from engram_memory.composition.host_api import build_confirmation_service
from engram_memory.contract.invocation import ContextModel
from engram_memory.domain.confirmation import Decision
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import GateFailed, IllegalTransition, InvalidSchema, NotFound
from engram_memory.services.confirmation import ConfirmationService
from engram_memory.services.ports.write import GateConsumption

from tests.integration.gate.conftest import WINDOW_SECONDS, GateEnv
from tests.support.events import PRINCIPAL, WORKSPACE_ID, make_context

DIGEST = "sha256:" + "ab" * 32
OTHER_DIGEST = "sha256:" + "cd" * 32
TARGET = "cand_aaaaaaaa"


@pytest.fixture(scope="module")
def service(gate_env: GateEnv) -> ConfirmationService:
    return build_confirmation_service(gate_env.settings, gate_clients(gate_env.settings))


@pytest.fixture(scope="module")
def scope(gate_env: GateEnv) -> Scope:
    return Scope(gate_env.settings.tenant_id, WORKSPACE_ID)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _consume(gate_env: GateEnv, ref: str | None, *, tool: Tool = Tool.WITHDRAW,
             target: str = TARGET, digest: str = DIGEST, principal: str = PRINCIPAL,
             now_ms: int | None = None) -> None:
    """Apply the gate's element alone, as the tool's TransactWriteItems would."""
    ctx = ContextModel(**make_context(confirmation_ref=ref, principal=principal)).to_context()
    consumption = GateConsumption.of(ctx, tool, target, digest,
                                     _now_ms() if now_ms is None else now_ms)
    element = consumption_element(gate_env.settings.table_name, consumption)
    gate_env.dynamodb.transact_write_items(TransactItems=[element])


def _execution_status(gate_env: GateEnv, ref: str) -> str:
    machine = gate_env.settings.state_machine_arn
    execution = machine.replace(":stateMachine:", ":execution:") + ":" + ref
    return str(gate_env.stepfunctions.describe_execution(executionArn=execution)["status"])


def _is_cancelled(exc: ClientError) -> bool:
    return exc.response["Error"]["Code"] == "TransactionCanceledException"


def _approved(service: ConfirmationService, scope: Scope, **kwargs: Any) -> str:
    created = service.request(scope, Tool.WITHDRAW, TARGET, DIGEST, PRINCIPAL, "operator",
                              ttl_seconds=kwargs.get("ttl_seconds", 30))
    settled = service.decide(scope, created.elicitation_ref, Decision.APPROVE, "alice", "op")
    assert settled.state.value == "approved"
    return created.elicitation_ref


def test_a_request_is_recorded_by_the_workflow_and_awaits_a_decision(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    created = service.request(scope, Tool.WITHDRAW, TARGET, DIGEST, PRINCIPAL, "operator",
                              ttl_seconds=20)
    # The queue consumer may already have stored the token by the time request returns.
    assert created.state.value in ("requested", "awaiting_decision")
    item = gate_env.wait_for_state(WORKSPACE_ID, created.elicitation_ref, "awaiting_decision")
    assert item["tool"]["S"] == "withdraw"
    assert item["target"]["S"] == TARGET
    assert item["operation_digest"]["S"] == DIGEST
    assert item["principal"]["S"] == PRINCIPAL
    assert int(item["expires_at_ms"]["N"]) - int(item["created_at_ms"]["N"]) == 20_000
    assert "task_token" in item
    assert "taskToken" not in str(service.show(scope, created.elicitation_ref).public_view())


def test_an_approved_confirmation_is_consumed_once_and_never_again(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    ref = _approved(service, scope)
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    assert int(item["window_ends_at_ms"]["N"]) - int(item["approved_at_ms"]["N"]) == (
        WINDOW_SECONDS * 1000)
    _consume(gate_env, ref)
    assert service.show(scope, ref).state.value == "consumed"
    with pytest.raises(ClientError) as second:
        _consume(gate_env, ref)
    assert _is_cancelled(second.value)


def test_a_consumed_confirmation_is_left_consumed_when_the_window_closes(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    ref = _approved(service, scope)
    _consume(gate_env, ref)
    time.sleep(WINDOW_SECONDS + 1.5)
    assert service.show(scope, ref).state.value == "consumed"
    assert _execution_status(gate_env, ref) == "SUCCEEDED"


def test_an_unused_approval_expires_when_its_window_closes(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    ref = _approved(service, scope)
    gate_env.wait_for_state(WORKSPACE_ID, ref, "expired", timeout_s=WINDOW_SECONDS + 5)
    time.sleep(0.5)
    assert _execution_status(gate_env, ref) == "SUCCEEDED"
    with pytest.raises(ClientError) as late:
        _consume(gate_env, ref)
    assert _is_cancelled(late.value)


def test_a_rejected_confirmation_cannot_be_consumed(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    created = service.request(scope, Tool.WITHDRAW, TARGET, DIGEST, PRINCIPAL, "operator",
                              ttl_seconds=20)
    settled = service.decide(scope, created.elicitation_ref, Decision.REJECT, "alice", "op")
    assert settled.state.value == "rejected"
    with pytest.raises(ClientError) as refused:
        _consume(gate_env, created.elicitation_ref)
    assert _is_cancelled(refused.value)


def test_a_confirmation_nobody_decides_expires_after_its_ttl(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    created = service.request(scope, Tool.WITHDRAW, TARGET, DIGEST, PRINCIPAL, "operator",
                              ttl_seconds=1)
    gate_env.wait_for_state(WORKSPACE_ID, created.elicitation_ref, "expired", timeout_s=8)
    with pytest.raises(IllegalTransition):
        service.decide(scope, created.elicitation_ref, Decision.APPROVE, "alice", "op")


@pytest.mark.parametrize(
    "mismatch",
    [{"tool": Tool.FORGET}, {"target": "cand_bbbbbbbb"}, {"digest": OTHER_DIGEST},
     {"principal": "user:mallory"}],
    ids=["tool", "target", "digest", "principal"],
)
def test_an_approval_bound_to_another_call_is_not_consumed(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope, mismatch: dict[str, Any]
) -> None:
    ref = _approved(service, scope)
    with pytest.raises(ClientError) as refused:
        _consume(gate_env, ref, **mismatch)
    assert _is_cancelled(refused.value)
    assert service.show(scope, ref).state.value == "approved"


def test_an_approval_used_after_its_window_is_not_consumed(
    gate_env: GateEnv, service: ConfirmationService, scope: Scope
) -> None:
    ref = _approved(service, scope)
    item = gate_env.confirmation_item(WORKSPACE_ID, ref)
    assert item is not None
    with pytest.raises(ClientError) as refused:
        _consume(gate_env, ref, now_ms=int(item["window_ends_at_ms"]["N"]) + 1)
    assert _is_cancelled(refused.value)


def test_a_call_without_a_confirmation_reference_fails_the_gate(gate_env: GateEnv) -> None:
    with pytest.raises(GateFailed):
        _consume(gate_env, None)


def test_a_second_decision_on_the_same_confirmation_is_refused(
    service: ConfirmationService, scope: Scope
) -> None:
    ref = _approved(service, scope)
    with pytest.raises(IllegalTransition):
        service.decide(scope, ref, Decision.REJECT, "bob", "op")


def test_a_request_with_a_malformed_digest_or_an_ungated_tool_is_refused(
    service: ConfirmationService, scope: Scope
) -> None:
    with pytest.raises(InvalidSchema):
        service.request(scope, Tool.WITHDRAW, TARGET, "sha256:nope", PRINCIPAL, "op")
    with pytest.raises(InvalidSchema):
        service.request(scope, Tool.SEARCH, "", DIGEST, PRINCIPAL, "op")
    with pytest.raises(InvalidSchema):
        service.request(scope, Tool.WITHDRAW, TARGET, DIGEST, PRINCIPAL, "op", ttl_seconds=301)


def test_an_unknown_reference_is_not_found(service: ConfirmationService, scope: Scope) -> None:
    with pytest.raises(NotFound):
        service.show(scope, "conf_" + "0" * 32)
    with pytest.raises(NotFound):
        service.show(scope, "bad#ref")
