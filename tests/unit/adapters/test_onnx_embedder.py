"""The ONNX embedder's loading, pooling and integrity checks, on a tiny generated graph.

The graph is an embedding lookup (token id → a fixed 4-float row), so the expected vector
of any text is computable by hand: the mean of its tokens' rows over the attention mask,
L2-normalized. The committed tokenizer is used as is.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.services.ports.semantic import SemanticChannelError
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer

from tests.support.semantic import MODEL_DIR

DIM = 4
VOCAB = 30522


def table() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(VOCAB, DIM)).astype(np.float32)


def tiny_model(path: Path) -> None:
    """last_hidden_state = Gather(table, input_ids): [batch, sequence, 4]."""
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                           ["batch", "sequence", DIM])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "tiny", inputs, [output], initializer=[numpy_helper.from_array(table(), "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def write_manifest(folder: Path, dimension: int = DIM) -> None:
    files = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
             for name in ("model.onnx", "tokenizer.json")}
    sizes = {name: (folder / name).stat().st_size for name in files}
    (folder / "MANIFEST.json").write_text(json.dumps({
        "model_id": "test/tiny", "dimension": dimension, "max_tokens": 16,
        "pooling": "mean", "files": files, "bytes": sizes}))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copy(MODEL_DIR / "tokenizer.json", tmp_path / "tokenizer.json")
    tiny_model(tmp_path / "model.onnx")
    write_manifest(tmp_path)
    return tmp_path


def expected(text: str) -> np.ndarray:
    tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=16)
    tokenizer.no_padding()  # tokenizer.json pads to 128; only real tokens count
    rows = table()[tokenizer.encode(text).ids]
    mean = rows.mean(axis=0)
    return np.asarray(mean / np.linalg.norm(mean))


def test_a_vector_is_the_normalized_mean_of_the_real_tokens(folder: Path) -> None:
    [vector] = OnnxEmbedder(folder).embed(["backoff policy for billing"])
    assert np.allclose(vector, expected("backoff policy for billing"), atol=1e-6)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6


def test_padding_in_a_batch_does_not_change_a_vector(folder: Path) -> None:
    embedder = OnnxEmbedder(folder)
    short = "nightly backups"
    long = "the payment service retries failed charges with exponential backoff"
    alone = embedder.embed([short])[0]
    batched = embedder.embed([long, short])
    assert np.allclose(batched[1], alone, atol=1e-6)
    assert np.allclose(batched[0], expected(long), atol=1e-6)


def test_info_comes_from_the_manifest_without_loading(folder: Path) -> None:
    info = OnnxEmbedder(folder).info
    digest = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
    assert (info.model_id, info.dimension, info.version) == ("test/tiny", DIM, "sha256:" + digest)


def test_a_truncated_model_file_is_refused(folder: Path) -> None:
    data = (folder / "model.onnx").read_bytes()
    (folder / "model.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(SemanticChannelError):
        OnnxEmbedder(folder).embed(["x"])


def test_a_same_size_garbage_model_is_refused_by_the_graph_parse(folder: Path) -> None:
    size = (folder / "model.onnx").stat().st_size
    (folder / "model.onnx").write_bytes(bytes(range(256)) * (size // 256) + b"\1" * (size % 256))
    with pytest.raises(SemanticChannelError):
        OnnxEmbedder(folder).embed(["x"])


def test_a_manifest_without_file_sizes_is_refused(folder: Path) -> None:
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    del manifest["bytes"]["tokenizer.json"]
    (folder / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(SemanticChannelError):
        OnnxEmbedder(folder).embed(["x"])


def test_a_load_does_not_hash_the_model(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sha256 is checked when the layer is built (tests/infra/test_layer_models.py).
    def no_hashing(*_: object) -> None:
        raise AssertionError("hashed at load")

    monkeypatch.setattr(hashlib, "sha256", no_hashing)
    OnnxEmbedder(folder).load()


def test_a_missing_manifest_or_file_is_a_channel_failure(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    with pytest.raises(SemanticChannelError):
        OnnxEmbedder(folder).embed(["x"])
    (folder / "MANIFEST.json").unlink()
    with pytest.raises(SemanticChannelError):
        _ = OnnxEmbedder(folder).info


def test_a_graph_of_another_dimension_than_declared_is_refused(folder: Path) -> None:
    write_manifest(folder, dimension=8)
    with pytest.raises(SemanticChannelError):
        OnnxEmbedder(folder).embed(["x"])
