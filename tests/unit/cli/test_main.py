"""``engram-memory --help`` names every command on one line, each registered by its own module
named after it, and building the parser loads no command's dependencies."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from engram_memory.backup.bundle import BundleWriter
from engram_memory.cli import main

CLI_DIR = Path(main.__file__).parent
HEAVY = ("moto", "mcp", "boto3", "botocore", "pydantic", "engram_memory_host",
         "engram_memory.local")
"""What a command loads only when it runs: the embedded service, AWS, the host kit, MCP."""


def command_name(module_name: str) -> str:
    """The command a module is named after: ``-`` for ``_``, no trailing ``_``."""
    return module_name.rstrip("_").replace("_", "-")


def _command_helps() -> dict[str, str]:
    parser = main.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return {choice.dest: str(choice.help) for choice in subparsers._choices_actions}


def test_help_lists_every_command_once_with_its_help_on_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exited:
        main.main(["--help"])
    assert exited.value.code == 0
    listed = capsys.readouterr().out.split("COMMAND", 2)[-1].splitlines()
    helps = _command_helps()
    assert list(helps) == [command_name(name) for name in main.COMMANDS]
    for name, text in helps.items():
        assert len(text) > 10, f"{name} has no help line"
        assert len([row for row in listed if row.split()[:1] == [name]]) == 1, name
        # The whole help on one row of an 80-column terminal (argparse wraps a longer one).
        assert len([row for row in listed if text in row]) == 1, f"{name}'s help wraps"


def test_each_command_module_is_named_after_its_command() -> None:
    registering = {path.stem for path in CLI_DIR.glob("*.py")
                   if any(isinstance(node, ast.FunctionDef) and node.name == "register"
                          for node in ast.parse(path.read_text(encoding="utf-8")).body)}
    assert registering == set(main.COMMANDS)


@pytest.mark.parametrize("name", main.COMMANDS)
def test_each_command_module_registers_its_runner(name: str) -> None:
    module = importlib.import_module(f"engram_memory.cli.{name}")
    parser = main.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert command_name(name) in subparsers.choices
    assert subparsers.choices[command_name(name)].get_default("func") is module.run


def _top_level_imports(tree: ast.Module) -> list[str]:
    """Modules imported when the file is imported (not in functions, not TYPE_CHECKING)."""
    found: list[str] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append(node.module or "")
        else:
            pending.extend(ast.iter_child_nodes(node))
    return found


@pytest.mark.parametrize("name", main.COMMANDS)
def test_a_command_module_imports_only_the_standard_library_at_its_top(name: str) -> None:
    tree = ast.parse((CLI_DIR / f"{name}.py").read_text(encoding="utf-8"))
    outside = [module for module in _top_level_imports(tree)
               if module.split(".")[0] not in sys.stdlib_module_names | {"__future__"}
               and module != "engram_memory.cli" and not module.startswith("engram_memory.cli.")]
    assert outside == [], f"cli/{name}.py imports {outside} on load: import them in run()"


def test_verify_loads_neither_the_service_nor_aws_nor_mcp(tmp_path: Path) -> None:
    bundle = tmp_path / "empty.bundle"
    with bundle.open("wb") as stream:
        BundleWriter(stream, "tenant-a", "ws-main", 0).finish()
    script = (
        "import sys\n"
        "from engram_memory.cli import main\n"
        "try:\n"
        "    main.main(['verify', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "code = main.main(['verify', sys.argv[1]])\n"
        f"heavy = {HEAVY!r}\n"
        "print(code, [h for h in heavy if h in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(bundle)], capture_output=True,
                          text=True, timeout=120, check=True)
    assert "bundle ok" in done.stdout
    assert done.stdout.splitlines()[-1] == "0 []"


def test_an_unknown_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(["frobnicate"])
    assert exited.value.code == 2
