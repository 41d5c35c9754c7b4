"""Read-only views over a synthesized template: who (which function) may do what."""

from __future__ import annotations

from typing import Any

from infra.names import FUNCTIONS


def as_list(value: Any) -> list[Any]:
    """CloudFormation allows a scalar or a list in Action/Resource."""
    return value if isinstance(value, list) else [value]


def logical_id_of(resources: dict[str, Any], cfn_type: str, path_part: str) -> str:
    """The one resource of a type whose logical id contains ``path_part``."""
    found = [lid for lid, r in resources.items() if r["Type"] == cfn_type and path_part in lid]
    assert len(found) == 1, (cfn_type, path_part, found)
    return found[0]


def function_logical_ids(template: dict[str, Any]) -> dict[str, str]:
    """Function name (from its handler) -> logical id of the AWS::Lambda::Function."""
    out = {}
    for lid, r in template["Resources"].items():
        if r["Type"] == "AWS::Lambda::Function":
            handler = r["Properties"]["Handler"]  # functions.<name>.handler.lambda_handler
            out[handler.split(".")[1]] = lid
    return out


def role_of(template: dict[str, Any], function: str) -> str:
    """The logical id of a function's role."""
    fn = template["Resources"][function_logical_ids(template)[function]]
    return str(fn["Properties"]["Role"]["Fn::GetAtt"][0])


def statements_of_role(template: dict[str, Any], role_lid: str) -> list[dict[str, Any]]:
    """Every IAM policy statement attached to a role (inline or AWS::IAM::Policy)."""
    out: list[dict[str, Any]] = []
    for r in template["Resources"].values():
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_lid} in r["Properties"]["Roles"]:
            out += r["Properties"]["PolicyDocument"]["Statement"]
    role = template["Resources"][role_lid]
    for policy in role["Properties"].get("Policies", []):
        out += policy["PolicyDocument"]["Statement"]
    return out


def statements_by_function(template: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Function name -> its role's statements, for all eleven functions."""
    return {name: statements_of_role(template, role_of(template, name)) for name in FUNCTIONS}


def actions(statement: dict[str, Any]) -> set[str]:
    """The statement's actions as a set."""
    return set(as_list(statement["Action"]))


def refers_to(resource: Any, logical_id: str) -> bool:
    """Whether a Resource entry is (an attribute of) the given logical id."""
    if isinstance(resource, dict):
        if resource.get("Ref") == logical_id:
            return True
        if "Fn::GetAtt" in resource:
            return bool(resource["Fn::GetAtt"][0] == logical_id)
        return any(refers_to(v, logical_id) for v in resource.values())
    if isinstance(resource, list):
        return any(refers_to(v, logical_id) for v in resource)
    return False
