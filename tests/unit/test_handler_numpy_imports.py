"""Only the search function imports numpy (its columns of postings need it).

numpy costs ≈ 0.1 s of a cold start; every other function (the projector, which writes the
same posting blocks, included) must not pay it: a fresh interpreter imports each handler
and reports whether numpy came with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
_PROGRAM = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
importlib.import_module("handler")
print(json.dumps("numpy" in sys.modules))
"""


def _imports_numpy(function: str) -> bool:
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(FUNCTIONS / function)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1",
                               "POWERTOOLS_TRACE_DISABLED": "true"})
    assert done.returncode == 0, done.stderr[-2000:]
    return bool(json.loads(done.stdout))


@pytest.mark.parametrize("function", sorted(
    d.name for d in FUNCTIONS.iterdir() if (d / "handler.py").exists() and d.name != "search"))
def test_functions_other_than_search_do_not_import_numpy(function: str) -> None:
    assert not _imports_numpy(function)


def test_search_imports_numpy() -> None:
    assert _imports_numpy("search")
