"""How the agent learns its purpose_ref: the server instructions name it, per request.

The endpoint is stateless: every HTTP request carries its own host token, and the
``initialize`` result (initialize era) or ``server/discover`` result (2026 era) is built
inside that request. An ASGI wrapper around ``/mcp`` keeps the request's
``Authorization`` header in a context variable (the SDK runs the request's server task
in a copy of this context); the server's ``instructions`` verify it when, and only when,
instructions are asked for, and name the purpose the verified token binds. A missing or
untrusted token gets instructions that name no purpose. The claim is never trusted
unverified, and verification failures stay silent (the instructions are not an oracle:
they say only "no verified purpose").
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

from starlette.datastructures import Headers

from engram_memory.host_token import UntrustedContext, bearer_token, verify_agent_token

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from engram_memory.host_token import HostTokenVerifier

_AUTHORIZATION: ContextVar[str | None] = ContextVar("engram_mcp_authorization", default=None)


class RequestAuthorization:
    """ASGI wrapper: the request's Authorization header, readable by the server."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with its Authorization header in the context."""
        value = Headers(scope=scope).get("authorization") if scope["type"] == "http" else None
        token = _AUTHORIZATION.set(value)
        try:
            await self._app(scope, receive, send)
        finally:
            _AUTHORIZATION.reset(token)


def bound_purpose(verifier: HostTokenVerifier) -> str | None:
    """The purpose bound by the current request's verified token, or None."""
    try:
        return verify_agent_token(bearer_token(_AUTHORIZATION.get()), verifier).purpose_ref
    except UntrustedContext:
        return None
