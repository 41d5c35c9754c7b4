"""The ``lambda:Invoke`` adapter of the tool invoker port (the MCP endpoint in AWS)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError

from engram_memory.domain.context import MUTATING_TOOLS, Tool
from engram_memory.domain.errors import EngramError, MutationOutcomeUnknown, StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger(__name__)

ENV_PREFIX = "ENGRAM_FUNCTION_"


def function_names_from_env(env: Mapping[str, str]) -> dict[Tool, str]:
    """``ENGRAM_FUNCTION_<TOOL>`` (e.g. ``ENGRAM_FUNCTION_REQUEST_ADMISSION``) per tool."""
    names = {tool: env.get(ENV_PREFIX + tool.value.upper(), "") for tool in Tool}
    return {tool: name for tool, name in names.items() if name}


def _unknown_outcome(tool: Tool) -> EngramError:
    # Once the request may have reached the function, a mutation may have committed.
    return MutationOutcomeUnknown() if tool in MUTATING_TOOLS else StoreUnavailable()


class LambdaInvoker:
    """Invokes each tool Lambda synchronously (RequestResponse) with the internal event."""

    def __init__(self, client: LambdaClient, function_names: Mapping[Tool, str]) -> None:
        """Bind a boto3 Lambda client and the function name of each tool."""
        self._client = client
        self._names = dict(function_names)

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Invoke the tool's function; transport failures become contract errors."""
        name = self._names.get(tool)
        if not name:
            raise StoreUnavailable()
        try:
            response = self._client.invoke(
                FunctionName=name,
                InvocationType="RequestResponse",
                Payload=json.dumps(invocation, ensure_ascii=False).encode("utf-8"),
            )
        except (ReadTimeoutError, ConnectionClosedError) as exc:
            logger.warning("tool invoke timed out", extra={"tool": tool.value})
            raise _unknown_outcome(tool) from exc
        except (ClientError, BotoCoreError) as exc:
            # The service refused the call before the function ran (throttle, missing, denied).
            logger.warning("tool invoke refused", extra={"tool": tool.value})
            raise StoreUnavailable() from exc
        # Invoke returned: the function ran, so any failure from here on (a broken payload
        # stream included, e.g. ResponseStreamingError) may follow a committed mutation.
        try:
            raw = response["Payload"].read()
        except Exception as exc:
            logger.warning("tool answer unreadable", extra={"tool": tool.value})
            raise _unknown_outcome(tool) from exc
        if response.get("FunctionError"):
            logger.error("tool function error", extra={"tool": tool.value})
            raise _unknown_outcome(tool)
        try:
            envelope = json.loads(raw)
        except ValueError as exc:
            raise _unknown_outcome(tool) from exc
        if not isinstance(envelope, dict):
            raise _unknown_outcome(tool)
        return envelope


def lambda_invoker_from_env(
    env: Mapping[str, str], *, region: str, endpoint_url: str | None = None
) -> LambdaInvoker:
    """A LambdaInvoker for the functions named in ``env`` (built per container, lazily)."""
    config = Config(
        connect_timeout=2,
        # Below API Gateway's 30 s integration limit; the tool functions time out sooner.
        read_timeout=28,
        # Safe to retry: mutations carry an idempotency key, so a replay is recognised.
        retries={"max_attempts": 2, "mode": "standard"},
    )
    client = boto3.client("lambda", region_name=region, endpoint_url=endpoint_url, config=config)
    return LambdaInvoker(client, function_names_from_env(env))
