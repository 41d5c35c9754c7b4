"""Tool descriptions say only what is true of the published tools."""

from __future__ import annotations

import re

import pytest
from engram_memory.contract.schemas import input_schema
from engram_memory.domain.context import Tool
from engram_memory.mcp.tools import SPECS

# CONTRACT §0: host-owned fields are never arguments (the closed schema refuses them).
HOST_FIELDS = ("confirmed", "tenant", "workspace", "principal", "agent_id", "session",
               "auditId", "deadline", "elicitationRef", "confirmation_ref")


@pytest.mark.parametrize("tool", list(Tool))
def test_no_description_invites_a_field_the_closed_schema_refuses(tool: Tool) -> None:
    # Issue 15 item 8: withdraw said "a confirmed flag in the arguments has no effect",
    # while the closed schema answers such a flag with INVALID_SCHEMA.
    properties = set(input_schema(tool)["properties"])
    description = SPECS[tool].description
    for field in HOST_FIELDS:
        if re.search(rf"\b{re.escape(field)}\b", description):
            assert field in properties, (tool, field)


@pytest.mark.parametrize("tool", list(Tool))
def test_every_argument_a_description_names_is_in_the_input_schema(tool: Tool) -> None:
    properties = set(input_schema(tool)["properties"])
    nested = {"payload.purpose_ref"} if tool is Tool.CAPTURE else set()
    named = set(re.findall(r"\b((?:[a-z]+\.)?[a-z]+(?:_[a-z]+)+)\b", SPECS[tool].description))
    arguments = {n for n in named if n.endswith(("_ref", "_key", "_id", "_cursor"))}
    outputs = {"record_id", "candidate_id"}  # named as results to copy, not arguments
    assert arguments - properties - nested - outputs == set(), tool
