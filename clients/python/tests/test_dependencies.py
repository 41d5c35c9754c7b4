"""The kit installs on its own: none of the server's dependencies, directly or through others."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

KIT = Path(__file__).resolve().parents[1]
SERVER_ONLY = {"boto3", "botocore", "moto", "onnxruntime", "aws-cdk-lib", "aws-lambda-powertools",
               "engram-memory", "tokenizers", "numpy"}  # uvicorn: the MCP SDK needs it
DECLARED = {"pyjwt", "cryptography", "mcp"}


def _name(requirement: str) -> str:
    return canonicalize_name(Requirement(requirement).name)


def _closure(distribution: str) -> set[str]:
    """Every distribution ``distribution`` pulls in on this platform (with the extras its
    requirements name), read from the installed metadata."""
    seen: set[str] = set()
    seen_with_extras: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, frozenset[str]]] = [(distribution, frozenset())]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen_with_extras:
            continue
        seen_with_extras.add((name, extras))
        seen.add(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append((_name(text), frozenset(requirement.extras)))
    return seen


def test_the_kit_declares_only_signing_and_the_mcp_sdk() -> None:
    project = tomllib.loads((KIT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert {_name(r) for r in project["dependencies"]} == DECLARED
    assert "optional-dependencies" not in project


def test_installing_the_kit_pulls_none_of_the_server_dependencies() -> None:
    needed = _closure("engram-memory-host")
    assert needed >= DECLARED
    assert not needed & SERVER_ONLY, needed & SERVER_ONLY


def test_importing_the_kit_loads_no_server_module() -> None:
    probe = ("import sys, engram_memory_host, engram_memory_host.conformance; "
             "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                                text=True).stdout.split())
    assert "engram_memory_host" in loaded
    assert not loaded & {"engram_memory", "boto3", "botocore", "moto", "onnxruntime",
                         "aws_cdk"}, loaded
