"""Verification of the host-signed invocation context (a short-lived JWT).

The host platform signs one JWT per agent turn (EdDSA or ES256) carrying the scope, the
actor, the purpose, the deadline and the granted capabilities. Nothing here trusts tool
arguments: the verified claims are the only source of an :class:`InvocationContext`.
Every failure raises the one :class:`UntrustedContext` with a constant message, so a
caller cannot learn which check failed. ``jti`` is logged for audit and deliberately not
enforced single-use: one client session sends discovery, list and several calls under one
token.

The host's keys are a small set (docs/deploy.md, "Host key rotation"): a JWKS of Ed25519
and P-256 public keys, each named by a ``kid``. A token's header ``kid`` selects its key,
and nothing else in the header is used: ``alg`` must be the selected key's one algorithm,
and a header naming a key itself (``jwk``, ``jku``, ``x5u``, ``x5c``) is refused. A
deployment configured with one PEM key (before key sets) is a set of one unnamed key:
every token is checked against it, whatever its ``kid``.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from engram_memory.domain.context import InvocationContext, Scope, Tool
from engram_memory.domain.principals import is_internal_principal

if TYPE_CHECKING:
    from engram_memory.settings import Settings

logger = logging.getLogger(__name__)

MAX_LIFETIME_S = 300
DEFAULT_LEEWAY_S = 5
MAX_TOKEN_BYTES = 16_384
MAX_REF_BYTES = 512
MAINTAIN = "maintain"
MAX_MAINTAINER_WORKSPACES = 64
"""Most workspaces one scoped maintainer token may name (more is refused: a reviewer of
that many teams is given a ``tenant_wide`` token instead; docs/mcp.md)."""
_TIME_CLAIMS = ("exp", "iat", "nbf")
MAX_HOST_KEYS = 8  # a rotation needs two; a few more leave room for an emergency key
KEY_HEADERS = frozenset({"jwk", "jku", "x5u", "x5c"})  # a token never names its own key
_AGENT_STRING_CLAIMS = ("tenant", "workspace", "principal", "agent_id", "session", "purpose_ref",
                        "audit_id", "jti")

SecondsClock = Callable[[], float]
"""Seconds since the epoch (``time.time`` in production): JWT times are in seconds; every
other clock of the project is ``services.ports.Clock`` (milliseconds)."""


class UntrustedContext(Exception):
    """The host invocation context is missing or untrusted (JSON-RPC -32603)."""

    message = "Trusted invocation context unavailable"

    def __init__(self) -> None:
        # Constant text only: which check failed is never revealed to the caller.
        super().__init__(self.message)


@dataclass(frozen=True, slots=True)
class MaintainerIdentity:
    """A host operator holding the maintenance permission (host routes only)."""

    tenant_id: str
    subject: str
    token_id: str
    workspaces: frozenset[str] | None = None
    """The workspaces the token covers; None for an explicit ``tenant_wide`` token."""

    def covers(self, workspace_id: str) -> bool:
        """Whether this token may act on ``workspace_id`` (every host route asks)."""
        return self.workspaces is None or workspace_id in self.workspaces


PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey


def _supported(key: Any) -> PublicKey:
    """``key`` when it is an Ed25519 or P-256 public key (the only two the host may use)."""
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return key
    raise ValueError("a host key must be an Ed25519 or EC P-256 public key")


@dataclass(frozen=True, slots=True)
class HostKey:
    """One trusted host public key; ``kid`` None only for a single-PEM deployment."""

    kid: str | None
    public_key: PublicKey

    @property
    def algorithm(self) -> str:
        """The one algorithm the key type allows: no algorithm confusion is possible."""
        return "EdDSA" if isinstance(self.public_key, ed25519.Ed25519PublicKey) else "ES256"


def keys_from_jwks(jwks: str | Mapping[str, Any]) -> tuple[HostKey, ...]:
    """The host key set of a JWKS (``{"keys": [...]}``, JSON text or parsed).

    Each key: an Ed25519 (``OKP``) or P-256 (``EC``) **public** JWK with a non-empty,
    unique ``kid``; ``alg``, when given, must be its algorithm. 1 to ``MAX_HOST_KEYS``.
    """
    raw = json.loads(jwks) if isinstance(jwks, str) else jwks
    entries = raw.get("keys") if isinstance(raw, Mapping) else None
    if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_HOST_KEYS:
        raise ValueError(f"the host key set must hold 1 to {MAX_HOST_KEYS} keys")
    keys: list[HostKey] = []
    for entry in entries:
        if not isinstance(entry, Mapping) or "d" in entry:
            raise ValueError("a host key must be a public JWK")
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid or len(kid) > MAX_REF_BYTES:
            raise ValueError("every host key needs a kid")
        try:
            loaded = jwt.PyJWK(dict(entry))
        except jwt.PyJWTError as exc:
            raise ValueError("a host key must be an Ed25519 or EC P-256 public JWK") from exc
        key = HostKey(kid, _supported(loaded.key))
        if entry.get("alg") not in (None, key.algorithm):
            raise ValueError("a host key's alg must be EdDSA (Ed25519) or ES256 (P-256)")
        keys.append(key)
    if len({key.kid for key in keys}) != len(keys):
        raise ValueError("host key ids must be unique")
    return tuple(keys)


@dataclass(frozen=True, slots=True)
class HostTokenVerifier:
    """What a token is checked against: the registered host keys, issuer and audience."""

    keys: tuple[HostKey, ...]
    issuer: str
    audience: str
    tenant_id: str
    workspace_ids: tuple[str, ...]
    clock: SecondsClock
    leeway_s: int = DEFAULT_LEEWAY_S

    @classmethod
    def from_pem(
        cls,
        pem: str,
        *,
        issuer: str,
        audience: str,
        tenant_id: str,
        workspace_ids: tuple[str, ...],
        clock: SecondsClock,
    ) -> HostTokenVerifier:
        """One host public key (Ed25519 or P-256; a set of one unnamed key) and the
        deployment's identity."""
        key = HostKey(None, _supported(load_pem_public_key(pem.encode("ascii"))))
        return cls.from_keys((key,), issuer=issuer, audience=audience, tenant_id=tenant_id,
                             workspace_ids=workspace_ids, clock=clock)

    @classmethod
    def from_keys(
        cls,
        keys: tuple[HostKey, ...],
        *,
        issuer: str,
        audience: str,
        tenant_id: str,
        workspace_ids: tuple[str, ...],
        clock: SecondsClock,
    ) -> HostTokenVerifier:
        """A key set (``keys_from_jwks``) and the deployment's identity."""
        if not keys or (len(keys) > 1 and any(key.kid is None for key in keys)):
            raise ValueError("host keys: one unnamed key, or keys that each have a kid")
        if not issuer or not audience or not tenant_id:
            raise ValueError("issuer, audience and tenant are required")
        return cls(keys, issuer, audience, tenant_id, workspace_ids, clock)

    def key_for(self, header: Mapping[str, Any]) -> HostKey:
        """The key a token header selects: by ``kid`` only (UntrustedContext if none)."""
        if KEY_HEADERS & set(header):
            raise UntrustedContext()
        if len(self.keys) == 1 and self.keys[0].kid is None:
            return self.keys[0]  # a single-PEM deployment: nothing to select
        kid = header.get("kid")
        for key in self.keys:
            if isinstance(kid, str) and key.kid == kid:
                return key
        raise UntrustedContext()


