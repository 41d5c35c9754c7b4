"""Confirmation items in the main table, and the gate check that consumes them.

Item: ``pk = CONF#{tenant}#{workspace}``, ``sk = REF#{elicitation_ref}``. The Step
Functions workflow writes it (``requested``), the queue consumer stores the task token
(``awaiting_decision``), the workflow marks the decision (``approved``/``rejected``) or
the timeout (``expired``) and closes the approval window (``expired``). The gated tool
moves ``approved`` → ``consumed`` inside its own TransactWriteItems (single use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate_conditional, translate_read
from engram_memory.adapters.dynamodb import items as it
from engram_memory.domain.confirmation import (
    REF_RE,
    Confirmation,
    ConfirmationState,
    Decision,
    Verdict,
    explain,
    verdict_on,
)
from engram_memory.domain.errors import IllegalTransition

if TYPE_CHECKING:
    from engram_memory.domain.context import InvocationContext, Scope, Tool
    from engram_memory.services.ports.write import GateConsumption


def confirmation_key(scope: Scope, elicitation_ref: str) -> dict[str, str]:
    """The plain-string key of a confirmation item (the workflow input carries it)."""
    return {"pk": f"CONF#{scope.key}", "sk": f"REF#{elicitation_ref}"}


def _typed_key(scope: Scope, elicitation_ref: str) -> dict[str, Any]:
    return {name: {"S": value} for name, value in confirmation_key(scope, elicitation_ref).items()}


def confirmation_from_item(item: dict[str, Any]) -> Confirmation:
    """Map a low-level DynamoDB item to a :class:`Confirmation`."""
    return Confirmation(
        elicitation_ref=item["elicitation_ref"]["S"],
        state=ConfirmationState(item["state"]["S"]),
        tool=item["tool"]["S"],
        target=item["target"]["S"],
        operation_digest=item["operation_digest"]["S"],
        principal=item["principal"]["S"],
        created_at_ms=int(item["created_at_ms"]["N"]),
        expires_at_ms=int(item["expires_at_ms"]["N"]),
        window_seconds=int(item["window_seconds"]["N"]),
        task_token=it.optional_text(item, "task_token"),
        approved_at_ms=it.optional_number(item, "approved_at_ms"),
        window_ends_at_ms=it.optional_number(item, "window_ends_at_ms"),
        decision=it.optional_text(item, "decision"),
        approver=it.optional_text(item, "approver"),
    )


class DynamoConfirmationStore:
    """Reads confirmation items; records decisions and task tokens."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def get(self, scope: Scope, elicitation_ref: str) -> Confirmation | None:
        """The item (strongly consistent read), or None."""
        try:
            response = self._client.get_item(
                TableName=self._table, Key=_typed_key(scope, elicitation_ref), ConsistentRead=True,
            )
        except AWS_FAILURES as exc:
            # Connection failures, timeouts and throttling too (errors.py, the one translator).
            raise translate_read(exc) from exc
        item = response.get("Item")
        return confirmation_from_item(item) if item else None

    def record_decision(
        self, scope: Scope, elicitation_ref: str, decision: Decision, approver: str,
        decided_by: str, now_ms: int,
    ) -> None:
        """First decision wins; recording the SAME decision again succeeds (a retry).

        A decision saved whose workflow signal then failed must not block its own retry:
        the condition accepts the identical decision, and ``if_not_exists`` keeps the
        first approver and instant. A different decision still fails the condition.
        """
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_typed_key(scope, elicitation_ref),
                UpdateExpression="SET decision = :d, approver = if_not_exists(approver, :a), "
                                 "decided_by = if_not_exists(decided_by, :by), "
                                 "decided_at_ms = if_not_exists(decided_at_ms, :now)",
                ConditionExpression="#s = :awaiting AND "
                                    "(attribute_not_exists(decision) OR decision = :d)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":d": {"S": decision.value}, ":a": {"S": approver}, ":by": {"S": decided_by},
                    ":now": {"N": str(now_ms)},
                    ":awaiting": {"S": ConfirmationState.AWAITING_DECISION.value},
                },
            )
        except AWS_FAILURES as exc:
            raise translate_conditional(exc, IllegalTransition) from exc

    def store_task_token(self, pk: str, sk: str, task_token: str) -> bool:
        """Attach the workflow's task token; False when the item moved on (drop the message).

        Redelivery of the same message is harmless: the condition also accepts an item
        already awaiting a decision with this very token.
        """
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": pk}, "sk": {"S": sk}},
                UpdateExpression="SET #s = :awaiting, task_token = :t",
                ConditionExpression="#s = :requested OR (#s = :awaiting AND task_token = :t)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":awaiting": {"S": ConfirmationState.AWAITING_DECISION.value},
                    ":requested": {"S": ConfirmationState.REQUESTED.value},
                    ":t": {"S": task_token},
                },
            )
        except AWS_FAILURES as exc:
            error = translate_conditional(exc, IllegalTransition)
            if isinstance(error, IllegalTransition):
                return False
            raise error from exc
        return True


