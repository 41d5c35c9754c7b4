"""``engram-memory import``: restore a bundle into an empty workspace (``--from bundle``), or
migrate a mem0 export (``--from mem0``, engram_memory.cli.import_mem0)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_memory.cli.export import pages
from engram_memory.cli.host_client import HostCallFailed, HostClient, progress_bar, token_from

if TYPE_CHECKING:
    from engram_memory.backup.bundle import BundleSummary

BATCH_BYTES = 2 * 1024 * 1024
"""Bundle bytes per upload request (the host routes take at most 4 MiB of JSON)."""
BATCH_LINES = 2000


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``import`` subcommand."""
    parser = sub.add_parser("import", help="restore a bundle (or migrate mem0) into a workspace")
    parser.add_argument("file", type=Path, help="the bundle (or the mem0 export)")
    parser.add_argument("--url", required=True, help="service base URL (local or a stack's API)")
    parser.add_argument("--workspace", required=True, help="the target workspace")
    parser.add_argument("--from", dest="source_kind", choices=("bundle", "mem0"),
                        default="bundle", help="what FILE is (default: bundle)")
    parser.add_argument("--purpose", help="purpose_ref of the imported memories (mem0)")
    parser.add_argument("--token", help="maintainer token (default: $ENGRAM_MAINTAINER_TOKEN)")
    parser.add_argument("--source-url", help="the bundle's source service (default: --url), "
                                             "asked for what was forgotten since the bundle")
    parser.add_argument("--source-token", help="maintainer token of the source (default: --token)")
    parser.add_argument("--no-source-check", action="store_true",
                        help="the source is gone: restore without asking it (see docs/backup.md)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch on ``--from``."""
    if args.source_kind == "mem0":
        mem0 = importlib.import_module("engram_memory.cli.import_mem0")
        return int(mem0.run(args))
    return run_bundle(args)


def forgotten_since(client: HostClient, summary: BundleSummary) -> list[str]:
    """Record ids the source forgot after the bundle's cursor (its tombstone part)."""
    ids: list[str] = []
    for page in pages(client, summary.workspace_id, "tombstones", since=summary.cursor):
        if page.get("tenant_id") != summary.tenant_id:
            raise HostCallFailed(409, "SOURCE_MISMATCH")
        ids.extend(str(item["record_id"]) for item in page["items"])
    return ids


def _batches(path: Path, skip: int) -> Iterator[list[str]]:
    """The bundle's lines from line ``skip`` on, in batches of bounded size."""
    from engram_memory.backup.bundle import read_lines

    with path.open("rb") as stream:
        batch: list[str] = []
        size = 0
        for index, raw in enumerate(read_lines(stream)):
            if index < skip:
                continue
            text = raw.decode("utf-8")
            if batch and (size + len(raw) > BATCH_BYTES or len(batch) >= BATCH_LINES):
                yield batch
                batch, size = [], 0
            batch.append(text)
            size += len(raw)
        if batch:
            yield batch


def restore(client: HostClient, path: Path, workspace: str, summary: BundleSummary,
            forgotten: list[str]) -> dict[str, Any]:
    """Begin (or resume), upload every line, commit; the server's report."""
    status = client.call("POST", "/host/restore", body={
        "workspace_id": workspace, "bundle_digest": summary.bundle_digest,
        "forgotten_record_ids": sorted(set(forgotten))})
    offset = int(status["offset"])
    bar = progress_bar(sum(summary.counts.values()) + 2, "restore")
    try:
        while True:
            resumed = False
            for batch in _batches(path, offset):
                answer = client.call("POST", "/host/restore/lines", body={
                    "workspace_id": workspace, "bundle_digest": summary.bundle_digest,
                    "offset": offset, "lines": batch})
                if not answer.get("accepted"):
                    offset, resumed = int(answer["offset"]), True  # another run got further
                    break
                offset = int(answer["offset"])
                if bar is not None:
                    bar.update(len(batch))
            if not resumed:
                break
    finally:
        if bar is not None:
            bar.close()
    return client.call("POST", "/host/restore/commit", body={
        "workspace_id": workspace, "bundle_digest": summary.bundle_digest})


def run_bundle(args: argparse.Namespace) -> int:
    """Verify locally, ask the source what it forgot since, restore; print the report."""
    from engram_memory.backup.bundle import BundleProblem, verify_file

    token = token_from(args.token)
    if not token:
        print("import: a maintainer token is required (--token or ENGRAM_MAINTAINER_TOKEN)",
              file=sys.stderr)
        return 2
    try:
        summary = verify_file(str(args.file))
    except BundleProblem as problem:
        print(f"BACKUP_INVALID: {problem.reason}", file=sys.stderr)
        return 1
    except OSError:
        print("BACKUP_INVALID: the file cannot be read", file=sys.stderr)
        return 1
    client = HostClient(args.url, token)
    try:
        forgotten: list[str] = []
        if not args.no_source_check:
            source = HostClient(args.source_url or args.url, args.source_token or token)
            try:
                forgotten = forgotten_since(source, summary)
            except HostCallFailed as failed:
                print(f"import: the source could not be asked what it forgot since the "
                      f"bundle ({failed.status} {failed.code}); nothing written",
                      file=sys.stderr)
                return 1
            finally:
                source.close()
        report = restore(client, args.file, args.workspace, summary, forgotten)
    except HostCallFailed as failed:
        print(f"{failed.code}: the restore failed ({failed.status})", file=sys.stderr)
        return 1
    finally:
        client.close()
    print(f"restored {report['restored']} records into {args.workspace} "
          f"(restore event {report['event_id']}, bundle {report['bundle_digest']})")
    skipped = report.get("skipped_record_ids", [])
    print(f"skipped {len(skipped)} records forgotten since the bundle"
          + (": " + ", ".join(skipped) if skipped else ""))
    return 0
