"""bench/reference_data.py: where the licensed reference sets are read from."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.reference_data import ENVIRONMENT, missing, reference_data


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
