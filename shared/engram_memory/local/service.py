"""The one-machine embedded service: moto + the same resources + the same handlers.

``start_service`` starts moto in a process of its own (``moto_process``), creates what the
CDK stack declares (tables, tenant key, confirmation queue and state machine), sets the ``ENGRAM_*``
environment the Lambdas read, and serves ``/mcp``, ``/host/*`` and the RFC 9728
metadata with uvicorn, while pump threads stand in for the DynamoDB stream → projector
and SQS → notifier event sources. The very same handler files run in-process.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from engram_memory_host import HostKeyRing, mint_agent_token

from engram_memory import bootstrap, env_names, service_home
from engram_memory.composition.endpoint import build_endpoint
from engram_memory.domain.ranking import PROJECTION_GENERATION
from engram_memory.local import adapters, state
from engram_memory.local.expiry_schedule import run_expiry_schedule
from engram_memory.local.host_bridge import host_routes
from engram_memory.local.inprocess_invoker import (
    InProcessInvoker,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.listener import HEADER_TIMEOUT_S, listener_config
from engram_memory.local.moto_process import MotoChild, start_moto_process
from engram_memory.local.moto_server import LOOPBACK, MotoService
from engram_memory.local.process_invoker import ProcessInvoker
from engram_memory.local.projector_pump import run_projector_pump
from engram_memory.local.provisioning import provision_environment, provisioned_variables
from engram_memory.local.queue_pump import run_queue_pump
from engram_memory.local.review_page import review_routes, review_url
from engram_memory.mcp.dispatch import ToolInvoker
from engram_memory.mcp.server import (
    MCP_PATH,
    build_app,
    build_server,
    session_manager,
    transport_security,
)
from engram_memory.settings import LocalSettings, Settings

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8787
Pump = Callable[[Settings, threading.Event], None]


@dataclass(frozen=True)
class LocalConfig:
    """What ``engram-memory serve`` was asked for."""

    host: str = LOOPBACK
    port: int = DEFAULT_PORT
    data_dir: Path | None = None
    tenant: str | None = None
    workspaces: tuple[str, ...] = ()
    functions_dir: Path = field(default_factory=default_functions_dir)
    log_level: str = "warning"
    header_timeout_s: float = HEADER_TIMEOUT_S
    console: bool = False
    """Print a line per confirmation waiting for a decision (``engram-memory serve``)."""
    handler_processes: int = 0
    """Run tool handlers in this many worker processes (``process_invoker``); 0: in this
    process, where a test can reach them."""


@dataclass
class RunningService:
    """A started local service: where it listens and how to stop it."""

    config: LocalConfig
    home: Path
    identity: service_home.LocalIdentity
    settings: Settings
    moto: MotoService
    port: int
    server: uvicorn.Server
    stop_event: threading.Event
    threads: list[threading.Thread]
    sock: socket.socket
    invoker: ToolInvoker
    """How the MCP endpoint reaches the tool handlers (in process, or worker processes)."""
    configured_origins: tuple[str, ...] = ()
    """``ENGRAM_ALLOWED_ORIGINS`` as configured, before this service added its own."""

    @property
    def base_url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.config.host}:{self.port}"

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint URL."""
        return self.base_url + MCP_PATH

    def mint(self, **claims: Any) -> str:
        """A host token for this service, minted by the host kit (``mint_agent_token``;
        ``principal`` and ``agent_id`` default to the local user and agent)."""
        claims.setdefault("principal", "local-user")
        claims.setdefault("agent_id", "local-agent")
        return mint_agent_token(service_home.host_key(self.home), issuer=self.identity.issuer,
                                audience=self.identity.audience, tenant=self.identity.tenant,
                                **claims)

    def stop(self) -> None:
        """Stop serving, stop the pumps, snapshot (with --data-dir), stop moto."""
        self.server.should_exit = True
        self.stop_event.set()
        for thread in self.threads:
            if thread is not threading.current_thread():
                thread.join(timeout=15)
        try:
            if isinstance(self.invoker, ProcessInvoker):
                self.invoker.close()
            if self.config.data_dir is not None:
                state.save_snapshot(self.home, self.settings)
        finally:  # a snapshot that failed (moto's process gone) must not keep moto running
            self.moto.stop()
            self.sock.close()
            _restore_origins(self.configured_origins)
            _reset_wiring()


