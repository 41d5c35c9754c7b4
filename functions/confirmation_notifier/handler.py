"""The confirmation queue consumer Lambda: SQS batch → task token stored + host notified.

Reports failures per record (``ReportBatchItemFailures``); the local queue pump feeds the
very same ``ConfirmationNotifier`` with Lambda-shaped events.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory.adapters.stepfunctions.clients import gate_clients
from engram_memory.gate.notifier import ConfirmationNotifier
from engram_memory.gate.wiring import build_notifier
from engram_memory.settings import Settings
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-confirmation-notifier")
tracer = tracer_for("engram-confirmation-notifier")


@cache
def _notifier() -> ConfirmationNotifier:
    """Built once per container, on first call."""
    settings = Settings.from_env()
    return build_notifier(settings, gate_clients(settings))


def reset_wiring() -> None:
    """Forget the cached wiring (tests change the environment between cases)."""
    _notifier.cache_clear()


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Partial batch response for one SQS batch."""
    return _notifier().handle(event, context)
