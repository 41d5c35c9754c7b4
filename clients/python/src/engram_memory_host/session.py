"""An MCP session for the official Python SDK whose bearer token never goes stale."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import jwt
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

DEFAULT_REFRESH_MARGIN_S = 30


class RefreshingBearer(httpx2.Auth):
    """``Authorization: Bearer`` from ``mint()``, minted again when the token is within
    ``margin_s`` of its ``exp`` (tokens live at most 300 s; an agent turn may be longer)."""

    def __init__(self, mint: Callable[[], str], margin_s: int = DEFAULT_REFRESH_MARGIN_S,
                 clock: Callable[[], float] = time.time) -> None:
        """``mint``: returns a fresh token (e.g. a ``functools.partial`` of
        ``mint_agent_token``)."""
        self._mint = mint
        self._margin_s = margin_s
        self._clock = clock
        self._token = ""
        self._expires_at = 0.0

    def token(self) -> str:
        """The current token, minting a new one when it nears expiry."""
        if not self._token or self._clock() >= self._expires_at - self._margin_s:
            self._token = self._mint()
            claims = jwt.decode(self._token, options={"verify_signature": False})
            self._expires_at = float(claims["exp"])
        return self._token

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, Any, None]:
        """Set the header on every request."""
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


@asynccontextmanager
async def memory_session(url: str, mint: Callable[[], str], *, timeout_s: float = 30,
                         margin_s: int = DEFAULT_REFRESH_MARGIN_S) -> AsyncIterator[Client]:
    """An initialized official-SDK ``Client`` on ``url`` (the tenant's ``/mcp`` endpoint)
    whose every HTTP request carries a token from ``mint`` that is not about to expire."""
    auth = RefreshingBearer(mint, margin_s)
    async with (
        httpx2.AsyncClient(auth=auth, timeout=timeout_s) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client
