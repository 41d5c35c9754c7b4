"""What the code publishes to CloudWatch, read from the code itself (not a list kept here).

Every module of ``shared/engram_memory`` and ``functions/`` that calls ``add_metric`` or
``log_metrics`` is parsed; each call's receiver is resolved by importing the module (a
Powertools ``Metrics`` instance gives the namespace and service dimension it publishes
under). A metric name is a literal, an f-string (each ``{…}`` part matches an identifier),
or a parameter of a helper whose callers pass literals / f-strings. ``log_metrics(...,
capture_cold_start_metric=True | capture_cold_starts())`` adds Powertools' ``ColdStart``
metric, with the extra ``function_name`` dimension.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from aws_lambda_powertools import Metrics

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "shared" / "engram_memory", ROOT / "functions")
COLD_START = "ColdStart"


@dataclass
class Publisher:
    """One Metrics object: its namespace, service dimension and the names it may publish."""

    namespace: str
    service: str
    names: list[re.Pattern[str]] = field(default_factory=list)
    cold_start: bool = False

    def publishes(self, name: str, dimensions: set[str]) -> bool:
        """True when a metric of this name and these dimension names comes from here."""
        if name == COLD_START:
            return self.cold_start and dimensions == {"service", "function_name"}
        return dimensions == {"service"} and any(p.fullmatch(name) for p in self.names)


def _on(value: ast.expr) -> bool:
    """``True``, or ``capture_cold_starts()`` (on wherever metrics are: AWS)."""
    if isinstance(value, ast.Constant):
        return value.value is True
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "capture_cold_starts")


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT / "shared" if path.is_relative_to(ROOT / "shared")
                                else ROOT)
    return ".".join(relative.with_suffix("").parts)


def _pattern(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(re.escape(part.value) if isinstance(part, ast.Constant)
                       else "[A-Za-z0-9_]+" for part in node.values)
    return None


def _name_argument(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "name":
            return keyword.value
    return call.args[0] if call.args else None


def _callers_patterns(tree: ast.Module, function: str) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == function):
            argument = _name_argument(node)
            pattern = _pattern(argument) if argument is not None else None
            assert pattern is not None, f"{function}: a metric name the scan cannot read"
            found.append(pattern)
    return found


def _enclosing_functions(tree: ast.Module) -> dict[ast.AST, ast.FunctionDef]:
    owner: dict[ast.AST, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for inner in ast.walk(node):
                owner.setdefault(inner, node)
    return owner


def publishers() -> dict[tuple[str, str], Publisher]:
    """(namespace, service) → what is published under it, from every module's source."""
    out: dict[tuple[str, str], Publisher] = {}
    for source in SOURCES:
        for path in sorted(source.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "add_metric" not in text and "log_metrics" not in text:
                continue
            tree = ast.parse(text)
            module = importlib.import_module(_module_name(path))
            owner = _enclosing_functions(tree)
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name)
                        and node.func.attr in ("add_metric", "log_metrics")):
                    continue
                metrics = getattr(module, node.func.value.id, None)
                if not isinstance(metrics, Metrics):
                    continue
                key = (str(metrics.namespace), str(metrics.service))
                publisher = out.setdefault(key, Publisher(*key))
                if node.func.attr == "log_metrics":
                    publisher.cold_start |= any(
                        k.arg == "capture_cold_start_metric" and _on(k.value)
                        for k in node.keywords)
                    continue
                argument = _name_argument(node)
                assert argument is not None
                pattern = _pattern(argument)
                if pattern is not None:
                    publisher.names.append(re.compile(pattern))
                    continue
                # A helper's parameter: its callers name the metrics.
                assert isinstance(argument, ast.Name), f"{path}: unreadable metric name"
                helper = owner[node]
                assert argument.id in [a.arg for a in helper.args.args], path
                publisher.names += [re.compile(p) for p in _callers_patterns(tree, helper.name)]
    return out
