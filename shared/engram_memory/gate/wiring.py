"""The gate's part of the composition root: concrete adapters for the host routes and
the confirmation queue consumer, built from settings (lazily, once per container)."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationStore
from engram_memory.adapters.eventbridge import EventBridgeHostNotifier
from engram_memory.adapters.inprocess_invoker import InProcessInvoker, default_functions_dir
from engram_memory.adapters.lambda_invoker import (
    ENV_PREFIX,
    InvocationDeadline,
    lambda_invoker_from_env,
)
from engram_memory.adapters.stepfunctions.clients import GateClients
from engram_memory.adapters.stepfunctions.workflow import StepFunctionsConfirmationWorkflow
from engram_memory.domain.context import Tool
from engram_memory.gate.adjudication import InvokedAdjudicator
from engram_memory.gate.host_api import HostApi
from engram_memory.gate.notifier import ConfirmationNotifier, HostNotifier, NoHostNotifier
from engram_memory.mcp.host_context import verifier_from_settings
from engram_memory.services.confirmation import DEFAULT_WINDOW_SECONDS, ConfirmationService

if TYPE_CHECKING:
    from engram_memory.mcp.dispatch import ToolInvoker
    from engram_memory.settings import Settings

EVENT_BUS_ENV = "ENGRAM_CONFIRMATION_EVENT_BUS"
WINDOW_ENV = "ENGRAM_CONFIRMATION_WINDOW_SECONDS"
ADMISSION_FUNCTION_ENV = ENV_PREFIX + Tool.REQUEST_ADMISSION.value.upper()


def new_elicitation_ref() -> str:
    """A fresh, unguessable elicitation reference (also the execution name)."""
    return "conf_" + secrets.token_hex(16)


def new_adjudication_audit_id() -> str:
    """A fresh audit id for one host adjudication (it names the envelope and log lines)."""
    return "adj_" + secrets.token_hex(16)


def wall_clock_ms() -> int:
    """Epoch milliseconds."""
    return time.time_ns() // 1_000_000


def window_seconds(env: dict[str, str] | None = None) -> int:
    """The approval window: 30 s, or less when the deployment says so (never more)."""
    e = os.environ if env is None else env
    value = int(e.get(WINDOW_ENV, str(DEFAULT_WINDOW_SECONDS)))
    return max(1, min(value, DEFAULT_WINDOW_SECONDS))


def build_confirmation_service(settings: Settings, clients: GateClients) -> ConfirmationService:
    """The host-side confirmation service on DynamoDB + Step Functions."""
    return ConfirmationService(
        store=DynamoConfirmationStore(clients.dynamodb, settings.table_name),
        workflow=StepFunctionsConfirmationWorkflow(clients.stepfunctions,
                                                   settings.state_machine_arn),
        clock=wall_clock_ms,
        new_ref=new_elicitation_ref,
        sleep=time.sleep,
        window_seconds=window_seconds(),
    )


def adjudication_invoker(settings: Settings, env: Mapping[str, str],
                         deadline: InvocationDeadline | None = None) -> ToolInvoker:
    """How the host API reaches request_admission (the only function that may Decrypt).

    ``lambda:Invoke`` of the function the stack names; only that one function, even by
    mistake. Without a name, local mode (a moto endpoint is configured) calls the same
    handler in-process; in AWS the unnamed invoker refuses (STORE_UNAVAILABLE), it never
    falls back to adjudicating in the host API's own process.
    """
    name = env.get(ADMISSION_FUNCTION_ENV, "")
    if not name and settings.endpoint_url:
        return InProcessInvoker(default_functions_dir())
    only_admission = {ADMISSION_FUNCTION_ENV: name} if name else {}
    return lambda_invoker_from_env(only_admission, region=settings.region,
                                   endpoint_url=settings.endpoint_url, deadline=deadline)


def build_host_api(settings: Settings, clients: GateClients, invoker: ToolInvoker) -> HostApi:
    """The host routes, verifying maintainer tokens against the registered host key."""
    return HostApi(
        verifier=verifier_from_settings(settings, time.time),
        confirmations=build_confirmation_service(settings, clients),
        adjudicate=InvokedAdjudicator(invoker, new_adjudication_audit_id),
    )


def build_notifier(settings: Settings, clients: GateClients) -> ConfirmationNotifier:
    """The queue consumer; notifications go to the bus named in the environment, if any."""
    bus = os.environ.get(EVENT_BUS_ENV, "")
    host: HostNotifier = EventBridgeHostNotifier(clients.events, bus) if bus else NoHostNotifier()
    store = DynamoConfirmationStore(clients.dynamodb, settings.table_name)
    return ConfirmationNotifier(store, host)
