"""Lambda entry point of engram_memory_get: internal event in, envelope out."""

from __future__ import annotations

from engram_memory.composition import get
from engram_memory.contract import registry
from engram_memory.runtime import ToolBinding, tool_handler

lambda_handler = tool_handler(ToolBinding(registry.GET, get.service))
