"""Export and restore need the host API's restore grant: without it, STORE_UNAVAILABLE.

Its own module: it stands up its own stack (a template without one grant), which must not
share moto with a module's running rehearsal (as in test_missing_grant.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from engram_memory.cli.main import main as cli
from engram_memory.local.moto_server import MotoService

from tests.rehearsal.flow import Flow
from tests.rehearsal.harness import rehearse, without_grant
from tests.rehearsal.http_adapter import serving
from tests.rehearsal.synthesis import SynthesizedStack
from tests.rehearsal.test_backup_restore import _get, _target

pytestmark = pytest.mark.timeout(900)

def test_without_its_restore_grant_the_host_api_cannot_restore(
        synthesized: SynthesizedStack, moto_server: MotoService, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    broken = without_grant(synthesized.template, "host_api", "dynamodb:BatchWriteItem")
    with rehearse(synthesized, moto_server, template=broken) as rehearsal:
        source, target = Flow(rehearsal), _target(rehearsal)
        record_id = source.admit_by_host(source.capture("The cache is warmed at six."))
        bundle = tmp_path / "default.bundle"
        with serving(rehearsal) as base:
            # Export reads only: it still works without the restore's batch writes.
            assert cli(["export", "--url", base, "--workspace", source.workspace,
                        "--out", str(bundle), "--token", source.operator()]) == 0
            assert rehearsal.denials == []
            capsys.readouterr()
            assert cli(["import", "--url", base, "--workspace", target.workspace,
                        str(bundle), "--token", source.operator()]) == 1
        assert "STORE_UNAVAILABLE" in capsys.readouterr().err
        assert rehearsal.denials, "no access denied recorded"
        assert all("FunctionsHostApiRole" in d and "dynamodb:BatchWriteItem" in d
                   for d in rehearsal.denials), rehearsal.denials
        rehearsal.denials.clear()
        assert _get(target, record_id)["error"]["code"] == "NOT_FOUND"
