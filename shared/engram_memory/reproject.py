"""Rebuild the search projection from the main table: the recovery path after a projector outage.

A stream record is only a trigger for the projector: a record key makes it re-read the
record item and reconcile, a journal event key makes it apply every event from the scope's
watermark up to that event and raise the watermark (docs/search.md, "Projector"). So
recovering what the stream no longer holds (stream records live 24 h; the projector DLQ
keeps only batch metadata) is: list the record keys of the main table, then each
workspace's latest journal event, and hand them to the very same projector handler as
stream records that carry keys and no images. Idempotent: run it as often as needed.

``python -m engram_memory.reproject --function <projector function name>`` scans the main
table (``ENGRAM_TABLE_NAME``; keys only) with the operator's credentials and invokes the
deployed projector; ``--in-process`` runs ``functions/projector/handler.py`` here instead
(the local service, tests). It prints counts, never keys or content.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import boto3

from engram_memory.domain.context import Scope
from engram_memory.services.projection import (
    EVENT_PREFIX,
    JOURNAL_PREFIX,
    RECORD_PREFIX,
    SCOPE_PREFIX,
    event_key,
    record_key,
)
from engram_memory.settings import OperatorSettings

BATCH_SIZE = 10  # as the stream event source mapping delivers them (infra/stacks)
Projector = Callable[[dict[str, Any]], dict[str, Any]]


def projection_triggers(client: Any, table: str, *, workspace: str | None = None
                        ) -> Iterator[tuple[str, str]]:
    """``(pk, sk)`` of every record item, then of each workspace's latest journal event.

    Keys only. The record keys reindex (or remove) every record from canonical state; the
    last event of each workspace then brings its watermark to the journal head, so search
    has no journal tail left to merge.
    """
    kwargs: dict[str, Any] = {
        "TableName": table,
        "ProjectionExpression": "pk, sk",
        "FilterExpression": "(begins_with(pk, :scope) AND begins_with(sk, :rec)) OR "
                            "(begins_with(pk, :journal) AND begins_with(sk, :event))",
        "ExpressionAttributeValues": {
            ":scope": {"S": SCOPE_PREFIX}, ":rec": {"S": RECORD_PREFIX},
            ":journal": {"S": JOURNAL_PREFIX}, ":event": {"S": EVENT_PREFIX}},
    }
    latest: dict[Scope, tuple[int, str, str]] = {}
    for page in client.get_paginator("scan").paginate(**kwargs):
        for item in page.get("Items", []):
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            record, event = record_key(pk, sk), event_key(pk, sk)
            scope = record.scope if record else event.scope if event else None
            if scope is None or (workspace is not None and scope.workspace_id != workspace):
                continue
            if record is not None:
                yield pk, sk
            elif event is not None and event.cursor > latest.get(scope, (-1, "", ""))[0]:
                latest[scope] = (event.cursor, pk, sk)
    for _, pk, sk in latest.values():
        yield pk, sk


def stream_events(keys: Iterable[tuple[str, str]], batch_size: int = BATCH_SIZE
                  ) -> Iterator[dict[str, Any]]:
    """Projector events: stream-shaped records carrying only the keys."""
    batch: list[dict[str, Any]] = []
    for n, (pk, sk) in enumerate(keys):
        batch.append({
            "eventID": f"reproject-{n}",
            "eventName": "MODIFY",
            "eventSource": "aws:dynamodb",
            "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": sk}},
                         "SequenceNumber": str(n), "StreamViewType": "KEYS_ONLY"},
        })
        if len(batch) == batch_size:
            yield {"Records": batch}
            batch = []
    if batch:
        yield {"Records": batch}


def reproject(keys: Iterable[tuple[str, str]], projector: Projector) -> tuple[int, int]:
    """Feed every key to the projector; ``(records sent, records it reported failed)``."""
    sent = failed = 0
    for event in stream_events(keys):
        sent += len(event["Records"])
        failed += len(projector(event).get("batchItemFailures", []))
    return sent, failed


def lambda_projector(function: str, client: Any) -> Projector:
    """The deployed projector, invoked synchronously."""

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        response = client.invoke(FunctionName=function, InvocationType="RequestResponse",
                                 Payload=json.dumps(event).encode("utf-8"))
        answer = json.loads(response["Payload"].read() or b"{}")
        if response.get("FunctionError") or not isinstance(answer, dict):
            return {"batchItemFailures": event["Records"]}
        return answer

    return invoke


def in_process_projector() -> Projector:
    """``functions/projector/handler.py`` in this process (local service, tests)."""
    from engram_memory.local import adapters  # a checkout's tool, not a Lambda's
    from engram_memory.local.inprocess_invoker import (
        LocalLambdaContext,
        default_functions_dir,
        load_handler,
    )

    adapters.install()

    handler = load_handler(default_functions_dir(), "projector")
    if handler is None:
        raise SystemExit("functions/projector/handler.py not found")

    def call(event: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = handler(event, LocalLambdaContext("projector"))
        return answer

    return call


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m engram_memory.reproject``."""
    parser = argparse.ArgumentParser(prog="python -m engram_memory.reproject",
                                     description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--function", help="the deployed projector (name or ARN)")
    target.add_argument("--in-process", action="store_true",
                        help="run functions/projector/handler.py in this process")
    parser.add_argument("--workspace", help="only this workspace's records")
    args = parser.parse_args(argv)
    settings = OperatorSettings.from_env()
    region, endpoint = settings.region, settings.endpoint_url
    dynamodb = boto3.client("dynamodb", region_name=region, endpoint_url=endpoint)
    projector = (in_process_projector() if args.in_process else lambda_projector(
        args.function, boto3.client("lambda", region_name=region, endpoint_url=endpoint)))
    keys = projection_triggers(dynamodb, settings.table_name,
                               workspace=args.workspace)
    sent, failed = reproject(keys, projector)
    print(f"records sent to the projector: {sent}; reported failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
