"""The projector Lambda: main-table stream batch → lexical projection, partial failures.

A batch is first applied scope by scope (:func:`apply_batch`: each record reconciled once,
the journal caught up once); the per-record path then only handles what that pass could
not apply, and reports those records' failures so the stream retries from the first.

Only record items (``SCOPE#…`` / ``REC#{id}``) and journal events (``JOURNAL#…`` /
``EV#{cursor}``, which advance the watermark) are looked at; candidates and their sealed
blobs are skipped by key before any image is decoded, so pending content never reaches the
projection, a log line or a trace. The local stream pump feeds this very handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from functools import partial
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    StreamRecord,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory.composition import projection
from engram_memory.domain.errors import EngramError, StoreUnavailable
from engram_memory.metrics_namespace import (
    METRICS_NAMESPACE,
    capture_cold_starts,
    discarded_when_disabled,
)
from engram_memory.services.projection import (
    StreamBatch,
    event_key,
    record_key,
    records_in_images,
)
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-projector")
tracer = tracer_for("engram-projector")
metrics = Metrics(service="engram-projector", namespace=METRICS_NAMESPACE)  # cold starts
# Whole-batch failures are reported like partial ones, so the stream retries from the
# first failed record instead of the Lambda raising (and logging) a batch error.
processor = BatchProcessor(event_type=EventType.DynamoDBStreams,
                           raise_on_entire_batch_failure=False)


_settled: ContextVar[frozenset[str]] = ContextVar("projector_settled", default=frozenset())
"""Sequence numbers of this invocation's stream records the batch pass already applied."""


def _images(change: StreamRecord) -> list[Mapping[str, Any]]:
    return [image for image in (change.old_image, change.new_image) if image]


def _batch_work(event: Mapping[str, Any]) -> StreamBatch:
    """The batch grouped by scope (images decoded only for record items)."""
    batch = StreamBatch()
    for raw in event.get("Records") or []:
        change = DynamoDBRecord(raw).dynamodb
        if change is None or change.sequence_number is None:
            continue
        keys = change.keys or {}
        batch.add(change.sequence_number, keys.get("pk"), keys.get("sk"),
                  partial(_images, change))
    return batch


def apply_batch(event: Mapping[str, Any]) -> frozenset[str]:
    """Apply the whole batch scope by scope, each record once (a burst's catch-up costs
    one journal read and one watermark write per scope, not per event); the sequence
    numbers applied. A scope that fails is left to the per-record path, which retries it
    and reports its failures."""
    applied: set[str] = set()
    for scope, scope_work in _batch_work(event).scopes.items():
        try:
            projection.service().apply_batch(scope, scope_work.through, scope_work.records)
        except Exception as exc:
            logger.warning("batch pass failed", extra={"error_class": type(exc).__name__})
            continue
        applied.update(scope_work.sequence_numbers)
    return frozenset(applied)


def record_handler(record: DynamoDBRecord) -> None:
    """Reconcile the projection of the record one stream record names (others: no-op)."""
    change = record.dynamodb
    if change is None or change.sequence_number in _settled.get():
        return
    keys = change.keys or {}
    key = record_key(keys.get("pk"), keys.get("sk"))
    event = event_key(keys.get("pk"), keys.get("sk"))
    if key is None and event is None:
        return
    try:
        if event is not None:
            # The key alone says which event: no image is decoded.
            projection.service().catch_up(event.scope, event.cursor)
            return
        assert key is not None
        images = [image for image in (change.old_image, change.new_image) if image]
        projection.service().reconcile(key, records_in_images(images))
    except EngramError:
        raise
    except Exception as exc:
        # Only the class name: an exception text could quote record content.
        logger.error("projection failed", extra={"error_class": type(exc).__name__})
        raise StoreUnavailable from None


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@discarded_when_disabled(metrics)
@metrics.log_metrics(capture_cold_start_metric=capture_cold_starts())
def lambda_handler(event: dict[str, Any], context: LambdaContext
                   ) -> PartialItemFailureResponse:
    """Partial batch response (``batchItemFailures``) for one stream batch."""
    token = _settled.set(apply_batch(event))
    try:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        _settled.reset(token)
