"""Export, verify and restore at 1k / 10k / 50k records: records/s and peak memory.

Run: ``.venv/bin/python bench/backup_scale.py [--sizes 1000,10000,50000]
[--max-seconds 2400]`` (``--quick``: one size of 200 records, for the smoke test).

In process on moto (``mock_aws``, the local service's DynamoDB shims), per size: a fresh
source workspace gets N admitted records planted in bulk (``tests/support/bulk_records.py``:
the write path's own item mapping and the chained ``accept`` events; bench/search_scale.py's
synthetic corpus, ~1 KB records) straight into moto's backend (search_scale's
``BulkWriter``: loading is not what is measured). Then the commands' own loops run against
the real routes (``gate/backup_routes.BackupRoutes`` over ``DynamoExportReader`` and
``DynamoRestoreWriter``; an in-process transport stands in for HTTP): ``cli/export.export``
(paged ``GET /host/export``, 500 entries a page), ``backup.bundle.verify_file`` (offline),
and ``cli/import_.restore`` into an empty workspace (begin, lines in 2 MiB batches, each
verified by the route, commit), after asking the source for its tombstones since the
bundle as the command does. Memory: ``tracemalloc``'s peak of each phase, i.e. the Python
allocations the command and the route make (moto's stored items included for a restore,
which adds them to its tables), measured in a second pass so tracing does not slow the
timed one. A size stops being started once ``--max-seconds`` have passed.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import machine, table
from pydantic import BaseModel
from search_scale import BASE_ENV, BulkWriter, Corpus

from tests.support import bulk_records

FULL_SIZES = (1000, 10_000, 50_000)
QUICK_SIZES = (200,)
APPROVER = "operator@bench.test"


class RoutesClient:
    """The CLI's ``HostClient`` over the real backup routes, without HTTP."""

    def __init__(self, routes: Any, tenant: str) -> None:
        self._routes, self._tenant = routes, tenant

    def call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
             body: dict[str, Any] | None = None) -> dict[str, Any]:
        """Dispatch one host call to the route the gate would, with a JSON round trip."""
        from engram_memory.domain.context import Scope
        from engram_memory.gate import backup_routes

        if method == "GET" and path == "/host/export":
            query = {k: str(v) for k, v in (params or {}).items()}
            answer = self._routes.export(Scope(self._tenant, query["workspace_id"]), query)
        else:
            models: dict[str, type[BaseModel]] = {
                "/host/restore": backup_routes.RestoreBegin,
                "/host/restore/lines": backup_routes.RestoreLines,
                "/host/restore/commit": backup_routes.RestoreCommit}
            model = models[path]
            parsed = backup_routes.parse_body(model, json.dumps(body).encode())
            scope = Scope(self._tenant, parsed.workspace_id)
            if path == "/host/restore":
                answer = self._routes.begin(scope, parsed)
            elif path == "/host/restore/lines":
                answer = self._routes.lines(scope, parsed)
            else:
                answer = self._routes.commit(scope, parsed, APPROVER)
        return dict(json.loads(json.dumps(answer)))  # what the HTTP body would carry

    def close(self) -> None:
        """Nothing to close."""


def timed(run: Callable[[], object]) -> float:
    """Wall seconds of ``run()``."""
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def traced_peak_mib(run: Callable[[], object]) -> float:
    """tracemalloc's peak while ``run()`` runs, in MiB."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    """Parse the arguments, run every size, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default=",".join(map(str, FULL_SIZES)))
    parser.add_argument("--quick", action="store_true", help="one size of 200 records")
    parser.add_argument("--max-seconds", type=float, default=2400.0,
                        help="no size is started after this many seconds")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else tuple(int(s) for s in args.sizes.split(","))
    os.environ.update(BASE_ENV)
    os.environ["ENGRAM_WORKSPACE_IDS"] = ",".join(
        w for size in sizes for w in (f"src-{size}", f"dst-{size}", f"mem-{size}"))

    import boto3
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from moto import mock_aws

    prepare_moto_dynamodb()
    with mock_aws():
        from engram_memory import bootstrap
        from engram_memory.adapters.dynamodb.export_reader import DynamoExportReader
        from engram_memory.adapters.dynamodb.restore_writer import DynamoRestoreWriter
        from engram_memory.backup.bundle import verify_file
        from engram_memory.cli import export as export_cli
        from engram_memory.cli import import_ as import_cli
        from engram_memory.domain.context import Scope
        from engram_memory.gate.backup_routes import BackupRoutes
        from engram_memory.local.provisioning import create_tables

        bootstrap.reset()
        settings = bootstrap.settings()
        dynamodb = bootstrap.dynamodb_client()
        create_tables(boto3.client("dynamodb", region_name="us-east-1"), settings)
        routes = BackupRoutes(DynamoExportReader(dynamodb, settings.table_name),
                              DynamoRestoreWriter(dynamodb, settings.table_name),
                              settings.tenant_id, lambda: int(time.time() * 1000))
        client: Any = RoutesClient(routes, settings.tenant_id)
        corpus = Corpus()
        began = time.perf_counter()
        rows: list[list[str]] = []
        with tempfile.TemporaryDirectory(prefix="engram-backup-bench-") as scratch:
            for size in sizes:
                if time.perf_counter() - began > args.max_seconds:
                    rows.append([f"{size:,}", "not started: --max-seconds reached"] + [""] * 7)
                    continue
                rows.append(measure(size, corpus, settings, dynamodb, client, Path(scratch),
                                    export_cli, import_cli, verify_file, Scope))
                print("... " + " | ".join(rows[-1]), flush=True)  # a partial run keeps it
    print(f"backup_scale: {machine()}; load average at end "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(table(["records", "plant s", "bundle MB", "export rec/s", "export peak MiB",
                 "verify rec/s", "verify peak MiB", "restore rec/s", "restore peak MiB"],
                rows))


def measure(size: int, corpus: Corpus, settings: Any, dynamodb: Any, client: Any,
            scratch: Path, export_cli: Any, import_cli: Any, verify_file: Any,
            scope_of: Any) -> list[str]:
    """Plant, then time and trace export, verify and restore of ``size`` records."""
    source = f"src-{size}"
    started = time.perf_counter()
    bulk_records.plant(BulkWriter(dynamodb), settings, scope_of(settings.tenant_id, source),
                       (corpus.payload(i) for i in range(size)))
    planted = time.perf_counter() - started
    bundle = scratch / f"{source}.bundle"

    def export() -> None:
        export_cli.export(client, source, bundle)

    def restore(target: str) -> Callable[[], None]:
        def run() -> None:
            summary = verify_file(str(bundle))
            forgotten = import_cli.forgotten_since(client, summary)
            report = import_cli.restore(client, bundle, target, summary, forgotten)
            assert report["restored"] == size, report
        return run

    export_s = timed(export)
    megabytes = bundle.stat().st_size / 1e6
    verify_s = timed(lambda: verify_file(str(bundle)))
    restore_s = timed(restore(f"dst-{size}"))
    # The traced pass: the same work again (a second restore into a third empty workspace).
    export_mib = traced_peak_mib(export)
    verify_mib = traced_peak_mib(lambda: verify_file(str(bundle)))
    restore_mib = traced_peak_mib(restore(f"mem-{size}"))
    bundle.unlink()
    return [f"{size:,}", f"{planted:.1f}", f"{megabytes:.1f}", f"{size / export_s:,.0f}",
            f"{export_mib:.1f}", f"{size / verify_s:,.0f}", f"{verify_mib:.1f}",
            f"{size / restore_s:,.0f}", f"{restore_mib:.1f}"]


if __name__ == "__main__":
    main()
