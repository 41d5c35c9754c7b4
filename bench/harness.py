"""What every bench shares: the local service, direct handler calls, MCP clients, tables.

``Bench`` starts the one-machine service (moto server + MCP endpoint over HTTP + the
projector pump) in this process, exactly as ``engram-memory serve`` does, and offers two
ways to call a tool: ``direct`` (the tool's Lambda handler, in-process, on the moto
server) and ``mcp`` (the official MCP Python SDK client over streamable HTTP to the local
endpoint). Approvals for gated tools are written as the confirmation workflow leaves them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import secrets
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

# Before any Powertools object exists: the benches print tables, not log or EMF lines.
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
ROOT = Path(__file__).resolve().parents[1]
for entry in (str(ROOT), str(ROOT / "shared")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import httpx2  # noqa: E402
from engram_memory.domain.context import Scope, Tool  # noqa: E402
from engram_memory.local.inprocess_invoker import (  # noqa: E402
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.service import LocalConfig, RunningService, start_service  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from tests.support.confirmations import approved_item  # noqa: E402

TENANT = "t-bench"
WORKSPACE = "ws-bench"
PURPOSE = "purpose:bench"
PRINCIPAL = "bench-user"
ALL_TOOLS = [t.value for t in Tool]


def quiet() -> None:
    """Keep the tables readable: no Powertools warnings about empty metric sets."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    warnings.filterwarnings("ignore", message="No application metrics to publish")


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Handlers print one EMF metrics line per call (as in Lambda): drop them while timing."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def capture_arguments(primary: str, context: str = "", key: str | None = None) -> dict[str, Any]:
    """Valid capture arguments: ``primary`` as the decision, ``context`` as context."""
    digest = "sha256:" + hashlib.sha256((primary + context).encode()).hexdigest()
    components = [{"component_id": "c1", "kind": "decision", "text": primary or "untitled",
                   "citation_ids": ["cit1"]}]
    if context:
        components.append({"component_id": "c2", "kind": "context", "text": context,
                           "citation_ids": ["cit1"]})
    return {
        "idempotency_key": key or "bench-" + secrets.token_hex(10),
        "payload": {
            "schema_version": 2, "purpose_ref": PURPOSE,
            "valid_time": {"t": 1_700_000_000_000},
            "components": components, "primary_component_id": "c1",
            "primary_event": {"at": 1_700_000_000_000, "type_ref": "event:bench",
                              "citation_id": "cit1"},
            "citations": [{"citation_id": "cit1", "source_ref": "bench:corpus",
                           "locator": {"scheme": "urn", "value": "urn:bench:doc"},
                           "content_digest": digest}],
        },
        "evidence": {"evidence_ref": "ev:bench", "evidence_digest": digest,
                     "citation_ids": ["cit1"]},
    }


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    def cell(value: Any) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """nproc, CPU model, RAM and Python version of this machine."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    ram = "unknown"
    with contextlib.suppress(OSError, ValueError, IndexError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        ram = f"{kb / 1024 / 1024:.1f} GiB"
    return (f"{os.cpu_count()} CPUs · {model} · {ram} RAM · Python "
            f"{platform.python_version()} · {platform.system()} {platform.release()}")


class Bench:
    """A running local service and the two ways of calling its tools."""

    def __init__(self, workspaces: tuple[str, ...] = (WORKSPACE,),
                 handler_processes: int = 0) -> None:
        """Start the service (moto server, endpoint, pumps) on a free loopback port; its
        tool handlers in ``handler_processes`` worker processes (0: this process)."""
        quiet()
        self._saved = dict(os.environ)
        self._data = tempfile.TemporaryDirectory(prefix="engram-bench-")
        self.service: RunningService = start_service(LocalConfig(
            port=0, data_dir=Path(self._data.name), tenant=TENANT,
            workspaces=workspaces, handler_processes=handler_processes))
        self.handlers: dict[str, Any] = {}

    def pause_pumps(self) -> None:
        """Stop the projector and queue pumps (their work is not part of a tool call)."""
        self.service.stop_event.set()

    def close(self) -> None:
        """Stop everything (moto's process and its state too); restore the environment."""
        self.service.stop()
        self._data.cleanup()
        os.environ.clear()
        os.environ.update(self._saved)

    # --- direct ---------------------------------------------------------------------------

    def context(self, **overrides: Any) -> dict[str, Any]:
        """The verified host context the endpoint would pass (wire form)."""
        context: dict[str, Any] = {
            "tenant_id": TENANT, "workspace_id": WORKSPACE, "principal": PRINCIPAL,
            "agent_id": "bench-agent", "session_id": "bench-session", "purpose_ref": PURPOSE,
            "audit_id": "audit-" + secrets.token_hex(6),
            "deadline_ms": int(time.time() * 1000) + 60_000, "capabilities": ALL_TOOLS,
            "confirmation_required": [], "token_id": "bench-" + secrets.token_hex(4),
        }
        context.update(overrides)
        return context

    def direct(self, tool: Tool, arguments: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        """Call the tool's Lambda handler in-process (the event crosses JSON, as in AWS)."""
        handler = self.handlers.get(tool.value)
        if handler is None:
            handler = load_handler(default_functions_dir(), tool.value)
            assert handler is not None
            self.handlers[tool.value] = handler
        event = json.loads(json.dumps({"tool": tool.value, "context": self.context(**ctx),
                                       "arguments": arguments}))
        envelope: dict[str, Any] = handler(event, LocalLambdaContext(tool.value))
        return envelope

    def invoke(self, tool: Tool, arguments: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        """Call the tool as the service's MCP endpoint does: through its tool invoker (in
        this process, or a worker process), the verified context already bound."""
        return self.service.invoker.invoke(tool, {"tool": tool.value,
                                                  "context": self.context(**ctx),
                                                  "arguments": arguments})

    def approve(self, tool: Tool, arguments: dict[str, Any]) -> str:
        """An approved, open confirmation for exactly this call; its reference.

        Written as the confirmation workflow leaves it after a human approved (the item the
        tests use too), so the timing leaves out the human.
        """
        from engram_memory import bootstrap  # the wired client of this process

        ref = "conf-" + secrets.token_hex(8)
        bootstrap.dynamodb_client().put_item(
            TableName=self.service.settings.table_name,
            Item=approved_item(Scope(TENANT, WORKSPACE), ref, tool, arguments,
                               principal=PRINCIPAL, now_ms=int(time.time() * 1000)))
        return ref

    # --- over MCP -------------------------------------------------------------------------

    def token(self, confirmation_ref: str | None = None, workspace: str = WORKSPACE) -> str:
        """A host token for the bench principal (all six tools) in ``workspace``."""
        return self.service.mint(workspace=workspace, purpose_ref=PURPOSE,
                                 capabilities=ALL_TOOLS, principal=PRINCIPAL,
                                 confirmation_ref=confirmation_ref)

    @asynccontextmanager
    async def client(self, bearer: list[str]) -> AsyncIterator[Client]:
        """An official SDK client; ``bearer[0]`` is sent with every request (mutable)."""
        async def authorize(request: httpx2.Request) -> None:
            request.headers["Authorization"] = f"Bearer {bearer[0]}"

        async with (
            httpx2.AsyncClient(timeout=60, event_hooks={"request": [authorize]}) as http,
            Client(streamable_http_client(self.service.mcp_url, http_client=http),
                   mode="auto", cache=None) as session,
        ):
            yield session


def envelope_of(result: Any) -> dict[str, Any]:
    """The envelope an MCP CallToolResult carries."""
    envelope: dict[str, Any] = result.structured_content
    return envelope


def value_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The success value; raises with the contract code otherwise."""
    if not envelope.get("ok"):
        raise RuntimeError(f"tool failed: {envelope.get('error', {}).get('code')}")
    value: dict[str, Any] = envelope["output"]["value"]
    return value
