"""Idempotency intents and confirmation operation digests.

Both are digests over ``{tool, target, arguments}`` where ``arguments`` is the tool's
canonical argument object exactly as validated (RFC 8785). Neither covers the clock, the
authorization receipt, the audit id or anything else that differs between two attempts of
the same logical operation, so a retry is recognised as a replay. They differ only in
their domain prefix: an intent digest can never stand in for an operation digest.

The host computes the operation digest with :func:`operation_digest` (same function, same
inputs) when it asks a human to confirm a gated call; see docs/confirmation.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.context import Tool


def target_of(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The target a tool acts on: candidate_id, record_id, or "" (capture/search)."""
    if tool in (Tool.REQUEST_ADMISSION, Tool.WITHDRAW):
        return str(arguments["candidate_id"])
    if tool in (Tool.FORGET, Tool.GET):
        return str(arguments["record_id"])
    return ""


def _subject(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool": tool.value, "target": target_of(tool, arguments), "arguments": dict(arguments)}


def intent_digest(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The idempotency intent: same key + same intent = replay; another intent = conflict."""
    return digest(DigestKind.INTENT, _subject(tool, arguments))


def operation_digest(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The digest a human confirmation is bound to (shared by host and server)."""
    return digest(DigestKind.OPERATION, _subject(tool, arguments))
