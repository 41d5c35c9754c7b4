"""``engram-memory import``: bring memories into a workspace (minimal: ``--from mem0`` only;
engineer "export" owns the full command with bundle restore, and it replaces this one)."""

from __future__ import annotations

import argparse
import os

from engram_memory.cli import import_mem0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``import`` subcommand."""
    parser = sub.add_parser("import", help="import memories into a workspace (mem0 export)")
    parser.add_argument("--from", dest="source", choices=("mem0",), default="mem0")
    parser.add_argument("--url", required=True, help="service base URL")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--purpose", required=True, help="purpose_ref of the imported records")
    parser.add_argument("--token", default=os.environ.get("ENGRAM_MAINTAINER_TOKEN"),
                        help="maintainer token (default: $ENGRAM_MAINTAINER_TOKEN)")
    parser.add_argument("file", help="the mem0 export (JSON)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the import; the exit status."""
    if not args.token:
        print("import: a maintainer token is required (--token or ENGRAM_MAINTAINER_TOKEN)")
        return 2
    return import_mem0.run(args)
