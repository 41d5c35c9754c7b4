"""Each bench runs end to end with ``--quick`` (or tiny sizes) and prints its table, so
none can rot.

The benches start together (each its own process and local service) and each test
waits for its own: the tier pays for the slowest bench, not for the sum.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.aws_calls import DESIGN_MINIMUM, PER_TERM_NOTE, describe
from bench.reference_data import bench_environment, missing

ROOT = Path(__file__).resolve().parents[2]
BENCHES = {
    "tool_latency.py": "| tool | direct p50 ms |",
    "throughput.py": "| workspaces | clients | captures/s |",
    "ranking_quality.py": "| ranker | nDCG@10 lin | nDCG@10 exp | Recall@10 | Recall@100 |",
    "cold_start.py": "| module | import ms | × import boto3 |",
    "search_scale.py": "| records | load s | completion cap | searches | p50 ms | p95 ms |",
    "budget_quality.py": "| records | K per term | budget B | completion cap C | queries |",
    "backup_scale.py": "| records | plant s | bundle MB | export s | export rec/s |",
    "backup_memory.py": "| records | phase | peak MiB | kept MiB | peak - kept MiB |",
    "projector_write_units.py": "| layout | records | WCU/record | WCU/record p50 |",
    "read_units_by_query.py": "| K / B / C | query ranks | read units |",
}
RANKERS = ("lexical: BM25F", "semantic alone", "hybrid: lexical_and_semantic",
           "bm25s BM25 + stopwords + Snowball stems", "bm25s BM25 plain",
           "previous release: BM25F tokenizer 1, k1 1.2")
# With a fixed delay per AWS call, concurrent calls certainly overlap (bench/aws_calls.py).
ARGS = {"tool_latency.py": ["--aws-delay-ms", "5"],
        # No --quick: two tiny sizes, one round, with the simulated network.
        "search_scale.py": ["--sizes", "100,200", "--rounds", "1", "--aws-delay-ms", "5",
                            "--completion-caps", "0,200", "--replay"],
        "budget_quality.py": ["--records", "1500", "--budgets", "1000,4000"],
        "backup_memory.py": ["--sizes", "200"],  # a header, the export and the restore
        "projector_write_units.py": ["--sizes", "100,200", "--records", "4", "--forgets", "2",
                                     "--top", "0"],
        "read_units_by_query.py": ["--records", "300", "--variants", "50/200/0,100/400/10"]}
# Benches that read a reference set (bench/reference_data.py): skipped, saying why, without it.
NEEDS = {"ranking_quality.py": "cranfield", "budget_quality.py": "cranfield"}
QUICK = {"tool_latency.py", "throughput.py", "ranking_quality.py", "cold_start.py",
         "backup_scale.py"}
TIMEOUT_S = 240


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, subprocess.Popen[str]]]:
    env = bench_environment()
    started = {script: subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / script),
         *(["--quick"] if script in QUICK else []), *ARGS.get(script, [])],
        cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for script in BENCHES
        if script not in NEEDS or missing(NEEDS[script]) is None}
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(BENCHES))
def test_the_bench_runs_quickly_and_prints_its_table(
        runs: dict[str, subprocess.Popen[str]], script: str) -> None:
    if script not in runs:
        pytest.skip(missing(NEEDS[script]) or script)
    stdout, stderr = runs[script].communicate(timeout=TIMEOUT_S)
    assert runs[script].returncode == 0, stderr[-2000:]
    assert BENCHES[script] in stdout
    rows = [line for line in stdout.splitlines() if line.startswith("| ")]
    # A header and at least one measured row (backup_scale's quick run has one size).
    assert len(rows) >= (2 if script == "backup_scale.py" else 3), stdout
    if script == "tool_latency.py":
        # Every timed call must have succeeded: a table of failures times the error path.
        assert _column(rows, "errors") == ["0"] * 6, stdout
        # The write path's independent calls overlap: every write tool reaches its floor
        # (on a loaded machine a background call may start late: min, not mean).
        trips = dict(zip(_column(rows, "tool"), _column(rows, "sequential round trips"),
                         strict=True))
        fewest = {tool: cell.split("(min ")[-1].split(",")[0].removesuffix(".0")
                  for tool, cell in trips.items()}
        assert (fewest["capture"], fewest["request_admission"], fewest["withdraw"],
                fewest["forget"]) == ("2", "3", "3", "3"), stdout
        # Every tool makes exactly the AWS calls its design needs, no more, no other kind
        # (docs/performance.md's call table is this column): search's postings Queries
        # (one per query term) are the "+ T Query" beside its minimum.
        measured = dict(zip(_column(rows, "tool"), _column(rows, "measured"), strict=True))
        assert set(measured) == set(DESIGN_MINIMUM), stdout
        for tool, minimum in DESIGN_MINIMUM.items():
            made = measured[tool]
            if tool in PER_TERM_NOTE:
                made = " + ".join(part for part in made.split(" + ")
                                  if not part.endswith(" Query"))
            assert made == describe(minimum), (tool, measured[tool], stdout)
    if script == "ranking_quality.py":
        assert "(0 refused at capture" in stdout, stdout
        assert " 0 search errors" in stdout, stdout
        # One run prints every ranker the issues compare (13 and 14), so none can be lost.
        names = [row.split("|")[1].strip() for row in rows]
        for ranker in RANKERS:
            assert any(name.startswith(ranker) for name in names), stdout
    if script == "projector_write_units.py":
        # One writer: no transaction of the projector's path may have been cancelled.
        assert _column(rows, "layout") == ["new", "new"], stdout
        assert _column(rows, "cancelled") == ["0", "0"], stdout
    if script == "search_scale.py":
        # Every size and cap replayed without moto (each call answered from the recording).
        replayed = _column(rows, "replayed handler CPU p50 / p95 ms")
        assert len(replayed) == 4, stdout
        assert all(" / " in cell for cell in replayed), stdout
    if script == "throughput.py":
        # Contended captures retry inside the service (issue 25): no agent is shed.
        assert "FENCE_LOST" not in "\n".join(rows), stdout


def _column(rows: list[str], name: str) -> list[str]:
    """The cells of column ``name`` of the first markdown table in ``rows``."""
    # ``rows`` holds the lines starting "| ": the header and the body, not the |---| rule.
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    header, body = cells[0], [c for c in cells[1:] if len(c) == len(cells[0])]
    index = header.index(name)
    return [c[index] for c in body[:6]]
