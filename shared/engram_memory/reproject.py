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
(where local mode's composition is installed: the local service, tests). It prints
counts, never keys or content.

A large workspace takes a while, so the command shows a progress bar with an ETA over the
table's items (tqdm, the ``operator`` extra; plain lines without it) and keeps a
checkpoint file (``--checkpoint``; keys and counts only): after each batch the projector
acknowledged, the key the scan may resume after. Interrupted (Ctrl-C, a lost connection,
a failed invoke), the same command resumes there: finished batches are not sent again,
and the batch in flight is (the projector is idempotent). A batch the projector did not
acknowledge whole (``batchItemFailures``, a FunctionError) stops the run with exit 1 and
the checkpoint on the last batch it did acknowledge, so the next run sends it again; the
checkpoint is deleted only when the rebuild ends with nothing failed. ``--restart``
starts over.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3

from engram_memory import bootstrap
from engram_memory.adapters.aws_errors import AWS_FAILURES
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
SCAN_PAGE_ITEMS = 500  # items evaluated per Scan page: the progress bar's step
Projector = Callable[[dict[str, Any]], dict[str, Any]]
Key = tuple[str, str]


def _scan_filter(table: str) -> dict[str, Any]:
    """Keys only, of record items and journal events."""
    return {
        "TableName": table,
        "ProjectionExpression": "pk, sk",
        "FilterExpression": "(begins_with(pk, :scope) AND begins_with(sk, :rec)) OR "
                            "(begins_with(pk, :journal) AND begins_with(sk, :event))",
        "ExpressionAttributeValues": {
            ":scope": {"S": SCOPE_PREFIX}, ":rec": {"S": RECORD_PREFIX},
            ":journal": {"S": JOURNAL_PREFIX}, ":event": {"S": EVENT_PREFIX}},
    }


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


class BatchFailed(Exception):
    """The projector did not acknowledge a whole batch: the rebuild stops before it."""

    def __init__(self, failed: int) -> None:
        super().__init__(f"{failed} records of a batch failed")
        self.failed = failed


@dataclass
class Checkpoint:
    """How far a rebuild got: what it was asked, where the scan resumes, what was sent.

    ``resume_after``: the key of the last record the projector acknowledged (or of the
    last item of a page with nothing left to send), the Scan's ``ExclusiveStartKey`` on
    resume. ``latest``: each workspace's latest journal event seen so far (cursor, pk, sk),
    sent once the scan is complete. ``sent``: records the projector acknowledged.
    ``failed``: records of the batch it did not (a run stops there; never saved). Keys and
    counts only, never content.
    """

    table: str
    workspace: str | None
    resume_after: Key | None = None
    scanned: int = 0
    sent: int = 0
    failed: int = 0
    latest: dict[str, tuple[int, str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Checkpoint | None:
        """The checkpoint at ``path``; None when there is none."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        resume = data.get("resume_after")
        return cls(table=data["table"], workspace=data.get("workspace"),
                   resume_after=(resume[0], resume[1]) if resume else None,
                   scanned=int(data["scanned"]), sent=int(data["sent"]),
                   failed=int(data["failed"]),
                   latest={k: (int(v[0]), v[1], v[2]) for k, v in data["latest"].items()})

    def save(self, path: Path) -> None:
        """Write atomically: an interruption leaves the previous checkpoint or this one."""
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(asdict(self)), encoding="utf-8")
        os.replace(partial, path)


class Progress(Protocol):
    """What a rebuild reports as it goes (a progress bar, or nothing)."""

    def scanned(self, items: int, checkpoint: Checkpoint) -> None:
        """``items`` more table items scanned; the counts so far."""
        ...


class _Silent:
    def scanned(self, items: int, checkpoint: Checkpoint) -> None:
        """Report nothing."""


def rebuild(client: Any, checkpoint: Checkpoint, projector: Projector, *,
            save: Callable[[Checkpoint], None], progress: Progress | None = None,
            batch_size: int = BATCH_SIZE) -> Checkpoint:
    """Send every record key, then each workspace's latest event, from where
    ``checkpoint`` resumes; ``save`` after each acknowledged batch. The final counts.

    Raises :class:`BatchFailed` at the first batch with a failed record, without saving:
    the saved checkpoint stays on the last acknowledged batch, so a rerun sends it again.
    """
    report = progress or _Silent()
    kwargs = {**_scan_filter(checkpoint.table), "Limit": SCAN_PAGE_ITEMS}
    start = _key(checkpoint.resume_after) if checkpoint.resume_after else None
    pending: list[Key] = []

    def send(keys: list[Key]) -> None:
        for event in stream_events(keys, batch_size):
            failures = projector(event).get("batchItemFailures", [])
            if failures:
                checkpoint.failed += len(failures)
                raise BatchFailed(len(failures))
            checkpoint.sent += len(event["Records"])

    while True:
        page = client.scan(**kwargs, **({"ExclusiveStartKey": start} if start else {}))
        for item in page.get("Items", []):
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            record, event = record_key(pk, sk), event_key(pk, sk)
            scope = record.scope if record else event.scope if event else None
            if scope is None or (checkpoint.workspace is not None
                                 and scope.workspace_id != checkpoint.workspace):
                continue
            if record is not None:
                pending.append((pk, sk))
            elif event is not None:
                named = f"{scope.tenant_id}#{scope.workspace_id}"
                if event.cursor > checkpoint.latest.get(named, (-1, "", ""))[0]:
                    checkpoint.latest[named] = (event.cursor, pk, sk)
            if len(pending) == batch_size:
                send(pending)
                checkpoint.resume_after = pending[-1]
                pending = []
                save(checkpoint)
        checkpoint.scanned += int(page.get("ScannedCount", 0))
        start = page.get("LastEvaluatedKey")
        if not pending and start:
            checkpoint.resume_after = (start["pk"]["S"], start["sk"]["S"])
            save(checkpoint)
        report.scanned(int(page.get("ScannedCount", 0)), checkpoint)
        if not start:
            break
    send(pending)
    send([(pk, sk) for _, pk, sk in checkpoint.latest.values()])
    return checkpoint


def _key(key: Key) -> dict[str, dict[str, str]]:
    return {"pk": {"S": key[0]}, "sk": {"S": key[1]}}


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
    """``functions/projector/handler.py`` in this process (the local service, tests).

    Local mode's composition provides it (``engram_memory.local.adapters.install``, seam
    ``in_process_projector``): this deployed-stack tool never imports local mode.
    """
    factory = bootstrap.provided("in_process_projector")
    if factory is None:
        raise SystemExit("--in-process runs only where local mode is installed "
                         "(engram_memory.local.adapters.install)")
    projector: Projector = factory()
    return projector


class _Bar:
    """A tqdm progress bar over the table's items, with the records sent beside it."""

    def __init__(self, total: int | None, checkpoint: Checkpoint) -> None:
        from tqdm import tqdm  # the operator extra: never in a Lambda's import path

        self._bar = tqdm(total=total, initial=checkpoint.scanned, unit="item",
                         desc="main table scanned", dynamic_ncols=True)

    def scanned(self, items: int, checkpoint: Checkpoint) -> None:
        """Advance, and show what was sent."""
        self._bar.update(items)
        self._bar.set_postfix(records=checkpoint.sent, failed=checkpoint.failed)

    def close(self) -> None:
        """End the bar's line."""
        self._bar.close()


class _Lines:
    """Without tqdm: a line every 10,000 items."""

    def __init__(self) -> None:
        self._shown = 0

    def scanned(self, items: int, checkpoint: Checkpoint) -> None:
        """Print the counts now and then."""
        if checkpoint.scanned - self._shown >= 10_000:
            self._shown = checkpoint.scanned
            print(f"scanned {checkpoint.scanned} items; records sent {checkpoint.sent}",
                  file=sys.stderr)

    def close(self) -> None:
        """Nothing to close."""


def _progress(enabled: bool, client: Any, checkpoint: Checkpoint) -> _Bar | _Lines | None:
    if not enabled:
        return None
    # DynamoDB refreshes ItemCount about every six hours: the ETA is an estimate. Without
    # dynamodb:DescribeTable the bar still counts, with no total and no ETA.
    try:
        total = client.describe_table(TableName=checkpoint.table)["Table"].get("ItemCount")
    except AWS_FAILURES:
        total = None
    try:
        return _Bar(int(total) if total else None, checkpoint)
    except ImportError:
        return _Lines()


def default_checkpoint(table: str, workspace: str | None) -> Path:
    """``.engram-reproject-<table>[-<workspace>].json`` in the working directory."""
    return Path(f".engram-reproject-{table}{'-' + workspace if workspace else ''}.json")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m engram_memory.reproject``."""
    parser = argparse.ArgumentParser(prog="python -m engram_memory.reproject",
                                     description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--function", help="the deployed projector (name or ARN)")
    target.add_argument("--in-process", action="store_true",
                        help="run functions/projector/handler.py in this process")
    parser.add_argument("--workspace", help="only this workspace's records")
    parser.add_argument("--checkpoint", type=Path,
                        help="progress file (default: .engram-reproject-<table>.json here)")
    parser.add_argument("--restart", action="store_true",
                        help="ignore an existing checkpoint and start from the beginning")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help="records per projector invocation (default: as the stream)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    settings = OperatorSettings.from_env()
    region, endpoint = settings.region, settings.endpoint_url
    dynamodb = boto3.client("dynamodb", region_name=region, endpoint_url=endpoint)
    projector = (in_process_projector() if args.in_process else lambda_projector(
        args.function, boto3.client("lambda", region_name=region, endpoint_url=endpoint)))
    path = args.checkpoint or default_checkpoint(settings.table_name, args.workspace)
    fresh = Checkpoint(settings.table_name, args.workspace)
    checkpoint = None if args.restart else Checkpoint.load(path)
    if checkpoint is not None and (checkpoint.table, checkpoint.workspace) != (
            fresh.table, fresh.workspace):
        print(f"{path} belongs to another table or workspace; pass --restart or another "
              "--checkpoint", file=sys.stderr)
        return 2
    if checkpoint is not None:
        print(f"resuming: {checkpoint.sent} records already sent", file=sys.stderr)
    checkpoint = checkpoint or fresh
    already = checkpoint.sent
    progress = _progress(not args.no_progress, dynamodb, checkpoint)
    started = time.monotonic()
    try:
        done = rebuild(dynamodb, checkpoint, projector, save=lambda c: c.save(path),
                       progress=progress, batch_size=args.batch_size)
    except KeyboardInterrupt:
        print(f"\ninterrupted after {checkpoint.sent} records; run the same command to "
              "resume", file=sys.stderr)
        return 130
    except BatchFailed as exc:
        print(f"the projector reported {exc.failed} records of a batch failed after "
              f"{checkpoint.sent} records; the checkpoint stays before that batch: run the "
              "same command to send it again", file=sys.stderr)
        return 1
    finally:
        if progress is not None:
            progress.close()
    elapsed = max(time.monotonic() - started, 1e-9)
    if not done.failed:
        path.unlink(missing_ok=True)
    rate = (done.sent - already) / elapsed
    print(f"records sent to the projector: {done.sent}; reported failed: {done.failed}; "
          f"{rate:.1f} records/s this run")
    return 1 if done.failed else 0


if __name__ == "__main__":
    sys.exit(main())
