"""Minting a token does not load the MCP SDK: the session helpers load on first use."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_kit_imports_without_the_mcp_sdk() -> None:
    loaded = _modules_after("import engram_memory_host")
    assert "mcp" not in loaded
    assert "engram_memory_host.session" not in loaded


def test_the_session_helpers_load_on_first_use() -> None:
    loaded = _modules_after(
        "import engram_memory_host as kit\nkit.memory_session\nkit.RefreshingBearer")
    assert "mcp" in loaded
    assert "engram_memory_host.session" in loaded


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    loaded = _modules_after(
        "import engram_memory_host as kit\n"
        "try:\n    kit.nothing_here\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit(1)")
    assert "mcp" not in loaded
