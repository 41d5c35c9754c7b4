"""The confirmation queue consumer: store the task token, notify the host.

The workflow's ``AwaitDecision`` state sends one SQS message per confirmation carrying
the task token. For each record this consumer (1) stores the token on the confirmation
item (``requested`` → ``awaiting_decision``) so the host's decision can be signalled, and
(2) emits the host notification. Failures are reported per record (partial batch
response) so only those messages are retried. The notification carries the binding
(capability, target, operation digest, principal, deadline), never the task token and
never memory content.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import BaseModel, ConfigDict, ValidationError

logger = logging.getLogger(__name__)

DETAIL_TYPE = "engram.confirmation.requested"


class MalformedMessage(ValueError):
    """A queue message that is not the workflow's (reported as a failed record)."""

    def __init__(self) -> None:
        super().__init__("malformed confirmation message")


class TokenStore(Protocol):
    """Where the task token lands (DynamoConfirmationStore)."""

    def store_task_token(self, pk: str, sk: str, task_token: str) -> bool:
        """Attach the token; False when the item already moved on."""
        ...


class HostNotifier(Protocol):
    """Tells the host a human decision is needed."""

    def notify(self, detail: dict[str, str]) -> None:
        """Publish one ``engram.confirmation.requested`` notification."""
        ...


class NoHostNotifier:
    """Used when no event bus is configured: the host polls ``GET /host/confirmations``."""

    def notify(self, detail: dict[str, str]) -> None:
        """Do nothing (and log nothing: there is nothing to correlate)."""


class QueueMessage(BaseModel):
    """The message body the ASL's AwaitDecision state sends (closed)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    kind: str
    task_token: str
    pk: str
    sk: str
    elicitation_ref: str
    tenant_id: str
    workspace_id: str
    tool: str
    target: str
    operation_digest: str
    principal: str
    expires_at_ms: str

    def notification(self) -> dict[str, str]:
        """The host notification detail (no task token)."""
        return {
            "elicitationRef": self.elicitation_ref, "tenantId": self.tenant_id,
            "workspaceId": self.workspace_id, "capability": self.tool, "target": self.target,
            "operationDigest": self.operation_digest, "principal": self.principal,
            "expiresAtMs": self.expires_at_ms,
        }


class ConfirmationNotifier:
    """Processes a Lambda SQS event (also fed by the local queue pump)."""

    def __init__(self, tokens: TokenStore, host: HostNotifier) -> None:
        self._tokens = tokens
        self._host = host

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """Partial batch response: ``{"batchItemFailures": [{"itemIdentifier": id}, ...]}``."""
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(
            event=event, record_handler=self._record, processor=processor, context=context,
        ))

    def _record(self, record: SQSRecord) -> None:
        try:
            message = QueueMessage.model_validate_json(record.body)
        except ValidationError:
            # A constant error: the validation detail would echo the body (and its token).
            raise MalformedMessage() from None
        if message.kind != DETAIL_TYPE:
            raise MalformedMessage()
        if not self._tokens.store_task_token(message.pk, message.sk, message.task_token):
            # Already decided/expired: nothing to notify; the message is done.
            logger.info("confirmation no longer awaiting", extra={"ref": message.elicitation_ref})
            return
        self._host.notify(message.notification())
        logger.info("confirmation awaiting decision", extra={"ref": message.elicitation_ref})
