"""Create the tenant's resources on moto (local service and moto tests) as the stack does.

Nothing here describes a resource: the tables' shapes and the other resources' properties
are read from ``stack_shapes.json``, generated from the synthesized CDK stack
(``python -m infra.local_shapes``; ``tests/infra/test_local_shapes.py`` fails when it is
stale, ``tests/infra/test_local_mode_matches_template.py`` when what is created here
differs from the template). Only the names are local: each resource is named after its
local name (the template's logical id without CDK's hash) and the tenant.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from engram_memory.gate.definition import render_definition

if TYPE_CHECKING:
    from engram_memory.settings import Settings

SHAPES_FILE = Path(__file__).with_name("stack_shapes.json")
TABLE_ROLES = ("main", "keys", "projection", "ledger")
ClientFactory = Callable[[str], Any]


class UnsupportedProperty(RuntimeError):
    """The template gives a resource a property local mode does not create."""


@cache
def stack_shapes() -> dict[str, Any]:
    """The generated description of what local mode creates."""
    shapes: dict[str, Any] = json.loads(SHAPES_FILE.read_text(encoding="utf-8"))
    return shapes


def _create_table(client: Any, name: str, shape: dict[str, Any]) -> bool:
    """Create one table; False when it already exists (provisioning is re-runnable)."""
    kwargs: dict[str, Any] = {
        "TableName": name,
        "KeySchema": shape["KeySchema"],
        "AttributeDefinitions": shape["AttributeDefinitions"],
        "BillingMode": shape["BillingMode"],
    }
    if shape.get("GlobalSecondaryIndexes"):
        kwargs["GlobalSecondaryIndexes"] = shape["GlobalSecondaryIndexes"]
    if shape["StreamViewType"]:
        kwargs["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": shape["StreamViewType"],
        }
    try:
        client.create_table(**kwargs)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceInUseException":
            return False
        raise
    client.get_waiter("table_exists").wait(TableName=name)
    if shape["PointInTimeRecovery"]:
        client.update_continuous_backups(
            TableName=name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    if shape["TtlAttribute"]:
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": shape["TtlAttribute"]},
        )
    return True


def table_names(settings: Settings) -> dict[str, str]:
    """Each table role's name in this deployment."""
    return {"main": settings.table_name, "keys": settings.key_table_name,
            "projection": settings.projection_table_name,
            "ledger": settings.ledger_table_name}


def create_tables(dynamodb_client: Any, settings: Settings) -> None:
    """Create the main, key, projection and forget-ledger tables with the stack's shapes."""
    tables = stack_shapes()["tables"]
    for role, name in table_names(settings).items():
        _create_table(dynamodb_client, name, tables[role])


