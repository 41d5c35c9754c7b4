"""Amazon Bedrock Titan Text Embeddings V2 as the Embedder port (the optional managed model).

InvokeModel, model ``amazon.titan-embed-text-v2:0``, one text per call (the model takes one
``inputText``), body ``{"inputText", "dimensions", "normalize": true}`` → ``{"embedding"}``.
Dimensions 256, 512 or 1024 (tenant config). Titan V2 reads at most 8,192 tokens / 50,000
characters; longer texts are cut at 50,000 characters here. Used only when the host allows
the network for the deployment and the request says ``network: "allow"``
(services/channels.py). Every failure becomes SemanticChannelError. Tested with botocore's
Stubber: moto's bedrock-runtime returns no usable embedding.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from engram_memory.adapters.aws_errors import AWS_FAILURES
from engram_memory.services.ports.semantic import EmbedderInfo, SemanticChannelError, Vector

MODEL_ID = "amazon.titan-embed-text-v2:0"
DIMENSIONS = (256, 512, 1024)
MAX_CHARACTERS = 50_000


class TitanV2Embedder:
    """Embedder port over Bedrock Runtime's InvokeModel."""

    def __init__(self, client: Any, dimension: int = 1024) -> None:
        if dimension not in DIMENSIONS:
            raise ValueError("Titan V2 dimension must be 256, 512 or 1024")
        self._client = client
        self._dimension = dimension

    @property
    def network(self) -> bool:
        """Always: the model is a Bedrock endpoint."""
        return True

    @property
    def info(self) -> EmbedderInfo:
        """The managed model's id and dimension; its version is the model id's revision."""
        return EmbedderInfo(model_id=MODEL_ID, dimension=self._dimension, version=MODEL_ID)

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One unit vector per text (one InvokeModel call each)."""
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> Vector:
        body = json.dumps({"inputText": text[:MAX_CHARACTERS] or " ",
                           "dimensions": self._dimension, "normalize": True})
        try:
            answer = self._client.invoke_model(modelId=MODEL_ID, body=body,
                                               contentType="application/json",
                                               accept="application/json")
            values = json.loads(answer["body"].read())["embedding"]
        except (*AWS_FAILURES, KeyError, TypeError, ValueError):
            raise SemanticChannelError from None
        if not isinstance(values, list) or len(values) != self._dimension:
            raise SemanticChannelError
        vector = [float(v) for v in values]
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0 or not math.isfinite(norm):
            raise SemanticChannelError
        return tuple(v / norm for v in vector)
