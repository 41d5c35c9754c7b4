"""Every bound, format and cross-reference of CONTRACT.md §2 yields the exact error class."""

from __future__ import annotations

import pytest
from engram_memory.contract.inputs import CaptureArgs, SearchArgs
from engram_memory.contract.validation import validate_arguments
from engram_memory.domain.context import Tool

from tests.fixtures import contract_fixtures as fx
from tests.unit.contract.cases import ALL_CASES
from tests.unit.contract.helpers import FIXTURES, Case, outcome


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_each_rule_accepts_or_refuses_with_the_contract_error(case: Case) -> None:
    assert outcome(case.tool, case.build()) is case.expected


@pytest.mark.parametrize("tool", list(Tool))
def test_the_shared_fixture_of_every_tool_is_valid(tool: Tool) -> None:
    assert outcome(tool, FIXTURES[tool]()) is None


def test_search_defaults_match_the_contract() -> None:
    args = validate_arguments(Tool.SEARCH, fx.valid_search_args())
    assert isinstance(args, SearchArgs)
    assert (args.limit, args.max_packet_bytes) == (10, 65_536)
    assert args.capability_policy.minimum_channels == "lexical"
    assert args.capability_policy.network == "forbid"
    assert args.page_cursor is None


def test_a_validated_capture_exposes_typed_fields() -> None:
    args = validate_arguments(Tool.CAPTURE, fx.valid_capture_args(text="hello world"))
    assert isinstance(args, CaptureArgs)
    assert args.payload.components[1].text == "hello world"
    assert args.payload.retention is None
    assert args.evidence.citation_ids == ["cit-adr"]


def test_validated_models_are_immutable() -> None:
    args = validate_arguments(Tool.GET, fx.valid_get_args())
    with pytest.raises(ValueError, match="frozen"):
        args.purpose_ref = "other"  # type: ignore[attr-defined]