def _camel(value: Any) -> Any:
    """CloudFormation's PascalCase property names as the Step Functions API's camelCase."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _only(name: str, props: dict[str, Any], allowed: Iterable[str]) -> None:
    unknown = set(props) - set(allowed)
    if unknown:
        raise UnsupportedProperty(f"{name}: local mode does not create {sorted(unknown)}")


def _attribute_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


class LocalStack:
    """Creates the generated resources on demand, each before what references it."""

    def __init__(self, client: ClientFactory, settings: Settings) -> None:
        """Clients from ``client(service)``; names from ``settings``' tenant and tables."""
        self._factory = client
        self._clients: dict[str, Any] = {}
        self._settings = settings
        self._created: dict[str, dict[str, str]] = {}
        self._account: str | None = None

    def _client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self._factory(service)
        return self._clients[service]

    def physical_name(self, name: str) -> str:
        """A generated resource's name in this deployment."""
        return f"engram-{self._settings.tenant_id}-{name}"

    def _account_id(self) -> str:
        if self._account is None:
            # An ARN already created names the account (saves a client); else ask STS.
            arns = [v["Arn"] for v in self._created.values() if v.get("Arn", "").count(":") >= 5]
            self._account = (arns[0].split(":")[4] if arns else
                             str(self._client("sts").get_caller_identity()["Account"]))
        return self._account

    def value(self, name: str, attribute: str | None) -> str:
        """A ``Ref`` (attribute None) or ``Fn::GetAtt`` value, creating the resource first."""
        pseudo = {"AWS::Partition": "aws", "AWS::Region": self._settings.region,
                  "AWS::URLSuffix": "amazonaws.com"}
        if attribute is None and name in pseudo:
            return pseudo[name]
        if attribute is None and name == "AWS::AccountId":
            return self._account_id()
        if name in TABLE_ROLES and attribute is None:
            return table_names(self._settings)[name]
        if name not in self._created:
            self._created[name] = self._create(name, stack_shapes()["resources"][name])
        return self._created[name]["" if attribute is None else attribute]

    def resolve(self, value: Any) -> Any:
        """``value`` with every Ref/GetAtt resolved and every Fn::Join joined."""
        if isinstance(value, dict):
            if set(value) == {"Fn::Join"}:
                separator, parts = value["Fn::Join"]
                return separator.join(str(self.resolve(p)) for p in parts)
            if set(value) == {"Ref"}:
                return self.value(value["Ref"], None)
            if set(value) == {"Fn::GetAtt"}:
                return self.value(*value["Fn::GetAtt"])
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def environment(self, variables: Iterable[str]) -> dict[str, str]:
        """The template's value of each function variable, creating what it names."""
        generated = stack_shapes()["environment"]
        return {name: str(self.resolve(generated[name])) for name in variables}

    def _create(self, name: str, resource: dict[str, Any]) -> dict[str, str]:
        props = self.resolve(resource["Properties"])
        creators = {
            "AWS::KMS::Key": self._key, "AWS::SQS::Queue": self._queue,
            "AWS::Events::EventBus": self._bus, "AWS::Logs::LogGroup": self._log_group,
            "AWS::IAM::Role": self._role, "AWS::StepFunctions::StateMachine": self._machine,
        }
        return creators[resource["Type"]](name, props)

    def _key(self, name: str, props: dict[str, Any]) -> dict[str, str]:
        _only(name, props, ("KeyPolicy", "EnableKeyRotation", "KeySpec", "KeyUsage"))
        kms = self._client("kms")
        kwargs: dict[str, Any] = {"KeySpec": props.get("KeySpec", "SYMMETRIC_DEFAULT"),
                                  "KeyUsage": props.get("KeyUsage", "ENCRYPT_DECRYPT"),
                                  "Description": self.physical_name(name)}
        if "KeyPolicy" in props:
            kwargs["Policy"] = json.dumps(props["KeyPolicy"])
        metadata = kms.create_key(**kwargs)["KeyMetadata"]
        if props.get("EnableKeyRotation"):
            kms.enable_key_rotation(KeyId=metadata["KeyId"])
        return {"": metadata["KeyId"], "Arn": metadata["Arn"], "KeyId": metadata["KeyId"]}

    def _queue(self, name: str, props: dict[str, Any]) -> dict[str, str]:
        _only(name, props, ("VisibilityTimeout", "MessageRetentionPeriod", "RedrivePolicy",
                            "SqsManagedSseEnabled", "DelaySeconds", "MaximumMessageSize",
                            "ReceiveMessageWaitTimeSeconds"))
        sqs = self._client("sqs")
        queue_name = self.physical_name(name)
        url = str(sqs.create_queue(QueueName=queue_name, Attributes={
            key: _attribute_text(value) for key, value in props.items()})["QueueUrl"])
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        return {"": url, "QueueUrl": url, "Arn": arn, "QueueName": queue_name}

    def _bus(self, name: str, props: dict[str, Any]) -> dict[str, str]:
        _only(name, props, ("Description",))
        events = self._client("events")
        bus = self.physical_name(name)
        try:
            arn = events.create_event_bus(Name=bus, **props)["EventBusArn"]
        except events.exceptions.ResourceAlreadyExistsException:
            arn = events.describe_event_bus(Name=bus)["Arn"]
        return {"": bus, "Name": bus, "Arn": arn}

    def _log_group(self, name: str, props: dict[str, Any]) -> dict[str, str]:
        _only(name, props, ("RetentionInDays",))
        logs = self._client("logs")
        group = f"/aws/vendedlogs/states/{self.physical_name(name)}"
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_group(logGroupName=group)
        if "RetentionInDays" in props:
            logs.put_retention_policy(logGroupName=group,
                                      retentionInDays=int(props["RetentionInDays"]))
        arn = f"arn:aws:logs:{self._settings.region}:{self._account_id()}:log-group:{group}:*"
        return {"": group, "Arn": arn}

    def _role(self, name: str, props: dict[str, Any]) -> dict[str, str]:
        # Its permissions are separate AWS::IAM::Policy resources local mode does not create:
        # nothing enforces IAM locally (the rehearsal runs them, enforced).
        _only(name, props, ("AssumeRolePolicyDocument", "Description", "MaxSessionDuration"))
        iam = self._client("iam")
        role = self.physical_name(name)
        kwargs = {k: v for k, v in props.items() if k != "AssumeRolePolicyDocument"}
        try:
            arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(
                props["AssumeRolePolicyDocument"]), **kwargs)["Role"]["Arn"]
        except iam.exceptions.EntityAlreadyExistsException:
            arn = iam.get_role(RoleName=role)["Role"]["Arn"]
        return {"": role, "Arn": arn, "RoleId": role}

    def _machine(self, name: str, props: dict[str, Any]) -> dict[str, str]:
        _only(name, props, ("DefinitionSubstitutions", "LoggingConfiguration", "RoleArn",
                            "StateMachineType", "TracingConfiguration"))
        definition = render_definition(props.get("DefinitionSubstitutions", {}))
        sfn = self._client("stepfunctions")
        machine = self.physical_name(name)
        kwargs: dict[str, Any] = {"definition": definition, "roleArn": props["RoleArn"]}
        for key in ("LoggingConfiguration", "TracingConfiguration"):
            if key in props:
                kwargs[key[:1].lower() + key[1:]] = _camel(props[key])
        arn = _existing_state_machine(sfn, machine)
        if arn is None:
            arn = str(sfn.create_state_machine(
                name=machine, type=props.get("StateMachineType", "STANDARD"), **kwargs,
            )["stateMachineArn"])
        else:
            sfn.update_state_machine(stateMachineArn=arn, **kwargs)
        return {"": arn, "Arn": arn, "Name": machine}


def _existing_state_machine(sfn_client: Any, name: str) -> str | None:
    for page in sfn_client.get_paginator("list_state_machines").paginate():
        for machine in page.get("stateMachines", []):
            if machine["name"] == name:
                return str(machine["stateMachineArn"])
    return None


def provision_environment(client: ClientFactory, settings: Settings,
                          variables: Iterable[str]) -> dict[str, str]:
    """Create what the template's ``variables`` name (and what those need); their values.

    E.g. ``ENGRAM_KMS_KEY_ID`` creates the tenant key with its policy and rotation;
    ``ENGRAM_STATE_MACHINE_ARN`` the state machine, its role, log group and queue pair.
    """
    return LocalStack(client, settings).environment(variables)


def provisioned_variables() -> tuple[str, ...]:
    """Every function variable whose value is a generated resource."""
    return tuple(sorted(stack_shapes()["environment"]))
