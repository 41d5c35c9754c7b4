"""Local stand-in for the EventBridge schedule that runs the expiry sweeper.

Every ``interval_s`` it hands the very same ``functions/expiry_sweeper`` handler a
scheduled-event-shaped payload, as the stack's rule would (hourly in AWS, every minute here
so a short ``expires_at`` is visible in a local session).
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from engram_memory.settings import Settings

logger = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 60.0
_HANDLER = Path(__file__).resolve().parents[3] / "functions" / "expiry_sweeper" / "handler.py"


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


def _load_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("engram_local_expiry_sweeper", _HANDLER)
    if spec is None or spec.loader is None:
        raise ImportError("expiry sweeper handler not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = module.lambda_handler
    return handler


def run_expiry_schedule(
    settings: Settings, stop_event: threading.Event, interval_s: float = DEFAULT_INTERVAL_S,
) -> None:
    """Run the sweeper every ``interval_s`` until ``stop_event`` is set (a daemon thread)."""
    handler = _load_handler()
    while not stop_event.wait(interval_s):
        try:
            handler(scheduled_event(settings.region), None)
        except Exception as exc:  # keep the schedule alive, as EventBridge would
            logger.warning("expiry sweep failed", extra={"error_class": type(exc).__name__})
