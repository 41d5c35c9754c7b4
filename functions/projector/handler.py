"""The projector Lambda: main-table stream batch → lexical projection, partial failures.

Only record items (``SCOPE#…`` / ``REC#{id}``) and journal events (``JOURNAL#…`` /
``EV#{cursor}``, which advance the watermark) are looked at; candidates and their sealed
blobs are skipped by key before any image is decoded, so pending content never reaches the
projection, a log line or a trace. The local stream pump feeds this very handler.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory.composition import projection
from engram_memory.domain.errors import EngramError, StoreUnavailable
from engram_memory.services.projection import (
    RecordKey,
    event_key,
    record_key,
    records_in_images,
)
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-projector")
tracer = tracer_for("engram-projector")
# Whole-batch failures are reported like partial ones, so the stream retries from the
# first failed record instead of the Lambda raising (and logging) a batch error.
processor = BatchProcessor(event_type=EventType.DynamoDBStreams,
                           raise_on_entire_batch_failure=False)


_indexed_in_batch: set[RecordKey] = set()
"""Records of the current batch that index_batch already brought into the index."""


def index_batch(event: dict[str, Any]) -> set[RecordKey]:
    """Index the batch's current records first, their texts embedded in one model call.

    The per-record pass below then skips them. On any failure nothing is skipped: the
    per-record pass does all the work again and reports each failing record, so a batch
    failure here never hides a record from the stream's retry.
    """
    keys = []
    for raw in event.get("Records") or []:
        change = DynamoDBRecord(raw).dynamodb
        ids = (change.keys or {}) if change is not None else {}
        key = record_key(ids.get("pk"), ids.get("sk"))
        if key is not None:
            keys.append(key)
    if not keys:
        return set()
    try:
        return projection.service().index_current(keys)
    except Exception as exc:
        logger.warning("batch indexing failed; records go one by one",
                       extra={"error_class": type(exc).__name__})
        return set()


def record_handler(record: DynamoDBRecord) -> None:
    """Reconcile the projection of the record one stream record names (others: no-op)."""
    change = record.dynamodb
    if change is None:
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
        if key in _indexed_in_batch:
            return
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
def lambda_handler(event: dict[str, Any], context: LambdaContext
                   ) -> PartialItemFailureResponse:
    """Partial batch response (``batchItemFailures``) for one stream batch."""
    _indexed_in_batch.clear()
    _indexed_in_batch.update(index_batch(event))
    try:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        _indexed_in_batch.clear()