def _environment(config: LocalConfig, identity: service_home.LocalIdentity, jwks: str,
                 local: LocalSettings) -> dict[str, str]:
    """The deployment variables the local service sets (the stack sets the same names)."""
    prefix = f"engram-{identity.tenant}"
    return {
        env_names.TENANT_ID: identity.tenant,
        env_names.WORKSPACE_IDS: ",".join(config.workspaces),
        env_names.TABLE_NAME: f"{prefix}-main",
        env_names.KEY_TABLE_NAME: f"{prefix}-keys",
        env_names.PROJECTION_TABLE_NAME: f"{prefix}-projection",
        env_names.LEDGER_TABLE_NAME: f"{prefix}-ledger",
        env_names.HOST_ISSUER: identity.issuer,
        env_names.AUDIENCE: identity.audience,
        # The host key set (one key, under its kid): tokens select it by kid, as in AWS.
        env_names.HOST_JWKS: jwks,
        env_names.PAGE_CURSOR_SECRET: identity.page_cursor_secret,
        # The semantic channel: the in-repo ONNX model, vectors in moto's S3 Vectors with
        # the exact in-process query (docs/local.md). ENGRAM_SEMANTIC_EMBEDDER="" turns it off.
        env_names.SEMANTIC_EMBEDDER: local.semantic_embedder,
        env_names.VECTOR_BUCKET: f"{prefix}-vectors",
        env_names.VECTOR_INDEX: "records",
        env_names.VECTOR_INDEX_LOCAL: "true",
    }


def _reset_wiring() -> None:
    """Drop the handlers' per-process cached clients (they must see this moto server)."""
    bootstrap.reset()


def _provision(home: Path, restore: bool) -> bool:
    """Tables, tenant key and gate resources on moto; env updated in place.

    True when the projection must be rebuilt (a snapshot of another generation).
    """
    settings = Settings.from_env()
    rebuild = state.provision(home, settings, restore=restore)
    provisioned = Settings.from_env()  # provisioning named the tenant key
    gate = [name for name in provisioned_variables() if name != env_names.KMS_KEY_ID]
    os.environ.update(provision_environment(state.client_factory(provisioned), provisioned,
                                            gate))
    return rebuild


def _rebuild_projection() -> None:
    """Re-index the restored records under the current tokenizer (before serving)."""
    from engram_memory.composition import projection as projection_root

    scopes = projection_root.rebuild().run()
    logger.warning("projection rebuilt for tokenizer generation %s: %d workspaces",
                   PROJECTION_GENERATION, len(scopes))


