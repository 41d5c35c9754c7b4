"""The embedder runs without huggingface-hub, which the Lambda layer leaves out.

tokenizers requires huggingface-hub (for ``Tokenizer.from_pretrained``, a download), so
the lock pins it; ``infra/package.py`` (LAYER_UNUSED) does not install it. This proves that
loading and running the embedder never imports it: in a fresh interpreter where importing
it fails, a text still embeds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.support.semantic import MODEL_DIR
from tests.unit.adapters.test_onnx_embedder import tiny_model, write_manifest

if TYPE_CHECKING:
    from pathlib import Path

_PROGRAM = """
import json, sys
for name in ("huggingface_hub", "hf_xet", "fsspec", "filelock", "yaml", "tqdm"):
    sys.modules[name] = None  # importing any of them now raises ImportError
from pathlib import Path
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
[vector] = OnnxEmbedder(Path(sys.argv[1])).embed(["retry budget for payments"])
print(json.dumps([len(vector), sorted(m for m in sys.modules if m.startswith("hugging"))]))
"""


def test_the_embedder_loads_and_embeds_without_huggingface_hub(tmp_path: Path) -> None:
    shutil.copy(MODEL_DIR / "tokenizer.json", tmp_path / "tokenizer.json")
    tiny_model(tmp_path / "model.onnx")
    write_manifest(tmp_path)
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [4, ["huggingface_hub"]]  # the blocked None entry only
