"""bench/reference_data.py: where the licensed reference sets are read from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.reference_data import ENVIRONMENT, bench_environment, missing, reference_data


def test_the_variable_names_the_folder_and_a_missing_set_says_what_and_how(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path))
    (tmp_path / "cranfield").mkdir()
    assert reference_data() == tmp_path
    assert missing("cranfield") is None
    reason = missing("cranfield", "locomo-dev")
    assert reason is not None
    assert "locomo-dev" in reason
    assert "cranfield," not in reason
    assert ENVIRONMENT in reason


def test_without_the_variable_the_sets_beside_the_checkout_are_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert reference_data() == Path(__file__).resolve().parents[3] / "shared" / "data"


def test_a_bench_started_by_a_test_keeps_where_the_sets_are_and_nothing_else_of_ours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path))
    monkeypatch.setenv("ENGRAM_TABLE_NAME", "someone-elses")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    env = bench_environment()
    assert env[ENVIRONMENT] == str(tmp_path)
    assert "ENGRAM_TABLE_NAME" not in env
    assert "AWS_ENDPOINT_URL" not in env
    assert env["PATH"] == os.environ["PATH"]
