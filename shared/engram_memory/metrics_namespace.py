"""The CloudWatch namespace every function publishes its Powertools metrics under.

A module of its own (stdlib only) so a handler that counts nothing but cold starts does not
import the tool runtime for one string. The stack's ``infra.names.METRICS_NAMESPACE`` and
the operator dashboard use the same value (tests/infra/test_dashboard.py).
"""

import functools
import os
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar

METRICS_NAMESPACE: Final = "EngramMemory"
H = TypeVar("H", bound=Callable[..., Any])


class _Buffer(Protocol):
    def clear_metrics(self) -> None: ...


def metrics_disabled() -> bool:
    """``POWERTOOLS_METRICS_DISABLED`` is set (the local service, benches, tests)."""
    return os.environ.get("POWERTOOLS_METRICS_DISABLED", "").strip().lower() in (
        "1", "true", "yes", "on")


def discarded_when_disabled(metrics: _Buffer) -> Callable[[H], H]:
    """Wrap a handler (outside ``log_metrics``) so that, metrics disabled, what it counted is
    dropped after each call.

    Disabled, Powertools' flush neither prints nor clears, so the counts pile up across
    invocations until one metric holds 100 values, and then ``add_metric`` prints the EMF
    line anyway: a stray JSON line on the local console or a bench's stdout every 100 calls.
    """

    def wrap(handler: H) -> H:
        @functools.wraps(handler)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                if metrics_disabled():
                    metrics.clear_metrics()

        return run  # type: ignore[return-value]

    return wrap


def capture_cold_starts() -> bool:
    """Whether a handler's ``log_metrics`` should capture Powertools' ``ColdStart`` metric.

    Not when metrics are disabled (the local service sets ``POWERTOOLS_METRICS_DISABLED``):
    Powertools flushes the cold-start metric through ``single_metric``, which prints its
    EMF line even then, so the local console would get one JSON line per function.
    Read when a handler module is imported, after the service has set its environment.
    """
    return not metrics_disabled()