def verifier_from_settings(settings: Settings, clock: SecondsClock) -> HostTokenVerifier:
    """A verifier for the deployment described by ``settings`` (engram_memory.settings):
    the key set ``ENGRAM_HOST_JWKS`` when set, else the one key ``ENGRAM_HOST_PUBLIC_KEY_PEM``."""
    keys = (keys_from_jwks(settings.host_jwks) if settings.host_jwks else
            (HostKey(None, _supported(load_pem_public_key(
                settings.host_public_key_pem.encode("ascii")))),))
    return HostTokenVerifier.from_keys(
        keys,
        issuer=settings.host_issuer,
        audience=settings.audience,
        tenant_id=settings.tenant_id,
        workspace_ids=tuple(settings.workspace_ids),
        clock=clock,
    )


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header value."""
    if not authorization:
        raise UntrustedContext()
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UntrustedContext()
    return token.strip()


def _decode(token: str, verifier: HostTokenVerifier) -> dict[str, Any]:
    """Signature, issuer, audience, presence and time checks shared by both token kinds."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_BYTES:
        raise UntrustedContext()
    try:
        key = verifier.key_for(jwt.get_unverified_header(token))
        claims: dict[str, Any] = jwt.decode(
            token,
            key=key.public_key,
            algorithms=[key.algorithm],
            audience=verifier.audience,
            issuer=verifier.issuer,
            # Time is checked below against the injected clock so tests control it.
            options={
                "require": ["exp", "iat", "nbf", "jti", "iss", "aud"],
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
            },
        )
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise UntrustedContext() from exc
    _check_times(claims, verifier)
    if claims.get("tenant") != verifier.tenant_id:
        raise UntrustedContext()
    return claims


