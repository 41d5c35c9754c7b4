"""The expiry sweeper Lambda: an EventBridge schedule → expire what is due, per workspace.

Thin: parse the scheduled event, sweep every configured workspace of the tenant within a
record and time budget (services/expiry.py), log and publish counts only. Nothing a record
says, and no record id, reaches a log line or a metric.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from engram_memory import bootstrap, invocation_time
from engram_memory.composition import expiry
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import EngramError, StoreUnavailable
from engram_memory.metrics_namespace import (
    METRICS_NAMESPACE,
    capture_cold_starts,
    discarded_when_disabled,
)
from engram_memory.services.expiry import SweepBudget
from engram_memory.tracing import tracer_for

SERVICE = "engram-expiry-sweeper"
MAX_RECORDS_PER_RUN = 500
PAGE_SIZE = 25
# Stop starting new records, and stop retrying a lost commit, with this much time left: a
# commit in flight must finish before the function's timeout, or its outcome would only be
# known on the next run.
RESERVE_MS = 10_000
LOCAL_BUDGET_MS = 60_000  # no Lambda context (local runs): a fixed wall-clock budget

logger = Logger(service=SERVICE)
tracer = tracer_for(SERVICE)
metrics = Metrics(service=SERVICE, namespace=METRICS_NAMESPACE)


def _remaining_ms(context: Any) -> Callable[[], int]:
    """Milliseconds left in this invocation (the Lambda context's, else a local budget)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        return lambda: int(remaining())
    deadline = time.monotonic() + LOCAL_BUDGET_MS / 1000
    return lambda: int((deadline - time.monotonic()) * 1000)


def _count(name: str, value: int) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@discarded_when_disabled(metrics)
@metrics.log_metrics(capture_cold_start_metric=capture_cold_starts())
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Sweep every workspace of the tenant; the run's counts."""
    try:
        parse(event=event, model=EventBridgeModel)
    except (ValidationError, ValueError, TypeError):
        # Only the schedule invokes this function; anything else is refused unread.
        logger.warning("expiry sweep refused: not a scheduled event")
        _count("expiry.refused", 1)
        return {"ok": False}
    settings = bootstrap.settings()
    scopes = [Scope(settings.tenant_id, workspace) for workspace in settings.workspace_ids]
    remaining_ms = _remaining_ms(context)
    budget = SweepBudget(max_records=MAX_RECORDS_PER_RUN, page_size=PAGE_SIZE,
                         remaining_ms=remaining_ms, reserve_ms=RESERVE_MS)
    try:
        # The reserve also bounds a lost commit's retries (services/pipeline.py): a
        # record started just before the reserve must not retry into the timeout.
        with invocation_time.bound((remaining_ms() - RESERVE_MS) / 1000):
            report = expiry.service().sweep(scopes, budget)
    except EngramError as exc:
        logger.error("expiry sweep failed", extra={"error_code": exc.code})
        _count(f"expiry.error.{exc.code}", 1)
        raise
    except Exception as exc:
        # Only the class name: an exception text could quote stored values.
        logger.error("expiry sweep failed", extra={"error_class": type(exc).__name__})
        _count("expiry.error.UNEXPECTED", 1)
        raise StoreUnavailable from None
    counts = report.as_dict()
    logger.info("expiry sweep finished", extra=counts)
    _count("expiry.expired", report.expired)
    _count("expiry.failed", report.failed)
    return {"ok": True, **counts}
