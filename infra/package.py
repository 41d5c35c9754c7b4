"""The ``package`` step and the Lambda asset staging used at synth time.

``python infra/package.py`` downloads the run-time dependencies of pyproject.toml as
manylinux aarch64 wheels for the Lambda Python version into ``build/lambda/python``; the
stack then ships that directory as a Lambda layer. It needs a package index, so it is a
separate, explicit step. Synthesis never needs the network: without the layer directory
the stack deploys the source asset alone (see docs/deploy.md, "The package step").
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON_VERSION = "3.13"  # keep in step with the Lambda runtime in infra/constructs/functions.py
PLATFORM = "manylinux2014_aarch64"
LAYER_DIR = REPO_ROOT / "build" / "lambda"  # the layer asset: contains python/
LAYER_PACKAGES = LAYER_DIR / "python"
# Never shipped: caches and compiled files change the asset hash without changing the code.
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The run-time dependencies of the engram-memory package (pyproject ``dependencies``)."""
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return [str(req) for req in data["project"]["dependencies"]]


def pip_command(requirements: list[str], target: Path = LAYER_PACKAGES) -> list[str]:
    """The pip invocation that fetches Lambda-platform wheels (binary only, no builds)."""
    return [
        sys.executable, "-m", "pip", "install",
        "--platform", PLATFORM,
        "--implementation", "cp",
        "--python-version", PYTHON_VERSION,
        "--only-binary=:all:",
        "--upgrade",
        "--target", str(target),
        *requirements,
    ]


def build_layer(target: Path = LAYER_PACKAGES) -> Path:
    """Run the package step: a clean ``build/lambda/python`` with the dependencies."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    subprocess.run(pip_command(runtime_requirements(), target), check=True)  # noqa: S603
    for cache in target.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    return target.parent


def packaged_layer_dir(layer_dir: Path = LAYER_DIR) -> Path | None:
    """The layer directory when the package step has run, else None."""
    packages = layer_dir / "python"
    if packages.is_dir() and any(packages.iterdir()):
        return layer_dir
    return None


def stage_source(repo_root: Path = REPO_ROOT, dest: Path | None = None) -> Path:
    """Copy ``shared/engram_memory`` and ``functions/`` into one directory for the code asset.

    Every function ships the same asset; its handler is ``functions.<name>.handler``.
    """
    if dest is None:
        dest = Path(tempfile.mkdtemp(prefix="engram-lambda-src-"))
        atexit.register(shutil.rmtree, dest, True)
    shutil.copytree(repo_root / "shared" / "engram_memory", dest / "engram_memory",
                    ignore=_IGNORED, dirs_exist_ok=True)
    shutil.copytree(repo_root / "functions", dest / "functions",
                    ignore=_IGNORED, dirs_exist_ok=True)
    return dest


def main() -> int:
    """Entry point of ``python infra/package.py``."""
    layer = build_layer()
    print(f"Lambda dependencies for Python {PYTHON_VERSION} arm64 are in {layer}/python")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
