"""The confirmation queue consumer Lambda: SQS batch → task token stored + host notified.

Reports failures per record (``ReportBatchItemFailures``); the local queue pump feeds the
very same ``ConfirmationNotifier`` with Lambda-shaped events.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory.composition import notifier
from engram_memory.metrics_namespace import (
    METRICS_NAMESPACE,
    capture_cold_starts,
    discarded_when_disabled,
)
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-confirmation-notifier")
tracer = tracer_for("engram-confirmation-notifier")
# Cold starts only: the operator dashboard plots them.
metrics = Metrics(service="engram-confirmation-notifier", namespace=METRICS_NAMESPACE)


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@discarded_when_disabled(metrics)
@metrics.log_metrics(capture_cold_start_metric=capture_cold_starts())
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Partial batch response for one SQS batch."""
    return notifier.service().handle(event, context)