def consumption_element(table_name: str, consumption: GateConsumption) -> dict[str, Any]:
    """The TransactWriteItems ``Update`` consuming an approval: it succeeds only for this
    exact approved, unexpired, unused call.

    Bound to tool, target, operation digest and the host-bound principal; ``approved``
    also means "not consumed". If the condition fails the whole transaction is
    cancelled, which the store reports as GateFailed with nothing changed.
    """
    return {
        "Update": {
            "TableName": table_name,
            "Key": _typed_key(consumption.scope, consumption.confirmation_ref),
            "UpdateExpression": "SET #s = :consumed, consumed_at_ms = :now, "
                                "consumed_audit_id = :audit",
            "ConditionExpression": (
                "#s = :approved AND #tool = :tool AND #target = :target AND "
                "#digest = :digest AND #principal = :principal AND "
                "#at <= :now AND #end >= :now"
            ),
            "ExpressionAttributeNames": {
                "#s": "state", "#tool": "tool", "#target": "target",
                "#digest": "operation_digest", "#principal": "principal",
                "#at": "approved_at_ms", "#end": "window_ends_at_ms",
            },
            "ExpressionAttributeValues": {
                ":consumed": {"S": ConfirmationState.CONSUMED.value},
                ":approved": {"S": ConfirmationState.APPROVED.value},
                ":tool": {"S": consumption.tool.value},
                ":target": {"S": consumption.target},
                ":digest": {"S": consumption.operation_digest},
                ":principal": {"S": consumption.principal},
                ":now": {"N": str(consumption.at_ms)},
                ":audit": {"S": consumption.audit_id},
            },
            "ReturnValuesOnConditionCheckFailure": "NONE",
        }
    }


class DynamoConfirmationGate:
    """The ConfirmationGate port: reads a confirmation to explain a refusal."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def explain_refusal(self, ctx: InvocationContext, tool: Tool, target: str,
                        operation_digest: str, now_ms: int) -> None:
        """DigestConflict when a usable approval for this very call names other arguments.

        CONTRACT §3.5: the confirmation is bound to an intent hash and a mismatch surfaces
        as DIGEST_CONFLICT. Called only after the element cancelled a commit (nothing was
        written), so an approved call pays no read of its confirmation. The commit's
        condition stays the single authority; this only names the refusal.
        """
        explain(self._verdict(ctx, tool, target, operation_digest, now_ms),
                refused_by_commit=True)

    def _verdict(self, ctx: InvocationContext, tool: Tool, target: str,
                 operation_digest: str, now_ms: int) -> Verdict:
        ref = ctx.confirmation_ref
        if ref is None or REF_RE.fullmatch(ref) is None:
            return Verdict.NONE
        try:
            response = self._client.get_item(
                TableName=self._table, Key=_typed_key(ctx.scope, ref), ConsistentRead=True,
            )
        except AWS_FAILURES as exc:
            raise translate_read(exc) from exc
        item = response.get("Item")
        found = confirmation_from_item(item) if item else None
        return verdict_on(found, ctx.principal, tool.value, target, operation_digest, now_ms)
