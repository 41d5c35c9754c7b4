"""engram_memory_get Lambda: internal tool event in, envelope out (thin)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory.composition import get
from engram_memory.domain.context import Tool
from engram_memory.runtime import logger, metrics, run_tool, tracer


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
# The response holds memory content: never record it in a trace.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Read one record."""
    return run_tool(Tool.GET, event, get.service)
