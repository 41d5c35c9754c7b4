"""What came up in moto is what the template declares (not just a CREATE_COMPLETE)."""

from __future__ import annotations

import json
from typing import Any

from tests.rehearsal.harness import Rehearsal
from tests.rehearsal.stand_up import READER_TYPES, Resolver


def _actions(document: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for statement in document["Statement"]:
        action = statement["Action"]
        out |= set(action if isinstance(action, list) else [action])
    return out


def test_the_stack_is_created_with_the_reader_types_beside_it(rehearsal: Rehearsal) -> None:
    cfn = rehearsal.client("cloudformation")
    [stack] = cfn.describe_stacks(StackName=rehearsal.stood.stack_name)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert set(rehearsal.stood.by_reader.values()) <= set(READER_TYPES)
    assert set(rehearsal.stood.outputs) >= {"MainTableName", "KeyTableName",
                                            "ProjectionTableName", "HostEventBusName"}


def test_each_table_has_the_template_keys_stream_and_ttl(rehearsal: Rehearsal) -> None:
    dynamodb = rehearsal.client("dynamodb")
    tables = rehearsal.stood.resources("AWS::DynamoDB::Table")
    assert len(tables) == 4  # main, keys, projection, the forget ledger
    for lid, resource in tables.items():
        props = resource["Properties"]
        name = rehearsal.stood.physical[lid]
        table = dynamodb.describe_table(TableName=name)["Table"]
        assert table["KeySchema"] == props["KeySchema"], lid
        assert {json.dumps(a, sort_keys=True) for a in table["AttributeDefinitions"]} == \
            {json.dumps(a, sort_keys=True) for a in props["AttributeDefinitions"]}, lid
        assert table["BillingModeSummary"]["BillingMode"] == props["BillingMode"], lid
        stream = props.get("StreamSpecification")
        if stream:
            assert table["StreamSpecification"]["StreamViewType"] == \
                stream["StreamViewType"], lid
        else:
            assert not table.get("StreamSpecification", {}).get("StreamEnabled"), lid
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        assert ttl.get("AttributeName") == props["TimeToLiveSpecification"]["AttributeName"]


def test_each_queue_has_the_template_attributes(rehearsal: Rehearsal) -> None:
    sqs = rehearsal.client("sqs")
    queues = rehearsal.stood.resources("AWS::SQS::Queue")
    assert len(queues) == 3
    for lid, resource in queues.items():
        props = resource["Properties"]
        attributes = sqs.get_queue_attributes(QueueUrl=rehearsal.stood.physical[lid],
                                              AttributeNames=["All"])["Attributes"]
        for name in ("VisibilityTimeout", "MessageRetentionPeriod"):
            if name in props:
                assert attributes[name] == str(props[name]), (lid, name)
        if "SqsManagedSseEnabled" in props:
            assert attributes["SqsManagedSseEnabled"] == \
                str(props["SqsManagedSseEnabled"]).lower(), lid
        if "RedrivePolicy" in props:
            assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == \
                props["RedrivePolicy"]["maxReceiveCount"], lid
        policies = [p for p in rehearsal.stood.resources("AWS::SQS::QueuePolicy").values()
                    if {"Ref": lid} in p["Properties"]["Queues"]]
        for policy in policies:
            stored = json.loads(attributes["Policy"])
            assert _actions(stored) == _actions(policy["Properties"]["PolicyDocument"])


def test_each_key_has_the_template_policy_and_rotation(rehearsal: Rehearsal) -> None:
    kms = rehearsal.client("kms")
    stood = rehearsal.stood
    resolve = Resolver(rehearsal.admin, stood.region, stood.account, stood.template,
                       stood.physical, {})
    keys = stood.resources("AWS::KMS::Key")
    assert len(keys) == 2
    for lid, resource in keys.items():
        key_id = stood.physical[lid]
        policy = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
        assert policy == resolve(resource["Properties"]["KeyPolicy"]), lid
        rotation = kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"]
        assert rotation is bool(resource["Properties"].get("EnableKeyRotation")), lid


def test_each_role_carries_the_template_actions(rehearsal: Rehearsal) -> None:
    iam = rehearsal.client("iam")
    stood = rehearsal.stood
    roles = stood.resources("AWS::IAM::Role")
    assert len(roles) >= 12
    for lid, resource in roles.items():
        name = stood.physical[lid]
        trust = iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"]
        assert _actions(trust) == _actions(resource["Properties"]["AssumeRolePolicyDocument"])
        expected: set[str] = set()
        for policy in stood.resources("AWS::IAM::Policy").values():
            if {"Ref": lid} in policy["Properties"]["Roles"]:
                expected |= _actions(policy["Properties"]["PolicyDocument"])
        stored: set[str] = set()
        for policy_name in iam.list_role_policies(RoleName=name)["PolicyNames"]:
            document = iam.get_role_policy(RoleName=name, PolicyName=policy_name)
            stored |= _actions(document["PolicyDocument"])
        assert stored == expected, lid


def test_the_state_machine_runs_the_template_definition(rehearsal: Rehearsal) -> None:
    stood = rehearsal.stood
    [(_lid, resource)] = stood.resources("AWS::StepFunctions::StateMachine").items()
    resolve = Resolver(rehearsal.admin, stood.region, stood.account, stood.template,
                       stood.physical, {})
    props = resolve(resource["Properties"])
    definition = props["DefinitionString"]
    for key, value in props["DefinitionSubstitutions"].items():
        definition = definition.replace("${" + key + "}", value)
    arn = rehearsal.functions.by_name["host_api"].environment["ENGRAM_STATE_MACHINE_ARN"]
    described = rehearsal.client("stepfunctions").describe_state_machine(stateMachineArn=arn)
    assert json.loads(described["definition"]) == json.loads(definition)
    assert described["roleArn"] == props["RoleArn"]
    assert "${" not in described["definition"]


def test_each_function_gets_the_template_environment_and_role(rehearsal: Rehearsal) -> None:
    stood = rehearsal.stood
    functions = stood.resources("AWS::Lambda::Function")
    assert len(functions) == 11
    for resource in functions.values():
        props = resource["Properties"]
        name = props["Handler"].split(".")[1]
        running = rehearsal.functions.by_name[name]
        assert set(running.environment) == set(props["Environment"]["Variables"]), name
        for key, value in props["Environment"]["Variables"].items():
            if isinstance(value, str):
                assert running.environment[key] == value, (name, key)
        role_lid = props["Role"]["Fn::GetAtt"][0]
        assert running.role_arn.endswith("/" + stood.physical[role_lid]), name
