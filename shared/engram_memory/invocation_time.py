"""The time the current tool invocation has left, for work that must end before it does.

The runtime binds it: the Lambda's own end around the whole handler
(``runtime.lambda_entry``, from ``context.get_remaining_time_in_millis``), narrowed to the
host's deadline (``deadline_ms`` of the verified context) around a tool's use case
(``runtime.run_tool``). A use case reads it through its ``time_left``
port (``bootstrap.common``): a lost commit retries only while it leaves time to answer
(``services/pipeline.py``, ``Backoff``). Kept on a monotonic clock, per thread of control (a
``ContextVar``: the local service runs many invocations at once in one process, and a
background call copies its caller's context).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ENDS_AT: ContextVar[float | None] = ContextVar("engram_invocation_ends_at", default=None)


@contextmanager
def bound(seconds: float) -> Iterator[None]:
    """Within the block, the invocation has at most ``seconds`` left from now (an outer
    bound that ends earlier still holds)."""
    ends_at = time.monotonic() + seconds
    outer = _ENDS_AT.get()
    token = _ENDS_AT.set(ends_at if outer is None else min(outer, ends_at))
    try:
        yield
    finally:
        _ENDS_AT.reset(token)


def seconds_left() -> float | None:
    """Seconds left in the invocation being served; None outside one (nothing bounds it)."""
    ends_at = _ENDS_AT.get()
    return None if ends_at is None else ends_at - time.monotonic()
