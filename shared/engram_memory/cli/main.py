"""``engram-memory``: the local service's command line (serve, token, confirm, reindex),
and ``smoke`` against a deployed stack."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS = ("serve", "token", "confirm", "reindex", "reapply_forgets", "smoke")
"""The command modules under ``engram_memory.cli``, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command, each registered by its own module."""
    parser = argparse.ArgumentParser(prog="engram-memory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"engram_memory.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``engram-memory`` script."""
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
