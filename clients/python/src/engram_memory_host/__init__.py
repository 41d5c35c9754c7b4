"""engram-memory's host kit: host keys, invocation tokens, host routes, an MCP session."""

from typing import TYPE_CHECKING, Any

from engram_memory_host.client import WAITING_STATES, HostClient, HostRouteError
from engram_memory_host.keys import HostKey, HostKeyRing, default_kid
from engram_memory_host.rules import (
    TOOLS,
    ClaimRuleError,
    check_agent_claims,
    check_maintainer_claims,
)
from engram_memory_host.tokens import (
    DEFAULT_TTL_S,
    mint_agent_token,
    mint_maintainer_token,
    sign_claims,
)

if TYPE_CHECKING:
    from engram_memory_host.session import RefreshingBearer, memory_session

# The MCP session helpers pull in the MCP SDK (seconds of import time): they load on first
# use, so minting a token or calling a host route does not pay for them.
_LAZY = {"RefreshingBearer", "memory_session"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from engram_memory_host import session

        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
