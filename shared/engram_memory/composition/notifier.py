"""Composition root of the confirmation queue consumer (functions/confirmation_notifier)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationStore
from engram_memory.adapters.eventbridge import EventBridgeHostNotifier
from engram_memory.adapters.stepfunctions.clients import GateClients, gate_clients
from engram_memory.gate.notifier import ConfirmationNotifier, HostNotifier, NoHostNotifier

if TYPE_CHECKING:
    from engram_memory.settings import Settings


def build_notifier(settings: Settings, clients: GateClients) -> ConfirmationNotifier:
    """The queue consumer; notifications go to the configured bus, if any."""
    bus = settings.confirmation_event_bus
    host: HostNotifier = EventBridgeHostNotifier(clients.events, bus) if bus else NoHostNotifier()
    return ConfirmationNotifier(DynamoConfirmationStore(clients.dynamodb, settings.table_name),
                                host)


@bootstrap.per_container
def service() -> ConfirmationNotifier:
    """The confirmation_notifier function's queue consumer."""
    settings = bootstrap.settings()
    return build_notifier(settings, gate_clients(settings))
