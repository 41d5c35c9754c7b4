"""The ``lambda:Invoke`` adapter of the tool invoker port (the MCP endpoint in AWS).

One attempt per call, never a retry, and it waits for the answer only as long as the
calling Lambda has left (minus the connect timeout and a margin to answer its own client):
a retried or over-long invoke would outlive the endpoint (29 s) and API Gateway (30 s), and
the caller would get a gateway error instead of the contract's ``MUTATION_OUTCOME_UNKNOWN``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Final

import boto3
from botocore.config import Config
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate
from engram_memory.domain.context import MUTATING_TOOLS, Tool
from engram_memory.domain.errors import EngramError, MutationOutcomeUnknown, StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S: Final = 2
# Kept after the tool answers: read its payload and answer the caller's own client.
RESPONSE_MARGIN_S: Final = 1.0
# No deadline bound (not in Lambda): the 29 s endpoint's budget at the start of a call.
UNBOUND_READ_TIMEOUT_S: Final = 26


class InvocationDeadline:
    """The time left in the current Lambda invocation; its handler binds it on each call."""

    def __init__(self) -> None:
        """Unbound until a handler calls :meth:`bind`."""
        self._remaining_ms: Callable[[], int] | None = None

    def bind(self, remaining_ms: Callable[[], int]) -> None:
        """Use ``context.get_remaining_time_in_millis`` of the invocation being served."""
        self._remaining_ms = remaining_ms

    def read_timeout_s(self) -> int:
        """Whole seconds an invoke may wait for its answer (< 1: no time to invoke)."""
        if self._remaining_ms is None:
            return UNBOUND_READ_TIMEOUT_S
        left = self._remaining_ms() / 1000 - CONNECT_TIMEOUT_S - RESPONSE_MARGIN_S
        return math.floor(left)


ClientForTimeout = Callable[[int], "LambdaClient"]


def _unknown_outcome(tool: Tool) -> EngramError:
    # Once the request may have reached the function, a mutation may have committed.
    return MutationOutcomeUnknown() if tool in MUTATING_TOOLS else StoreUnavailable()


class LambdaInvoker:
    """Invokes each tool Lambda synchronously (RequestResponse) with the internal event."""

    def __init__(self, clients: ClientForTimeout, function_names: Mapping[Tool, str],
                 deadline: InvocationDeadline | None = None) -> None:
        """Bind a Lambda client per read timeout (seconds), the function of each tool, and
        the deadline of the calling invocation."""
        self._clients = clients
        self._names = dict(function_names)
        self._deadline = deadline or InvocationDeadline()

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Invoke the tool's function; transport failures become contract errors."""
        name = self._names.get(tool)
        if not name:
            raise StoreUnavailable()
        read_timeout = self._deadline.read_timeout_s()
        if read_timeout < 1:
            # Not sent: nothing can have run, so a retry by the client is safe.
            logger.warning("no time left to invoke", extra={"tool": tool.value})
            raise StoreUnavailable()
        try:
            response = self._clients(read_timeout).invoke(
                FunctionName=name,
                InvocationType="RequestResponse",
                Payload=json.dumps(invocation, ensure_ascii=False).encode("utf-8"),
            )
        except (ReadTimeoutError, ConnectionClosedError) as exc:
            logger.warning("tool invoke timed out", extra={"tool": tool.value})
            raise _unknown_outcome(tool) from exc
        except AWS_FAILURES as exc:
            # The service refused the call before the function ran (throttle, missing, denied).
            logger.warning("tool invoke refused", extra={"tool": tool.value})
            raise translate(exc) from exc
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


def lambda_invoker(
    function_names: Mapping[Tool, str], *, region: str, endpoint_url: str | None = None,
    deadline: InvocationDeadline | None = None,
) -> LambdaInvoker:
    """A LambdaInvoker for the functions named per tool (``Settings.function_names``)."""

    @cache
    def client_for(read_timeout_s: int) -> LambdaClient:
        # One client per whole second of read timeout, built on first use: a container
        # almost always needs one or two (the time left at invoke barely varies).
        config = Config(
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=read_timeout_s,
            retries={"total_max_attempts": 1, "mode": "standard"},
        )
        return boto3.client("lambda", region_name=region, endpoint_url=endpoint_url,
                            config=config)

    return LambdaInvoker(client_for, function_names, deadline)
