"""An unexpected exception inside a tool Lambda: one rule with the endpoint's.

Issue 15 item 7: a mutation that failed unexpectedly answered STORE_UNAVAILABLE inside the
tool Lambda, while the endpoint answered MUTATION_OUTCOME_UNKNOWN for a lost answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.contract.registry import TOOL_MODELS
from engram_memory.domain.context import MUTATING_TOOLS, InvocationContext, Tool
from engram_memory.runtime import ToolBinding, run_tool

from tests.fixtures.contract_fixtures import (
    valid_capture_args,
    valid_forget_args,
    valid_get_args,
    valid_request_admission_args,
    valid_search_args,
    valid_withdraw_args,
)
from tests.support.events import make_event

ARGS = {
    Tool.SEARCH: valid_search_args, Tool.GET: valid_get_args, Tool.CAPTURE: valid_capture_args,
    Tool.REQUEST_ADMISSION: valid_request_admission_args,
    Tool.WITHDRAW: valid_withdraw_args, Tool.FORGET: valid_forget_args,
}


class _CrashingService:
    def execute(self, ctx: InvocationContext, args: Any, /) -> dict[str, Any]:
        raise RuntimeError("after the commit was sent: text that must never leak")


@pytest.mark.parametrize("tool", list(Tool), ids=lambda t: t.value)
def test_an_unexpected_exception_is_outcome_unknown_for_a_mutation_only(tool: Tool) -> None:
    event = make_event(tool, ARGS[tool](), confirmation_ref="ref-1")
    binding = ToolBinding(TOOL_MODELS[tool], _CrashingService)
    envelope = run_tool(binding, event, now_ms=lambda: 1_000, serves=lambda scope: True)
    expected = "MUTATION_OUTCOME_UNKNOWN" if tool in MUTATING_TOOLS else "STORE_UNAVAILABLE"
    assert envelope["error"]["code"] == expected
    assert envelope["error"]["retriable"] is True
    assert "never leak" not in str(envelope)
