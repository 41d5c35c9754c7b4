"""Host notifications on an EventBridge bus (the confirmation queue consumer's output)."""

from __future__ import annotations

import json
from typing import Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate
from engram_memory.domain.errors import StoreUnavailable

SOURCE = "engram-memory"
DETAIL_TYPE = "engram.confirmation.requested"


class EventBridgeHostNotifier:
    """PutEvents one notification per confirmation onto the host's bus."""

    def __init__(self, client: Any, bus_name: str) -> None:
        self._client = client
        self._bus = bus_name

    def notify(self, detail: dict[str, str]) -> None:
        """Publish; any failure (including a partial PutEvents failure) is retried upstream."""
        try:
            response = self._client.put_events(Entries=[{
                "EventBusName": self._bus, "Source": SOURCE, "DetailType": DETAIL_TYPE,
                "Detail": json.dumps(detail, sort_keys=True),
            }])
        except AWS_FAILURES as exc:
            raise translate(exc) from exc
        if response.get("FailedEntryCount", 0):
            raise StoreUnavailable()
