"""Least privilege, read off the synthesized IAM: what each function can and cannot do."""

from __future__ import annotations

import importlib
import inspect
import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from infra.constructs.access import TASK_TOKEN_ACTIONS
from infra.names import (
    FUNCTIONS,
    HOST_BACKUP_READ_PARTITIONS,
    HOST_CONFIRMATION_PARTITIONS,
    HOST_RESTORE_BATCH_PARTITIONS,
    HOST_RESTORE_JOURNAL_PARTITIONS,
    KEY_TABLE_PARTITIONS,
    MAIN_TABLE_PARTITIONS,
    TOOL_FUNCTIONS,
)
from tests.infra.template_view import (
    actions,
    as_list,
    function_logical_ids,
    logical_id_of,
    refers_to,
    role_of,
    statements_by_function,
    statements_of_role,
)

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra

WRITE_ACTIONS = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                 "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem",
                 "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncryptTo", "sqs:SendMessage",
                 "events:PutEvents", "states:StartExecution", "lambda:InvokeFunction"}
# Services whose actions reach data: their statements must name the resource.
DATA_SERVICES = ("dynamodb:", "kms:", "sqs:", "states:", "lambda:", "secretsmanager:",
                 "events:", "sns:", "s3vectors:", "bedrock:")
METADATA_ONLY = {"dynamodb:ListStreams"}
# Act on a task token, which is the capability (docs/deploy.md, "Grants AWS does not
# settle"); granted on "*" in a statement of their own.
TOKEN_ONLY = set(TASK_TOKEN_ACTIONS)


def _lid(synthesized: Synthesized, cfn_type: str, part: str) -> str:
    return logical_id_of(synthesized.template["Resources"], cfn_type, part)


def _granting(synthesized: Synthesized, action: str, resource_lid: str) -> set[str]:
    """The functions whose roles allow ``action`` on the resource."""
    out = set()
    for name, statements in statements_by_function(synthesized.template).items():
        for s in statements:
            if action in actions(s) and refers_to(s["Resource"], resource_lid):
                out.add(name)
    return out


def _key_policy_principals(synthesized: Synthesized, action: str) -> list[Any]:
    key = synthesized.template["Resources"][_lid(synthesized, "AWS::KMS::Key", "TenantKey")]
    return [s["Principal"] for s in key["Properties"]["KeyPolicy"]["Statement"]
            if action in as_list(s["Action"])]


def test_search_and_get_can_only_read(synthesized: Synthesized) -> None:
    by_function = statements_by_function(synthesized.template)
    for name in ("search", "get"):
        granted = set().union(*(actions(s) for s in by_function[name]))
        assert granted & WRITE_ACTIONS == set(), name
        assert {"dynamodb:GetItem", "dynamodb:Query"} <= granted


def test_only_capture_can_generate_data_keys_under_the_tenant_key(
        synthesized: Synthesized) -> None:
    tenant_key = _lid(synthesized, "AWS::KMS::Key", "TenantKey")
    assert _granting(synthesized, "kms:GenerateDataKey", tenant_key) == {"capture"}
    capture_role = role_of(synthesized.template, "capture")
    assert _key_policy_principals(synthesized, "kms:GenerateDataKey") == [
        {"AWS": {"Fn::GetAtt": [capture_role, "Arn"]}}]


def test_only_request_admission_can_decrypt_with_the_tenant_key(
        synthesized: Synthesized) -> None:
    tenant_key = _lid(synthesized, "AWS::KMS::Key", "TenantKey")
    assert _granting(synthesized, "kms:Decrypt", tenant_key) == {"request_admission"}
    admission_role = role_of(synthesized.template, "request_admission")
    assert _key_policy_principals(synthesized, "kms:Decrypt") == [
        {"AWS": {"Fn::GetAtt": [admission_role, "Arn"]}}]


