"""The host-bound invocation context: who calls, in which scope, for what purpose.

Built only from a verified host token (never from tool arguments) and passed to every
service. Tools are named without the ``engram_memory_`` prefix in capabilities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Tool(StrEnum):
    """The six tools; the value is the short capability name."""

    SEARCH = "search"
    GET = "get"
    CAPTURE = "capture"
    REQUEST_ADMISSION = "request_admission"
    WITHDRAW = "withdraw"
    FORGET = "forget"

    @property
    def mcp_name(self) -> str:
        """The MCP tool name, e.g. ``engram_memory_search``."""
        return f"engram_memory_{self.value}"

    @classmethod
    def from_mcp_name(cls, name: str) -> Tool | None:
        """The tool for an MCP name, or None when no such tool exists."""
        short = name.removeprefix("engram_memory_")
        if short == name:
            return None
        try:
            return cls(short)
        except ValueError:
            return None


MUTATING_TOOLS = frozenset({Tool.CAPTURE, Tool.REQUEST_ADMISSION, Tool.WITHDRAW, Tool.FORGET})
ALWAYS_CONFIRMED_TOOLS = frozenset({Tool.WITHDRAW, Tool.FORGET})


@dataclass(frozen=True, slots=True)
class Scope:
    """The exact tenant + workspace a call is bound to."""

    tenant_id: str
    workspace_id: str

    @property
    def key(self) -> str:
        """A stable string for storage keys (ids are validated to exclude ``#``)."""
        return f"{self.tenant_id}#{self.workspace_id}"


@dataclass(frozen=True, slots=True)
class InvocationContext:
    """Everything the host binds to one call. Never derived from tool arguments."""

    scope: Scope
    principal: str
    agent_id: str
    session_id: str
    purpose_ref: str
    audit_id: str
    deadline_ms: int
    capabilities: frozenset[Tool]
    confirmation_required: frozenset[Tool] = field(default_factory=frozenset)
    confirmation_ref: str | None = None
    token_id: str = ""

    def requires_confirmation(self, tool: Tool) -> bool:
        """withdraw/forget always; capture/request_admission when the host says so."""
        return tool in ALWAYS_CONFIRMED_TOOLS or tool in self.confirmation_required
