"""The real MCP endpoint app (H4's server wiring) served in-process over ASGI.

The endpoint is composed exactly as the local service composes it — host-token verifier,
the in-process invoker running ``functions/<tool>/handler.py``, the stateless JSON session
manager with DNS-rebinding protection — and driven with raw HTTP bodies through
``httpx2.ASGITransport`` on one event loop running in a background thread, so a
hypothesis example costs one request rather than one server start.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from engram_memory.composition.endpoint import build_endpoint
from engram_memory.local.host_bridge import host_routes
from engram_memory.local.inprocess_invoker import (
    InProcessInvoker,
    default_functions_dir,
    load_handler,
)
from engram_memory.mcp.apigw import call_asgi
from engram_memory.mcp.server import (
    MCP_PATH,
    build_app,
    build_server,
    session_manager,
    transport_security,
)
from engram_memory.settings import Settings

from tests.support.host_tokens import (
    generate_host_key,
    mint_agent_token,
    mint_maintainer_token,
    public_pem,
)

HOST = "127.0.0.1:8787"
ALT_HOST = "localhost:8787"  # also allowed: the metadata must not follow the Host header
RESOURCE = f"http://{HOST}{MCP_PATH}"
ISSUER = "https://host.reliability.test"
AUDIENCE = "engram-reliability"
MODERN = "2026-07-28"
# The stateless era carries the protocol envelope in every request's params._meta.
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {}}


def host_environment(key: Any) -> dict[str, str]:
    """The ``ENGRAM_*`` host registration for ``key``."""
    return {"ENGRAM_HOST_ISSUER": ISSUER, "ENGRAM_AUDIENCE": AUDIENCE,
            "ENGRAM_HOST_PUBLIC_KEY_PEM": public_pem(key)}


@dataclass
class Reply:
    """One HTTP answer."""

    status: int
    text: str
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body as JSON (fails the test when it is not JSON)."""
        return json.loads(self.text)


class McpHarness:
    """A running endpoint app plus helpers to mint tokens and post raw bodies."""

    def __init__(self, settings: Settings, key: Any) -> None:
        """Compose the endpoint for ``settings``; ``key`` signs the host tokens."""
        self.settings = settings
        self.key = key
        endpoint = build_endpoint(settings, InProcessInvoker(default_functions_dir()))
        verifier = endpoint.verifier()
        self.manager = session_manager(build_server(endpoint),
                                       transport_security([HOST, ALT_HOST]))
        host_api = load_handler(default_functions_dir(), "host_api")
        self.app = build_app(self.manager, issuer=ISSUER, resource_url=RESOURCE,
                             extra_routes=host_routes(host_api, verifier), with_lifespan=False)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, name="mcp-harness", daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    @contextmanager
    def running(self) -> Iterator[McpHarness]:
        """Serve for the duration of the block."""
        self._thread.start()
        assert self._ready.wait(10), "the MCP session manager did not start"
        try:
            yield self
        finally:
            stop = self._stop
            assert stop is not None
            self._loop.call_soon_threadsafe(stop.set)
            self._thread.join(10)

    def _run(self, coroutine: Coroutine[Any, Any, Reply]) -> Reply:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(60)

    def token(self, **claims: Any) -> str:
        """An agent token of this deployment (every tool granted unless overridden)."""
        defaults: dict[str, Any] = {
            "issuer": ISSUER, "audience": AUDIENCE, "tenant": self.settings.tenant_id,
            "workspace": self.settings.workspace_ids[0],
            "purpose_ref": "purpose:engineering-notes", "now": time.time(),
            "principal": "user:alice",
            "capabilities": ["search", "get", "capture", "request_admission", "withdraw",
                             "forget"],
        }
        defaults.update(claims)
        return mint_agent_token(self.key, **defaults)

    def maintainer(self) -> str:
        """A host-operator token of this deployment (``perm`` read + maintain)."""
        return mint_maintainer_token(self.key, issuer=ISSUER, audience=AUDIENCE,
                                     tenant=self.settings.tenant_id, now=time.time(),
                                     tenant_wide=True)

    def request(self, method: str, path: str, headers: dict[str, str | bytes],
                body: bytes | AsyncIterator[bytes] = b"", timeout: float = 10) -> Reply:
        """Any request to the app; it must be answered within ``timeout`` seconds."""

        async def send() -> Reply:
            transport = httpx2.ASGITransport(app=self.app)
            async with httpx2.AsyncClient(transport=transport, base_url=f"http://{HOST}",
                                          timeout=timeout) as client:
                response = await asyncio.wait_for(
                    client.request(method, path, content=body, headers=headers), timeout)
                return Reply(response.status_code, response.text, dict(response.headers))

        return self._run(send())

    def apigw(self, event: dict[str, Any]) -> Reply:
        """An API Gateway HTTP API v2 event through the endpoint Lambda's bridge."""

        async def send() -> Reply:
            answer = await call_asgi(self.app, event)
            return Reply(answer["statusCode"], answer["body"], answer["headers"])

        return self._run(send())

    def post(self, body: bytes, token: str | None = None, modern: bool = True,
             **headers: str) -> Reply:
        """POST raw bytes to ``/mcp``."""
        sent = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", "Host": HOST}
        if modern:
            sent["MCP-Protocol-Version"] = MODERN
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        sent.update(headers)

        async def send() -> Reply:
            transport = httpx2.ASGITransport(app=self.app)
            async with httpx2.AsyncClient(transport=transport, base_url=f"http://{HOST}",
                                          timeout=60) as client:
                response = await client.post(MCP_PATH, content=body, headers=sent)
                return Reply(response.status_code, response.text, dict(response.headers))

        return self._run(send())

    def call_tool(self, name: str, arguments: Any, token: str, modern: bool = True,
                  request_id: Any = 1) -> Reply:
        """A ``tools/call`` request with ``arguments`` as given (any JSON value)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if modern:
            params["_meta"] = MODERN_META
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        routing = {"Mcp-Method": "tools/call", "Mcp-Name": name} if modern else {}
        return self.post(json.dumps(body).encode(), token, modern, **routing)


def new_host_key() -> Any:
    """A fresh Ed25519 host key."""
    return generate_host_key()
