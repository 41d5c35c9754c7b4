"""Rebuild rate of ``reproject``: records/s through the projector handler, and a resume.

Run: ``.venv/bin/python bench/reproject_scale.py [--records 2000] [--batch-size 10]
[--semantic]``.
In process on moto (``mock_aws``, the local service's DynamoDB shims): synthetic records
(bench/search_scale.py's Zipf corpus) are written in bulk to the main table only, as after a
lost projection; then ``reproject.rebuild`` sends them to ``functions/projector/handler.py``
(lexical projection; with ``--semantic`` also the semantic channel: the committed ONNX
model, batch embedding, moto's S3 Vectors index) and is interrupted halfway, then
resumed from its checkpoint: records/s of each part, and how many records the resumed run
sent again (the batch in flight at the interruption, at most one).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from search_scale import BASE_ENV, VALID_T, BulkWriter, Corpus

SEMANTIC_ENV = {
    "ENGRAM_SEMANTIC_EMBEDDER": "onnx", "ENGRAM_VECTOR_BUCKET": "bench-vectors",
    "ENGRAM_VECTOR_INDEX": "records", "ENGRAM_VECTOR_INDEX_LOCAL": "true",
}


class Window:
    """records/s of each window of ``size`` records, as the projection grows."""

    def __init__(self, size: int) -> None:
        self.size, self.done, self.count = size, 0, 0
        self.started = time.perf_counter()

    def restart(self) -> None:
        """A new run: the window's clock starts again (its count carries on)."""
        self.count = 0
        self.started = time.perf_counter()

    def add(self, records: int) -> None:
        """``records`` more acknowledged; print the window's rate when it is full."""
        self.done += records
        self.count += records
        if self.count >= self.size:
            elapsed = time.perf_counter() - self.started
            print(f"  records {self.done}: {self.count / elapsed:.1f} records/s over the "
                  f"last {self.count}; load average {_load()}", flush=True)
            self.restart()


class Interrupted(Exception):
    """The operator's Ctrl-C."""


def load_records(corpus: Corpus, count: int, dynamodb: Any) -> None:
    """``count`` accepted records into the main table (no projection, no journal events)."""
    from engram_memory import bootstrap
    from engram_memory.adapters.dynamodb import items
    from engram_memory.domain.context import Scope
    from engram_memory.domain.records import build_record, payload_digest, record_digest_for
    from engram_memory.services.ports.write import PutRecord

    settings = bootstrap.settings()
    scope = Scope(settings.tenant_id, "main")
    writer = BulkWriter(dynamodb)
    puts: list[dict[str, Any]] = []
    for i in range(count):
        effective = corpus.payload(i)
        record = build_record(record_digest_for(scope, effective), effective,
                              trust_class="asserted", recorded_at_ms=VALID_T)
        change = PutRecord(record=record, payload_digest=payload_digest(effective),
                           valid_t=VALID_T, valid_t_end=None, expires_at_ms=None,
                           cursor=i + 1, trust_binding={"trust_class": "asserted"})
        puts += [{"PutRequest": {"Item": element["Put"]["Item"]}}
                 for _, element in items.put_record(change, scope, settings.table_name, VALID_T)]
    writer.batch_write_item(RequestItems={settings.table_name: puts})


def main() -> None:
    """Load, rebuild halfway, resume, print the rates."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--report-every", type=int, default=1000,
                        help="print the rate of each window of this many records")
    parser.add_argument("--semantic", action="store_true",
                        help="semantic channel on: embed and put each record's vector")
    args = parser.parse_args()
    os.environ.update(BASE_ENV)
    if args.semantic:
        os.environ.update(SEMANTIC_ENV)
    print(f"load average at start: {_load()}; semantic channel: "
          f"{'on' if args.semantic else 'off'}; batch size {args.batch_size}", flush=True)

    import boto3
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from moto import mock_aws

    prepare_moto_dynamodb()
    with mock_aws(), tempfile.TemporaryDirectory() as folder:
        from engram_memory import bootstrap
        from engram_memory.local import adapters
        from engram_memory.local.provisioning import create_tables
        from engram_memory.reproject import Checkpoint, in_process_projector, rebuild

        bootstrap.reset()
        adapters.install()  # local mode's seams: the in-process projector
        dynamodb = bootstrap.dynamodb_client()
        create_tables(boto3.client("dynamodb", region_name="us-east-1"), bootstrap.settings())
        if args.semantic:
            from engram_memory.local.moto_s3vectors import ensure_index

            ensure_index(boto3.client("s3vectors", region_name="us-east-1"),
                         SEMANTIC_ENV["ENGRAM_VECTOR_BUCKET"],
                         SEMANTIC_ENV["ENGRAM_VECTOR_INDEX"])
        started = time.perf_counter()
        load_records(Corpus(), args.records, dynamodb)
        print(f"loaded {args.records} records in {time.perf_counter() - started:.0f} s",
              flush=True)
        table = bootstrap.settings().table_name
        path = Path(folder) / "checkpoint.json"
        projector = in_process_projector()
        sent: list[str] = []
        half = args.records // 2
        window = Window(args.report_every)

        def interrupted_halfway(event: dict[str, Any]) -> dict[str, Any]:
            if len(sent) >= half:
                raise Interrupted
            answer = projector(event)
            sent.extend(r["dynamodb"]["Keys"]["sk"]["S"] for r in event["Records"])
            window.add(len(event["Records"]))
            return answer

        started = time.perf_counter()
        with contextlib.suppress(Interrupted):
            rebuild(dynamodb, Checkpoint(table, None), interrupted_halfway,
                    save=lambda c: c.save(path), batch_size=args.batch_size)
        first_s = time.perf_counter() - started
        first = list(sent)
        saved = Checkpoint.load(path)
        assert saved is not None
        resent: list[str] = []

        def counting(event: dict[str, Any]) -> dict[str, Any]:
            resent.extend(r["dynamodb"]["Keys"]["sk"]["S"] for r in event["Records"])
            answer = projector(event)
            window.add(len(event["Records"]))
            return answer

        window.restart()
        started = time.perf_counter()
        done = rebuild(dynamodb, saved, counting, save=lambda c: c.save(path),
                       batch_size=args.batch_size)
        second_s = time.perf_counter() - started
        again = len(set(first) & set(resent))
        print(f"first run: {len(first)} records in {first_s:.1f} s "
              f"({len(first) / first_s:.1f} records/s), interrupted")
        print(f"resumed run: {len(resent)} records in {second_s:.1f} s "
              f"({len(resent) / second_s:.1f} records/s); sent again: {again}; "
              f"total sent {done.sent}, failed {done.failed}; all records covered: "
              f"{len(set(first) | set(resent)) == args.records}")
        total_s = first_s + second_s
        print(f"overall: {args.records} records in {total_s:.1f} s "
              f"({args.records / total_s:.1f} records/s); load average at end: {_load()}")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
