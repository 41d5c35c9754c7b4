"""The published JSON Schemas: closed, self-contained, and agreeing with the models."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from engram_memory.contract.envelope import failure, success
from engram_memory.contract.schemas import input_schema, output_schema, value_schema
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import ALL_ERRORS, InvalidSchema, NotFound
from jsonschema import Draft7Validator, Draft202012Validator

from tests.fixtures import contract_fixtures as fx
from tests.unit.contract.cases import ALL_CASES
from tests.unit.contract.helpers import FIXTURES, Case

EXPRESSIBLE = [c for c in ALL_CASES if c.schema_expressible]
INEXPRESSIBLE = [c for c in ALL_CASES if not c.schema_expressible and c.expected is not None]


def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for key, value in schema.items():
            if key not in ("default", "const", "enum"):
                yield from _objects(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _objects(item)


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


ALL_SCHEMAS = [(t, "in", input_schema(t)) for t in Tool] + [
    (t, "out", output_schema(t)) for t in Tool
]


@pytest.mark.parametrize(("tool", "kind", "schema"), ALL_SCHEMAS, ids=lambda x: str(x)[:20])
def test_every_published_schema_is_closed_and_self_contained(
    tool: Tool, kind: str, schema: dict[str, Any]
) -> None:
    Draft202012Validator.check_schema(schema)
    Draft7Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert "$ref" not in repr(schema)
    assert "$defs" not in repr(schema)
    objects = list(_objects(schema))
    assert objects
    for obj in objects:
        if obj is schema and kind == "out":
            continue  # the envelope union: each branch is closed below
        assert obj.get("additionalProperties") is False, obj.get("description")


@pytest.mark.parametrize("tool", list(Tool))
def test_the_valid_fixture_of_each_tool_passes_its_published_schema(tool: Tool) -> None:
    assert list(_validator(input_schema(tool)).iter_errors(FIXTURES[tool]())) == []


@pytest.mark.parametrize("case", EXPRESSIBLE, ids=lambda c: c.name)
def test_the_published_input_schema_agrees_with_the_model(case: Case) -> None:
    valid = _validator(input_schema(case.tool)).is_valid(case.build())
    assert valid is (case.expected is None)


@pytest.mark.parametrize("case", INEXPRESSIBLE, ids=lambda c: c.name)
def test_rules_json_schema_cannot_express_are_left_to_the_model(case: Case) -> None:
    # Documented in docs/contract.md: byte lengths, NFC, calendar, order, cross-references.
    assert _validator(input_schema(case.tool)).is_valid(case.build())


def test_an_explicit_null_is_refused_by_the_published_schema() -> None:
    args = fx.valid_search_args()
    args["page_cursor"] = None
    assert not _validator(input_schema(Tool.SEARCH)).is_valid(args)


@pytest.mark.parametrize("tool", list(Tool))
def test_the_output_schema_accepts_a_success_envelope(tool: Tool) -> None:
    envelope = success(fx.sample_values()[tool.value], "audit-1")
    assert list(_validator(output_schema(tool)).iter_errors(envelope)) == []


@pytest.mark.parametrize("error", ALL_ERRORS, ids=lambda e: e.code)
def test_the_output_schema_accepts_every_failure_envelope(error: type[InvalidSchema]) -> None:
    validator = _validator(output_schema(Tool.CAPTURE))
    assert validator.is_valid(failure(error, "audit-2"))


def _with(envelope: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(envelope)
    node = changed
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return changed


@pytest.mark.parametrize("tool", list(Tool))
def test_the_output_schema_rejects_an_extra_field_at_every_level(tool: Tool) -> None:
    validator = _validator(output_schema(tool))
    ok = success(fx.sample_values()[tool.value], "audit-1")
    bad = failure(NotFound, "audit-1")
    assert not validator.is_valid(_with(ok, ("extra",), 1))
    assert not validator.is_valid(_with(ok, ("output", "extra"), 1))
    assert not validator.is_valid(_with(ok, ("output", "value", "extra"), 1))
    assert not validator.is_valid(_with(bad, ("extra",), 1))
    assert not validator.is_valid(_with(bad, ("error", "extra"), 1))


def test_the_output_schema_rejects_mixed_or_mislabelled_envelopes() -> None:
    validator = _validator(output_schema(Tool.GET))
    ok = success(fx.sample_values()["get"], "audit-1")
    assert not validator.is_valid(_with(ok, ("ok",), False))
    assert not validator.is_valid(_with(ok, ("redactionClass",), "low"))
    assert not validator.is_valid(_with(ok, ("output", "schema_version"), 2))
    assert not validator.is_valid(_with(failure(NotFound, "a"), ("error", "code"), "NOPE"))
    assert not validator.is_valid(_with(ok, ("output", "value"), fx.sample_values()["capture"]))


def test_a_redacted_search_record_keeps_only_its_record_id() -> None:
    value = fx.sample_values()["search"]
    value["records"][0]["record"] = {"record_id": fx.RECORD_ID}
    value["records"][0]["redacted_fields"] = ["/components"]
    validator = _validator(output_schema(Tool.SEARCH))
    assert validator.is_valid(success(value, "audit-1"))
    value["records"][0]["record"] = {"state": "accepted_current"}
    assert not validator.is_valid(success(value, "audit-1"))


def test_published_schemas_are_fresh_copies() -> None:
    schema = input_schema(Tool.SEARCH)
    schema["properties"].clear()
    assert input_schema(Tool.SEARCH)["properties"]


@pytest.mark.parametrize(("tool", "fields"), [
    (Tool.WITHDRAW, ("operation", "from_state", "to_state")),
    (Tool.FORGET, ("operation", "from_state", "to_state")),
])
def test_receipt_fields_that_are_always_present_are_required(
    tool: Tool, fields: tuple[str, ...]
) -> None:
    # Issue 15 item 5: the literal fields had defaults, so the published receipt schema
    # did not require them although every receipt carries them.
    receipt = value_schema(tool)["properties"]["receipt"]
    assert set(fields) <= set(receipt["required"])
    validator = _validator(output_schema(tool))
    for name in fields:
        value = fx.sample_values()[tool.value]
        del value["receipt"][name]
        assert not validator.is_valid(success(value, "audit-1")), name
