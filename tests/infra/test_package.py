"""The package step targets the Lambda platform; synth stages the source without it."""

from __future__ import annotations

import tomllib
from typing import TYPE_CHECKING

import pytest

from infra.constructs.functions import ARCHITECTURE, RUNTIME
from infra.package import (
    PYTHON_VERSION,
    REPO_ROOT,
    packaged_layer_dir,
    pip_command,
    runtime_requirements,
    stage_source,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.infra


def test_the_layer_is_built_for_the_lambda_runtime_and_architecture() -> None:
    command = pip_command(["pydantic>=2"])
    assert command[command.index("--platform") + 1] == "manylinux2014_aarch64"
    assert command[command.index("--python-version") + 1] == PYTHON_VERSION
    assert "--only-binary=:all:" in command
    assert RUNTIME.name == f"python{PYTHON_VERSION}"
    assert ARCHITECTURE.name == "arm64"


def test_the_layer_holds_exactly_the_run_time_dependencies() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert runtime_requirements() == pyproject["project"]["dependencies"]
    command = pip_command(runtime_requirements())
    assert command[-len(runtime_requirements()):] == runtime_requirements()


def test_without_the_package_step_there_is_no_layer(tmp_path: Path) -> None:
    assert packaged_layer_dir(tmp_path) is None
    (tmp_path / "python").mkdir()
    assert packaged_layer_dir(tmp_path) is None
    (tmp_path / "python" / "pydantic").mkdir()
    assert packaged_layer_dir(tmp_path) == tmp_path


def test_the_source_asset_holds_the_package_and_the_handlers_without_caches(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "shared" / "engram_memory" / "__pycache__").mkdir(parents=True)
    (repo / "shared" / "engram_memory" / "__init__.py").write_text("")
    (repo / "shared" / "engram_memory" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (repo / "functions" / "search").mkdir(parents=True)
    (repo / "functions" / "search" / "handler.py").write_text("def lambda_handler(): ...\n")
    (repo / "tests").mkdir()
    staged = stage_source(repo, tmp_path / "asset")
    assert (staged / "engram_memory" / "__init__.py").is_file()
    assert (staged / "functions" / "search" / "handler.py").is_file()
    assert not (staged / "engram_memory" / "__pycache__").exists()
    assert sorted(p.name for p in staged.iterdir()) == ["engram_memory", "functions"]
