"""The claim rules the service enforces on host tokens, checked before signing.

Each refusal names its rule (``ClaimRuleError.rule``) so a platform engineer sees why the
service would have refused the token. The service's own verifier (``engram_memory.host_token``)
stays the authority: the kit's tests sign each violating claim set past these checks and
assert the service refuses it too (docs/host-integration.md lists the rules).

Rule names (stable; the TypeScript kit uses the same): ``times``, ``lifetime``, ``jti``,
``ref``, ``no-hash``, ``internal-principal``, ``deadline``, ``capabilities``, ``agent-perm``,
``maintainer-perm``, ``maintainer-scope``. Issuer, audience, tenant and the workspace list
are equalities with the deployment's configuration, which only the service knows: the kit
checks their shape (``ref``, ``no-hash``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

MAX_LIFETIME_S = 300
MAX_REF_BYTES = 512
MAX_MAINTAINER_WORKSPACES = 64
TOOLS = ("search", "get", "capture", "request_admission", "withdraw", "forget")
INTERNAL_PRINCIPALS = frozenset({"host:adjudication", "system:expiry-sweeper"})
MAINTAIN = "maintain"
# Deadlines are epoch milliseconds; anything below this is a value in seconds by mistake.
_MIN_DEADLINE_MS = 10**12
_AGENT_REFS = ("iss", "aud", "agent_id", "session", "purpose_ref", "audit_id")


class ClaimRuleError(ValueError):
    """A token argument breaks one of the service's claim rules (``rule`` names it)."""

    def __init__(self, rule: str, detail: str) -> None:
        """``rule``: the rule's short name; ``detail``: what was wrong."""
        super().__init__(f"{rule}: {detail}")
        self.rule = rule


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def lifetime(ttl_s: int) -> int:
    """1 to 300 seconds (the service refuses ``exp - iat > 300``)."""
    if not _is_int(ttl_s) or not 1 <= ttl_s <= MAX_LIFETIME_S:
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


def tools(name: str, values: object) -> list[str]:
    """Short tool names, each one of the six (an unknown name voids the whole token)."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ClaimRuleError("capabilities", f"{name} must be a list of tool names")
    listed = list(values)
    unknown = [v for v in listed if v not in TOOLS]
    if unknown:
        raise ClaimRuleError("capabilities", f"{name} has unknown tools {unknown}")
    return listed


def deadline(value: object) -> int:
    """The turn's deadline in epoch milliseconds (a positive int, not seconds)."""
    if not _is_int(value) or value <= 0:  # type: ignore[operator]
        raise ClaimRuleError("deadline", "deadline_ms must be a positive int")
    if value < _MIN_DEADLINE_MS:  # type: ignore[operator]
        raise ClaimRuleError("deadline", "deadline_ms is in milliseconds since the epoch")
    return value  # type: ignore[return-value]


def workspace_scope(workspaces: Iterable[str] | None, tenant_wide: bool) -> list[str] | None:
    """A maintainer's scope: exactly one of ``workspaces`` (1 to 64) or ``tenant_wide``."""
    if (workspaces is None) == (not tenant_wide):
        raise ClaimRuleError("maintainer-scope",
                             "give exactly one of workspaces=[...] or tenant_wide=True")
    if workspaces is None:
        return None
    if isinstance(workspaces, str):
        raise ClaimRuleError("maintainer-scope", "workspaces must be a list of ids")
    listed = [scope_id("workspace", w) for w in workspaces]
    if not 1 <= len(listed) <= MAX_MAINTAINER_WORKSPACES:
        raise ClaimRuleError("maintainer-scope",
                             f"workspaces must name 1 to {MAX_MAINTAINER_WORKSPACES} ids")
    return listed


def times(claims: Mapping[str, Any]) -> None:
    """``iat``, ``nbf``, ``exp``: integer seconds, ``0 < exp - iat <= 300``."""
    values = [claims.get(name) for name in ("iat", "nbf", "exp")]
    if not all(_is_int(v) for v in values):
        raise ClaimRuleError("times", "iat, nbf and exp must be integer seconds")
    iat, _, exp = values
    if not 0 < exp - iat <= MAX_LIFETIME_S:  # type: ignore[operator]
        raise ClaimRuleError("lifetime", f"exp - iat must be in 1..{MAX_LIFETIME_S} s")


def _perms(claims: Mapping[str, Any]) -> set[str]:
    perm = claims.get("perm", [])
    listed = perm.split() if isinstance(perm, str) else perm
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise ClaimRuleError("agent-perm" if "workspace" in claims else "maintainer-perm",
                             "perm must be a list of strings")
    return set(listed)


def _common(claims: Mapping[str, Any]) -> None:
    times(claims)
    if not isinstance(claims.get("jti"), str) or not claims.get("jti"):
        raise ClaimRuleError("jti", "jti is required")
    ref("jti", claims["jti"])
    scope_id("tenant", claims.get("tenant"))


def check_agent_claims(claims: Mapping[str, Any]) -> None:
    """Refuse (``ClaimRuleError``) an agent claim set the service would refuse, whatever
    its configuration (issuer, audience, tenant and workspace equality are its own)."""
    _common(claims)
    for name in _AGENT_REFS:
        ref(name, claims.get(name))
    scope_id("workspace", claims.get("workspace"))
    principal(claims.get("principal"))
    if MAINTAIN in _perms(claims):
        raise ClaimRuleError("agent-perm", "an agent token never carries 'maintain'")
    deadline(claims.get("deadline"))
    tools("capabilities", claims.get("capabilities"))
    tools("confirm_required", claims.get("confirm_required", []))
    if claims.get("confirmation_ref") is not None:
        ref("confirmation_ref", claims["confirmation_ref"])


def check_maintainer_claims(claims: Mapping[str, Any]) -> None:
    """Refuse (``ClaimRuleError``) a maintainer claim set the service would refuse."""
    _common(claims)
    for name in ("iss", "aud", "sub"):
        ref(name, claims.get(name))
    if not {"read", MAINTAIN} <= _perms(claims):
        raise ClaimRuleError("maintainer-perm", "perm must hold 'read' and 'maintain'")
    tenant_wide = claims.get("tenant_wide", False)
    if tenant_wide is not True and tenant_wide is not False:
        raise ClaimRuleError("maintainer-scope", "tenant_wide must be the JSON value true")
    listed = claims.get("workspaces")
    if "workspaces" in claims and (not isinstance(listed, list)):
        raise ClaimRuleError("maintainer-scope", "workspaces must be a list of ids")
    workspace_scope(listed if "workspaces" in claims else None, tenant_wide)
