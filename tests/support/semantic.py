"""The semantic channel on moto: the committed ONNX model, moto's S3 Vectors index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
from engram_memory.local.moto_s3vectors import ensure_index

REPO = Path(__file__).resolve().parents[2]
MODEL_DIR = REPO / "models" / "all-minilm-l6-v2"
BUCKET = "engram-test-vectors"
INDEX = "records"
SEMANTIC_ENV = {
    "ENGRAM_SEMANTIC_EMBEDDER": "onnx",
    "ENGRAM_VECTOR_BUCKET": BUCKET,
    "ENGRAM_VECTOR_INDEX": INDEX,
    "ENGRAM_VECTOR_INDEX_LOCAL": "true",
}


def s3vectors(region: str = "us-east-1") -> Any:
    """A boto3 s3vectors client (inside mock_aws: moto's)."""
    return boto3.client("s3vectors", region_name=region)


def create_vector_index(region: str = "us-east-1") -> Any:
    """The bucket + cosine index the stack declares; the client used."""
    client = s3vectors(region)
    ensure_index(client, BUCKET, INDEX)
    return client


def stored_keys(client: Any) -> set[str]:
    """Keys of every vector in the test index."""
    return {v["key"] for v in client.list_vectors(vectorBucketName=BUCKET,
                                                  indexName=INDEX)["vectors"]}
