"""One AWS failure reaches the agent as one contract code, whichever adapter meets it.

Every adapter on an AWS client is driven through one of its operations against a client that
fails the way AWS does (a botocore ClientError with the service's code, or a transport
failure); the adapter's own code, and adapters/aws_errors.py, translate it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError
from engram_memory.adapters.dynamodb.confirmations import DynamoConfirmationStore
from engram_memory.adapters.dynamodb.export_reader import DynamoExportReader
from engram_memory.adapters.dynamodb.posting_writer import PostingChange, PostingWriter
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
from engram_memory.adapters.dynamodb.record_reader import DynamoRecordReader
from engram_memory.adapters.dynamodb.scope_scan import DynamoScopes
from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
from engram_memory.adapters.dynamodb.waiting import DynamoWaitingList
from engram_memory.adapters.eventbridge import EventBridgeHostNotifier
from engram_memory.adapters.kms.key_vault import KmsKeyVault
from engram_memory.adapters.lambda_invoker import LambdaInvoker
from engram_memory.adapters.secrets import SecretsManagerSecrets
from engram_memory.adapters.stepfunctions.workflow import StepFunctionsConfirmationWorkflow
from engram_memory.adapters.vectors.s3_vectors import S3VectorsIndex
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import EngramError
from engram_memory.domain.posting_blocks import BlockPosting
from engram_memory.domain.ranking import Posting
from engram_memory.services.ports.semantic import SemanticChannelError

SCOPE = Scope("tenant-a", "ws-1")


class FailingClient:
    """A boto3 client whose every operation fails with ``error`` (as AWS would)."""

    def __init__(self, error: Exception) -> None:
        self._error = error

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        def call(*_args: Any, **_kwargs: Any) -> Any:
            raise self._error
        return call


def _posting_writer(client: Any) -> None:
    writer = PostingWriter(client, "projection", "t#w#g", sleep=lambda _s: None)
    entry = BlockPosting(1, Posting("r", (1, 0, 0, 0, 0), (1, 1, 1, 1, 1)))
    writer.apply([PostingChange("term", "r", 1, entry)])


# One operation per adapter: each reaches AWS through the adapter's own error handling.
ADAPTER_CALLS: dict[str, Callable[[Any], object]] = {
    "dynamodb.store": lambda c: DynamoMemoryStore(c, "main", "keys").journal_head(SCOPE),
    "dynamodb.confirmations": lambda c: DynamoConfirmationStore(c, "main").get(SCOPE, "ref"),
    "dynamodb.waiting": lambda c: DynamoWaitingList(c, "main").confirmations(SCOPE, 10, None),
    "dynamodb.export_reader": lambda c: DynamoExportReader(c, "main").head(SCOPE),
    "dynamodb.record_reader": lambda c: DynamoRecordReader(c, "main").head_cursor(SCOPE),
    "dynamodb.scope_scan": lambda c: list(DynamoScopes(c, "main").scopes()),
    "dynamodb.projection_store": lambda c: DynamoProjectionStore(c, "proj").watermark(SCOPE),
    "dynamodb.posting_writer": _posting_writer,
    "kms": lambda c: KmsKeyVault(c, "key").generate_data_key({"tenant": "t"}),
    "secrets": lambda c: SecretsManagerSecrets(c).secret_string("secret"),
    "stepfunctions": lambda c: StepFunctionsConfirmationWorkflow(c, "arn").approve("tok", 1, 2),
    "eventbridge": lambda c: EventBridgeHostNotifier(c, "bus").notify({"ref": "r"}),
    "lambda_invoker": lambda c: LambdaInvoker(lambda _t: c, {Tool.CAPTURE: "fn"}).invoke(
        Tool.CAPTURE, {}),
}

# AWS failures every service can answer, and the one contract code each must become.
COMMON_FAILURES: dict[str, tuple[Exception, str]] = {
    code: (ClientError({"Error": {"Code": code, "Message": "m"}}, "Op"), "RATE_LIMITED")
    for code in ("ThrottlingException", "ProvisionedThroughputExceededException",
                 "RequestLimitExceeded", "TooManyRequestsException", "LimitExceededException")
} | {
    code: (ClientError({"Error": {"Code": code, "Message": "m"}}, "Op"), "STORE_UNAVAILABLE")
    for code in ("InternalServerError", "ServiceUnavailable", "InternalFailure",
                 "UnrecognizedClientException")
} | {
    "EndpointConnectionError": (EndpointConnectionError(endpoint_url="https://aws"),
                                "STORE_UNAVAILABLE"),
    "BotoCoreError": (BotoCoreError(), "STORE_UNAVAILABLE"),
}


def _code_of(call: Callable[[Any], object], error: Exception) -> str:
    with pytest.raises(EngramError) as raised:
        call(FailingClient(error))
    return raised.value.code


@pytest.mark.parametrize("failure", sorted(COMMON_FAILURES))
@pytest.mark.parametrize("adapter", sorted(ADAPTER_CALLS))
def test_every_adapter_maps_an_aws_failure_to_the_same_contract_code(adapter: str,
                                                                     failure: str) -> None:
    error, expected = COMMON_FAILURES[failure]
    assert _code_of(ADAPTER_CALLS[adapter], error) == expected


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "Op")


# Service-specific refusals: the code names a state of the resource, not a transient failure.
REFUSALS: list[tuple[str, str, str]] = [
    ("kms", "DisabledException", "CAPABILITY_UNAVAILABLE"),
    ("kms", "KMSInvalidStateException", "CAPABILITY_UNAVAILABLE"),
    ("kms", "AccessDeniedException", "CAPABILITY_UNAVAILABLE"),
    ("kms", "InvalidCiphertextException", "BLOB_MISSING"),
    ("secrets", "ResourceNotFoundException", "CAPABILITY_UNAVAILABLE"),
    ("secrets", "DecryptionFailure", "CAPABILITY_UNAVAILABLE"),
    ("stepfunctions", "TaskTimedOut", "ILLEGAL_TRANSITION"),
    ("stepfunctions", "TaskDoesNotExist", "ILLEGAL_TRANSITION"),
    ("stepfunctions", "ExecutionAlreadyExists", "STORE_UNAVAILABLE"),
]


@pytest.mark.parametrize(("adapter", "code", "expected"), REFUSALS)
def test_a_service_refusal_maps_to_its_contract_code(adapter: str, code: str,
                                                     expected: str) -> None:
    assert _code_of(ADAPTER_CALLS[adapter], _client_error(code)) == expected


@pytest.mark.parametrize("failure", sorted(COMMON_FAILURES))
def test_the_vector_index_degrades_the_semantic_channel_on_any_aws_failure(
        failure: str) -> None:
    # Not a contract code: search answers from the lexical channel alone.
    error, _ = COMMON_FAILURES[failure]
    with pytest.raises(SemanticChannelError):
        S3VectorsIndex(FailingClient(error), "bucket", "index").query(SCOPE, [0.1] * 4, 5)
