"""``engram-memory verify``: check a bundle offline (manifest, parts, records, journal)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verify`` subcommand."""
    parser = sub.add_parser("verify", help="verify a backup bundle offline")
    parser.add_argument("file", type=Path, help="the bundle file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 with the counts; 1 and ``BACKUP_INVALID: <what failed>`` otherwise."""
    from engram_memory.backup.bundle import BundleProblem, verify_file

    try:
        summary = verify_file(str(args.file))
    except BundleProblem as problem:
        print(f"BACKUP_INVALID: {problem.reason}", file=sys.stderr)
        return 1
    except OSError:
        print("BACKUP_INVALID: the file cannot be read", file=sys.stderr)
        return 1
    counts = summary.counts
    print(f"bundle ok: tenant {summary.tenant_id}, workspace {summary.workspace_id}, "
          f"cursor {summary.cursor}")
    print(f"  {counts['records']} records, {counts['tombstones']} tombstones, "
          f"{counts['journal']} journal events; journal head {summary.journal_head.event_digest}")
    print(f"  bundle digest {summary.bundle_digest}")
    return 0
