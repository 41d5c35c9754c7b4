"""The real local service, started once per e2e session on a free loopback port.

This tier runs in its own pytest process (see the Makefile): the service runs a moto server
in this process, and moto's backends are process-global, so mixing it with the in-process
``mock_aws`` tiers would let one reset the other's state.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from engram_memory.local.service import LocalConfig, RunningService, start_service
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TENANT = "t-e2e"
WORKSPACE = "ws1"
PURPOSE = "purpose:e2e"
MEM0_WORKSPACE = "ws-mem0"
MODES = ("auto", "legacy")


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    saved = dict(os.environ)
    data_dir: Path = tmp_path_factory.mktemp("engram-data")
    running = start_service(LocalConfig(port=0, data_dir=data_dir, tenant=TENANT,
                                        workspaces=(WORKSPACE, "ws2", MEM0_WORKSPACE, "bk-src",
                                                    "bk-dst")))
    try:
        yield running
    finally:
        running.stop()
        os.environ.clear()
        os.environ.update(saved)


@asynccontextmanager
async def connect(url: str, token: str | None, mode: str) -> AsyncIterator[Client]:
    """An official SDK client over streamable HTTP, sending the host token if any."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client
