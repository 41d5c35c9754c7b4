"""The CloudWatch namespace every function publishes its Powertools metrics under.

A module of its own (stdlib only) so a handler that counts nothing but cold starts does not
import the tool runtime for one string. The stack's ``infra.names.METRICS_NAMESPACE`` and
the operator dashboard use the same value (tests/infra/test_dashboard.py).
"""

from typing import Final

METRICS_NAMESPACE: Final = "EngramMemory"
