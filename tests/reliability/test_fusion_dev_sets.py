"""The deployment's fusion never ranks below the lexical channel on the development sets.

bench/retrieval_eval.py ``--path in-process`` (the functions the projector and search
Lambdas run, default deployment config) on all of ../shared/data/locomo-dev (one
workspace per conversation) and all of Cranfield: a ``lexical_and_semantic`` search must
be at least as good as a ``lexical`` one at nDCG@10 and Recall@10 on both. With equal-
weight RRF (the rule before issue 23) hybrid lost 0.16 nDCG@10 on locomo-dev.
The two sets run at once, one process each (~1 CPU-minute each here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.reference_data import bench_environment, missing, reference_data

ROOT = Path(__file__).resolve().parents[2]
DATA = reference_data()
SETS = {"locomo-dev": ["--scope-field", "conversation"], "cranfield": []}
TIMEOUT_S = 900


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT_S)
def test_hybrid_is_never_below_lexical_on_the_dev_sets(tmp_path: Path) -> None:
    if (reason := missing(*SETS)) is not None:
        pytest.skip(reason)
    env = bench_environment()
    started = {name: subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "retrieval_eval.py"), "--beir",
         str(DATA / name), *args, "--modes", "lexical", "hybrid",
         "--json", str(tmp_path / f"{name}.json")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, args in SETS.items()}
    try:
        for process in started.values():
            _, stderr = process.communicate(timeout=TIMEOUT_S)
            assert process.returncode == 0, stderr[-3000:]
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
    for name in SETS:
        modes = json.loads((tmp_path / f"{name}.json").read_text())["modes"]
        for measure in ("ndcg@10", "recall@10"):
            assert modes["hybrid"][measure] >= modes["lexical"][measure], (name, modes)
