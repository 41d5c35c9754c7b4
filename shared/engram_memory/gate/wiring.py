"""The gate's part of the composition root: concrete adapters for the host routes and
the confirmation queue consumer, built from settings (lazily, once per container)."""

from __future__ import annotations

import os
import secrets
import time
from typing import TYPE_CHECKING

from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationStore
from engram_memory.adapters.eventbridge import EventBridgeHostNotifier
from engram_memory.adapters.stepfunctions.clients import GateClients
from engram_memory.adapters.stepfunctions.workflow import StepFunctionsConfirmationWorkflow
from engram_memory.gate.host_api import Adjudicate, HostApi
from engram_memory.gate.notifier import ConfirmationNotifier, HostNotifier, NoHostNotifier
from engram_memory.mcp.host_context import verifier_from_settings
from engram_memory.services.confirmation import DEFAULT_WINDOW_SECONDS, ConfirmationService

if TYPE_CHECKING:
    from engram_memory.settings import Settings

EVENT_BUS_ENV = "ENGRAM_CONFIRMATION_EVENT_BUS"
WINDOW_ENV = "ENGRAM_CONFIRMATION_WINDOW_SECONDS"


def new_elicitation_ref() -> str:
    """A fresh, unguessable elicitation reference (also the execution name)."""
    return "conf_" + secrets.token_hex(16)


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


def build_host_api(settings: Settings, clients: GateClients, adjudicate: Adjudicate) -> HostApi:
    """The host routes, verifying maintainer tokens against the registered host key."""
    return HostApi(
        verifier=verifier_from_settings(settings, time.time),
        confirmations=build_confirmation_service(settings, clients),
        adjudicate=adjudicate,
    )


def build_notifier(settings: Settings, clients: GateClients) -> ConfirmationNotifier:
    """The queue consumer; notifications go to the bus named in the environment, if any."""
    bus = os.environ.get(EVENT_BUS_ENV, "")
    host: HostNotifier = EventBridgeHostNotifier(clients.events, bus) if bus else NoHostNotifier()
    store = DynamoConfirmationStore(clients.dynamodb, settings.table_name)
    return ConfirmationNotifier(store, host)
