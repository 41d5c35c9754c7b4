"""The in-deployment embedder: a sentence-embedding model run with onnxruntime on CPU.

The model folder holds ``model.onnx``, ``tokenizer.json`` and ``MANIFEST.json`` (model id,
dimension, token limit, pooling, and the sha256 of both files). Files are never fetched:
the Lambda layer carries them and the local service finds them in the repository's
``models/`` (docs/search.md, "The model"). The sha256 of every file is checked once, when
``infra/package.py`` builds the layer (which Lambda then serves immutable); a load only
compares each file's size with the manifest, so a truncated or replaced model still fails
loudly (a same-size corrupt graph fails onnxruntime's parse) without hashing 23 MB on
every cold start. Pooling = mean over the attention mask, then L2 normalization (what
all-MiniLM-L6-v2's ``1_Pooling/config.json`` specifies).

Each text is run alone (a batch of one, no padding): the int8 graph quantizes its
activations dynamically, with one scale per input tensor, so a text run beside others got
a vector that depended on its neighbours and on their padding (up to 0.03 per coordinate on
Cranfield, docs/search.md). Alone, a vector is a function of the text and the model only,
so the projector, a re-index and a query agree whatever else is embedded with them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_memory.services.semantic_ports import EmbedderInfo, SemanticChannelError, Vector

MANIFEST = "MANIFEST.json"


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
        self.session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), sess_options=options,
            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=manifest.max_tokens)
        tokenizer.no_padding()  # tokenizer.json pads to 128; a text is run alone
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
        """Unit vectors for ``texts`` (mean pooling over real tokens, L2 normalized)."""
        model = self._model()
        try:
            out = [self._one(model, text) for text in texts]
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

    def _one(self, model: _Loaded, text: str) -> Vector:
        import numpy as np

        encoding = model.tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in model.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = model.session.run(None, feeds)[0]
        if hidden.ndim != 3 or hidden.shape[2] != self._read_manifest().dimension:
            raise SemanticChannelError
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit = pooled / np.clip(norms, 1e-12, None)
        return tuple(float(x) for x in unit[0])
