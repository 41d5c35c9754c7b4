"""The package step installs exactly the lock, and the lock covers pyproject for Lambda."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from infra.constructs.functions import ARCHITECTURE, RUNTIME
from infra.layer_lock import (
    dependencies_digest,
    layer_wheels,
    parse_lock,
    render_lock,
    unmet_requirements,
    wheels_from_report,
)
from infra.names import FUNCTIONS
from infra.package import (
    LOCK_PATH,
    PYTHON_VERSION,
    build_layer,
    layer_requirements,
    packaged_layer_dir,
    pip_command,
    runtime_requirements,
    stage_source,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.infra


def _option_values(command: list[str], option: str) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == option]


def test_the_layer_is_installed_from_the_lock_with_hashes_for_the_lambda_platform(
        tmp_path: Path) -> None:
    command = pip_command(tmp_path / "python", tmp_path / "requirements.txt")
    assert _option_values(command, "--requirement") == [str(tmp_path / "requirements.txt")]
    assert "--require-hashes" in command
    assert "--no-deps" in command  # the requirements are the lock's whole closure
    assert "--upgrade" not in command
    assert set(_option_values(command, "--platform")) == {
        "manylinux_2_28_aarch64", "manylinux2014_aarch64"}
    assert _option_values(command, "--python-version") == [PYTHON_VERSION]
    assert "--only-binary=:all:" in command
    assert RUNTIME.name == f"python{PYTHON_VERSION}"
    assert ARCHITECTURE.name == "arm64"


def test_the_lock_was_made_from_the_current_pyproject_dependencies() -> None:
    digest, _ = parse_lock(LOCK_PATH.read_text(encoding="utf-8"))
    assert digest == dependencies_digest(runtime_requirements()), (
        "pyproject dependencies changed: run `python infra/package.py lock`")


def test_the_lock_covers_every_run_time_dependency_on_the_lambda_platform() -> None:
    _, wheels = parse_lock(LOCK_PATH.read_text(encoding="utf-8"))
    assert {"boto3", "pydantic", "pydantic-core", "cryptography", "mcp",
            "aws-xray-sdk"} <= set(wheels)
    assert unmet_requirements(runtime_requirements(), wheels) == []
    for wheel in wheels.values():
        assert len(wheel.sha256) == 64, wheel.name


def _report_item(name: str, version: str, requires: list[str], extras: list[str] | None = None,
                 sha: str = "a" * 64) -> dict[str, object]:
    return {"metadata": {"name": name, "version": version, "requires_dist": requires},
            "requested_extras": extras,
            "download_info": {"archive_info": {"hashes": {"sha256": sha}}}}


def test_the_layer_installs_every_locked_wheel_but_the_unused_and_what_only_they_need(
) -> None:
    _, locked = parse_lock(LOCK_PATH.read_text(encoding="utf-8"))
    pinned = {line.split("==")[0].split("[")[0]: line
              for line in layer_requirements().splitlines()}
    assert "huggingface-hub" in locked  # tokenizers requires it ...
    assert {"huggingface-hub", "hf-xet", "fsspec", "filelock", "pyyaml", "tqdm"} & set(
        pinned) == set()  # ... the run time never imports it
    assert {"tokenizers", "onnxruntime", "numpy", "click", "mcp", "boto3"} <= set(pinned)
    assert set(pinned) == set(locked) - {"huggingface-hub", "hf-xet", "fsspec", "filelock",
                                         "pyyaml", "tqdm"}
    for name, line in pinned.items():
        assert line.endswith(f"--hash=sha256:{locked[name].sha256}"), name


def test_pruning_keeps_what_another_kept_wheel_still_requires() -> None:
    report = {"install": [_report_item("app", "1", ["tok", "server"]),
                          _report_item("tok", "1", ["hub"]),
                          _report_item("hub", "1", ["shared", "hub-only"]),
                          _report_item("server", "1", ["shared"]),
                          _report_item("shared", "1", []),
                          _report_item("hub-only", "1", [])]}
    _, wheels = parse_lock(render_lock(wheels_from_report(report), dependencies=[],
                                       header="h"))
    kept = layer_wheels(["app"], wheels, frozenset({"hub"}))
    assert [w.name for w in kept] == ["app", "server", "shared", "tok"]


def test_markers_are_evaluated_for_lambda_not_for_the_machine_that_locks() -> None:
    report = {"install": [
        _report_item("Tool", "1.0", [
            "needed-on-313>=2; python_version >= '3.13'",
            "old-backport; python_version < '3.12'",
            "arm-only; platform_machine == 'aarch64'",
            "x86-only; platform_machine == 'x86_64'",
            "traced>=1; extra == 'tracer'",
            "unused; extra == 'other'",
        ], extras=["tracer"]),
        _report_item("needed-on-313", "2.1", []),
        _report_item("traced", "1.0", []),
    ]}
    text = render_lock(wheels_from_report(report), dependencies=["tool[tracer]"], header="h")
    _, wheels = parse_lock(text)
    assert wheels["tool"].requires == ("arm-only", "needed-on-313>=2", "traced>=1")
    assert wheels["tool"].extras == ("tracer",)
    # arm-only is a Lambda-only need the resolution did not bring: the lock is refused.
    assert unmet_requirements(["tool[tracer]"], wheels) == [
        "arm-only (wanted by tool): not locked"]


def test_an_unlocked_or_mismatched_dependency_is_reported() -> None:
    report = {"install": [_report_item("tool", "1.0", ["dep>=2"]),
                          _report_item("dep", "1.5", [])]}
    _, wheels = parse_lock(render_lock(wheels_from_report(report), dependencies=[],
                                       header="h"))
    assert unmet_requirements(["tool>=1", "absent", "tool[x]"], wheels) == [
        "absent (wanted by pyproject): not locked",
        "tool[x] (wanted by pyproject): extras not locked",
        "dep>=2 (wanted by tool): locked 1.5",
    ]


def test_the_layer_steps_run_in_order_on_a_clean_root(tmp_path: Path) -> None:
    root = tmp_path / "lambda"
    (root / "stale").mkdir(parents=True)
    seen: list[str] = []

    def wheels(layer: Path) -> None:
        seen.append("wheels")
        (layer / "python" / "pkg" / "__pycache__").mkdir(parents=True)

    def model(layer: Path) -> None:
        seen.append("model")
        (layer / "models").mkdir()

    assert build_layer(root, [wheels, model]) == root
    assert seen == ["wheels", "model"]
    assert sorted(p.name for p in root.iterdir()) == ["models", "python"]
    assert packaged_layer_dir(root) == root


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


def test_every_function_imports_from_the_asset_that_leaves_local_code_out(
        tmp_path: Path) -> None:
    staged = stage_source(dest=tmp_path / "asset")
    assert not (staged / "engram_memory" / "local").exists()
    # A fresh interpreter that sees the asset and the installed dependencies, not the
    # checkout: each handler (and what it imports at load) must be in the asset.
    modules = [f"functions.{name}.handler" for name in FUNCTIONS]
    child = ("import importlib, sys\n"
             "for name in sys.argv[1:]:\n"
             "    importlib.import_module(name)\n"
             "assert not [m for m in sys.modules if m.startswith('engram_memory.local')]\n"
             "assert all(m.__file__.startswith(sys.path[0]) for n, m in sys.modules.items()\n"
             "           if n.startswith('engram_memory') and getattr(m, '__file__', None))\n")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ENGRAM_", "PYTHONPATH"))}
    result = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, "
                             f"{str(staged)!r}); exec({child!r})", *modules],
                            env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
