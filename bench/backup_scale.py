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
bundle as the command does. Memory, in the timed pass: the process's peak resident set
above its size when the phase starts (Linux ``VmHWM``, reset through ``/proc/self/clear_refs``
after a ``gc.collect()`` and ``malloc_trim`` hand freed memory back), i.e. what the command,
the route and moto held at once (a restore's includes the items moto adds to its tables and
its stream, which stay: "restore kept MiB" is the resident set above the start after the
restore, once its garbage is handed back). moto also keeps every DynamoDB item it creates,
the copies each Query answers with included, in a list for its dashboard;
``--moto-tracker cleared`` (the default) empties it before each phase and after each
request (bench/moto_item_tracker.py), ``as-shipped`` measures moto as it ships.
For sizes up to ``--trace-up-to`` a second pass also takes ``tracemalloc``'s peak (Python
allocations only; tracing slows a phase several times, too much for 50k records on a
shared box). A size stops being started once ``--max-seconds`` have passed.

Where the time goes (cProfile at 2,000 and 5,000 records, docs/performance.md): moto's
response serializer and its Query (which sorts the partition and walks it from the start
to each page's ``ExclusiveStartKey``: quadratic on moto, one page read on DynamoDB), and
the RFC 8785 encodings of the bundle lines (verified by the command, then again by the
route, as in production).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import re
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import moto_item_tracker
import moto_query_window
from harness import machine, table
from pydantic import BaseModel
from search_scale import BASE_ENV, BulkWriter, Corpus

from tests.support import bulk_records

FULL_SIZES = (1000, 10_000, 50_000)
QUICK_SIZES = (200,)
APPROVER = "operator@bench.test"


class RoutesClient:
    """The CLI's ``HostClient`` over the real backup routes, without HTTP."""

    def __init__(self, routes: Any, tenant: str, after_call: Callable[[], object]) -> None:
        self._routes, self._tenant, self._after_call = routes, tenant, after_call

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
        body_out = dict(json.loads(json.dumps(answer)))  # what the HTTP body would carry
        self._after_call()
        return body_out

    def close(self) -> None:
        """Nothing to close."""


def timed(run: Callable[[], object]) -> float:
    """Wall seconds of ``run()``."""
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _status_kib(name: str) -> int:
    found = re.search(rf"^{name}:\s+(\d+) kB$", Path("/proc/self/status").read_text(), re.M)
    return int(found.group(1)) if found else 0


def _release_free_memory() -> None:
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def timed_with_rss(run: Callable[[], object],
                   forget: Callable[[], object]) -> tuple[float, float, float]:
    """Wall seconds of ``run()``, the resident set's peak above its start and what stays
    resident above the start once the phase's garbage is handed back, in MiB."""
    forget()
    _release_free_memory()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    start = _status_kib("VmRSS")
    seconds = timed(run)
    peak = _status_kib("VmHWM")
    forget()
    _release_free_memory()
    return seconds, max(0, peak - start) / 1024, max(0, _status_kib("VmRSS") - start) / 1024


def traced_peak_mib(run: Callable[[], object], forget: Callable[[], object]) -> float:
    """tracemalloc's peak while ``run()`` runs, in MiB."""
    forget()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def workspaces(sizes: tuple[int, ...]) -> None:
    """The bench's environment, with a source and two restore targets per size."""
    os.environ.update(BASE_ENV)
    os.environ["ENGRAM_WORKSPACE_IDS"] = ",".join(
        w for size in sizes for w in (f"src-{size}", f"dst-{size}", f"mem-{size}"))


@dataclass(frozen=True)
class Session:
    """The commands and the routes on moto, as one bench run uses them."""

    settings: Any
    dynamodb: Any
    client: RoutesClient
    forget: Callable[[], object]
    commands: Any  # a namespace: export_cli, import_cli, verify_file, scope_of

    def plant(self, size: int, corpus: Corpus) -> str:
        """``size`` admitted records in a fresh source workspace; returns its id."""
        source = f"src-{size}"
        scope = self.commands.scope_of(self.settings.tenant_id, source)
        bulk_records.plant(BulkWriter(self.dynamodb), self.settings, scope,
                           (corpus.payload(i) for i in range(size)))
        return source

    def export(self, source: str, bundle: Path) -> str:
        """The export command's loop; returns the bundle's digest."""
        return str(self.commands.export_cli.export(self.client, source, bundle)[0])

    def restore(self, bundle: Path, target: str) -> int:
        """The import command's verify, tombstone check and restore; returns the count."""
        import_cli = self.commands.import_cli
        summary = self.commands.verify_file(str(bundle))
        forgotten = import_cli.forgotten_since(self.client, summary)
        return int(import_cli.restore(self.client, bundle, target, summary,
                                      forgotten)["restored"])


@contextlib.contextmanager
def session(*, window: bool, forget: Callable[[], object]) -> Iterator[Session]:
    """Tables created on moto (``workspaces`` first), the routes and their client."""
    import boto3
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from moto import mock_aws

    moto_query_window.install()
    moto_query_window.set_enabled(window)
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
        yield Session(settings, dynamodb, RoutesClient(routes, settings.tenant_id, forget),
                      forget, SimpleNamespace(export_cli=export_cli, import_cli=import_cli,
                                              verify_file=verify_file, scope_of=Scope))


def main() -> None:
    """Parse the arguments, run every size, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default=",".join(map(str, FULL_SIZES)))
    parser.add_argument("--quick", action="store_true", help="one size of 200 records")
    parser.add_argument("--max-seconds", type=float, default=2400.0,
                        help="no size is started after this many seconds")
    parser.add_argument("--trace-up-to", type=int, default=1000,
                        help="also take tracemalloc's peaks (a second pass) up to this size")
    parser.add_argument("--moto-query", choices=("window", "as-shipped"), default="window",
                        help="moto's Query reads a page after its start key (bench/"
                             "moto_query_window.py), or sorts and walks the partition")
    parser.add_argument("--moto-tracker", choices=("cleared", "as-shipped"), default="cleared",
                        help="let go of the DynamoDB items moto keeps for its dashboard before"
                             " each phase and after each request (bench/moto_item_tracker.py),"
                             " or keep them all")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else tuple(int(s) for s in args.sizes.split(","))
    workspaces(sizes)
    forget: Callable[[], object] = (moto_item_tracker.clear
                                    if args.moto_tracker == "cleared" else lambda: None)
    with session(window=args.moto_query == "window", forget=forget) as bench:
        corpus = Corpus()
        began = time.perf_counter()
        rows: list[list[str]] = []
        with tempfile.TemporaryDirectory(prefix="engram-backup-bench-") as scratch:
            for size in sizes:
                if time.perf_counter() - began > args.max_seconds:
                    rows.append([f"{size:,}", "not started: --max-seconds reached"] + [""] * 11)
                    continue
                rows.append(measure(size, corpus, bench, Path(scratch),
                                    traced=size <= args.trace_up_to))
                print("... " + " | ".join(rows[-1]), flush=True)  # a partial run keeps it
    print(f"backup_scale: {machine()}; moto Query: {args.moto_query}; "
          f"moto tracker: {args.moto_tracker}; load average at end "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("peak MiB: resident set above the phase's start (tracemalloc's peak, where taken); "
          "kept MiB: still resident after it (moto's tables and stream)")
    print(table(["records", "plant s", "bundle MB", "export s", "export rec/s",
                 "export peak MiB", "verify s", "verify rec/s", "verify peak MiB",
                 "restore s", "restore rec/s", "restore peak MiB", "restore kept MiB"], rows))


def measure(size: int, corpus: Corpus, bench: Session, scratch: Path, *,
            traced: bool) -> list[str]:
    """Plant, then time export, verify and restore of ``size`` records, with their peaks."""
    started = time.perf_counter()
    source = bench.plant(size, corpus)
    planted = time.perf_counter() - started
    bundle = scratch / f"{source}.bundle"
    digests: list[str] = []

    def restore(target: str) -> Callable[[], None]:
        def run() -> None:
            restored = bench.restore(bundle, target)
            assert restored == size, restored
        return run

    phases: list[tuple[str, Callable[[], object]]] = [
        ("export", lambda: digests.append(bench.export(source, bundle))),
        ("verify", lambda: bench.commands.verify_file(str(bundle))),
        ("restore", restore(f"dst-{size}"))]
    cells: list[str] = [f"{size:,}", f"{planted:.1f}"]
    for name, run in phases:
        seconds, rss, kept = timed_with_rss(run, bench.forget)
        if name == "export":
            cells.append(f"{bundle.stat().st_size / 1e6:.1f}")
        peak = f"{rss:.1f}"
        if traced:  # the same work again (a restore into a third empty workspace)
            again = restore(f"mem-{size}") if name == "restore" else run
            peak += f" ({traced_peak_mib(again, bench.forget):.1f})"
        cells += [f"{seconds:.1f}", f"{size / seconds:,.0f}", peak]
        print(f"... {size:,} {name}: {seconds:.1f} s, peak {peak} MiB, kept {kept:.1f} MiB"
              + (f", bundle {digests[0]}" if name == "export" else ""), flush=True)
    cells.append(f"{kept:.1f}")  # the restore's
    bundle.unlink()
    return cells


if __name__ == "__main__":
    main()
