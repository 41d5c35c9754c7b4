"""``engram-memory smoke`` against the rehearsal, behind a loopback HTTP API."""

from __future__ import annotations

import io
import re
from pathlib import Path

from engram_memory import smoke
from engram_memory.cli.main import build_parser

from tests.rehearsal.harness import Rehearsal
from tests.rehearsal.http_adapter import serving
from tests.support.host_tokens import private_pem

STEPS = ("capture", "request_admission", "search (lexical)", "search (lexical_and_semantic)",
         "get", "forget (host-approved)")


def test_smoke_runs_the_flow_and_leaves_nothing_behind(rehearsal: Rehearsal,
                                                       tmp_path: Path) -> None:
    key = tmp_path / "host-key.pem"
    key.write_bytes(private_pem(rehearsal.synthesized.host_key))
    with serving(rehearsal) as base:
        args = build_parser().parse_args([
            "smoke", "--stack", rehearsal.stood.stack_name, "--region", "us-east-1",
            "--host-key", str(key), "--mcp-url", f"{base}/mcp", "--api-url", f"{base}/"])
        out = io.StringIO()
        status = smoke.run_smoke(args, session=rehearsal.admin, out=out)
    printed = out.getvalue()
    print(printed)
    assert status == 0, printed
    for step in STEPS:
        assert re.search(rf"^ok +{re.escape(step)} +[0-9.]+ ms", printed, re.M), printed
    assert "nothing left behind" in printed
    assert rehearsal.denials == []
    # Nothing admitted stays readable: every record of the workspace is tombstoned.
    main = rehearsal.physical("AWS::DynamoDB::Table", "MainTable")
    items = rehearsal.client("dynamodb").scan(TableName=main)["Items"]
    states = {i["state"]["S"] for i in items if "state" in i and i["pk"]["S"].startswith(
        "SCOPE#") and i["sk"]["S"].startswith("REC#")}
    assert states <= {"tombstoned"}, states


def test_smoke_fails_on_a_stack_that_is_not_there(rehearsal: Rehearsal,
                                                  tmp_path: Path) -> None:
    key = tmp_path / "host-key.pem"
    key.write_bytes(private_pem(rehearsal.synthesized.host_key))
    args = build_parser().parse_args(["smoke", "--stack", "no-such-stack",
                                      "--host-key", str(key)])
    assert smoke.run_smoke(args, session=rehearsal.admin, out=io.StringIO()) == 1
