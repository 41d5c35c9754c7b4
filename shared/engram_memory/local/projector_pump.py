"""The in-process stand-in for the DynamoDB stream → projector Lambda trigger.

Reads the main table's stream (DescribeTable → DescribeStream → GetShardIterator →
GetRecords; on moto, set ``AWS_ACCOUNT_ID_ENDPOINT_MODE=disabled``), turns each batch into
the Lambda event shape (binary attributes base64, creation time in epoch seconds,
``eventSourceARN``) and calls the very same ``functions/projector/handler.py``. Like the
Lambda event source mapping, it checkpoints per shard and, on a partial batch failure,
restarts from the first failed record.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engram_memory.adapters.dynamodb.stream_reader import DynamoStreamReader, Position
from engram_memory.domain.errors import StoreUnavailable
from engram_memory.local.inprocess_invoker import (
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)

if TYPE_CHECKING:
    from engram_memory.local.inprocess_invoker import Handler
    from engram_memory.settings import Settings

logger = logging.getLogger(__name__)
BATCH_SIZE = 100
MAX_FAILED_ROUNDS = 5


@dataclass
class StreamPump:
    """Per-shard checkpoints over one table's stream, feeding one handler."""

    settings: Settings
    handler: Handler
    positions: dict[str, Position] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def poll_once(self) -> tuple[int, int]:
        """One GetRecords round over every shard: (records delivered, records failed)."""
        with self._lock:
            reader = DynamoStreamReader.from_settings(self.settings)
            stream_arn = reader.stream_arn()
            if stream_arn is None:
                return 0, 0
            delivered = failed = 0
            for shard_id in reader.shard_ids(stream_arn):
                d, f = self._poll_shard(reader, stream_arn, shard_id)
                delivered += d
                failed += f
            return delivered, failed

    def _poll_shard(self, reader: DynamoStreamReader, stream_arn: str,
                    shard_id: str) -> tuple[int, int]:
        key = f"{stream_arn}|{shard_id}"
        records = reader.read(stream_arn, shard_id, self.positions.get(key), BATCH_SIZE)
        if not records:
            return 0, 0
        context = LocalLambdaContext(function_name="projector")
        response = self.handler({"Records": records}, context) or {}
        failures = [f["itemIdentifier"] for f in response.get("batchItemFailures", [])]
        if failures:
            # Like the event source mapping: retry from the first failed record.
            self.positions[key] = ("AT_SEQUENCE_NUMBER", str(min(failures, key=int)))
        else:
            last = str(records[-1]["dynamodb"]["SequenceNumber"])
            self.positions[key] = ("AFTER_SEQUENCE_NUMBER", last)
        return len(records), len(failures)


def projector_handler() -> Handler:
    """``lambda_handler`` of ``functions/projector/handler.py`` in this checkout."""
    handler = load_handler(default_functions_dir(), "projector")
    if handler is None:
        raise RuntimeError("functions/projector/handler.py is missing")
    return handler


_pumps: dict[tuple[str | None, str, str], StreamPump] = {}
_pumps_lock = threading.Lock()


def pump_for(settings: Settings) -> StreamPump:
    """The shared pump (and checkpoints) of one endpoint + table."""
    key = (settings.endpoint_url, settings.region, settings.table_name)
    with _pumps_lock:
        pump = _pumps.get(key)
        if pump is None or pump.settings != settings:
            pump = StreamPump(settings, projector_handler())
            _pumps[key] = pump
        return pump


def drain(settings: Settings) -> int:
    """Run the projector until the stream is empty; returns the records delivered.

    Persistent failures (the same records failing ``MAX_FAILED_ROUNDS`` times in a row)
    raise StoreUnavailable instead of spinning.
    """
    pump = pump_for(settings)
    total = 0
    failed_rounds = 0
    while True:
        delivered, failed = pump.poll_once()
        total += delivered - failed
        if failed:
            failed_rounds += 1
            if failed_rounds >= MAX_FAILED_ROUNDS:
                raise StoreUnavailable
            continue
        failed_rounds = 0
        if delivered == 0:
            return total


def catch_up_watermarks(settings: Settings) -> None:
    """Bring each configured workspace's watermark to its journal head.

    A ``--data-dir`` saved before watermarks existed has none; its stream is not replayed
    on restart, so without this a workspace with a long journal would answer
    PROJECTION_STALE until its next write.
    """
    from engram_memory.composition import projection
    from engram_memory.domain.context import Scope

    service = projection.service()
    for workspace in settings.workspace_ids:
        service.catch_up_to_head(Scope(settings.tenant_id, workspace))


def run_projector_pump(settings: Settings, stop_event: threading.Event,
                       poll_interval_s: float = 0.2) -> None:
    """Poll the stream until ``stop_event`` is set (the local service runs it in a thread)."""
    try:
        catch_up_watermarks(settings)
    except Exception as exc:  # the stream's next events retry the same catch-up
        logger.warning("watermark catch-up failed: %s", type(exc).__name__)
    pump = pump_for(settings)
    while not stop_event.is_set():
        try:
            delivered, failed = pump.poll_once()
        except Exception as exc:  # keep pumping; AWS would retry the batch too
            logger.warning("projector pump round failed: %s", type(exc).__name__)
            delivered = failed = 0
        if delivered == 0 or failed:
            stop_event.wait(poll_interval_s)
