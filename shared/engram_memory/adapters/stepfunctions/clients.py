"""boto3 clients the confirmation gate needs, built on demand (never at import time)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from engram_memory.settings import Settings

# Host routes and the queue consumer are short requests: fail fast, retry a little.
_CONFIG = Config(
    connect_timeout=2, read_timeout=10, retries={"max_attempts": 3, "mode": "standard"}
)


@dataclass(frozen=True, slots=True)
class GateClients:
    """The clients of the gate's adapters (typed loosely: adapters own their calls)."""

    dynamodb: Any
    stepfunctions: Any
    events: Any


def gate_clients(settings: Settings) -> GateClients:
    """Clients for the deployment in ``settings`` (the moto server's URL in local mode)."""

    def client(name: str) -> Any:
        return boto3.client(name, region_name=settings.region,  # type: ignore[call-overload]
                            endpoint_url=settings.endpoint_url, config=_CONFIG)

    return GateClients(dynamodb=client("dynamodb"), stepfunctions=client("stepfunctions"),
                       events=client("events"))


def sqs_client(settings: Settings) -> Any:
    """An SQS client (the local queue pump's; Lambda gets its batches from the service)."""
    return boto3.client("sqs", region_name=settings.region,
                        endpoint_url=settings.endpoint_url, config=_CONFIG)
