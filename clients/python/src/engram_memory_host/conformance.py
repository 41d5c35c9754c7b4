"""Claim sets that break one claim rule each: the conformance matrix.

The kit's tests check that ``check_agent_claims`` / ``check_maintainer_claims`` refuse each
with its rule; the service's tests sign each with ``sign_claims`` (no check) and check the
service refuses it too. The TypeScript kit's e2e test hands both matrices to its
``checkAgentClaims`` / ``checkMaintainerClaims`` and ``signClaims`` as JSON: every value here
survives a JSON round trip unchanged. A host can run the same matrix against its own deployment.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from engram_memory_host.rules import TOOLS


def valid_agent_claims(*, issuer: str = "urn:host", audience: str = "urn:engram",
                       tenant: str = "t1", workspace: str = "ws1",
                       purpose_ref: str = "purpose:p", now: float | None = None,
                       ) -> dict[str, Any]:
    """A claim set the service accepts (for that deployment)."""
    iat = int(time.time() if now is None else now)
    return {
        "iss": issuer, "aud": audience, "sub": "user-1", "jti": secrets.token_hex(16),
        "iat": iat, "nbf": iat, "exp": iat + 120, "tenant": tenant, "workspace": workspace,
        "principal": "user-1", "agent_id": "agent-1", "session": "sess-1",
        "purpose_ref": purpose_ref, "audit_id": "audit-1", "deadline": (iat + 120) * 1000,
        "capabilities": list(TOOLS), "confirm_required": [],
    }


def valid_maintainer_claims(*, issuer: str = "urn:host", audience: str = "urn:engram",
                            tenant: str = "t1", now: float | None = None) -> dict[str, Any]:
    """A tenant-wide maintainer claim set the service accepts."""
    iat = int(time.time() if now is None else now)
    return {"iss": issuer, "aud": audience, "sub": "reviewer", "jti": secrets.token_hex(16),
            "iat": iat, "nbf": iat, "exp": iat + 120, "tenant": tenant,
            "perm": ["read", "maintain"], "tenant_wide": True}


def _without(claims: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in claims.items() if k != name}


def agent_violations(**deployment: Any) -> dict[str, tuple[dict[str, Any], str]]:
    """Case name → (claims breaking exactly one rule, the rule's name)."""
    ok = valid_agent_claims(**deployment)
    iat = ok["iat"]
    cases: dict[str, tuple[dict[str, Any], str]] = {
        "lifetime over 300 s": ({**ok, "exp": iat + 301}, "lifetime"),
        "exp before iat": ({**ok, "exp": iat - 1}, "lifetime"),
        # A fraction, not ``float(iat + 60)``: JSON readers without a float type (JavaScript's)
        # would read ``…60.0`` back as an integer, and the TypeScript kit runs this matrix too.
        "exp not an integer": ({**ok, "exp": iat + 60.5}, "times"),
        "no nbf": (_without(ok, "nbf"), "times"),
        "no jti": (_without(ok, "jti"), "jti"),
        "workspace with #": ({**ok, "workspace": ok["workspace"] + "#x"}, "no-hash"),
        "empty agent_id": ({**ok, "agent_id": ""}, "ref"),
        "session over 512 bytes": ({**ok, "session": "s" * 513}, "ref"),
        "principal not NFC": ({**ok, "principal": "e\u0301"}, "ref"),
        "no audit_id": (_without(ok, "audit_id"), "ref"),
        "internal principal": ({**ok, "principal": "host:adjudication"},
                               "internal-principal"),
        "deadline not an integer": ({**ok, "deadline": "soon"}, "deadline"),
        "deadline zero": ({**ok, "deadline": 0}, "deadline"),
        "unknown capability": ({**ok, "capabilities": ["search", "delete"]}, "capabilities"),
        "capabilities not a list": ({**ok, "capabilities": "search"}, "capabilities"),
        "unknown confirm_required": ({**ok, "confirm_required": ["nope"]}, "capabilities"),
        "empty confirmation_ref": ({**ok, "confirmation_ref": ""}, "ref"),
        "maintain on the agent path": ({**ok, "perm": ["read", "maintain"]}, "agent-perm"),
    }
    return cases


def maintainer_violations(**deployment: Any) -> dict[str, tuple[dict[str, Any], str]]:
    """Case name → (maintainer claims breaking exactly one rule, the rule's name)."""
    ok = valid_maintainer_claims(**deployment)
    return {
        "no maintain": ({**ok, "perm": ["read"]}, "maintainer-perm"),
        "no scope": (_without(ok, "tenant_wide"), "maintainer-scope"),
        "both scopes": ({**ok, "workspaces": ["ws1"]}, "maintainer-scope"),
        "tenant_wide a string": ({**ok, "tenant_wide": "true"}, "maintainer-scope"),
        "empty workspaces": ({**_without(ok, "tenant_wide"), "workspaces": []},
                             "maintainer-scope"),
        "65 workspaces": ({**_without(ok, "tenant_wide"),
                           "workspaces": [f"w{i}" for i in range(65)]}, "maintainer-scope"),
        "workspace with #": ({**_without(ok, "tenant_wide"), "workspaces": ["a#b"]},
                             "no-hash"),
        "lifetime over 300 s": ({**ok, "exp": ok["iat"] + 301}, "lifetime"),
        "no jti": (_without(ok, "jti"), "jti"),
        "empty subject": ({**ok, "sub": ""}, "ref"),
    }
