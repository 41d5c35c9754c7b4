"""validate_arguments: the structural pre-check, error mapping and canonical dump."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from engram_memory.contract.validation import (
    MAX_ARGUMENT_BYTES,
    canonical_arguments,
    serialized_size,
    validate_arguments,
)
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import InvalidDigest, InvalidSchema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures import contract_fixtures as fx
from tests.unit.contract.helpers import outcome


@pytest.mark.parametrize(
    "raw",
    [None, [], "args", 3, [fx.valid_search_args()], json.dumps(fx.valid_search_args())],
    ids=["null", "list", "string", "number", "wrapped list", "json text"],
)
def test_arguments_that_are_not_an_object_are_invalid_schema(raw: object) -> None:
    assert outcome(Tool.SEARCH, raw) is InvalidSchema


def test_a_lone_surrogate_anywhere_is_invalid_schema() -> None:
    args = fx.valid_capture_args(text="broken \ud800 text")
    assert outcome(Tool.CAPTURE, args) is InvalidSchema


def test_a_lone_surrogate_in_an_extra_key_is_invalid_schema() -> None:
    args = fx.valid_search_args()
    args["\udfff"] = "x"
    assert outcome(Tool.SEARCH, args) is InvalidSchema


def test_a_valid_astral_character_is_accepted() -> None:
    assert outcome(Tool.CAPTURE, fx.valid_capture_args(text="deploy 🚀 done")) is None


@pytest.mark.parametrize("value", [float("nan"), float("inf"), b"bytes", ("a",), {1, 2}])
def test_values_no_json_decoder_yields_are_invalid_schema(value: Any) -> None:
    args = fx.valid_search_args()
    args["query"] = value
    assert outcome(Tool.SEARCH, args) is InvalidSchema


def test_a_non_string_key_is_invalid_schema() -> None:
    args: dict[Any, Any] = fx.valid_search_args()
    args[1] = "x"
    assert outcome(Tool.SEARCH, args) is InvalidSchema


def test_a_deeply_nested_extra_value_is_refused_without_recursion_error() -> None:
    nested: Any = "leaf"
    for _ in range(5000):
        nested = [nested]
    args = fx.valid_search_args()
    args["extra"] = nested
    assert outcome(Tool.SEARCH, args) is InvalidSchema


def test_null_nested_inside_a_list_is_invalid_schema() -> None:
    args = fx.valid_capture_args()
    args["payload"]["components"][0]["citation_ids"] = ["cit-adr", None]
    assert outcome(Tool.CAPTURE, args) is InvalidSchema


def _capture_of_size(target: int) -> dict[str, Any]:
    """A capture whose compact JSON serialization is exactly ``target`` bytes."""
    args = fx.valid_capture_args()
    components = args["payload"]["components"]
    for i in range(15):
        components.append({"component_id": f"big-{i}", "kind": "evidence", "text": "a" * 65536,
                           "citation_ids": ["cit-adr"]})
    components.append({"component_id": "pad", "kind": "evidence", "text": "a",
                       "citation_ids": ["cit-adr"]})
    components[-1]["text"] = "a" * (1 + target - serialized_size(args))
    assert serialized_size(args) == target
    return args


def test_an_argument_object_of_exactly_the_ceiling_is_accepted() -> None:
    assert outcome(Tool.CAPTURE, _capture_of_size(MAX_ARGUMENT_BYTES)) is None


def test_an_argument_object_one_byte_over_the_ceiling_is_invalid_schema() -> None:
    assert outcome(Tool.CAPTURE, _capture_of_size(MAX_ARGUMENT_BYTES + 1)) is InvalidSchema


def test_the_ceiling_counts_utf8_bytes_not_characters() -> None:
    # {"q":"é"} is 9 characters; é takes 2 bytes in UTF-8 (and is not escaped).
    assert serialized_size({"q": "é"}) == 10


def test_a_malformed_digest_alone_is_invalid_digest() -> None:
    args = fx.valid_capture_args()
    args["evidence"]["evidence_digest"] = "sha256:" + "G" * 64
    assert outcome(Tool.CAPTURE, args) is InvalidDigest


def test_errors_never_carry_the_offending_input() -> None:
    secret_text = "very-distinctive-input-value"
    args = fx.valid_capture_args()
    args["evidence"]["evidence_digest"] = secret_text
    with pytest.raises(InvalidDigest) as raised:
        validate_arguments(Tool.CAPTURE, args)
    assert secret_text not in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__


def test_canonical_arguments_are_exactly_what_the_caller_sent() -> None:
    sent = fx.valid_search_args()
    assert canonical_arguments(validate_arguments(Tool.SEARCH, sent)) == sent


def test_canonical_arguments_keep_explicit_defaults() -> None:
    sent = {**fx.valid_search_args(), "limit": 10}
    assert canonical_arguments(validate_arguments(Tool.SEARCH, sent)) == sent


def test_canonical_arguments_of_a_capture_round_trip() -> None:
    sent = fx.valid_capture_args()
    sent["payload"]["retention"] = {"derivative_rule": "retain"}
    assert canonical_arguments(validate_arguments(Tool.CAPTURE, sent)) == sent


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                               max_size=3),
    max_leaves=8,
)


def _containers(node: Any, found: list[Any]) -> list[Any]:
    if isinstance(node, dict | list):
        found.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            _containers(child, found)
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rounds=st.integers(min_value=1, max_value=3))
def test_any_mutation_of_a_capture_validates_or_is_a_contract_error(
    data: st.DataObject, rounds: int
) -> None:
    args = fx.valid_capture_args()
    for _ in range(rounds):
        node = data.draw(st.sampled_from(_containers(args, [])))
        if isinstance(node, dict):
            op = data.draw(st.sampled_from(["drop", "add", "replace"]))
            if op == "add" or not node:
                node[data.draw(st.text(max_size=8))] = data.draw(_json)
            else:
                key = data.draw(st.sampled_from(sorted(node)))
                if op == "drop":
                    del node[key]
                else:
                    node[key] = data.draw(_json)
        elif node:
            node[data.draw(st.integers(0, len(node) - 1))] = data.draw(_json)
    with contextlib.suppress(InvalidSchema, InvalidDigest):
        validate_arguments(Tool.CAPTURE, args)
