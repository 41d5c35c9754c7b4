"""Lambda entry point of engram_memory_search: internal event in, envelope out."""

from __future__ import annotations

from engram_memory.composition import search
from engram_memory.contract import registry
from engram_memory.runtime import ToolBinding, tool_handler

lambda_handler = tool_handler(ToolBinding(registry.SEARCH, search.service))
