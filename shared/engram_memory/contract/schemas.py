"""The JSON Schemas the MCP endpoint publishes, generated from the contract's models.

Every schema is self-contained (all ``$ref`` inlined, no ``$defs``), every object is closed
(``additionalProperties: false``), optional fields are simply not required (never
nullable), and only keywords shared by JSON Schema 2020-12 and draft-07 are used, so both
the Python and the TypeScript MCP SDKs (Ajv) can compile them. The output schema
describes MCP ``structuredContent``, which is the whole envelope: it accepts the success
envelope with the tool's value and the failure envelope.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel

from engram_memory.contract.envelope import REDACTION_CLASS, SCHEMA_VERSION
from engram_memory.contract.registry import TOOL_MODELS
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import ALL_ERRORS

_SCHEMA_MAPS = frozenset({"properties", "$defs", "patternProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_VALUES = frozenset({"items", "additionalProperties", "not", "contains"})
_NULL = {"type": "null"}


def _clean(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline refs, drop titles, null branches and null defaults (recursively)."""
    if "$ref" in node:
        target = defs[node["$ref"].removeprefix("#/$defs/")]
        merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs") or (key == "default" and value is None):
            continue
        if key in _SCHEMA_MAPS:
            out[key] = {name: _clean(sub, defs) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_clean(sub, defs) for sub in value if sub != _NULL]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = _clean(value, defs)
        else:
            out[key] = value
    # ``X | None`` becomes just X: optional fields are omitted on the wire, never null.
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 1:
        del out["anyOf"]
        out = {**branches[0], **out}
    return out


def _model_schema(model: type[BaseModel], mode: str) -> dict[str, Any]:
    raw = model.model_json_schema(mode="validation" if mode == "validation" else "serialization")
    return _clean(raw, raw.get("$defs", {}))


@cache
def _input_schema(tool: Tool) -> dict[str, Any]:
    return _model_schema(TOOL_MODELS[tool].arguments, "validation")


def input_schema(tool: Tool) -> dict[str, Any]:
    """The published, closed inputSchema of ``tool`` (a fresh copy)."""
    return copy.deepcopy(_input_schema(tool))


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _failure_envelope() -> dict[str, Any]:
    codes = sorted({cls.code for cls in ALL_ERRORS})
    error = _closed_object(
        {
            "code": {"type": "string", "enum": codes},
            "message": {"type": "string"},
            "retriable": {"type": "boolean"},
        }
    )
    return _closed_object(
        {
            "ok": {"const": False},
            "auditId": {"type": "string"},
            "redactionClass": {"const": REDACTION_CLASS},
            "error": error,
        }
    )


def _success_envelope(value_schema: dict[str, Any]) -> dict[str, Any]:
    output = _closed_object({"schema_version": {"const": SCHEMA_VERSION}, "value": value_schema})
    return _closed_object(
        {
            "ok": {"const": True},
            "output": output,
            "auditId": {"type": "string"},
            "redactionClass": {"const": REDACTION_CLASS},
        }
    )


@cache
def _output_schema(tool: Tool) -> dict[str, Any]:
    value = _model_schema(TOOL_MODELS[tool].value, "serialization")
    return {"type": "object", "oneOf": [_success_envelope(value), _failure_envelope()]}


def output_schema(tool: Tool) -> dict[str, Any]:
    """The published outputSchema of ``tool``: its success envelope or the failure one."""
    return copy.deepcopy(_output_schema(tool))


def value_schema(tool: Tool) -> dict[str, Any]:
    """The schema of ``tool``'s success ``value`` alone (for tests and docs)."""
    return _model_schema(TOOL_MODELS[tool].value, "serialization")