def test_the_tenant_key_policy_lets_the_account_administer_but_never_use_the_key(
        synthesized: Synthesized) -> None:
    key = synthesized.template["Resources"][_lid(synthesized, "AWS::KMS::Key", "TenantKey")]
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    admin = [s for s in statements if s.get("Sid") == "KeyAdministrationOnly"]
    assert len(admin) == 1
    crypto = {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:CreateGrant",
              "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:*"}
    assert set(as_list(admin[0]["Action"])) & crypto == set()
    assert len(statements) == 3  # administration, capture, admission: nobody else


def test_tenant_key_use_requires_this_tenants_encryption_context(
        synthesized: Synthesized) -> None:
    tenant_key = _lid(synthesized, "AWS::KMS::Key", "TenantKey")
    for statements in statements_by_function(synthesized.template).values():
        for s in statements:
            if refers_to(s["Resource"], tenant_key):
                assert s["Condition"] == {
                    "StringEquals": {"kms:EncryptionContext:tenant": "example-tenant"},
                    "ForAllValues:StringEquals": {
                        "kms:EncryptionContextKeys": ["tenant", "workspace", "candidate_id"]},
                }


def test_the_key_policy_conditions_match_the_domain_encryption_context() -> None:
    from engram_memory.domain.context import Scope
    from engram_memory.domain.records import encryption_context

    from infra.constructs.keys import CONTEXT_KEYS

    context = encryption_context(Scope("example-tenant", "default"), "cand_1")
    assert tuple(context) == CONTEXT_KEYS
    assert context["tenant"] == "example-tenant"


def test_the_storage_key_is_usable_only_through_dynamodb(synthesized: Synthesized) -> None:
    storage_key = _lid(synthesized, "AWS::KMS::Key", "StorageKey")
    seen = 0
    for statements in statements_by_function(synthesized.template).values():
        for s in statements:
            if refers_to(s["Resource"], storage_key):
                if "ForAnyValue:StringEquals" in s["Condition"]:  # S3 Vectors: test_vectors.py
                    continue
                seen += 1
                via = s["Condition"]["StringEquals"]["kms:ViaService"]
                assert "dynamodb." in str(via)
    assert seen >= len(FUNCTIONS) - 1  # every function but the MCP endpoint


def test_no_statement_grants_a_wildcard_action(synthesized: Synthesized) -> None:
    for lid, r in synthesized.resources("AWS::IAM::Policy").items():
        for s in r["Properties"]["PolicyDocument"]["Statement"]:
            for action in actions(s):
                assert action != "*", lid
                assert not action.endswith(":*"), (lid, action)


def test_no_data_statement_has_a_wildcard_resource(synthesized: Synthesized) -> None:
    for lid, r in synthesized.resources("AWS::IAM::Policy").items():
        for s in r["Properties"]["PolicyDocument"]["Statement"]:
            data = ({a for a in actions(s) if a.startswith(DATA_SERVICES)}
                    - METADATA_ONLY - TOKEN_ONLY)
            if data:
                assert "*" not in as_list(s["Resource"]), (lid, sorted(data))


def test_mcp_endpoint_can_invoke_the_six_tool_functions_and_nothing_else(
        synthesized: Synthesized) -> None:
    template = synthesized.template
    functions = function_logical_ids(template)
    statements = statements_of_role(template, role_of(template, "mcp_endpoint"))
    invoke = [s for s in statements if "lambda:InvokeFunction" in actions(s)]
    targets = {r["Fn::GetAtt"][0] for s in invoke for r in as_list(s["Resource"])}
    assert targets == {functions[name] for name in TOOL_FUNCTIONS}
    other = set().union(*(actions(s) for s in statements)) - {"lambda:InvokeFunction"}
    assert {a for a in other if a.startswith(("dynamodb:", "kms:"))} == set()


