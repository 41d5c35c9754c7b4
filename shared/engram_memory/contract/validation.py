"""The one entry point that turns raw tool arguments into a validated input model.

``validate_arguments`` never raises anything but ``InvalidSchema`` or ``InvalidDigest``.
A cheap structural pre-check runs first (an object at the top, JSON values only, no
``null``, no lone surrogate, bounded nesting, the 1,048,576-byte ceiling on the compact
UTF-8 serialization), then the closed strict model. Pydantic's error detail is dropped on
purpose: the contract's messages are constant and never echo the caller's input.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ValidationError

from engram_memory.contract.registry import TOOL_MODELS, ArgsT
from engram_memory.contract.types import DIGEST_ERROR_TYPE
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import InvalidDigest, InvalidSchema

MAX_ARGUMENT_BYTES = 1_048_576
# Deeper than any valid argument object (capture nests 5 levels); bounds the walk.
MAX_DEPTH = 16



def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _is_plain_json(value: object, depth: int) -> bool:
    """True when ``value`` is a null-free JSON value with valid UTF-8 strings."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, str):
        return not _has_lone_surrogate(value)
    if isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_plain_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(
            isinstance(key, str) and not _has_lone_surrogate(key) and _is_plain_json(v, depth + 1)
            for key, v in value.items()
        )
    # None, tuples, bytes, objects: nothing a JSON decoder yields for a valid argument.
    return False


def serialized_size(raw: dict[str, Any]) -> int:
    """UTF-8 byte length of the compact JSON serialization of an argument object."""
    text = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8"))


def precheck(raw: object) -> dict[str, Any]:
    """The structural rules no model can see; raises InvalidSchema, returns the object."""
    if not isinstance(raw, dict) or not _is_plain_json(raw, 0):
        raise InvalidSchema
    if serialized_size(raw) > MAX_ARGUMENT_BYTES:
        raise InvalidSchema
    return raw


def _only_digest_errors(exc: ValidationError) -> bool:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    return bool(errors) and all(err["type"] == DIGEST_ERROR_TYPE for err in errors)


def validate_arguments(tool: Tool, raw: object) -> BaseModel:
    """Validate ``raw`` against ``tool``'s closed input model (InvalidSchema/InvalidDigest)."""
    model: type[BaseModel] = TOOL_MODELS[tool].arguments
    return validate_as(model, raw)


def validate_as(model: type[ArgsT], raw: object) -> ArgsT:
    """Validate ``raw`` against the closed ``model`` (InvalidSchema/InvalidDigest)."""
    arguments = precheck(raw)
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        # A malformed digest is INVALID_DIGEST only when nothing else is wrong as well.
        if _only_digest_errors(exc):
            raise InvalidDigest from None
        raise InvalidSchema from None


def canonical_arguments(model: BaseModel) -> dict[str, Any]:
    """Exactly the fields the caller sent (defaults not filled in), in JSON form."""
    return model.model_dump(mode="json", exclude_unset=True)