def _start_pumps(settings: Settings, stop_event: threading.Event,
                 review: str | None) -> list[threading.Thread]:
    threads = []
    pumps: tuple[Pump, ...] = (run_projector_pump,
                               functools.partial(run_queue_pump, review_url=review),
                               run_expiry_schedule)
    for pump in pumps:
        name = getattr(pump, "__name__", None) or pump.func.__name__  # type: ignore[attr-defined]
        thread = threading.Thread(target=pump, args=(settings, stop_event),
                                  name=name, daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def bind_listener(host: str, port: int) -> socket.socket:
    """The listening TCP socket the local endpoint serves on."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket's proto says TCP, and a proto-0 socket left Nagle on, so every keep-alive
    # response waited ~40 ms for the client's delayed ACK (docs/performance.md).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _named(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _allowed_hosts(host: str, port: int, extra: tuple[str, ...]) -> list[str]:
    named = _named(host)
    hosts = {f"{named}:{port}", f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    return sorted(hosts | set(extra))


def tool_invoker(config: LocalConfig, moto: MotoService) -> ToolInvoker:
    """The handlers in this process, or in ``config.handler_processes`` worker processes."""
    if config.handler_processes <= 0:
        return InProcessInvoker(config.functions_dir)
    if not isinstance(moto.server, MotoChild):
        raise ValueError("handler processes need moto in a process of its own")
    return ProcessInvoker(config.functions_dir, config.handler_processes,
                          moto.server.backends.address)


def build_local_app(config: LocalConfig, settings: Settings, port: int,
                    invoker: ToolInvoker) -> Any:
    """The ASGI app: MCP endpoint (``invoker``), host routes, well-known metadata."""
    endpoint = build_endpoint(settings, invoker)
    manager = session_manager(build_server(endpoint), transport_security(
        _allowed_hosts(config.host, port, settings.allowed_hosts), settings.allowed_origins))
    # The review page first: /host/review is a page, not a host route.
    routes = [*review_routes(),
              *host_routes(load_handler(config.functions_dir, "host_api"), endpoint.verifier())]
    return build_app(manager, issuer=settings.host_issuer,
                     resource_url=resource_url(config.host, port, settings.resource_url),
                     extra_routes=routes)


def own_origins(host: str, port: int) -> list[str]:
    """The origins of this listener: the review page it serves calls the host routes from
    them, so they (and only they, plus ``ENGRAM_ALLOWED_ORIGINS``) pass the Origin check."""
    return [f"http://{name}" for name in _allowed_hosts(host, port, ())]


def _configured_origins() -> tuple[str, ...]:
    """``ENGRAM_ALLOWED_ORIGINS`` as configured (a stopped service put it back as it was)."""
    return tuple(o.strip() for o in os.environ.get(env_names.ALLOWED_ORIGINS, "").split(",")
                 if o.strip())


def _restore_origins(configured: tuple[str, ...]) -> None:
    """Put ``ENGRAM_ALLOWED_ORIGINS`` back as configured (unset when nothing was)."""
    if configured:
        os.environ[env_names.ALLOWED_ORIGINS] = ",".join(configured)
    else:
        os.environ.pop(env_names.ALLOWED_ORIGINS, None)


def resource_url(host: str, port: int, configured: str = "") -> str:
    """The RFC 9728 ``resource``: ``ENGRAM_RESOURCE_URL``, else this listener's ``/mcp``."""
    named = f"[{host}]" if ":" in host else host
    return configured or f"http://{named}:{port}{MCP_PATH}"


def start_service(config: LocalConfig, *, background: bool = True) -> RunningService:
    """Start everything; with ``background`` uvicorn runs in a thread (tests, embedding)."""
    adapters.install()
    home = service_home.home_dir(config.data_dir)
    key = service_home.host_key(home)
    identity = service_home.load_identity(home, config.tenant)
    # The handlers' Powertools loggers follow --log-level (warning by default), so the console
    # shows what a person needs, not a JSON line per sweep or call; LOG_LEVEL-style
    # overrides already in the environment win.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", config.log_level.upper())
    moto = start_moto_process()  # its own process, its own GIL (moto_process)
    try:
        jwks = HostKeyRing([key]).jwks_json()
        os.environ.update(_environment(config, identity, jwks, LocalSettings.from_env()))
        rebuild = _provision(home, restore=config.data_dir is not None)
        _reset_wiring()
        if rebuild:
            _rebuild_projection()
        sock = bind_listener(config.host, config.port)
    except BaseException:
        moto.stop()
        raise
    port = int(sock.getsockname()[1])
    # The port is known only now: allow the page's own origins (the host_api handler reads
    # them from the environment, so its per-container settings are rebuilt), beside the
    # configured ones only: stop() puts the variable back, so no predecessor's remain.
    configured = _configured_origins()
    os.environ[env_names.ALLOWED_ORIGINS] = ",".join(
        dict.fromkeys([*own_origins(config.host, port), *configured]))
    _reset_wiring()
    settings = Settings.from_env()
    stop_event = threading.Event()
    review = review_url(f"http://{_named(config.host)}:{port}") if config.console else None
    invoker = tool_invoker(config, moto)  # after the environment is final: workers copy it
    threads = _start_pumps(settings, stop_event, review)
    uv_config = listener_config(build_local_app(config, settings, port, invoker),
                                log_level=config.log_level,
                                header_timeout_s=config.header_timeout_s)
    server = uvicorn.Server(uv_config)
    service = RunningService(config, home, identity, settings, moto, port, server, stop_event,
                             threads, sock, invoker, configured)
    service_home.write_endpoint(home, service.mcp_url)
    if background:
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                  name="uvicorn", daemon=True)
        thread.start()
        threads.append(thread)
        while not server.started and thread.is_alive():
            time.sleep(0.02)
    return service


def serve_forever(service: RunningService) -> None:
    """Run uvicorn in this (main) thread until Ctrl-C, then stop everything cleanly."""
    try:
        service.server.run(sockets=[service.sock])
    finally:
        service.stop()
