"""Each bench runs end to end with ``--quick`` and prints its table, so none can rot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = {
    "tool_latency.py": "| tool | direct p50 ms |",
    "throughput.py": "| clients | captures/s |",
    "ranking_quality.py": "| ranker | nDCG@10 | Recall@100 |",
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(BENCHES))
def test_the_bench_runs_quickly_and_prints_its_table(script: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ENGRAM_"))}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--quick"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert BENCHES[script] in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert len(rows) >= 3, done.stdout
