"""Local stand-in for the SQS → Lambda event source of the confirmation queue.

Polls the queue on the moto server and feeds the very same ``ConfirmationNotifier`` the
``functions/confirmation_notifier`` Lambda runs, with Lambda-shaped SQS events. Messages
the notifier reports as failed stay on the queue (redelivered after the visibility
timeout), exactly like ``ReportBatchItemFailures``; the others are deleted.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationStore
from engram_memory.adapters.stepfunctions.clients import gate_clients, sqs_client
from engram_memory.composition.notifier import build_notifier
from engram_memory.gate.notifier import ConfirmationNotifier
from engram_memory.local.console import ConsoleHostNotifier

if TYPE_CHECKING:
    from engram_memory.settings import Settings

logger = logging.getLogger(__name__)
QUEUE_ARN_PREFIX = "arn:aws:sqs"


def lambda_event(messages: list[dict[str, Any]], region: str, queue_url: str) -> dict[str, Any]:
    """The SQS event Lambda would deliver for these received messages."""
    queue_name = queue_url.rstrip("/").rsplit("/", 1)[-1]
    arn = f"{QUEUE_ARN_PREFIX}:{region}:000000000000:{queue_name}"
    return {"Records": [{
        "messageId": m["MessageId"],
        "receiptHandle": m["ReceiptHandle"],
        "body": m["Body"],
        "attributes": dict(m.get("Attributes", {})),
        "messageAttributes": {},
        "md5OfBody": m.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": region,
    } for m in messages]}


def pump_once(
    sqs: Any, queue_url: str, notifier: ConfirmationNotifier, region: str, wait_s: int = 1,
) -> int:
    """Receive one batch, hand it to the notifier, delete what succeeded; the count handled."""
    messages = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_s,
        AttributeNames=["All"],
    ).get("Messages", [])
    if not messages:
        return 0
    result = notifier.handle(lambda_event(messages, region, queue_url))
    failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
    done = [m for m in messages if m["MessageId"] not in failed]
    for message in done:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(done)


def run_queue_pump(settings: Settings, stop_event: threading.Event,
                   review_url: str | None = None) -> None:
    """Pump until ``stop_event`` is set (run it in a daemon thread).

    With ``review_url`` (``engram-memory serve``) the console is the host: each confirmation
    waiting for a decision is one printed line pointing at the review page.
    """
    sqs = sqs_client(settings)
    clients = gate_clients(settings)
    notifier = (ConfirmationNotifier(DynamoConfirmationStore(clients.dynamodb,
                                                             settings.table_name),
                                     ConsoleHostNotifier(review_url))
                if review_url else build_notifier(settings, clients))
    while not stop_event.is_set():
        try:
            pump_once(sqs, settings.confirmation_queue_url, notifier, settings.region)
        except Exception as exc:  # keep pumping: a transient failure must not stop the gate
            logger.warning("queue pump iteration failed", extra={"error_class": type(exc).__name__})
            time.sleep(0.5)
