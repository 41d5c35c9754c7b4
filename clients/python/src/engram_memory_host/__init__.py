"""engram-memory's host kit: host keys, invocation tokens, host routes, an MCP session."""

from engram_memory_host.client import WAITING_STATES, HostClient, HostRouteError
from engram_memory_host.keys import HostKey, HostKeyRing, default_kid
from engram_memory_host.rules import (
    TOOLS,
    ClaimRuleError,
    check_agent_claims,
    check_maintainer_claims,
)
from engram_memory_host.session import RefreshingBearer, memory_session
from engram_memory_host.tokens import (
    DEFAULT_TTL_S,
    mint_agent_token,
    mint_maintainer_token,
    sign_claims,
)

__all__ = [
    "DEFAULT_TTL_S",
    "TOOLS",
    "WAITING_STATES",
    "ClaimRuleError",
    "HostClient",
    "HostKey",
    "HostKeyRing",
    "HostRouteError",
    "RefreshingBearer",
    "check_agent_claims",
    "check_maintainer_claims",
    "default_kid",
    "memory_session",
    "mint_agent_token",
    "mint_maintainer_token",
    "sign_claims",
]
