"""``engram-memory smoke``: the memory flow, once, against a deployed stack
(the flow itself: ``engram_memory.smoke``)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``smoke``."""
    smoke = sub.add_parser("smoke", help="run the memory flow once against a deployed stack")
    smoke.add_argument("--stack", required=True, help="the tenant's stack name")
    smoke.add_argument("--region", default=None, help="the stack's region (default: AWS's)")
    smoke.add_argument("--host-key", type=Path, required=True,
                       help="the host's private key (PEM) whose public half the tenant has")
    smoke.add_argument("--workspace", default="", help="default: the tenant's first")
    smoke.add_argument("--mcp-url", default="", help="override output McpEndpointUrl")
    smoke.add_argument("--api-url", default="", help="override output ApiBaseUrl")
    smoke.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Resolve the stack and run the flow; 0 when every step passed."""
    from engram_memory.smoke import run_smoke

    return run_smoke(args)
