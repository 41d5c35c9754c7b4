"""The static table of the six MCP tools: names, titles, descriptions, hints, schemas.

Descriptions teach the agent the contract's discipline (CONTRACT.md §1 and §3) in a few
lines, because a tool description is the only text every MCP client is sure to show the
model. Schemas come from the contract models (one source): the input schema is closed and
the output schema is the envelope, success and failure forms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types

from engram_memory.domain.context import Tool

_PROTOCOL_NOTE = (
    " Host fields (scope, identity, confirmation) are never arguments; optional fields are"
    " omitted, never null. Act on error.code and error.retriable, never on the message."
)
_MUTATION_NOTE = (
    " Mutations need an idempotency_key (16-256 bytes) recorded before the call: retry with"
    " the same key and identical arguments; a new key only for a genuinely new operation."
)

INSTRUCTIONS = (
    "Governed long-term memory. Store only durable, reusable knowledge with a citable source"
    " (decisions and their grounds, verified facts, conventions, recurring fixes, hand-over"
    " facts); never provisional state, transcripts, raw tool output, speculation, secrets or"
    " credentials. Search before capture. A capture is a pending draft until admission is"
    " requested and decided by the host policy. A -32603 or -32602 error is a protocol"
    " refusal: stop and report to the host operator; do not retry with altered arguments."
)
_PURPOSE_HINT = " purpose_ref: the one named in this server's instructions (bound by the host)."
_NO_PURPOSE = (
    " Your purpose_ref is bound by the host in the token of each request; this request"
    " carried no verified token, so none can be named here: ask the host operator."
)


def instructions_for(purpose: str | None) -> str:
    """The server instructions for a request whose verified token binds ``purpose``.

    The purpose is quoted as a JSON string, so any character it holds reads unambiguously.
    """
    if purpose is None:
        return INSTRUCTIONS + _NO_PURPOSE
    quoted = json.dumps(purpose, ensure_ascii=False)
    return (
        INSTRUCTIONS + f" Your purpose_ref is {quoted}, bound by the host to this session:"
        " pass it exactly, as purpose_ref in search and get and as payload.purpose_ref in"
        " capture. Another value is a protocol refusal (-32603)."
    )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One published tool: what the agent sees in tools/list."""

    tool: Tool
    title: str
    description: str
    read_only: bool
    destructive: bool
    idempotent: bool


TOOL_TABLE: tuple[ToolSpec, ...] = (
    ToolSpec(
        Tool.SEARCH,
        "Search memory",
        "Find current (accepted) memories relevant to a query, with citations and a rank"
        " receipt. Use it before capturing: if an equivalent record exists, cite its record_id"
        " instead of capturing again. An empty list means no match; pending or withdrawn"
        " material is never returned." + _PURPOSE_HINT + _PROTOCOL_NOTE,
        read_only=True, destructive=False, idempotent=True,
    ),
    ToolSpec(
        Tool.GET,
        "Read one memory",
        "Read one known current record by record_id (copied exactly as returned by search),"
        " without ranking. NOT_FOUND means unknown, outside your scope or no longer current;"
        " treat it as unavailable and do not probe." + _PURPOSE_HINT + _PROTOCOL_NOTE,
        read_only=True, destructive=False, idempotent=True,
    ),
    ToolSpec(
        Tool.CAPTURE,
        "Capture a memory candidate",
        "Submit durable, cited knowledge as an encrypted pending candidate. Not for in-progress"
        " state, transcripts, raw tool output, speculation, secrets or credentials. Every"
        " component cites at least one citation; a candidate_id is not a record_id and"
        " cannot be searched until admission accepts it. Omit retention unless told. payload."
        + _PURPOSE_HINT.lstrip() + _MUTATION_NOTE + _PROTOCOL_NOTE,
        read_only=False, destructive=False, idempotent=True,
    ),
    ToolSpec(
        Tool.REQUEST_ADMISSION,
        "Request admission of a candidate",
        "Ask the host admission policy to decide on a pending candidate. You cannot supply"
        " the decision: rejected and pending_adjudication are normal outcomes, not errors."
        " Never rephrase forgotten content to get it admitted again."
        + _MUTATION_NOTE + _PROTOCOL_NOTE,
        read_only=False, destructive=False, idempotent=True,
    ),
    ToolSpec(
        Tool.WITHDRAW,
        "Withdraw a pending candidate",
        "End a pending candidate and destroy its key. Always requires a human confirmation"
        " obtained and bound by the host (you cannot confirm: confirmation is never an"
        " argument); gate_failed means ask the human through the host." + _MUTATION_NOTE
        + _PROTOCOL_NOTE,
        read_only=False, destructive=True, idempotent=True,
    ),
    ToolSpec(
        Tool.FORGET,
        "Forget an admitted memory",
        "Make an admitted record definitively ineligible (tombstone). Always requires a human"
        " confirmation obtained by the host; gate_failed means ask the human through the"
        " host." + _MUTATION_NOTE + _PROTOCOL_NOTE,
        read_only=False, destructive=True, idempotent=True,
    ),
)
SPECS: dict[Tool, ToolSpec] = {spec.tool: spec for spec in TOOL_TABLE}


def _fallback_schema() -> dict[str, Any]:
    return {"type": "object"}


@cache
def schemas_for(tool: Tool) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(inputSchema, outputSchema)`` generated from the contract models."""
    try:
        from engram_memory.contract import schemas  # optional until it lands
    except ImportError:  # pragma: no cover - only before the contract schemas exist
        return _fallback_schema(), _fallback_schema()
    return dict(schemas.input_schema(tool)), dict(schemas.output_schema(tool))


def input_schema_by_name(name: str) -> dict[str, Any] | None:
    """The input schema of an MCP tool name, or None for an unknown name."""
    tool = Tool.from_mcp_name(name)
    return None if tool is None else schemas_for(tool)[0]


@cache
def mcp_tool(tool: Tool) -> types.Tool:
    """The published MCP definition of one tool."""
    spec = SPECS[tool]
    input_schema, output_schema = schemas_for(tool)
    return types.Tool(
        name=tool.mcp_name,
        title=spec.title,
        description=spec.description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def granted_tools(capabilities: frozenset[Tool]) -> list[types.Tool]:
    """The tools a context grants, in table order; no capability means an empty list."""
    return [mcp_tool(spec.tool) for spec in TOOL_TABLE if spec.tool in capabilities]
