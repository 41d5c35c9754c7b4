"""The claim rules the service enforces on host tokens, checked before signing.

Each refusal names its rule (``ClaimRuleError.rule``) so a platform engineer sees why the
service would have refused the token. The service's own verifier (``engram_memory.host_token``)
stays the authority: the kit's tests forge each violating token past these checks and
assert the service refuses it too.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

MAX_LIFETIME_S = 300
MAX_REF_BYTES = 512
TOOLS = ("search", "get", "capture", "request_admission", "withdraw", "forget")
INTERNAL_PRINCIPALS = frozenset({"host:adjudication", "system:expiry-sweeper"})
# Deadlines are epoch milliseconds; anything below this is a value in seconds by mistake.
_MIN_DEADLINE_MS = 10**12


class ClaimRuleError(ValueError):
    """A token argument breaks one of the service's claim rules (``rule`` names it)."""

    def __init__(self, rule: str, detail: str) -> None:
        """``rule``: the rule's short name; ``detail``: what was wrong."""
        super().__init__(f"{rule}: {detail}")
        self.rule = rule


def lifetime(ttl_s: int) -> int:
    """1 to 300 seconds (the service refuses ``exp - iat > 300``)."""
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int) or not 1 <= ttl_s <= MAX_LIFETIME_S:
        raise ClaimRuleError("lifetime", f"ttl_s must be an int in 1..{MAX_LIFETIME_S}")
    return ttl_s


def ref(name: str, value: object) -> str:
    """An opaque reference: a non-empty NFC string of at most 512 UTF-8 bytes."""
    if not isinstance(value, str) or not value:
        raise ClaimRuleError("ref", f"{name} must be a non-empty string")
    if len(value.encode("utf-8")) > MAX_REF_BYTES:
        raise ClaimRuleError("ref", f"{name} exceeds {MAX_REF_BYTES} UTF-8 bytes")
    if unicodedata.normalize("NFC", value) != value:
        raise ClaimRuleError("ref", f"{name} must be NFC-normalized")
    return value


def scope_id(name: str, value: object) -> str:
    """A tenant or workspace id: a reference without ``#`` (it delimits storage keys)."""
    checked = ref(name, value)
    if "#" in checked:
        raise ClaimRuleError("no-hash", f"{name} must not contain '#'")
    return checked


def principal(value: object) -> str:
    """An agent principal: a reference that is not one of the service's own."""
    checked = ref("principal", value)
    if checked in INTERNAL_PRINCIPALS:
        raise ClaimRuleError("internal-principal", f"{checked} is reserved to the service")
    return checked


def tools(name: str, values: Iterable[str]) -> list[str]:
    """Short tool names, each one of the six (an unknown name voids the whole token)."""
    if isinstance(values, str):
        raise ClaimRuleError("capabilities", f"{name} must be a list of tool names")
    listed = list(values)
    unknown = [v for v in listed if v not in TOOLS]
    if unknown:
        raise ClaimRuleError("capabilities", f"{name} has unknown tools {unknown}")
    return listed


def deadline(value: object) -> int:
    """The turn's deadline in epoch milliseconds (a positive int, not seconds)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ClaimRuleError("deadline", "deadline_ms must be a positive int")
    if value < _MIN_DEADLINE_MS:
        raise ClaimRuleError("deadline", "deadline_ms is in milliseconds since the epoch")
    return value


def workspace_scope(workspaces: Iterable[str] | None, tenant_wide: bool) -> list[str] | None:
    """A maintainer's scope: exactly one of ``workspaces`` (non-empty) or ``tenant_wide``."""
    if (workspaces is None) == (not tenant_wide):
        raise ClaimRuleError("maintainer-scope",
                             "give exactly one of workspaces=[...] or tenant_wide=True")
    if workspaces is None:
        return None
    if isinstance(workspaces, str):
        raise ClaimRuleError("maintainer-scope", "workspaces must be a list of ids")
    listed = [scope_id("workspace", w) for w in workspaces]
    if not listed:
        raise ClaimRuleError("maintainer-scope", "workspaces must not be empty")
    return listed
