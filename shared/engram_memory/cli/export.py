"""``engram-memory export``: one workspace into one bundle file, page by page."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engram_memory.cli.host_client import HostCallFailed, HostClient, progress_bar, token_from

PAGE_LIMIT = 500


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` subcommand."""
    parser = sub.add_parser("export", help="write one workspace to a backup bundle file")
    parser.add_argument("--url", required=True, help="service base URL (local or a stack's API)")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--out", required=True, type=Path, help="the bundle file to write")
    parser.add_argument("--token", help="maintainer token (default: $ENGRAM_MAINTAINER_TOKEN)")
    parser.set_defaults(func=run)


def pages(client: HostClient, workspace: str, part: str, *, at: int | None = None,
          since: int = 0) -> Iterator[dict[str, Any]]:
    """Every page of one export part (the first pins ``at`` when not given)."""
    params: dict[str, Any] = {"workspace_id": workspace, "part": part, "limit": PAGE_LIMIT}
    if at is not None:
        params["at"] = at
    if since:
        params["since"] = since
    while True:
        page = client.call("GET", "/host/export", params=params)
        yield page
        if "next" not in page:
            return
        params = {"workspace_id": workspace, "part": part, "limit": PAGE_LIMIT,
                  "page": page["next"]}


def export(client: HostClient, workspace: str, out: Path) -> tuple[str, dict[str, int]]:
    """Write the bundle to ``out`` (through a temporary file); its digest and counts."""
    from engram_memory.backup.bundle import BundleWriter

    partial = out.with_name(out.name + ".partial")
    counts = {"records": 0, "tombstones": 0, "journal": 0}
    bar = progress_bar(None, "export")
    try:
        with partial.open("wb") as stream:
            first = pages(client, workspace, "records")
            page = next(first)
            at = int(page["at"])
            writer = BundleWriter(stream, str(page["tenant_id"]), workspace, at)
            for part, emit in (("records", writer.record), ("tombstones", writer.tombstone),
                               ("journal", writer.event)):
                source = (itertools.chain([page], first) if part == "records"
                          else pages(client, workspace, part, at=at))
                for current in source:
                    for entry in current["items"]:
                        emit(entry)
                    counts[part] += len(current["items"])
                    if bar is not None:
                        bar.update(len(current["items"]))
            digest = writer.finish()
            stream.flush()
            os.fsync(stream.fileno())
        partial.replace(out)
    finally:
        if bar is not None:
            bar.close()
        partial.unlink(missing_ok=True)
    return digest, counts


def run(args: argparse.Namespace) -> int:
    """Export; print the counts and the bundle digest."""
    token = token_from(args.token)
    if not token:
        print("export: a maintainer token is required (--token or ENGRAM_MAINTAINER_TOKEN)",
              file=sys.stderr)
        return 2
    client = HostClient(args.url, token)
    try:
        digest, counts = export(client, args.workspace, args.out)
    except HostCallFailed as failed:
        print(f"export failed: {failed.status} {failed.code}", file=sys.stderr)
        return 1
    finally:
        client.close()
    print(f"exported {counts['records']} records, {counts['tombstones']} tombstones, "
          f"{counts['journal']} journal events to {args.out}")
    print(f"bundle digest {digest}")
    return 0
