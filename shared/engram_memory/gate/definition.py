"""The one confirmation-gate ASL definition, shared by the CDK stack and the local service.

The JSON file uses Step Functions ``DefinitionSubstitutions`` placeholders:
``${TableName}`` (the main table) and ``${QueueUrl}`` (the confirmation queue). CDK passes
them as ``definition_substitutions``; the local service substitutes them here.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

ASL_FILE = "confirmation_gate.asl.json"
SUBSTITUTIONS = ("TableName", "QueueUrl")


def asl_path() -> Path:
    """Filesystem path of the ASL file (CDK's ``DefinitionBody.from_file``)."""
    return Path(str(resources.files(__package__).joinpath(ASL_FILE)))


def raw_definition() -> str:
    """The ASL text with its ``${...}`` placeholders."""
    return resources.files(__package__).joinpath(ASL_FILE).read_text(encoding="utf-8")


def render_definition(table_name: str, queue_url: str) -> str:
    """The ASL with substitutions applied (what CloudFormation does in AWS)."""
    values = {"TableName": table_name, "QueueUrl": queue_url}
    text = raw_definition()
    for name in SUBSTITUTIONS:
        # JSON-escape the value so a substitution can never change the document's shape.
        text = text.replace("${" + name + "}", json.dumps(values[name])[1:-1])
    json.loads(text)
    return text
