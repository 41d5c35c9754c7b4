"""Titan Text Embeddings V2 through botocore's Stubber (moto's bedrock-runtime returns no
usable embedding, so the request and answer shapes are checked against the API model)."""

from __future__ import annotations

import io
import json
import math

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from engram_memory.adapters.embedding.bedrock_titan import MODEL_ID, TitanV2Embedder
from engram_memory.services.ports.semantic import SemanticChannelError


def body(payload: object) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


@pytest.fixture
def client() -> object:
    return boto3.client("bedrock-runtime", region_name="us-east-1",
                        aws_access_key_id="x", aws_secret_access_key="x")


def test_each_text_is_one_invoke_model_call_with_the_dimension_and_normalize(client: object
                                                                               ) -> None:
    embedder = TitanV2Embedder(client, dimension=256)
    with Stubber(client) as stub:
        for value in (3.0, 4.0):
            stub.add_response("invoke_model",
                              {"body": body({"embedding": [value] + [0.0] * 255,
                                             "inputTextTokenCount": 3}),
                               "contentType": "application/json"},
                              {"modelId": MODEL_ID, "body": ANY,
                               "contentType": "application/json",
                               "accept": "application/json"})
        vectors = embedder.embed(["first text", "second text"])
        stub.assert_no_pending_responses()
    assert [v[0] for v in vectors] == [1.0, 1.0]
    assert all(math.isclose(sum(x * x for x in v), 1.0) for v in vectors)
    assert embedder.network is True
    assert embedder.info.dimension == 256


def test_the_request_body_names_text_dimension_and_normalization(client: object) -> None:
    seen: list[dict[str, object]] = []

    def record(params: dict[str, object], **_: object) -> None:
        seen.append(json.loads(str(params["body"])))

    client.meta.events.register("provide-client-params.bedrock-runtime.InvokeModel",  # type: ignore[attr-defined]
                                record)
    with Stubber(client) as stub:
        stub.add_response("invoke_model", {"body": body({"embedding": [1.0] * 512}),
                                           "contentType": "application/json"})
        TitanV2Embedder(client, dimension=512).embed(["the text"])
    assert seen == [{"inputText": "the text", "dimensions": 512, "normalize": True}]


@pytest.mark.parametrize("answer", [{"embedding": [1.0] * 10}, {"nothing": 1},
                                    {"embedding": [0.0] * 1024}])
def test_a_malformed_answer_is_a_channel_failure(client: object, answer: object) -> None:
    with Stubber(client) as stub:
        stub.add_response("invoke_model", {"body": body(answer),
                                           "contentType": "application/json"})
        with pytest.raises(SemanticChannelError):
            TitanV2Embedder(client).embed(["x"])


def test_throttling_and_access_errors_are_channel_failures(client: object) -> None:
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "ThrottlingException", http_status_code=429)
        stub.add_client_error("invoke_model", "AccessDeniedException", http_status_code=403)
        for _ in range(2):
            with pytest.raises(SemanticChannelError):
                TitanV2Embedder(client).embed(["x"])


def test_only_titan_v2_dimensions_are_accepted(client: object) -> None:
    with pytest.raises(ValueError, match="256, 512 or 1024"):
        TitanV2Embedder(client, dimension=384)
