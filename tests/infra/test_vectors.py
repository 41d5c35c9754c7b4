"""The semantic channel's vector index in the synthesized stack, and who may touch it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.infra.template_view import (
    actions,
    as_list,
    function_logical_ids,
    logical_id_of,
    refers_to,
    statements_by_function,
)

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra
VECTOR_ACTIONS = {"s3vectors:PutVectors", "s3vectors:DeleteVectors", "s3vectors:QueryVectors",
                  "s3vectors:GetVectors"}


def _index(synthesized: Synthesized) -> tuple[str, dict[str, object]]:
    [(lid, index)] = synthesized.resources("AWS::S3Vectors::Index").items()
    return lid, index["Properties"]


def _storage_key(synthesized: Synthesized) -> str:
    return logical_id_of(synthesized.template["Resources"], "AWS::KMS::Key", "StorageKey")


def test_one_cosine_index_of_the_models_dimension_in_an_encrypted_vector_bucket(
    synthesized: Synthesized,
) -> None:
    [bucket] = synthesized.resources("AWS::S3Vectors::VectorBucket").values()
    assert bucket["Properties"]["EncryptionConfiguration"] == {
        "SseType": "aws:kms", "KmsKeyArn": {"Fn::GetAtt": [_storage_key(synthesized), "Arn"]}}
    _, index = _index(synthesized)
    assert (index["DataType"], index["Dimension"], index["DistanceMetric"]) == (
        "float32", 384, "cosine")
    assert "MetadataConfiguration" not in index  # `scope` stays filterable


def test_only_the_projector_writes_vectors_and_only_search_queries_them(
    synthesized: Synthesized,
) -> None:
    lid, _ = _index(synthesized)
    granted: dict[str, set[str]] = {}
    for name, statements in statements_by_function(synthesized.template).items():
        for statement in statements:
            found = actions(statement) & VECTOR_ACTIONS
            if found:
                assert statement["Resource"] == {"Fn::GetAtt": [lid, "IndexArn"]}
                granted.setdefault(name, set()).update(found)
    assert granted == {
        "projector": {"s3vectors:PutVectors", "s3vectors:DeleteVectors"},
        "search": {"s3vectors:QueryVectors", "s3vectors:GetVectors"},
    }


def test_the_key_lets_s3_vectors_index_this_bucket_and_nothing_more(
    synthesized: Synthesized,
) -> None:
    key = synthesized.template["Resources"][_storage_key(synthesized)]
    [statement] = [s for s in key["Properties"]["KeyPolicy"]["Statement"]
                   if s["Principal"] == {"Service": "indexing.s3vectors.amazonaws.com"}]
    assert as_list(statement["Action"]) == ["kms:Decrypt"]
    condition = statement["Condition"]
    assert set(condition) == {"StringEquals", "ArnLike", "ForAnyValue:StringEquals"}
    assert set(condition["StringEquals"]) == {"aws:SourceAccount"}
    source = json.dumps(condition["ArnLike"]["aws:SourceArn"])
    assert "bucket/engram-example-tenant-vectors" in source
    assert "bucket/*" not in source
    assert condition["ForAnyValue:StringEquals"] == {
        "kms:EncryptionContextKeys": ["aws:s3vectors:arn", "aws:s3vectors:resource-id"]}


def test_only_the_vector_functions_use_the_key_outside_dynamodb_and_only_for_s3_vectors(
    synthesized: Synthesized,
) -> None:
    storage_key = _storage_key(synthesized)
    granted: dict[str, set[str]] = {}
    for name, statements in statements_by_function(synthesized.template).items():
        for statement in statements:
            condition = statement.get("Condition", {})
            if refers_to(statement["Resource"], storage_key) and (
                    "kms:ViaService" not in condition.get("StringEquals", {})):
                assert condition == {"ForAnyValue:StringEquals": {
                    "kms:EncryptionContextKeys": ["aws:s3vectors:arn",
                                                  "aws:s3vectors:resource-id"]}}
                granted.setdefault(name, set()).update(actions(statement))
    assert granted == {"projector": {"kms:Decrypt", "kms:GenerateDataKey"},
                       "search": {"kms:Decrypt"}}


def test_no_function_may_invoke_a_bedrock_model_with_the_in_deployment_embedder(
    synthesized: Synthesized,
) -> None:
    for statements in statements_by_function(synthesized.template).values():
        assert not any(a.startswith("bedrock:") for s in statements for a in actions(s))


def test_search_and_the_projector_are_told_the_embedder_and_the_index(
    synthesized: Synthesized,
) -> None:
    resources = synthesized.template["Resources"]
    for name in ("search", "projector"):
        variables = resources[function_logical_ids(synthesized.template)[name]][
            "Properties"]["Environment"]["Variables"]
        assert variables["ENGRAM_SEMANTIC_EMBEDDER"] == "onnx"
        assert variables["ENGRAM_VECTOR_BUCKET"] == "engram-example-tenant-vectors"
        assert variables["ENGRAM_VECTOR_INDEX"] == "records"
    get = resources[function_logical_ids(synthesized.template)["get"]]
    assert "ENGRAM_VECTOR_BUCKET" not in get["Properties"]["Environment"]["Variables"]
