"""How the agent learns its purpose_ref: the instructions of each request name it.

Issue 15 item 9: the instructions were one constant text that named no purpose.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from engram_memory.domain.context import Tool
from engram_memory.mcp.purpose_binding import RequestAuthorization
from engram_memory.mcp.server import Endpoint, MemoryServer
from engram_memory.mcp.tools import INSTRUCTIONS, TOOL_TABLE, instructions_for

from tests.unit.test_host_token import token, verifier

OTHER_KEY_TOKEN_PURPOSE = "purpose:forged"


class _Unused:
    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("no tool runs while instructions are built")


def _server() -> MemoryServer:
    v = verifier()
    return MemoryServer(Endpoint(verifier=lambda: v, invoker=_Unused(), clock_ms=lambda: 0))


def _instructions_seen(server: MemoryServer, authorization: str | None) -> str:
    """What the server's instructions say while one HTTP request is being served."""
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(server.instructions)

    headers = [(b"authorization", authorization.encode())] if authorization else []
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    asyncio.run(RequestAuthorization(app)(scope, None, None))
    return seen[0]


def test_the_instructions_name_the_purpose_of_the_verified_token_of_each_request() -> None:
    server = _server()
    first = _instructions_seen(server, "Bearer " + token(purpose_ref="purpose:billing"))
    second = _instructions_seen(server, "Bearer " + token(purpose_ref="purpose:support"))
    assert '"purpose:billing"' in first
    assert "purpose:support" not in first
    assert '"purpose:support"' in second
    assert first.startswith(INSTRUCTIONS)


def test_without_a_verified_token_the_instructions_name_no_purpose() -> None:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    server = _server()
    forged = token(ed25519.Ed25519PrivateKey.generate(), purpose_ref=OTHER_KEY_TOKEN_PURPOSE)
    for authorization in (None, "Bearer not-a-jwt", "Bearer " + forged):
        text = _instructions_seen(server, authorization)
        assert text == instructions_for(None)
        assert OTHER_KEY_TOKEN_PURPOSE not in text
    # Outside any request there is no token either.
    assert server.instructions == instructions_for(None)


def test_a_purpose_is_quoted_so_it_reads_unambiguously() -> None:
    text = instructions_for('purpose:"quoted" ünï')
    assert json.dumps('purpose:"quoted" ünï', ensure_ascii=False) in text


def test_each_purpose_taking_tool_says_where_its_purpose_ref_comes_from() -> None:
    for spec in TOOL_TABLE:
        if spec.tool in (Tool.SEARCH, Tool.GET, Tool.CAPTURE):
            assert "purpose_ref" in spec.description
            assert "instructions" in spec.description, spec.tool