def test_mcp_endpoint_knows_each_tool_function_by_name(synthesized: Synthesized) -> None:
    template = synthesized.template
    functions = function_logical_ids(template)
    env = template["Resources"][functions["mcp_endpoint"]]["Properties"]["Environment"]
    for tool in TOOL_FUNCTIONS:
        assert env["Variables"][f"ENGRAM_FUNCTION_{tool.upper()}"] == {"Ref": functions[tool]}


def test_host_api_drives_the_gate_and_delegates_adjudication_to_admission(
        synthesized: Synthesized) -> None:
    template = synthesized.template
    machine = _lid(synthesized, "AWS::StepFunctions::StateMachine", "ConfirmationGate")
    statements = statements_of_role(template, role_of(template, "host_api"))
    by_action = {a: s for s in statements for a in actions(s)}
    assert by_action["states:StartExecution"]["Resource"] == {"Ref": machine}
    (token,) = [s for s in statements if actions(s) & TOKEN_ONLY]
    assert actions(token) == TOKEN_ONLY
    assert token["Resource"] == "*"
    assert "Condition" not in token
    invoke = by_action["lambda:InvokeFunction"]["Resource"]
    # request_admission adjudicates; capture + request_admission carry a mem0 migration.
    assert as_list(invoke) == [
        {"Fn::GetAtt": [function_logical_ids(template)[name], "Arn"]}
        for name in ("request_admission", "capture")]
    # The gate's item statements reach confirmation items only (export and restore have
    # their own: test_host_api_may_export_and_restore_and_nothing_more).
    gate = [s for s in statements if actions(s) & {"dynamodb:UpdateItem", "dynamodb:Query"}
            and not actions(s) & {"dynamodb:PutItem", "dynamodb:BatchGetItem"}]
    assert len(gate) == 2
    for s in gate:
        assert s["Condition"] == {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CONF#*"]}}


def test_confirmation_notifier_writes_only_confirmation_items_and_host_events(
        synthesized: Synthesized) -> None:
    template = synthesized.template
    bus = _lid(synthesized, "AWS::Events::EventBus", "HostEventBus")
    statements = statements_of_role(template, role_of(template, "confirmation_notifier"))
    for s in statements:
        if any(a.startswith("dynamodb:") for a in actions(s)):
            assert s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == [
                "CONF#*"]
        if "events:PutEvents" in actions(s):
            assert refers_to(s["Resource"], bus)
    assert any("sqs:ReceiveMessage" in actions(s) for s in statements)


def test_only_the_shredding_functions_delete_wrapped_keys(synthesized: Synthesized) -> None:
    key_table = _lid(synthesized, "AWS::DynamoDB::Table", "KeyTable")
    assert _granting(synthesized, "dynamodb:DeleteItem", key_table) == {
        "request_admission", "withdraw"}
    assert _granting(synthesized, "dynamodb:PutItem", key_table) == {"capture"}


def test_only_the_projector_writes_the_search_projection(synthesized: Synthesized) -> None:
    projection = _lid(synthesized, "AWS::DynamoDB::Table", "ProjectionTable")
    for action in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"):
        assert _granting(synthesized, action, projection) == {"projector"}


def test_only_search_reads_the_page_cursor_secret(synthesized: Synthesized) -> None:
    secret = _lid(synthesized, "AWS::SecretsManager::Secret", "PageCursorSecret")
    assert _granting(synthesized, "secretsmanager:GetSecretValue", secret) == {"search"}
    search = synthesized.template["Resources"][
        function_logical_ids(synthesized.template)["search"]]
    assert search["Properties"]["Environment"]["Variables"][
        "ENGRAM_PAGE_CURSOR_SECRET_ARN"] == {"Ref": secret}


def test_each_function_writes_logs_to_its_own_log_group_only(synthesized: Synthesized) -> None:
    template = synthesized.template
    for name, fn_lid in function_logical_ids(template).items():
        log_group = template["Resources"][fn_lid]["Properties"]["LoggingConfig"]["LogGroup"]
        statements = statements_of_role(template, role_of(template, name))
        log_statements = [s for s in statements if "logs:PutLogEvents" in actions(s)]
        assert [s["Resource"] for s in log_statements] == [
            {"Fn::GetAtt": [log_group["Ref"], "Arn"]}], name


def test_no_function_role_carries_a_managed_policy(synthesized: Synthesized) -> None:
    for name in FUNCTIONS:
        role = synthesized.template["Resources"][role_of(synthesized.template, name)]
        assert "ManagedPolicyArns" not in role["Properties"], name


def test_the_gate_functions_are_told_where_the_gate_lives(synthesized: Synthesized) -> None:
    template = synthesized.template
    functions = function_logical_ids(template)
    machine = _lid(synthesized, "AWS::StepFunctions::StateMachine", "ConfirmationGate")
    bus = _lid(synthesized, "AWS::Events::EventBus", "HostEventBus")
    host_env = template["Resources"][functions["host_api"]]["Properties"]["Environment"]
    assert host_env["Variables"]["ENGRAM_STATE_MACHINE_ARN"] == {"Ref": machine}
    notifier_env = template["Resources"][functions["confirmation_notifier"]]["Properties"][
        "Environment"]["Variables"]
    # The name engram_memory.settings reads; without it no host is ever notified.
    from engram_memory.env_names import CONFIRMATION_EVENT_BUS

    assert notifier_env[CONFIRMATION_EVENT_BUS] == {"Ref": bus}


def test_only_the_mcp_endpoint_and_the_host_api_can_invoke_request_admission(
        synthesized: Synthesized) -> None:
    from engram_memory.domain.context import Tool
    from engram_memory.env_names import function_name

    template = synthesized.template
    functions = function_logical_ids(template)
    admission = functions["request_admission"]
    assert _granting(synthesized, "lambda:InvokeFunction", admission) == {
        "mcp_endpoint", "host_api"}
    # The host API adjudicates by invoking it by name (engram_memory.settings reads it).
    host_env = template["Resources"][functions["host_api"]]["Properties"]["Environment"]
    assert host_env["Variables"][function_name(Tool.REQUEST_ADMISSION)] == {"Ref": admission}
    # No resource-based policy opens the one decrypting function to anyone else.
    assert not [lid for lid, r in synthesized.resources("AWS::Lambda::Permission").items()
                if refers_to(r["Properties"]["FunctionName"], admission)]


# --- every DynamoDB call the read path makes is granted, on the table it is made to -------

# boto3 operation -> the IAM action authorizing it. TransactWriteItems has no action of its
# own: each element is authorized as its item action (see _element_actions).
_IAM_ACTION = {
    "get_item": "dynamodb:GetItem", "batch_get_item": "dynamodb:BatchGetItem",
    "query": "dynamodb:Query", "scan": "dynamodb:Scan", "put_item": "dynamodb:PutItem",
    "update_item": "dynamodb:UpdateItem", "delete_item": "dynamodb:DeleteItem",
    "batch_write_item": "dynamodb:BatchWriteItem",
}
_READ_ACTIONS = {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
_RECORD_READER = "engram_memory.adapters.dynamodb.record_reader"
_PROJECTION_STORE = ("engram_memory.adapters.dynamodb.projection_store",
                     "engram_memory.adapters.dynamodb.posting_writer")


def _called_actions(*modules: str) -> set[str]:
    """The IAM actions of the DynamoDB calls in the source of the adapter modules."""
    found: set[str] = set()
    for module in modules:
        source = inspect.getsource(importlib.import_module(module))
        operations = set(re.findall(r"\.(\w+)\(", source))
        operations |= set(re.findall(r'(?:\b_call|\.call)\(\s*"(\w+)"', source))  # dispatch
        found |= {_IAM_ACTION[op] for op in operations if op in _IAM_ACTION}
        if "transact_write_items" in operations:
            found |= {f"dynamodb:{kind}Item" for kind in
                      re.findall(r'\{"(Put|Update|Delete|ConditionCheck)":', source)}
    return found


def _granted_on(synthesized: Synthesized, function: str, table_part: str) -> set[str]:
    table = _lid(synthesized, "AWS::DynamoDB::Table", table_part)
    statements = statements_by_function(synthesized.template)[function]
    return set().union(*(actions(s) for s in statements if refers_to(s["Resource"], table)))


def test_the_projector_may_make_every_call_its_adapters_make_on_the_right_table(
        synthesized: Synthesized) -> None:
    main_calls = _called_actions(_RECORD_READER)
    projection_calls = _called_actions(*_PROJECTION_STORE)
    # The record reader batch-reads records; without it every stream batch fails in AWS.
    assert {"dynamodb:BatchGetItem", "dynamodb:UpdateItem"} <= main_calls
    assert main_calls <= _granted_on(synthesized, "projector", "MainTable")
    assert projection_calls <= _granted_on(synthesized, "projector", "ProjectionTable")


def test_search_and_get_may_make_every_read_their_adapters_make_on_the_right_table(
        synthesized: Synthesized) -> None:
    # Search and get use only the reading methods of these adapters; the writes are the
    # projector's (test_search_and_get_can_only_read holds them to that).
    record_reads = _called_actions(_RECORD_READER) & _READ_ACTIONS
    projection_reads = _called_actions(*_PROJECTION_STORE) & _READ_ACTIONS
    assert "dynamodb:BatchGetItem" in record_reads
    assert {"dynamodb:Query", "dynamodb:BatchGetItem"} <= projection_reads
    for name in ("search", "get"):
        assert record_reads <= _granted_on(synthesized, name, "MainTable"), name
    assert projection_reads <= _granted_on(synthesized, "search", "ProjectionTable")


def test_every_item_statement_is_fenced_to_its_functions_partition_families(
        synthesized: Synthesized) -> None:
    # What each function really touches is checked against the same map on moto
    # (tests/reliability/test_partition_fences.py).
    fences = {_lid(synthesized, "AWS::DynamoDB::Table", "MainTable"): MAIN_TABLE_PARTITIONS,
              _lid(synthesized, "AWS::DynamoDB::Table", "KeyTable"): None}
    fenced = set()
    for name, statements in statements_by_function(synthesized.template).items():
        for table, by_function in fences.items():
            expected = by_function.get(name, ()) if by_function else KEY_TABLE_PARTITIONS
            covered: set[str] = set()
            for s in statements:
                if {"Fn::GetAtt": [table, "Arn"]} not in as_list(s["Resource"]):
                    continue
                # A statement may be fenced narrower (the projector's one write), never wider.
                keys = s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
                assert set(as_list(keys)) <= set(expected), name
                covered |= set(as_list(keys))
                fenced.add(name)
            assert not covered or covered == set(expected), name
    assert fenced == set(FUNCTIONS) - {"mcp_endpoint"}


def test_the_projector_reads_records_and_journal_and_writes_only_record_partitions(
        synthesized: Synthesized) -> None:
    main = _lid(synthesized, "AWS::DynamoDB::Table", "MainTable")
    # Item statements only: the stream statements name the table's StreamArn instead.
    statements = [s for s in statements_by_function(synthesized.template)["projector"]
                  if {"Fn::GetAtt": [main, "Arn"]} in as_list(s["Resource"])]
    assert statements
    updates = [s for s in statements if "dynamodb:UpdateItem" in actions(s)]
    for s in statements:
        # It reads records and journal events; it writes nothing on the journal.
        fence = ["SCOPE#*"] if s in updates else ["SCOPE#*", "JOURNAL#*"]
        assert s["Condition"]["ForAllValues:StringLike"] == {"dynamodb:LeadingKeys": fence}
        if s not in updates:
            assert actions(s) <= _READ_ACTIONS
    assert len(updates) == 1
    assert actions(updates[0]) == {"dynamodb:UpdateItem"}
    assert updates[0]["Condition"]["ForAllValues:StringEquals"] == {
        "dynamodb:Attributes": ["pk", "sk", "projection_invalidation"]}
    assert updates[0]["Condition"]["StringEqualsIfExists"] == {
        "dynamodb:ReturnValues": ["NONE"]}


_NOT_ATTRIBUTES = {"SET", "REMOVE", "ADD", "DELETE", "AND", "OR", "NOT", "attribute_exists",
                   "attribute_not_exists", "if_not_exists", "begins_with", "contains", "size"}


def test_the_projectors_one_main_table_write_fits_its_attribute_condition() -> None:
    import boto3
    from botocore.stub import Stubber
    from engram_memory.adapters.dynamodb.record_reader import DynamoRecordReader
    from engram_memory.domain.context import Scope

    from infra.constructs.access import PROJECTOR_MAIN_ATTRIBUTES

    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    sent: dict[str, Any] = {}
    client.meta.events.register("provide-client-params.dynamodb.UpdateItem",
                                lambda params, **_: sent.update(params))
    with Stubber(client) as stub:
        stub.add_response("update_item", {})
        DynamoRecordReader(client, "main").mark_projection_complete(
            Scope("example-tenant", "default"), "rec_1")
    assert sent["Key"]["pk"]["S"].startswith("SCOPE#")
    assert sent.get("ReturnValues", "NONE") == "NONE"
    names = sent.get("ExpressionAttributeNames", {})
    expressions = " ".join(sent.get(k, "") for k in ("UpdateExpression", "ConditionExpression"))
    touched = set(sent["Key"])
    for token in re.findall(r"[#:]?[A-Za-z_]\w*", expressions):
        if not token.startswith(":") and token not in _NOT_ATTRIBUTES:
            touched.add(names.get(token, token))
    assert touched <= set(PROJECTOR_MAIN_ATTRIBUTES)
    assert "projection_invalidation" in touched


def test_capture_only_puts_wrapped_keys_and_never_reads_one(synthesized: Synthesized) -> None:
    assert _granted_on(synthesized, "capture", "KeyTable") == {"dynamodb:PutItem"}


def test_the_projector_may_decrypt_through_either_dynamodb_endpoint(
        synthesized: Synthesized) -> None:
    # The stream reader's KMS use: both kms:ViaService values (docs/deploy.md).
    storage_key = _lid(synthesized, "AWS::KMS::Key", "StorageKey")
    statements = statements_of_role(synthesized.template,
                                    role_of(synthesized.template, "projector"))
    (key,) = [s for s in statements if refers_to(s["Resource"], storage_key)
              and "kms:ViaService" in s["Condition"].get("StringEquals", {})]
    via = as_list(key["Condition"]["StringEquals"]["kms:ViaService"])
    assert len(via) == 2
    joined = [json.dumps(v) for v in via]
    assert any('"dynamodb.' in v for v in joined)
    assert any('"streams.dynamodb.' in v for v in joined)
    assert "kms:Decrypt" in actions(key)


_BATCH_READS = "engram_memory.adapters.dynamodb.batch_reads"


def test_the_write_path_may_batch_read_on_every_table_it_batch_reads(
        synthesized: Synthesized) -> None:
    # Independent reads go in one BatchGetItem (docs/write_path.md, "Round trips"): the
    # mutators on the main table, request_admission on the key table too (wrapped keys).
    assert _called_actions(_BATCH_READS) == {"dynamodb:BatchGetItem"}
    for name in ("capture", "request_admission", "withdraw", "forget"):
        assert "dynamodb:BatchGetItem" in _granted_on(synthesized, name, "MainTable"), name
    assert "dynamodb:BatchGetItem" in _granted_on(synthesized, "request_admission", "KeyTable")
    # Capture only ever puts a wrapped key: no batch read opens the key table to it.
    assert not _granted_on(synthesized, "capture", "KeyTable") & _READ_ACTIONS


def test_only_forget_and_withdraw_write_the_forget_ledger_and_only_put_entries(
        synthesized: Synthesized) -> None:
    # docs/forget-ledger.md: every forget and withdrawal puts its entry in its commit; no
    # function reads, updates or deletes the ledger (the reapply tool runs as the operator).
    ledger = _lid(synthesized, "AWS::DynamoDB::Table", "LedgerTable")
    touching = {}
    for name, statements in statements_by_function(synthesized.template).items():
        for s in statements:
            if {"Fn::GetAtt": [ledger, "Arn"]} in as_list(s["Resource"]):
                assert s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] in (
                    "LEDGER#*", ["LEDGER#*"]), name
                touching.setdefault(name, set()).update(as_list(s["Action"]))
    assert touching == {"forget": {"dynamodb:PutItem"}, "withdraw": {"dynamodb:PutItem"}}


# --- export and restore through the host API (docs/backup.md, "Deployed stack") ---------

_EXPORT_READER = "engram_memory.adapters.dynamodb.export_reader"
_RESTORE_WRITER = "engram_memory.adapters.dynamodb.restore_writer"


def _fence(statement: dict[str, Any]) -> set[str]:
    return set(as_list(statement["Condition"]["ForAllValues:StringLike"][
        "dynamodb:LeadingKeys"]))


def test_host_api_may_export_and_restore_and_nothing_more(synthesized: Synthesized) -> None:
    template = synthesized.template
    main = _lid(synthesized, "AWS::DynamoDB::Table", "MainTable")
    statements = [s for s in statements_of_role(template, role_of(template, "host_api"))
                  if any(a.startswith("dynamodb:") for a in actions(s))]
    by_fence: dict[frozenset[str], set[str]] = {}
    for s in statements:
        # Every DynamoDB statement of the host API names the main table (or its waiting
        # index): never the key table, the projection or the forget ledger.
        (resource,) = as_list(s["Resource"])
        assert json.dumps(resource).count(main) == 1, resource
        by_fence.setdefault(frozenset(_fence(s)), set()).update(actions(s))
    assert by_fence == {
        frozenset(HOST_CONFIRMATION_PARTITIONS): {"dynamodb:GetItem", "dynamodb:UpdateItem",
                                                  "dynamodb:Query"},
        frozenset(HOST_BACKUP_READ_PARTITIONS): {"dynamodb:GetItem", "dynamodb:BatchGetItem",
                                                 "dynamodb:Query"},
        frozenset(HOST_RESTORE_BATCH_PARTITIONS): {"dynamodb:BatchWriteItem"},
        frozenset(HOST_RESTORE_JOURNAL_PARTITIONS): {"dynamodb:PutItem",
                                                     "dynamodb:UpdateItem",
                                                     "dynamodb:DeleteItem"},
    }
    # No single-item write can touch a record, a guard or an expiry entry, or a
    # confirmation beyond its update.
    for s in statements:
        if actions(s) & {"dynamodb:PutItem", "dynamodb:DeleteItem"}:
            assert _fence(s) == {"JOURNAL#*"}
    # Restored records are stored as admissions store them, under the table's storage key:
    # the host API still never uses the tenant key (only request_admission decrypts).
    tenant_key = _lid(synthesized, "AWS::KMS::Key", "TenantKey")
    assert not [s for s in statements_of_role(template, role_of(template, "host_api"))
                if refers_to(s["Resource"], tenant_key)]


def test_host_api_may_make_every_call_export_and_restore_make(
        synthesized: Synthesized) -> None:
    calls = _called_actions(_EXPORT_READER, _RESTORE_WRITER)
    # Reads, the staged batch writes, the fence's put/update/delete and the commit's
    # transaction (an Update and a Put): without any of them the route is STORE_UNAVAILABLE.
    assert {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem",
            "dynamodb:BatchWriteItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
            "dynamodb:DeleteItem"} == calls
    assert calls <= _granted_on(synthesized, "host_api", "MainTable")
