"""The CloudWatch namespace every function publishes its Powertools metrics under.

A module of its own (stdlib only) so a handler that counts nothing but cold starts does not
import the tool runtime for one string. The stack's ``infra.names.METRICS_NAMESPACE`` and
the operator dashboard use the same value (tests/infra/test_dashboard.py).
"""

import os
from typing import Final

METRICS_NAMESPACE: Final = "EngramMemory"


def capture_cold_starts() -> bool:
    """Whether a handler's ``log_metrics`` should capture Powertools' ``ColdStart`` metric.

    Not when metrics are disabled (the local service sets ``POWERTOOLS_METRICS_DISABLED``):
    Powertools flushes the cold-start metric through ``single_metric``, which prints its
    EMF line even then, so the local console would get one JSON line per function.
    Read when a handler module is imported, after the service has set its environment.
    """
    return os.environ.get("POWERTOOLS_METRICS_DISABLED", "").strip().lower() not in (
        "1", "true", "yes", "on")
