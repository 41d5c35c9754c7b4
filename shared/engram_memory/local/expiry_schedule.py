"""Local stand-in for the EventBridge schedule that runs the expiry sweeper.

Every ``interval_s`` it hands the very same ``functions/expiry_sweeper`` handler a
scheduled-event-shaped payload, as the stack's rule would (hourly in AWS, every minute here
so a short ``expires_at`` is visible in a local session).
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram_memory.local.inprocess_invoker import (
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)

if TYPE_CHECKING:
    from engram_memory.settings import Settings

logger = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 60.0
FUNCTION_NAME = "expiry_sweeper"


def scheduled_event(region: str, now: datetime | None = None) -> dict[str, Any]:
    """The EventBridge "Scheduled Event" the sweeper's rule delivers."""
    at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": at,
        "region": region,
        "resources": [f"arn:aws:events:{region}:000000000000:rule/engram-local-expiry"],
        "detail": {},
    }


def run_expiry_schedule(
    settings: Settings, stop_event: threading.Event, interval_s: float = DEFAULT_INTERVAL_S,
) -> None:
    """Run the sweeper every ``interval_s`` until ``stop_event`` is set (a daemon thread)."""
    handler = load_handler(default_functions_dir(), FUNCTION_NAME)
    if handler is None:
        logger.warning("expiry sweeper handler not found; no local expiry schedule")
        return
    while not stop_event.wait(interval_s):
        try:
            handler(scheduled_event(settings.region), LocalLambdaContext(f"engram-{FUNCTION_NAME}"))
        except Exception as exc:  # keep the schedule alive, as EventBridge would
            logger.warning("expiry sweep failed", extra={"error_class": type(exc).__name__})
