"""The package step ships the embedding model in the layer, pinned by its manifest."""

from __future__ import annotations

import hashlib
import json
import shutil
from typing import TYPE_CHECKING

import pytest

from infra.package import MODELS_DIR, add_models, runtime_requirements

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.infra


def test_the_model_lands_under_engram_models_with_the_hashes_of_its_manifest(
    tmp_path: Path,
) -> None:
    add_models(tmp_path)
    shipped = tmp_path / "engram-models" / "all-minilm-l6-v2"
    manifest = json.loads((shipped / "MANIFEST.json").read_text())
    for name, expected in manifest["files"].items():
        assert hashlib.sha256((shipped / name).read_bytes()).hexdigest() == expected
        assert (shipped / name).stat().st_size == manifest["bytes"][name]


def test_a_model_file_that_does_not_match_its_manifest_stops_the_build(tmp_path: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(MODELS_DIR / "all-minilm-l6-v2", models / "all-minilm-l6-v2")
    (models / "all-minilm-l6-v2" / "tokenizer.json").write_text("{}")
    with pytest.raises(SystemExit, match="MANIFEST"):
        add_models(tmp_path / "layer", models)


def test_a_same_size_change_stops_the_build_the_one_full_hash_check(tmp_path: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(MODELS_DIR / "all-minilm-l6-v2", models / "all-minilm-l6-v2")
    model = models / "all-minilm-l6-v2" / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: same size, another model
    model.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match="MANIFEST"):
        add_models(tmp_path / "layer", models)


def test_the_layer_requirements_include_the_embedder_runtime() -> None:
    names = {req.split(">")[0].split("=")[0] for req in runtime_requirements()}
    assert {"onnxruntime", "tokenizers", "numpy"} <= names
