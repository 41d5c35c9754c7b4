"""The stack sets only variables the code reads: names from engram_memory.env_names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_memory import env_names

from tests.infra.template_view import function_logical_ids

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

# Read by Powertools itself, not by engram_memory.
POWERTOOLS_NAMES = frozenset({
    "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL",
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE", "POWERTOOLS_TRACER_CAPTURE_ERROR",
    "POWERTOOLS_LOGGER_LOG_EVENT",
})


def test_every_function_variable_is_a_name_settings_knows(synthesized: Synthesized) -> None:
    template = synthesized.template
    for name, lid in function_logical_ids(template).items():
        variables = template["Resources"][lid]["Properties"]["Environment"]["Variables"]
        unknown = set(variables) - env_names.KNOWN - POWERTOOLS_NAMES
        assert not unknown, (name, unknown)
        # The deployment's identity reaches every function under the names Settings reads.
        assert {env_names.TENANT_ID, env_names.TABLE_NAME} <= set(variables), name
