"""Helpers for the table-driven contract tests: build, mutate and classify arguments."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engram_memory.contract.validation import validate_arguments
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import InvalidDigest, InvalidSchema

from tests.fixtures import contract_fixtures as fx

DELETE = object()
VALID = None

FIXTURES: dict[Tool, Callable[[], dict[str, Any]]] = {
    Tool.SEARCH: fx.valid_search_args,
    Tool.GET: fx.valid_get_args,
    Tool.CAPTURE: fx.valid_capture_args,
    Tool.REQUEST_ADMISSION: fx.valid_request_admission_args,
    Tool.WITHDRAW: fx.valid_withdraw_args,
    Tool.FORGET: fx.valid_forget_args,
}

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Case:
    """One mutation of a valid fixture and the error class it must produce (None = valid)."""

    name: str
    tool: Tool
    changes: tuple[tuple[Path, Any], ...]
    expected: type[Exception] | None
    schema_expressible: bool = field(default=True)

    def build(self) -> dict[str, Any]:
        """The fixture with the changes applied."""
        args = FIXTURES[self.tool]()
        for path, value in self.changes:
            set_path(args, path, value)
        return args


def set_path(target: Any, path: Path, value: Any) -> None:
    """Set (or delete with DELETE) the value at ``path``; a callable receives the old value."""
    *parents, last = path
    for step in parents:
        target = target[step]
    if value is DELETE:
        del target[last]
    elif callable(value):
        target[last] = value(copy.deepcopy(target[last]))
    else:
        target[last] = copy.deepcopy(value)


def outcome(tool: Tool, args: object) -> type[Exception] | None:
    """The error class validate_arguments raises for ``args`` (None when it validates)."""
    try:
        validate_arguments(tool, args)
    except (InvalidSchema, InvalidDigest) as exc:
        return type(exc)
    return None
