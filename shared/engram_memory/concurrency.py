"""Run an independent AWS call beside the caller's own, so the two cost one round trip.

``in_background(call)`` starts ``call`` on a small per-container thread pool and returns
its Future; the caller goes on with its own call and then takes the result (re-raising
the call's exception there). boto3 clients are thread-safe. A caller that fans out wider
than the default pool (a search reads the postings of up to 64 query terms at once) names
its ``width``: one pool per width per process, so a fan-out neither queues behind the
small pool's calls nor crowds them out. A call must not wait on a call of its own pool
(none does: every caller here is a request's own thread). The worker runs in a copy of
the caller's ``contextvars`` context, and every registered carrier moves per-thread
state the caller has into the worker and clears it after (the X-Ray trace entity, when
tracing is on: ``engram_memory.tracing``), so the call is traced and counted as the
caller's own.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

Restore = Callable[[], Callable[[], None]]
"""Called in the worker: installs the caller's state, returns how to clear it after."""
Carrier = Callable[[], Restore]
"""Called in the caller: captures its per-thread state, returns how to install it."""

MAX_WORKERS = 4
_carriers: list[Carrier] = []
_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def register_carrier(carrier: Carrier) -> None:
    """Carry some per-thread state of the caller into every background call."""
    _carriers.append(carrier)


def _executor(width: int) -> ThreadPoolExecutor:
    # Built on first use (after a SnapStart restore, never inside the snapshot).
    with _lock:
        pool = _pools.get(width)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=width,
                                      thread_name_prefix=f"engram-aws-{width}")
            _pools[width] = pool
        return pool


def in_background(call: Callable[[], T], *, width: int = MAX_WORKERS) -> Future[T]:
    """Start ``call`` now, in parallel with the caller, on the pool of ``width``; its Future."""
    if width < 1:
        raise ValueError("width must be at least 1")
    context = contextvars.copy_context()
    restores = [carrier() for carrier in _carriers]

    def run() -> T:
        clears = [restore() for restore in restores]
        try:
            return context.run(call)
        finally:
            for clear in clears:
                clear()

    return _executor(width).submit(run)
