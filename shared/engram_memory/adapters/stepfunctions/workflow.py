"""The confirmation workflow on Step Functions: one standard execution per confirmation.

The execution is named after the elicitation ref, so a retried StartExecution can never
start a second workflow for the same confirmation. Decisions travel as SendTaskSuccess
(approval instants as the task output) or SendTaskFailure (error ``Rejected``). A task no
longer awaiting is ILLEGAL_TRANSITION (adapters/aws_errors.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate_stepfunctions
from engram_memory.adapters.dynamodb.confirmations import confirmation_key
from engram_memory.adapters.dynamodb.items import confirmation_waiting_sk, waiting_pk

if TYPE_CHECKING:
    from engram_memory.domain.confirmation import ConfirmationRequest

REJECTED_ERROR = "Rejected"


def execution_input(request: ConfirmationRequest) -> dict[str, Any]:
    """The workflow input (see the ASL): DynamoDB numbers travel as decimal strings."""
    key = confirmation_key(request.scope, request.elicitation_ref)
    return {
        "pk": key["pk"],
        "sk": key["sk"],
        "elicitation_ref": request.elicitation_ref,
        "tenant_id": request.scope.tenant_id,
        "workspace_id": request.scope.workspace_id,
        "tool": request.tool.value,
        "target": request.target,
        "operation_digest": request.operation_digest,
        "principal": request.principal,
        "requested_by": request.requested_by,
        "created_at_ms": str(request.created_at_ms),
        "expires_at_ms": str(request.expires_at_ms),
        "ttl_epoch_s": str(request.retain_until_s),
        "ttl_seconds": request.ttl_seconds,
        "window_seconds": request.window_seconds,
        "window_seconds_n": str(request.window_seconds),
        "reason": request.reason,
        # The sparse waiting index (adapters/dynamodb/waiting.py): set by RecordRequest,
        # removed by whichever state ends the wait.
        "waiting_pk": waiting_pk(request.scope),
        "waiting_sk": confirmation_waiting_sk(request.expires_at_ms, request.elicitation_ref),
    }


class StepFunctionsConfirmationWorkflow:
    """The ConfirmationWorkflow port on a Step Functions client."""

    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, request: ConfirmationRequest) -> None:
        """StartExecution named after the elicitation ref."""
        try:
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=request.elicitation_ref,
                input=json.dumps(execution_input(request), sort_keys=True),
            )
        except AWS_FAILURES as exc:
            raise translate_stepfunctions(exc) from exc

    def approve(self, task_token: str, approved_at_ms: int, window_ends_at_ms: int) -> None:
        """SendTaskSuccess: the workflow records the approval and opens the window."""
        output = {"approved_at_ms": str(approved_at_ms),
                  "window_ends_at_ms": str(window_ends_at_ms)}
        try:
            self._client.send_task_success(taskToken=task_token, output=json.dumps(output))
        except AWS_FAILURES as exc:
            raise translate_stepfunctions(exc) from exc

    def reject(self, task_token: str) -> None:
        """SendTaskFailure with the ``Rejected`` error the ASL catches."""
        try:
            self._client.send_task_failure(
                taskToken=task_token, error=REJECTED_ERROR,
                cause="The human rejected the operation.",
            )
        except AWS_FAILURES as exc:
            raise translate_stepfunctions(exc) from exc
