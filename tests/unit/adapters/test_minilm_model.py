"""The committed model (models/all-minilm-l6-v2): integrity and sentence similarity."""

from __future__ import annotations

import hashlib
import json

import numpy as np
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder

from tests.support.semantic import MODEL_DIR


def test_the_manifest_hashes_are_the_committed_files() -> None:
    manifest = json.loads((MODEL_DIR / "MANIFEST.json").read_text())
    for name, expected in manifest["files"].items():
        assert hashlib.sha256((MODEL_DIR / name).read_bytes()).hexdigest() == expected
    assert (MODEL_DIR / "model.onnx").stat().st_size < 30 * 1024 * 1024


def test_a_paraphrase_is_closer_than_an_unrelated_sentence() -> None:
    embedder = OnnxEmbedder(MODEL_DIR)
    record, paraphrase, unrelated = (np.array(v) for v in embedder.embed([
        "Backoff policy for the billing service: exponential, capped at five attempts.",
        "what did we decide about retries for payments",
        "The marketing newsletter is sent every Monday morning.",
    ]))
    assert record.shape == (384,)
    assert abs(float(np.linalg.norm(record)) - 1.0) < 1e-5
    assert float(record @ paraphrase) > float(record @ unrelated) + 0.1


def test_embedding_is_deterministic() -> None:
    embedder = OnnxEmbedder(MODEL_DIR)
    text = "The boundary layer separates at high angles of attack."
    assert embedder.embed([text]) == embedder.embed([text])


def test_a_vector_does_not_depend_on_what_else_is_embedded_with_it() -> None:
    # One model call embeds a whole batch (padded to its longest text). The int8 graph
    # this model replaced quantized activations with one scale per batch tensor, so a
    # text's vector moved with its neighbours (up to 0.03 per coordinate); the committed
    # graph computes in fp32 from int8 weights, and each text gets its vector alone.
    embedder = OnnxEmbedder(MODEL_DIR)
    text = "heat transfer in a laminar boundary layer"
    alone = embedder.embed([text])[0]
    neighbours = ["the flutter of a swept wing at supersonic speed " * 12, text,
                  "a shock wave"]
    assert embedder.embed(neighbours)[1] == alone
    assert embedder.embed(list(reversed(neighbours)))[1] == alone


def test_a_batch_gives_every_text_its_single_text_vector() -> None:
    embedder = OnnxEmbedder(MODEL_DIR)
    texts = [f"record {n}: " + "the projector embeds a batch of records in one call " * (n % 7)
             for n in range(40)]  # more than one model call (MAX_BATCH), lengths mixed
    batched = embedder.embed(texts)
    assert batched == [embedder.embed([text])[0] for text in texts]
