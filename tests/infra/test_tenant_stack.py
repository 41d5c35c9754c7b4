"""The tenant stack's resources have the properties the design depends on."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from infra import names
from infra.constructs.api import ROUTE_HOST_ROOT, ROUTE_MCP_OTHER_METHODS
from infra.constructs.gate import ASL_PATH
from infra.tenant_config import load_config
from tests.infra.template_view import function_logical_ids, logical_id_of

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra


def _one(synthesized: Synthesized, cfn_type: str, part: str) -> dict[str, Any]:
    lid = logical_id_of(synthesized.template["Resources"], cfn_type, part)
    props: dict[str, Any] = synthesized.template["Resources"][lid]["Properties"]
    return props


def _table(synthesized: Synthesized, part: str) -> dict[str, Any]:
    return _one(synthesized, "AWS::DynamoDB::Table", part)


def test_main_table_is_encrypted_with_the_storage_key_and_recoverable(
        synthesized: Synthesized) -> None:
    main = _table(synthesized, "MainTable")
    storage_key = logical_id_of(synthesized.template["Resources"], "AWS::KMS::Key", "StorageKey")
    assert main["SSESpecification"] == {
        "KMSMasterKeyId": {"Fn::GetAtt": [storage_key, "Arn"]}, "SSEEnabled": True,
        "SSEType": "KMS"}
    assert main["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert main["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert main["DeletionProtectionEnabled"] is True


def test_key_table_has_no_point_in_time_recovery_and_no_stream(
        synthesized: Synthesized) -> None:
    keys = _table(synthesized, "KeyTable")
    assert "StreamSpecification" not in keys
    assert keys.get("PointInTimeRecoverySpecification", {}).get(
        "PointInTimeRecoveryEnabled", False) is False
    assert keys["SSESpecification"]["SSEEnabled"] is True


def test_projection_table_has_no_stream(synthesized: Synthesized) -> None:
    assert "StreamSpecification" not in _table(synthesized, "ProjectionTable")


def test_every_table_is_on_demand_keyed_by_pk_sk_with_ttl(synthesized: Synthesized) -> None:
    tables = synthesized.resources("AWS::DynamoDB::Table")
    assert len(tables) == 4
    for logical_id, table in tables.items():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"},
                                      {"AttributeName": "sk", "KeyType": "RANGE"}]
        assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
        if "LedgerTable" in logical_id:
            # The forget ledger cannot be deleted by accident (docs/forget-ledger.md).
            assert props["DeletionProtectionEnabled"] is True


def test_main_table_and_keys_survive_stack_deletion(synthesized: Synthesized) -> None:
    resources = synthesized.template["Resources"]
    main = logical_id_of(resources, "AWS::DynamoDB::Table", "MainTable")
    assert resources[main]["DeletionPolicy"] == "Retain"
    for part in ("TenantKey", "StorageKey"):
        assert resources[logical_id_of(resources, "AWS::KMS::Key", part)][
            "DeletionPolicy"] == "Retain"


def test_both_kms_keys_rotate(synthesized: Synthesized) -> None:
    for key in synthesized.resources("AWS::KMS::Key").values():
        assert key["Properties"]["EnableKeyRotation"] is True


def test_every_function_is_python_on_arm64_with_tracing_and_powertools(
        synthesized: Synthesized) -> None:
    functions = function_logical_ids(synthesized.template)
    assert set(functions) == set(names.FUNCTIONS)
    for name, lid in functions.items():
        props = synthesized.template["Resources"][lid]["Properties"]
        assert props["Runtime"] == "python3.13"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        env = props["Environment"]["Variables"]
        expected = (names.TOOL_SERVICE_NAME if name in names.TOOL_FUNCTIONS
                    else f"engram-{name.replace('_', '-')}")
        assert env["POWERTOOLS_SERVICE_NAME"] == expected
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == names.METRICS_NAMESPACE
        assert env["LOG_LEVEL"] == "INFO"
        assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
        assert env["ENGRAM_TENANT_ID"] == "example-tenant"


def test_every_function_has_settings_from_the_tenant_config(synthesized: Synthesized) -> None:
    config = load_config()
    lid = function_logical_ids(synthesized.template)["capture"]
    env = synthesized.template["Resources"][lid]["Properties"]["Environment"]["Variables"]
    assert env["ENGRAM_WORKSPACE_IDS"] == ",".join(config.workspace_ids)
    assert env["ENGRAM_AUDIENCE"] == config.audience
    assert env["ENGRAM_HOST_PUBLIC_KEY_PEM"] == config.host_public_key_pem
    assert env["ENGRAM_ADMISSION_MODE"] == config.admission_mode
    assert env["ENGRAM_RETENTION_CEILING_MS"] == str(config.retention_ceiling_ms)
    for variable in ("ENGRAM_TABLE_NAME", "ENGRAM_KEY_TABLE_NAME",
                     "ENGRAM_PROJECTION_TABLE_NAME", "ENGRAM_KMS_KEY_ID"):
        assert isinstance(env[variable], dict)  # a reference to the deployed resource


def test_every_log_group_has_the_configured_retention(synthesized: Synthesized) -> None:
    groups = synthesized.resources("AWS::Logs::LogGroup")
    assert len(groups) == len(names.FUNCTIONS) + 2  # + API access logs + gate logs
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == 30


def test_reserved_concurrency_follows_the_tenant_config(synthesized: Synthesized) -> None:
    functions = function_logical_ids(synthesized.template)
    for name, lid in functions.items():
        props = synthesized.template["Resources"][lid]["Properties"]
        expected = load_config().reserved_concurrency.get(name)
        assert props.get("ReservedConcurrentExecutions") == expected, name


def test_the_api_serves_mcp_metadata_and_host_routes(synthesized: Synthesized) -> None:
    routes = {r["Properties"]["RouteKey"]
              for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()}
    assert routes == {names.ROUTE_MCP, names.ROUTE_METADATA, names.ROUTE_METADATA_FOR_MCP,
                      names.ROUTE_HOST, ROUTE_HOST_ROOT, ROUTE_MCP_OTHER_METHODS}


def test_every_method_on_mcp_reaches_the_endpoint_that_answers_405(
        synthesized: Synthesized) -> None:
    # With GET and DELETE only routed, PUT or PATCH got API Gateway's 404 where the README
    # promises the endpoint's 405; ANY routes them all (POST keeps its own route).
    target = {r["Properties"]["RouteKey"]: r["Properties"]["Target"]
              for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()}
    assert ROUTE_MCP_OTHER_METHODS == "ANY /mcp"
    assert target["ANY /mcp"] == target[names.ROUTE_MCP]
    assert not {key for key in target if key.endswith(" /mcp")} - {"ANY /mcp", "POST /mcp"}


def test_every_host_path_reaches_the_host_api(synthesized: Synthesized) -> None:
    # /host itself too: an anonymous caller gets the host API's 401, never API Gateway's 404.
    target = {r["Properties"]["RouteKey"]: r["Properties"]["Target"]
              for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()}
    assert target["ANY /host"] == target[names.ROUTE_HOST]


def test_the_api_stage_is_throttled_and_logs_no_bodies(synthesized: Synthesized) -> None:
    stage = _one(synthesized, "AWS::ApiGatewayV2::Stage", "DefaultStage")
    assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] == 50
    assert stage["DefaultRouteSettings"]["ThrottlingBurstLimit"] == 100
    log_format = stage["AccessLogSettings"]["Format"]
    fields = json.loads(log_format)
    assert "requestId" in fields
    assert "status" in fields
    for forbidden in ("body", "Body", "$input", "authorization", "header"):
        assert forbidden not in log_format


def test_the_state_machine_is_the_shared_asl_file(synthesized: Synthesized) -> None:
    resources = synthesized.template["Resources"]
    machine = _one(synthesized, "AWS::StepFunctions::StateMachine", "ConfirmationGate")
    shared = ASL_PATH.read_text(encoding="utf-8")
    assert machine["DefinitionString"] == shared
    main = logical_id_of(resources, "AWS::DynamoDB::Table", "MainTable")
    queue = logical_id_of(resources, "AWS::SQS::Queue", "ConfirmationQueue")
    deployed = {"TableName": {"Ref": main}, "QueueUrl": {"Ref": queue},
                "ConfirmationQueueUrl": {"Ref": queue}}
    substitutions = machine["DefinitionSubstitutions"]
    assert set(substitutions) <= set(deployed)
    # After substitution the deployed definition is the shared file with real names in it.
    resolved = shared
    for name, value in substitutions.items():
        assert value == deployed[name]
        resolved = resolved.replace("${" + name + "}", f"<{value['Ref']}>")
    assert "${" not in resolved
    assert json.loads(resolved)["States"].keys() == json.loads(shared)["States"].keys()


def test_the_gate_is_a_traced_standard_workflow_logging_no_execution_data(
        synthesized: Synthesized) -> None:
    machine = _one(synthesized, "AWS::StepFunctions::StateMachine", "ConfirmationGate")
    assert machine["StateMachineType"] == "STANDARD"
    assert machine["TracingConfiguration"] == {"Enabled": True}
    assert machine["LoggingConfiguration"]["Level"] == "ALL"
    assert machine["LoggingConfiguration"]["IncludeExecutionData"] is False


def test_queues_are_encrypted_tls_only_and_the_gate_queue_has_a_dlq(
        synthesized: Synthesized) -> None:
    queues = synthesized.resources("AWS::SQS::Queue")
    assert len(queues) == 3
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    policies = synthesized.resources("AWS::SQS::QueuePolicy").values()
    secured = [p for p in policies
               if any(s["Effect"] == "Deny"
                      and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
                      for s in p["Properties"]["PolicyDocument"]["Statement"])]
    assert len(secured) == 3
    gate_queue = _one(synthesized, "AWS::SQS::Queue", "ConfirmationQueue")
    dlq = logical_id_of(synthesized.template["Resources"], "AWS::SQS::Queue", "ConfirmationDlq")
    assert gate_queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq, "Arn"]}


def test_the_projector_consumes_the_main_stream_and_parks_poison_batches(
        synthesized: Synthesized) -> None:
    resources = synthesized.template["Resources"]
    functions = function_logical_ids(synthesized.template)
    main = logical_id_of(resources, "AWS::DynamoDB::Table", "MainTable")
    mappings = {m["Properties"]["FunctionName"]["Ref"]: m["Properties"]
                for m in synthesized.resources("AWS::Lambda::EventSourceMapping").values()}
    projector = mappings[functions["projector"]]
    assert projector["EventSourceArn"] == {"Fn::GetAtt": [main, "StreamArn"]}
    assert projector["BisectBatchOnFunctionError"] is True
    assert "OnFailure" in projector["DestinationConfig"]
    assert projector["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    notifier = mappings[functions["confirmation_notifier"]]
    queue = logical_id_of(resources, "AWS::SQS::Queue", "ConfirmationQueue")
    assert notifier["EventSourceArn"] == {"Fn::GetAtt": [queue, "Arn"]}


def test_the_expiry_sweeper_runs_on_a_schedule(synthesized: Synthesized) -> None:
    rule = _one(synthesized, "AWS::Events::Rule", "ExpirySchedule")
    sweeper = function_logical_ids(synthesized.template)["expiry_sweeper"]
    assert rule["ScheduleExpression"] == "rate(1 hour)"
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [sweeper, "Arn"]}


def test_alarms_watch_errors_throttles_dead_letters_and_the_gate(
        synthesized: Synthesized) -> None:
    alarms = list(synthesized.resources("AWS::CloudWatch::Alarm").values())
    topic = logical_id_of(synthesized.template["Resources"], "AWS::SNS::Topic", "AlarmTopic")
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic}]
    metric_names = [a["Properties"].get("MetricName") for a in alarms]
    assert metric_names.count("Errors") == len(names.FUNCTIONS)
    assert metric_names.count("Throttles") == len(names.FUNCTIONS)
    assert metric_names.count("ApproximateNumberOfMessagesVisible") == 2
    assert "ExecutionsFailed" in metric_names
    (refused,) = [a["Properties"] for a in alarms
                  if a["Properties"].get("MetricName") == names.GATE_FAILURE_METRIC]
    assert refused["Namespace"] == names.METRICS_NAMESPACE
    assert refused["Dimensions"] == [{"Name": "service", "Value": names.TOOL_SERVICE_NAME}]


def test_the_alarm_topic_is_encrypted_and_tls_only(synthesized: Synthesized) -> None:
    topic = _one(synthesized, "AWS::SNS::Topic", "AlarmTopic")
    assert "KmsMasterKeyId" in topic
    policy = _one(synthesized, "AWS::SNS::TopicPolicy", "AlarmTopic")
    assert any(s["Effect"] == "Deny" for s in policy["PolicyDocument"]["Statement"])


def test_outputs_publish_the_endpoint_and_the_table_names(synthesized: Synthesized) -> None:
    outputs = synthesized.template["Outputs"]
    resources = synthesized.template["Resources"]
    for name in (names.OUTPUT_ENDPOINT_URL, names.OUTPUT_API_URL, names.OUTPUT_TABLE_NAME,
                 names.OUTPUT_KEY_TABLE_NAME, names.OUTPUT_PROJECTION_TABLE_NAME,
                 names.OUTPUT_STATE_MACHINE_ARN, names.OUTPUT_HOST_EVENT_BUS_NAME,
                 names.OUTPUT_AUDIENCE, names.OUTPUT_ALARM_TOPIC_ARN):
        assert name in outputs
    main = logical_id_of(resources, "AWS::DynamoDB::Table", "MainTable")
    assert outputs[names.OUTPUT_TABLE_NAME]["Value"] == {"Ref": main}
    assert json.dumps(outputs[names.OUTPUT_ENDPOINT_URL]["Value"]).endswith('mcp"]]}')
    assert outputs[names.OUTPUT_AUDIENCE]["Value"] == load_config().audience
