"""``engram-memory --help`` names every command, each registered by its own module."""

from __future__ import annotations

import importlib

import pytest
from engram_memory.cli import main


def test_help_lists_every_command_with_its_one_line_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(["--help"])
    assert exited.value.code == 0
    listed = capsys.readouterr().out.split("COMMAND", 2)[-1].splitlines()
    for module_name in main.COMMANDS:
        name = main.command_name(module_name)
        [at] = [i for i, row in enumerate(listed) if row.strip().split(" ")[0] == name]
        # argparse puts a long command's help on the next line.
        text = listed[at].strip()[len(name):].strip() or listed[at + 1].strip()
        assert len(text) > 10, f"{name} has no help line"


@pytest.mark.parametrize("name", main.COMMANDS)
def test_each_command_module_registers_its_runner(name: str) -> None:
    module = importlib.import_module(f"engram_memory.cli.{name}")
    parser = main.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert main.command_name(name) in subparsers.choices
    assert subparsers.choices[main.command_name(name)].get_default("func") is module.run


def test_an_unknown_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(["frobnicate"])
    assert exited.value.code == 2
