"""bench/retrieval_eval.py, the evaluation a user runs on their own memories, and
bench/beir_convert.py, which writes the sets it reads.

The converters write the BEIR layout; a small LoCoMo subset runs through the in-process
path quickly and prints the documented JSON; and the two paths, in process and through
the local service over MCP, rank that subset identically in every mode. LoCoMo is read
from ../shared/data (evaluation only, never copied into the repository).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.reference_data import bench_environment, missing, reference_data

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = reference_data() / "locomo-dev"
CONVERT = ROOT / "bench" / "beir_convert.py"
EVAL = ROOT / "bench" / "retrieval_eval.py"
TIMEOUT_S = 600


def run(*args: str | Path) -> str:
    env = bench_environment()
    done = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if (reason := missing("locomo-dev")) is not None:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("beir") / "locomo-small"
    run(CONVERT, "locomo", LOCOMO, out, "--conversations", "conv-26", "conv-30",
        "--turns", "30")
    return out


def test_locomo_json_becomes_one_document_per_turn_scoped_by_conversation(
        tmp_path: Path) -> None:
    sample = {"sample_id": "conv-x", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_2_date_time": "2 pm on 9 May, 2023", "session_2": [
            {"speaker": "Bo", "dia_id": "D2:1", "text": "Back from Lisbon."}],
        "session_1_date_time": "1 pm on 8 May, 2023", "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat.",
             "blip_caption": "a photo of a grey cat"},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely!"}]},
        "qa": [{"question": "What pet did Ann adopt?", "answer": "a cat",
                "evidence": ["D1:1"], "category": 4},
               {"question": "Unanswerable?", "answer": "", "evidence": [], "category": 5}]}
    source = tmp_path / "locomo10.json"
    source.write_text(json.dumps([sample]), encoding="utf-8")
    out = tmp_path / "beir"
    assert "3 documents, 1 queries, 1 judgements" in run(CONVERT, "locomo", source, out)
    corpus = rows(out / "corpus.jsonl")
    assert [d["_id"] for d in corpus] == ["conv-x:D1:1", "conv-x:D1:2", "conv-x:D2:1"]
    assert corpus[0] == {"_id": "conv-x:D1:1", "title": "",
                         "text": "I adopted a cat. [image: a photo of a grey cat]",
                         "conversation": "conv-x", "session": "session_1",
                         "session_date": "1 pm on 8 May, 2023", "speaker": "Ann"}
    assert rows(out / "queries.jsonl") == [{"_id": "conv-x:q0", "conversation": "conv-x",
                                            "category": 4, "text": "What pet did Ann adopt?"}]
    assert (out / "qrels.tsv").read_text().splitlines() == [
        "query-id\tcorpus-id\tscore", "conv-x:q0\tconv-x:D1:1\t1"]


def test_a_small_set_runs_in_process_and_writes_the_documented_json(
        subset: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    stdout = run(EVAL, "--beir", subset, "--scope-field", "conversation", "--json", out)
    result = json.loads(out.read_text())
    assert set(result) == {"docs", "queries", "modes"}
    assert result["docs"] == 60
    assert result["queries"] > 20
    assert set(result["modes"]) == {"lexical", "semantic", "hybrid"}
    for values in result["modes"].values():
        assert set(values) == {"ndcg@10", "recall@10", "recall@100"}
        assert all(0 < v <= 1 for v in values.values())
    assert "| hybrid |" in stdout


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT_S)
def test_in_process_and_through_the_service_rank_identically(
        subset: Path, tmp_path: Path) -> None:
    rankings = {}
    for path in ("in-process", "service"):
        out = tmp_path / f"{path}.json"
        run(EVAL, "--beir", subset, "--scope-field", "conversation", "--limit", "12",
            "--path", path, "--rankings", out)
        rankings[path] = json.loads(out.read_text())
    assert set(rankings["service"]) == {"lexical", "semantic", "hybrid"}
    assert all(len(r) == 12 for r in rankings["service"].values())
    assert rankings["service"] == rankings["in-process"]
