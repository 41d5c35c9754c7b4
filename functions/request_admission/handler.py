"""Lambda entry point of engram_memory_request_admission: internal event in, envelope out."""

from __future__ import annotations

from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.context import Tool
from engram_memory.runtime import metrics, run_tool, tracer


@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Run engram_memory_request_admission for one internal ToolInvocation event."""
    return run_tool(Tool.REQUEST_ADMISSION, event, lambda: bootstrap.admission_service().execute)
