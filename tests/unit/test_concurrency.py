"""engram_memory.concurrency: background calls carry the caller's state; widths are pools."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

import pytest
from engram_memory import concurrency
from engram_memory.concurrency import in_background

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


def test_a_background_call_runs_in_the_callers_context() -> None:
    token = REQUEST.set("search-1")
    try:
        assert in_background(REQUEST.get).result(timeout=10) == "search-1"
        assert in_background(REQUEST.get, width=32).result(timeout=10) == "search-1"
    finally:
        REQUEST.reset(token)


def test_a_width_runs_that_many_calls_at_once() -> None:
    # Eight calls that each wait for all eight: they finish only if all run together.
    barrier = threading.Barrier(8, timeout=10)
    futures = [in_background(barrier.wait, width=8) for _ in range(8)]
    assert sorted(f.result(timeout=20) for f in futures) == list(range(8))


def test_the_default_pool_is_not_widened_by_a_wide_caller() -> None:
    names = {in_background(lambda: threading.current_thread().name, width=16).result(timeout=10),
             in_background(lambda: threading.current_thread().name).result(timeout=10)}
    assert any(name.startswith("engram-aws-16") for name in names)
    assert any(name.startswith(f"engram-aws-{concurrency.MAX_WORKERS}_") for name in names)


def test_registered_carriers_move_per_thread_state_into_the_worker_and_clear_it() -> None:
    local = threading.local()
    cleared: list[str] = []

    def carrier() -> concurrency.Restore:
        value = getattr(local, "trace", None)

        def restore() -> Callable[[], None]:
            local.trace = value
            return lambda: cleared.append(local.__dict__.pop("trace"))

        return restore

    concurrency.register_carrier(carrier)
    try:
        local.trace = "trace-7"
        assert in_background(lambda: local.trace, width=2).result(timeout=10) == "trace-7"
        assert cleared == ["trace-7"]
    finally:
        concurrency._carriers.remove(carrier)


def test_a_width_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="width"):
        in_background(lambda: None, width=0)
