"""``engram-memory reapply-forgets``: after a point-in-time restore of the main table,
reapply every forget and withdrawal the ledger holds since the restore point, then
re-project (docs/forget-ledger.md has the runbook).

Runs with the operator's credentials against the restored table, before it serves. Refused
(RESTORE_REFUSED, exit 2, nothing changed) when the ledger cannot be read or does not
cover the restore point. Rerunnable: a second run finds everything done.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``reapply-forgets`` subcommand."""
    cmd = sub.add_parser(
        "reapply-forgets",
        help="reapply the forget ledger after a point-in-time restore")
    cmd.add_argument("--table", required=True, help="the restored main table")
    cmd.add_argument("--key-table", required=True, help="the deployment's key table")
    cmd.add_argument("--ledger-table", required=True, help="the deployment's forget ledger")
    cmd.add_argument("--restore-point", required=True, type=_instant_ms,
                     help="the restore's point in time (ISO 8601 with offset, e.g. "
                          "2026-12-01T10:00:00Z)")
    projector = cmd.add_mutually_exclusive_group()
    projector.add_argument("--projector", help="then re-project through this deployed "
                                               "projector function (name or ARN)")
    projector.add_argument("--in-process-projector", action="store_true",
                           help="then re-project in this process (local mode, tests)")
    cmd.set_defaults(func=run)


def _instant_ms(text: str) -> int:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError("the restore point needs a UTC offset (or Z)")
    return int(when.timestamp() * 1000)


def run(args: argparse.Namespace) -> int:
    """Reapply, print the counts (ids only), then re-project when asked."""
    import boto3

    from engram_memory import env_names
    from engram_memory.adapters.clock import SystemClock
    from engram_memory.adapters.dynamodb.forget_ledger import DynamoForgetLedger
    from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
    from engram_memory.domain.errors import EngramError
    from engram_memory.services.reapply_forgets import ReapplyForgets
    from engram_memory.settings import region_of

    region = region_of(os.environ)
    endpoint = os.environ.get(env_names.AWS_ENDPOINT_URL) or None
    client = boto3.client("dynamodb", region_name=region, endpoint_url=endpoint)
    service = ReapplyForgets(
        ledger=DynamoForgetLedger(client, args.ledger_table),
        restored=DynamoMemoryStore(client, args.table, args.key_table),
        clock=SystemClock(), sleep=time.sleep)
    try:
        report = service.run(args.restore_point)
    except EngramError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 2
    print(f"reapplied: {len(report.reapplied)}; already done: {report.already_done}; "
          f"not in the restored table: {report.absent}")
    for target in report.reapplied:
        print(f"  {target}")
    if args.projector is None and not args.in_process_projector:
        print("now re-project the restored table (docs/forget-ledger.md, step 5)")
        return 0
    from engram_memory import reproject

    os.environ[env_names.TABLE_NAME] = args.table
    argv = (["--in-process"] if args.in_process_projector
            else ["--function", args.projector])
    return reproject.main([*argv, "--restart", "--no-progress"])
