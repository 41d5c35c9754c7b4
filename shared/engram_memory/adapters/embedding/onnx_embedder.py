"""The in-deployment embedder: a sentence-embedding model run with onnxruntime on CPU.

The model folder holds ``model.onnx``, ``tokenizer.json`` and ``MANIFEST.json`` (model id,
dimension, token limit, pooling, and the sha256 of both files). Files are never fetched:
the Lambda layer carries them and the local service finds them in the repository's
``models/`` (docs/semantic.md, "The model"). The sha256 of every file is checked once, when
``infra/package.py`` builds the layer (which Lambda then serves immutable); a load only
compares each file's size with the manifest, so a truncated or replaced model still fails
loudly (a same-size corrupt graph fails onnxruntime's parse) without hashing 23 MB on
every cold start. Pooling = mean over the attention mask, then L2 normalization (what
all-MiniLM-L6-v2's ``1_Pooling/config.json`` specifies).

A batch of texts is one model call (at most MAX_BATCH texts and MAX_BATCH_TOKENS padded
tokens per call, shortest first so little is padded). That is sound because the model's
arithmetic is fp32: the committed graph stores its weights as int8 but dequantizes them
when the session is built (models/all-minilm-l6-v2/export.py), so nothing about a text's
neighbours (their content, their length, the padding) enters its vector;
``tests/unit/adapters/test_minilm_model.py`` asserts a batched vector equals the text's
vector alone. (The dynamic-int8 graph used before quantized activations with one scale
per batch tensor, so a text had to run alone.)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_memory.services.ports.semantic import EmbedderInfo, SemanticChannelError, Vector

MANIFEST = "MANIFEST.json"
MAX_BATCH = 32  # texts per model call
MAX_BATCH_TOKENS = 2048  # padded tokens per model call (texts x longest): long texts go in
# smaller calls, since attention grows with the square of the length and a large padded
# batch of ~256-token texts ran slower than the same texts one at a time
# (docs/decisions/batch-embedding.md)


@dataclass(frozen=True, slots=True)
class ModelManifest:
    """What MANIFEST.json promises about the model folder."""

    model_id: str
    dimension: int
    max_tokens: int
    pooling: str
    files: dict[str, str]  # file name → sha256 hex
    sizes: dict[str, int]  # file name → bytes

    @classmethod
    def read(cls, folder: Path) -> ModelManifest:
        """Parse the manifest; any defect is a channel failure."""
        try:
            raw = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            manifest = cls(model_id=str(raw["model_id"]), dimension=int(raw["dimension"]),
                           max_tokens=int(raw["max_tokens"]), pooling=str(raw["pooling"]),
                           files={str(k): str(v) for k, v in raw["files"].items()},
                           sizes={str(k): int(v) for k, v in raw["bytes"].items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise SemanticChannelError from None
        if (manifest.pooling != "mean" or "model.onnx" not in manifest.files
                or set(manifest.sizes) != set(manifest.files)):
            raise SemanticChannelError
        return manifest


def _chunks(order: list[int], lengths: list[int]) -> list[list[int]]:
    """``order`` (shortest first) cut into model calls of at most MAX_BATCH texts and
    MAX_BATCH_TOKENS padded tokens (a text longer than that goes alone)."""
    chunks: list[list[int]] = []
    for i in order:
        if chunks and len(chunks[-1]) < MAX_BATCH and (
                (len(chunks[-1]) + 1) * lengths[i] <= MAX_BATCH_TOKENS):
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


class _Loaded:
    """The onnxruntime session and the tokenizer, built once the files check out."""

    def __init__(self, folder: Path, manifest: ModelManifest) -> None:
        import onnxruntime  # heavy imports only when the channel is used
        from tokenizers import Tokenizer

        for name, expected in manifest.sizes.items():
            if (folder / name).stat().st_size != expected:
                raise SemanticChannelError
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # the model's warnings are not ours to print
        # Fold the int8 weights' DequantizeLinear nodes into fp32 constants when the
        # session is built. Left to its QDQ fusions, onnxruntime would turn them into
        # integer kernels that quantize activations on the fly (slower on this model, and
        # their rounding is theirs to change); folded, every run is plain fp32 arithmetic.
        options.add_session_config_entry("session.disable_quant_qdq", "1")
        self.session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), sess_options=options,
            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=manifest.max_tokens)
        tokenizer.no_padding()  # tokenizer.json pads to 128; a batch pads to its longest
        self.tokenizer = tokenizer


class OnnxEmbedder:
    """Embedder port over a local ONNX sentence-embedding model (thread-safe, lazy)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._lock = threading.Lock()
        self._manifest: ModelManifest | None = None
        self._loaded: _Loaded | None = None

    @property
    def network(self) -> bool:
        """Never: the model runs in the function."""
        return False

    @property
    def info(self) -> EmbedderInfo:
        """Model id, dimension and the model file's sha256 (from the manifest)."""
        m = self._read_manifest()
        return EmbedderInfo(model_id=m.model_id, dimension=m.dimension,
                            version="sha256:" + m.files["model.onnx"])

    def load(self) -> None:
        """Size-check and load the model now (a cold start pays it here, once)."""
        self._model()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit vectors for ``texts`` (mean pooling over real tokens, L2 normalized), in
        as few model calls as MAX_BATCH allows."""
        model = self._model()
        out: list[Vector] = [() for _ in texts]
        try:
            encodings = model.tokenizer.encode_batch(list(texts))
            order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
            for chunk in _chunks(order, [len(e.ids) for e in encodings]):
                vectors = self._run(model, [encodings[i].ids for i in chunk])
                for i, vector in zip(chunk, vectors, strict=True):
                    out[i] = vector
        except SemanticChannelError:
            raise
        except Exception:  # onnxruntime raises its own types; the caller needs one
            raise SemanticChannelError from None
        return out

    def _read_manifest(self) -> ModelManifest:
        if self._manifest is None:
            self._manifest = ModelManifest.read(self._folder)
        return self._manifest

    def _model(self) -> _Loaded:
        with self._lock:
            if self._loaded is None:
                try:
                    self._loaded = _Loaded(self._folder, self._read_manifest())
                except SemanticChannelError:
                    raise
                except Exception:  # missing file, corrupt graph, missing library
                    raise SemanticChannelError from None
            return self._loaded

    def _run(self, model: _Loaded, token_ids: list[list[int]]) -> list[Vector]:
        import numpy as np

        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, tokens in enumerate(token_ids):
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in model.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = model.session.run(None, feeds)[0]
        if hidden.ndim != 3 or hidden.shape[2] != self._read_manifest().dimension:
            raise SemanticChannelError
        out: list[Vector] = []
        for row, tokens in enumerate(token_ids):
            # Mean over the text's own tokens only: the padding never enters the sum.
            pooled = hidden[row, :len(tokens)].astype(np.float32).mean(axis=0)
            unit = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
            out.append(tuple(float(x) for x in unit))
        return out
