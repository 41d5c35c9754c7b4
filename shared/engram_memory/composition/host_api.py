"""Composition root of the host routes (functions/host_api): the confirmation service
(DynamoDB + Step Functions) and the adjudication invoker, built from ``Settings`` once per
container on first use (``bootstrap.reset`` forgets them)."""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

from engram_memory import bootstrap
from engram_memory.adapters.clock import SystemClock
from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationStore
from engram_memory.adapters.dynamodb.export_reader import DynamoExportReader
from engram_memory.adapters.dynamodb.restore_writer import DynamoRestoreWriter
from engram_memory.adapters.dynamodb.waiting import DynamoWaitingList
from engram_memory.adapters.lambda_invoker import InvocationDeadline, lambda_invoker
from engram_memory.adapters.stepfunctions.clients import GateClients, gate_clients
from engram_memory.adapters.stepfunctions.workflow import StepFunctionsConfirmationWorkflow
from engram_memory.domain.confirmation import DEFAULT_WINDOW_SECONDS
from engram_memory.domain.context import Tool
from engram_memory.gate.adjudication import InvokedAdjudicator
from engram_memory.gate.backup_routes import BackupRoutes
from engram_memory.gate.host_api import HostApi
from engram_memory.gate.migration import Mem0Migrator
from engram_memory.host_token import verifier_from_settings
from engram_memory.services.confirmation import ConfirmationService

if TYPE_CHECKING:
    from engram_memory.mcp.dispatch import ToolInvoker
    from engram_memory.settings import Settings

# The adjudication invoke waits no longer than the host API's invocation has left.
DEADLINE = InvocationDeadline()


def new_elicitation_ref() -> str:
    """A fresh, unguessable elicitation reference (also the execution name)."""
    return "conf_" + secrets.token_hex(16)


def new_adjudication_audit_id() -> str:
    """A fresh audit id for one host adjudication (it names the envelope and log lines)."""
    return "adj_" + secrets.token_hex(16)


def window_seconds(settings: Settings) -> int:
    """The approval window: 30 s, or less when the deployment says so (never more)."""
    return max(1, min(settings.confirmation_window_seconds, DEFAULT_WINDOW_SECONDS))


def build_confirmation_service(settings: Settings, clients: GateClients) -> ConfirmationService:
    """The host-side confirmation service on DynamoDB + Step Functions."""
    return ConfirmationService(
        store=DynamoConfirmationStore(clients.dynamodb, settings.table_name),
        workflow=StepFunctionsConfirmationWorkflow(clients.stepfunctions,
                                                   settings.state_machine_arn),
        clock=SystemClock(),
        new_ref=new_elicitation_ref,
        sleep=time.sleep,
        window_seconds=window_seconds(settings),
    )


def adjudication_invoker(settings: Settings,
                         deadline: InvocationDeadline | None = None) -> ToolInvoker:
    """How the host API reaches request_admission (the only function that may Decrypt).

    ``lambda:Invoke`` of the function the stack names; only that one function, even by
    mistake. Without a name, local mode's composition may have provided its in-process
    invoker (``bootstrap.provide``); otherwise the unnamed invoker refuses
    (STORE_UNAVAILABLE), it never falls back to adjudicating in the host API's own process.
    """
    name = settings.function_names.get(Tool.REQUEST_ADMISSION, "")
    local = bootstrap.provided("adjudication_invoker")
    invoker = local(settings) if not name and local is not None else None
    if invoker is not None:
        return invoker  # type: ignore[no-any-return]
    only_admission = {Tool.REQUEST_ADMISSION: name} if name else {}
    return lambda_invoker(only_admission, region=settings.region,
                          endpoint_url=settings.endpoint_url, deadline=deadline)


def migration_invoker(settings: Settings,
                      deadline: InvocationDeadline | None = None) -> ToolInvoker:
    """How a migration reaches capture and request_admission (those two functions only).

    Same rule as the adjudication invoker: the functions the stack names, else local mode's
    in-process invoker, else an invoker that refuses (STORE_UNAVAILABLE).
    """
    names = {tool: settings.function_names.get(tool, "")
             for tool in (Tool.CAPTURE, Tool.REQUEST_ADMISSION)}
    local = bootstrap.provided("adjudication_invoker")
    invoker = local(settings) if not any(names.values()) and local is not None else None
    if invoker is not None:
        return invoker  # type: ignore[no-any-return]
    return lambda_invoker({tool: name for tool, name in names.items() if name},
                          region=settings.region, endpoint_url=settings.endpoint_url,
                          deadline=deadline)


def build_host_api(settings: Settings, clients: GateClients, invoker: ToolInvoker,
                   migrations: ToolInvoker | None = None) -> HostApi:
    """The host routes, verifying maintainer tokens against the registered host key."""
    verifier = verifier_from_settings(settings, time.time)
    return HostApi(
        verifier=verifier,
        confirmations=build_confirmation_service(settings, clients),
        adjudicate=InvokedAdjudicator(invoker, new_adjudication_audit_id),
        waiting=DynamoWaitingList(clients.dynamodb, settings.table_name),
        backup=BackupRoutes(DynamoExportReader(clients.dynamodb, settings.table_name),
                            DynamoRestoreWriter(clients.dynamodb, settings.table_name),
                            verifier.tenant_id, SystemClock().now_ms),
        migrate=(Mem0Migrator(migrations, SystemClock().now_ms, new_migration_audit_id,
                              seconds_left=DEADLINE.read_timeout_s)
                 if migrations is not None else None),
    )


def new_migration_audit_id() -> str:
    """A fresh audit id for one migrated memory's invocation."""
    return "mig_" + secrets.token_hex(16)


@bootstrap.per_container
def service() -> HostApi:
    """The host_api function's routes."""
    settings = bootstrap.settings()
    return build_host_api(settings, gate_clients(settings),
                          adjudication_invoker(settings, DEADLINE),
                          migration_invoker(settings, DEADLINE))