def _check_times(claims: Mapping[str, Any], verifier: HostTokenVerifier) -> None:
    values: list[int] = []
    for name in _TIME_CLAIMS:
        value = claims.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise UntrustedContext()
        values.append(value)
    exp, iat, nbf = values
    now = verifier.clock()
    leeway = verifier.leeway_s
    if exp <= iat or exp - iat > MAX_LIFETIME_S:
        raise UntrustedContext()
    if now >= exp + leeway or now + leeway < nbf or now + leeway < iat:
        raise UntrustedContext()


def _ref(value: Any) -> str:
    """An opaque reference: a non-empty NFC string of at most 512 UTF-8 bytes."""
    if not isinstance(value, str) or not value or len(value.encode("utf-8")) > MAX_REF_BYTES:
        raise UntrustedContext()
    if unicodedata.normalize("NFC", value) != value:
        raise UntrustedContext()
    return value


def _tools(value: Any) -> frozenset[Tool]:
    """A list of short tool names; an unknown name makes the whole token untrusted."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UntrustedContext()
    try:
        return frozenset(Tool(v) for v in value)
    except ValueError as exc:
        raise UntrustedContext() from exc


def _perms(claims: Mapping[str, Any]) -> frozenset[str]:
    perm = claims.get("perm", [])
    if isinstance(perm, str):
        perm = perm.split()
    if not isinstance(perm, list) or not all(isinstance(p, str) for p in perm):
        raise UntrustedContext()
    return frozenset(perm)


def _maintainer_workspaces(claims: Mapping[str, Any]) -> frozenset[str] | None:
    """The token's scope: exactly one of ``workspaces`` (a non-empty array of at most
    ``MAX_MAINTAINER_WORKSPACES`` workspace ids) or ``tenant_wide: true``; else untrusted."""
    has_list, tenant_wide = "workspaces" in claims, claims.get("tenant_wide", False)
    if tenant_wide is not True and tenant_wide is not False:
        raise UntrustedContext()
    if has_list == tenant_wide:  # neither, or both
        raise UntrustedContext()
    if tenant_wide:
        return None
    listed = claims["workspaces"]
    if not isinstance(listed, list) or not 1 <= len(listed) <= MAX_MAINTAINER_WORKSPACES:
        raise UntrustedContext()
    workspaces = frozenset(_ref(value) for value in listed)
    if any("#" in workspace for workspace in workspaces):
        raise UntrustedContext()
    return workspaces


def verify_agent_token(token: str, verifier: HostTokenVerifier) -> InvocationContext:
    """Verify an agent-path token and build the invocation context it binds."""
    claims = _decode(token, verifier)
    if MAINTAIN in _perms(claims):
        # The maintenance permission never reaches the agent's path (CONTRACT.md §0).
        raise UntrustedContext()
    values = {name: _ref(claims.get(name)) for name in _AGENT_STRING_CLAIMS}
    if "#" in values["tenant"] or "#" in values["workspace"]:
        raise UntrustedContext()
    if is_internal_principal(values["principal"]):
        # The service's own principals: their idempotency keys are never an agent's.
        raise UntrustedContext()
    if verifier.workspace_ids and values["workspace"] not in verifier.workspace_ids:
        raise UntrustedContext()
    deadline = claims.get("deadline")
    if not isinstance(deadline, int) or isinstance(deadline, bool) or deadline <= 0:
        raise UntrustedContext()
    confirmation_ref = claims.get("confirmation_ref")
    if confirmation_ref is not None:
        confirmation_ref = _ref(confirmation_ref)
    context = InvocationContext(
        scope=Scope(values["tenant"], values["workspace"]),
        principal=values["principal"],
        agent_id=values["agent_id"],
        session_id=values["session"],
        purpose_ref=values["purpose_ref"],
        audit_id=values["audit_id"],
        deadline_ms=deadline,
        capabilities=_tools(claims.get("capabilities")),
        confirmation_required=_tools(claims.get("confirm_required", [])),
        confirmation_ref=confirmation_ref,
        token_id=values["jti"],
    )
    logger.info("host context verified", extra={"jti": context.token_id,
                                                 "audit_id": context.audit_id})
    return context


def verify_maintainer_token(token: str, verifier: HostTokenVerifier) -> MaintainerIdentity:
    """Verify a host-operator token: it must carry ``perm`` ⊇ ``["read", "maintain"]`` and
    exactly one of ``workspaces`` or ``tenant_wide: true`` (its scope)."""
    claims = _decode(token, verifier)
    if not {"read", MAINTAIN} <= _perms(claims):
        raise UntrustedContext()
    identity = MaintainerIdentity(
        tenant_id=_ref(claims.get("tenant")),
        subject=_ref(claims.get("sub")),
        token_id=_ref(claims.get("jti")),
        workspaces=_maintainer_workspaces(claims),
    )
    logger.info("maintainer token verified", extra={"jti": identity.token_id})
    return identity
