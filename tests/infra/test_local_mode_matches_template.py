"""What local mode creates on moto is what the synthesized template declares.

Local provisioning (``make serve``, the moto fixtures) is run in moto, and each created
resource is described and compared with the template's own properties (not with the
generated file it was made from): a hand edit of that file, or a property the generator
or the creator drops, fails here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from engram_memory import env_names
from engram_memory.local.provisioning import (
    create_tables,
    provision_environment,
    provisioned_variables,
    table_names,
)
from engram_memory.settings import Settings
from moto import mock_aws

from tests.infra.conftest import Synthesized

REGION = "us-east-1"
TABLE_OUTPUTS = {"main": "MainTableName", "keys": "KeyTableName",
                 "projection": "ProjectionTableName", "ledger": "LedgerTableName"}


class Local:
    """Local mode's resources in moto, with the environment it derived."""

    def __init__(self, settings: Settings, environment: dict[str, str]) -> None:
        self.settings = settings
        self.environment = environment
        self.account = boto3.client("sts", region_name=REGION).get_caller_identity()["Account"]

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION)

    def pseudo(self, value: Any) -> Any:
        """``value`` with the pseudo parameters and Fn::Join resolved for this account."""
        if isinstance(value, dict):
            if set(value) == {"Fn::Join"}:
                separator, parts = value["Fn::Join"]
                return separator.join(str(self.pseudo(p)) for p in parts)
            if set(value) == {"Ref"} and value["Ref"].startswith("AWS::"):
                return {"AWS::AccountId": self.account, "AWS::Partition": "aws",
                        "AWS::Region": REGION}[value["Ref"]]
            return {k: self.pseudo(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.pseudo(v) for v in value]
        return value


@pytest.fixture(scope="module")
def local(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[Local]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": REGION, "ENGRAM_TENANT_ID": "acme",
                        "ENGRAM_WORKSPACE_IDS": "default", "ENGRAM_TABLE_NAME": "t-main",
                        "ENGRAM_KEY_TABLE_NAME": "t-keys",
                        "ENGRAM_PROJECTION_TABLE_NAME": "t-projection",
                        "ENGRAM_LEDGER_TABLE_NAME": "t-ledger",
                        "ENGRAM_PAGE_CURSOR_SECRET": "x"}.items():
        monkeypatch_module.setenv(name, value)
    monkeypatch_module.delenv("ENGRAM_AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        settings = Settings.from_env()
        create_tables(boto3.client("dynamodb", region_name=REGION), settings)
        environment = provision_environment(
            lambda service: boto3.client(service, region_name=REGION), settings,
            provisioned_variables())
        yield Local(settings, environment)


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()


def _function_environment(synthesized: Synthesized) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for resource in synthesized.resources("AWS::Lambda::Function").values():
        merged.update(resource["Properties"].get("Environment", {}).get("Variables", {}))
    return merged


def _referenced(synthesized: Synthesized, variable: str) -> tuple[str, dict[str, Any]]:
    """The logical id and properties of what the functions' ``variable`` names."""
    value = _function_environment(synthesized)[variable]
    lid = value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0]
    return lid, synthesized.template["Resources"][lid].get("Properties", {})


def _local_value_of(local: Local, synthesized: Synthesized, reference: dict[str, Any]) -> str:
    """What local mode made of a template Ref (a table or a resource a variable names)."""
    lid = reference["Ref"]
    for role, output in TABLE_OUTPUTS.items():
        if synthesized.template["Outputs"][output]["Value"] == {"Ref": lid}:
            return table_names(local.settings)[role]
    for variable, value in _function_environment(synthesized).items():
        if value == {"Ref": lid}:
            return local.environment[variable]
    raise AssertionError(f"local mode has no value for {lid}")


def test_every_resource_variable_of_the_template_is_provisioned(
        local: Local, synthesized: Synthesized) -> None:
    environment = _function_environment(synthesized)
    expected = {name for name, value in environment.items()
                if isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value)
                and synthesized.template["Resources"].get(
                    value.get("Ref") or value["Fn::GetAtt"][0], {}).get("Type") in {
                    "AWS::KMS::Key", "AWS::SQS::Queue", "AWS::Events::EventBus",
                    "AWS::StepFunctions::StateMachine"}}
    assert set(local.environment) == expected


