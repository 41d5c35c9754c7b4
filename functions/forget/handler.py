"""Lambda entry point of engram_memory_forget: internal event in, envelope out."""

from __future__ import annotations

from typing import Any

from engram_memory.composition import forget
from engram_memory.domain.context import Tool
from engram_memory.runtime import logger, metrics, run_tool, tracer


# clear_state: local mode runs every handler on one shared logger; no stale keys.
@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Run engram_memory_forget for one internal ToolInvocation event."""
    return run_tool(Tool.FORGET, event, lambda: forget.service().execute)
