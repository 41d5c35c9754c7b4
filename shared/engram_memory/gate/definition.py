"""The one confirmation-gate ASL definition, shared by the CDK stack and the local service.

The JSON file uses Step Functions ``DefinitionSubstitutions`` placeholders:
``${TableName}`` (the main table) and ``${QueueUrl}`` (the confirmation queue). CDK passes
them as ``definition_substitutions``; local mode applies the template's substitutions
with :func:`render_definition` (local/provisioning.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources

ASL_FILE = "confirmation_gate.asl.json"
SUBSTITUTIONS = ("TableName", "QueueUrl")


def raw_definition() -> str:
    """The ASL text with its ``${...}`` placeholders."""
    return resources.files(__package__).joinpath(ASL_FILE).read_text(encoding="utf-8")


def render_definition(substitutions: Mapping[str, str]) -> str:
    """The ASL with the template's ``DefinitionSubstitutions`` applied (what Step Functions
    does in AWS); every placeholder the file uses must be given."""
    missing = [name for name in SUBSTITUTIONS if name not in substitutions]
    if missing:
        raise ValueError(f"no value for the substitutions {missing}")
    text = raw_definition()
    for name, value in substitutions.items():
        # JSON-escape the value so a substitution can never change the document's shape.
        text = text.replace("${" + name + "}", json.dumps(str(value))[1:-1])
    json.loads(text)
    return text
