"""Start two local services one after the other in one process and report, as JSON, which
browser origins the second one lets through (run by test_service_origins.py in a child
process: a service's moto server and environment are process-global).

Usage: ``python -m tests.e2e.origins_probe DATA_DIR`` with ``ENGRAM_ALLOWED_ORIGINS`` set.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import httpx2
from engram_memory import env_names
from engram_memory.local.service import LocalConfig, RunningService, start_service
from engram_memory.local.state import HOST_KEY_FILE

from tests.support.host_tokens import load_or_create_host_key, mint_maintainer_token

WORKSPACE = "ws1"


def _start(data_dir: Path) -> RunningService:
    return start_service(LocalConfig(port=0, data_dir=data_dir, tenant="t-origins",
                                     workspaces=(WORKSPACE,)))


def _statuses(service: RunningService, origins: dict[str, str]) -> dict[str, dict[str, int]]:
    key = load_or_create_host_key(service.home / HOST_KEY_FILE)
    ident = service.identity
    token = mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                  tenant=ident.tenant, now=time.time(), tenant_wide=True)
    found: dict[str, dict[str, int]] = {}
    for name, origin in origins.items():
        host = httpx2.get(service.base_url + "/host/confirmations",
                          params={"workspace_id": WORKSPACE, "state": "pending"},
                          headers={"Authorization": f"Bearer {token}", "Origin": origin})
        mcp = httpx2.post(service.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          headers={"Origin": origin, "Accept": "application/json, "
                                   "text/event-stream"})
        found[name] = {"host": host.status_code, "mcp": mcp.status_code}
    return found


def main() -> None:
    data_dir = Path(sys.argv[1])
    configured = os.environ[env_names.ALLOWED_ORIGINS]
    first = _start(data_dir / "first")
    first_origin = first.base_url
    first.stop()
    # Hold the first port so the second service certainly listens elsewhere.
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", first.port))
    second = _start(data_dir / "second")
    try:
        report = {"statuses": _statuses(second, {"first": first_origin,
                                                 "own": second.base_url,
                                                 "configured": configured})}
    finally:
        second.stop()
        holder.close()
    report["after_stop"] = {"origins": os.environ.get(env_names.ALLOWED_ORIGINS)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
