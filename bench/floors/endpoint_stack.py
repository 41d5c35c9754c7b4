"""The MCP endpoint's floor: the tool stack plus the MCP SDK server, its types, PyJWT.

Importing ``mcp.server`` runs the SDK package's ``__init__``, which imports its client and
its high-level server too (httpx, uvicorn via sse-starlette, opentelemetry): that is the
SDK's cost, not a choice of this project.
"""

from __future__ import annotations

import jwt  # noqa: F401
import mcp.server  # noqa: F401
import mcp_types  # noqa: F401
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager  # noqa: F401
from starlette.applications import Starlette  # noqa: F401

from floors.tool_stack import logger, metrics, tracer  # noqa: F401
