"""``engram-memory``: the local service (serve, token, confirm), backups (export, verify,
import) and the tools for a deployed stack (reindex, reapply-forgets, smoke).

Each command is one module of this package, named after it, exposing ``register(sub)`` and
``run(args)``. A command module's top level imports only the standard library and this
package: what a command needs (the embedded service, boto3, the host kit, the MCP SDK) is
imported inside its ``run``, so building the parser loads no command's dependencies and
``engram-memory verify FILE`` starts in a fraction of a second instead of loading them all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

_DESCRIPTION = (__doc__ or "").split("\n\n", 1)[0].replace("``", "")

COMMANDS = ("serve", "token", "confirm", "export", "verify", "import_", "reindex",
            "reapply_forgets", "smoke")
"""The command modules under ``engram_memory.cli``, in the order ``--help`` lists them: each
registers the command it is named after (``-`` for ``_``, no trailing ``_``: ``import_`` is
``import``)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command, each registered by its own module."""
    parser = argparse.ArgumentParser(prog="engram-memory", description=_DESCRIPTION)
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