def test_each_table_has_the_template_shape(local: Local, synthesized: Synthesized) -> None:
    dynamodb = local.client("dynamodb")
    for role, output in TABLE_OUTPUTS.items():
        lid = synthesized.template["Outputs"][output]["Value"]["Ref"]
        props = synthesized.template["Resources"][lid]["Properties"]
        name = table_names(local.settings)[role]
        table = dynamodb.describe_table(TableName=name)["Table"]
        assert table["KeySchema"] == props["KeySchema"], role
        assert sorted(table["AttributeDefinitions"], key=json.dumps) == \
            sorted(props["AttributeDefinitions"], key=json.dumps), role
        assert table["BillingModeSummary"]["BillingMode"] == props["BillingMode"], role
        indexes = {i["IndexName"]: (i["KeySchema"], i["Projection"])
                   for i in table.get("GlobalSecondaryIndexes", [])}
        assert indexes == {i["IndexName"]: (i["KeySchema"], i["Projection"])
                           for i in props.get("GlobalSecondaryIndexes", [])}, role
        stream = props.get("StreamSpecification")
        assert table.get("StreamSpecification", {}).get("StreamViewType") == \
            (stream or {}).get("StreamViewType"), role
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        assert ttl.get("AttributeName") == props["TimeToLiveSpecification"]["AttributeName"]
        pitr = dynamodb.describe_continuous_backups(TableName=name)[
            "ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
        declared = props.get("PointInTimeRecoverySpecification", {}).get(
            "PointInTimeRecoveryEnabled", False)
        assert (pitr["PointInTimeRecoveryStatus"] == "ENABLED") is declared, role


def _assert_queue(local: Local, synthesized: Synthesized, url: str,
                  props: dict[str, Any]) -> None:
    sqs = local.client("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    for name in ("VisibilityTimeout", "MessageRetentionPeriod"):
        assert attributes.get(name) == (str(props[name]) if name in props else
                                        attributes.get(name)), name
    assert attributes.get("SqsManagedSseEnabled", "false") == \
        str(props.get("SqsManagedSseEnabled", False)).lower()
    if "RedrivePolicy" not in props:
        assert "RedrivePolicy" not in attributes
        return
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["maxReceiveCount"] == props["RedrivePolicy"]["maxReceiveCount"]
    dlq_lid = props["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    dlq_url = sqs.get_queue_url(QueueName=redrive["deadLetterTargetArn"].rsplit(":", 1)[1])[
        "QueueUrl"]
    _assert_queue(local, synthesized, dlq_url,
                  synthesized.template["Resources"][dlq_lid]["Properties"])


def test_the_confirmation_queue_and_its_dlq_have_the_template_attributes(
        local: Local, synthesized: Synthesized) -> None:
    _lid, props = _referenced(synthesized, env_names.CONFIRMATION_QUEUE_URL)
    assert "RedrivePolicy" in props  # the template's queue has a DLQ: so must local mode's
    _assert_queue(local, synthesized, local.environment[env_names.CONFIRMATION_QUEUE_URL], props)


def test_the_tenant_key_has_the_template_policy_for_the_account_and_rotation(
        local: Local, synthesized: Synthesized) -> None:
    kms = local.client("kms")
    _lid, props = _referenced(synthesized, env_names.KMS_KEY_ID)
    key = local.environment[env_names.KMS_KEY_ID]
    policy = json.loads(kms.get_key_policy(KeyId=key, PolicyName="default")["Policy"])
    # Local mode runs every function as the account's principal: the statements for it.
    root = f"arn:aws:iam::{local.account}:root"
    declared = [s for s in local.pseudo(props["KeyPolicy"]["Statement"])
                if s["Principal"] == {"AWS": root}]
    assert declared
    assert policy == {**local.pseudo(props["KeyPolicy"]), "Statement": declared}
    assert kms.get_key_rotation_status(KeyId=key)["KeyRotationEnabled"] is \
        bool(props.get("EnableKeyRotation"))


def test_the_host_event_bus_exists(local: Local, synthesized: Synthesized) -> None:
    _lid, props = _referenced(synthesized, env_names.CONFIRMATION_EVENT_BUS)
    bus = local.client("events").describe_event_bus(
        Name=local.environment[env_names.CONFIRMATION_EVENT_BUS])
    assert bus.get("Description") == props.get("Description")


def test_the_state_machine_has_the_template_definition_type_logging_and_role(
        local: Local, synthesized: Synthesized) -> None:
    resources = synthesized.template["Resources"]
    _lid, props = _referenced(synthesized, env_names.STATE_MACHINE_ARN)
    described = local.client("stepfunctions").describe_state_machine(
        stateMachineArn=local.environment[env_names.STATE_MACHINE_ARN])
    definition = props["DefinitionString"]
    for key, reference in props["DefinitionSubstitutions"].items():
        value = _local_value_of(local, synthesized, reference)
        definition = definition.replace("${" + key + "}", value)
    assert json.loads(described["definition"]) == json.loads(definition)
    assert described["type"] == props["StateMachineType"]
    logging = described["loggingConfiguration"]
    assert logging["level"] == props["LoggingConfiguration"]["Level"]
    assert logging["includeExecutionData"] is props["LoggingConfiguration"][
        "IncludeExecutionData"]
    [destination] = logging["destinations"]
    group = destination["cloudWatchLogsLogGroup"]["logGroupArn"].split(":log-group:")[1]
    group = group.removesuffix(":*")
    group_lid = props["LoggingConfiguration"]["Destinations"][0]["CloudWatchLogsLogGroup"][
        "LogGroupArn"]["Fn::GetAtt"][0]
    [stored] = local.client("logs").describe_log_groups(logGroupNamePrefix=group)["logGroups"]
    assert stored.get("retentionInDays") == resources[group_lid]["Properties"].get(
        "RetentionInDays")
    assert described["tracingConfiguration"]["enabled"] is \
        props["TracingConfiguration"]["Enabled"]
    role_lid = props["RoleArn"]["Fn::GetAtt"][0]
    role = local.client("iam").get_role(RoleName=described["roleArn"].rsplit("/", 1)[1])
    assert role["Role"]["AssumeRolePolicyDocument"] == local.pseudo(
        resources[role_lid]["Properties"]["AssumeRolePolicyDocument"])
