"""The in-process adapter of the tool invoker port (local mode and tests).

Loads ``functions/<tool>/handler.py`` from the checkout and calls its
``lambda_handler(event, context)`` with the very same event ``lambda:Invoke`` would carry,
round-tripped through JSON so nothing but JSON can cross the boundary.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from engram_memory.domain.context import MUTATING_TOOLS, Tool
from engram_memory.domain.errors import EngramError, MutationOutcomeUnknown, StoreUnavailable

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class LocalLambdaContext:
    """The Lambda context attributes handlers (and Powertools decorators) read."""

    function_name: str
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    log_group_name: str = "/local/engram"
    log_stream_name: str = "local"
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def invoked_function_arn(self) -> str:
        """A local ARN naming the function."""
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        """Local calls have the full Lambda budget."""
        return 30_000


def default_functions_dir() -> Path:
    """``functions/`` beside ``shared/`` in the checkout this package runs from."""
    return Path(__file__).resolve().parents[3] / "functions"


def load_handler(functions_dir: Path, name: str) -> Handler | None:
    """``lambda_handler`` of ``functions/<name>/handler.py``, or None when it does not exist."""
    path = functions_dir / name / "handler.py"
    if not path.is_file():
        return None
    module_name = f"engram_function_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        return None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler = getattr(module, "lambda_handler", None)
    return handler if callable(handler) else None


class InProcessInvoker:
    """Calls each tool's Lambda handler directly, in this process."""

    def __init__(self, functions_dir: Path) -> None:
        """Load handlers lazily from ``functions_dir``."""
        self._dir = functions_dir
        self._handlers: dict[Tool, Handler] = {}
        self._lock = threading.Lock()

    def _handler(self, tool: Tool) -> Handler | None:
        with self._lock:
            if tool not in self._handlers:
                handler = load_handler(self._dir, tool.value)
                if handler is None:
                    return None
                self._handlers[tool] = handler
            return self._handlers[tool]

    def available(self) -> frozenset[Tool]:
        """The tools whose handler exists in the checkout."""
        return frozenset(t for t in Tool if (self._dir / t.value / "handler.py").is_file())

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Run the tool handler on a JSON copy of the event, as lambda:Invoke would."""
        handler = self._handler(tool)
        if handler is None:
            raise StoreUnavailable()
        event = json.loads(json.dumps(invocation))
        try:
            result = handler(event, LocalLambdaContext(f"engram-{tool.value}"))
        except EngramError:
            raise
        except Exception as exc:
            # A crashed function: like a FunctionError, a mutation may have committed.
            logger.error("tool handler raised", extra={"tool": tool.value})
            unknown = tool in MUTATING_TOOLS
            raise (MutationOutcomeUnknown() if unknown else StoreUnavailable()) from exc
        envelope = json.loads(json.dumps(result))
        if not isinstance(envelope, dict):
            raise StoreUnavailable()
        return envelope
