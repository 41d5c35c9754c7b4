"""The one table of the six tools' models: Tool → (argument model, value model).

Validation (``contract/validation``), the published schemas (``contract/schemas``) and
the tool Lambdas' bindings (``composition/<tool>.BINDING``, which join a tool's models to
its service) all read this table; nothing else lists the models per tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from engram_memory.contract.inputs import (
    CaptureArgs,
    ForgetArgs,
    GetArgs,
    RequestAdmissionArgs,
    SearchArgs,
    WithdrawArgs,
)
from engram_memory.contract.outputs import (
    AdmissionValue,
    CaptureValue,
    ForgetValue,
    GetValue,
    OutputModel,
    SearchValue,
    WithdrawValue,
)
from engram_memory.domain.context import Tool

ArgsT = TypeVar("ArgsT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ToolModels(Generic[ArgsT]):
    """One tool's closed argument model and the model of its success ``value``."""

    tool: Tool
    arguments: type[ArgsT]
    value: type[OutputModel]


SEARCH = ToolModels(Tool.SEARCH, SearchArgs, SearchValue)
GET = ToolModels(Tool.GET, GetArgs, GetValue)
CAPTURE = ToolModels(Tool.CAPTURE, CaptureArgs, CaptureValue)
REQUEST_ADMISSION = ToolModels(Tool.REQUEST_ADMISSION, RequestAdmissionArgs, AdmissionValue)
WITHDRAW = ToolModels(Tool.WITHDRAW, WithdrawArgs, WithdrawValue)
FORGET = ToolModels(Tool.FORGET, ForgetArgs, ForgetValue)

TOOL_MODELS: dict[Tool, ToolModels[Any]] = {
    models.tool: models for models in (SEARCH, GET, CAPTURE, REQUEST_ADMISSION, WITHDRAW, FORGET)
}
