"""What the semantic channel costs: query embedding time, cold start, Lambda layer bytes.

Used by bench/ranking_quality.py. The cold start runs in a fresh interpreter, as a new
Lambda container would: import the embedder, check the model files against the manifest
(sizes; the sha256 is checked when the layer is built) and build the onnxruntime session,
embed one query. The layer split reads the lock (which distributions
only the ``semantic`` extra pulls in) and the built layer's RECORD files.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from harness import percentile, table
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

MODEL = Path("models") / "all-minilm-l6-v2"
LIMIT_BYTES = 250 * 1024 * 1024  # Lambda: code + layers, unzipped
_COLD = """
import time, json
from pathlib import Path
t0 = time.perf_counter()
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
t1 = time.perf_counter()
e = OnnxEmbedder(Path({model!r})); e.load()
t2 = time.perf_counter()
e.embed(["pressure distribution on a wing at supersonic speed"])
t3 = time.perf_counter()
rss = [l.split()[1] for l in Path('/proc/self/status').read_text().splitlines()
       if l.startswith('VmHWM')][0]
print(json.dumps([(t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, int(rss) / 1024]))
"""


def query_embedding(root: Path, queries: list[str]) -> list[str]:
    """Median and p95 ms to embed one query (model already loaded)."""
    embedder = OnnxEmbedder(root / MODEL)
    embedder.load()
    times = []
    for text in queries:
        started = time.perf_counter()
        embedder.embed([text])
        times.append((time.perf_counter() - started) * 1000)
    return [f"{statistics.median(times):.1f}", f"{percentile(times, 95):.1f}"]


def cold_start(root: Path, runs: int) -> list[str]:
    """Median ms of import / model check + session / first embedding, and max peak RSS."""
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'shared'}"}
    rows = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _COLD.format(model=str(root / MODEL))],
                              cwd=root, env=env, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return [*(f"{statistics.median(r[i] for r in rows):.0f}" for i in range(3)),
            f"{max(r[3] for r in rows):.0f}"]


def _closure(roots: list[str], requires: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [canonicalize_name(Requirement(r).name) for r in roots]
    while todo:
        name = todo.pop()
        if name not in seen and name in requires:
            seen.add(name)
            todo += [canonicalize_name(Requirement(r).name) for r in requires[name]]
    return seen


def _installed_bytes(packages: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for record in packages.glob("*.dist-info/RECORD"):
        name = canonicalize_name(record.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0])
        total = 0
        for line in record.read_text(encoding="utf-8").splitlines():
            parts = line.rsplit(",", 2)
            if len(parts) == 3 and parts[2].isdigit():
                total += int(parts[2])
        sizes[name] = total
    return sizes


def layer_split(root: Path) -> str | None:
    """Layer bytes: total, what the semantic extra and the model add; None if not built."""
    sys.path.insert(0, str(root))
    from infra.layer_lock import parse_lock
    from infra.package import LOCK_PATH, packaged_layer_dir, runtime_requirements

    layer = packaged_layer_dir()
    if layer is None:
        return None
    _, wheels = parse_lock(LOCK_PATH.read_text(encoding="utf-8"))
    requires = {name: list(w.requires) for name, w in wheels.items()}
    everything = runtime_requirements()
    base = [r for r in everything if canonicalize_name(Requirement(r).name) not in
            {"onnxruntime", "tokenizers", "numpy"}]
    semantic_only = _closure(everything, requires) - _closure(base, requires)
    sizes = _installed_bytes(layer / "python")
    extra = sum(sizes.get(name, 0) for name in semantic_only)
    models = sum(p.stat().st_size for p in (layer / "engram-models").rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in layer.rglob("*") if p.is_file())
    mib = 1024 * 1024
    return table(["layer (unzipped)", "MiB"], [
        ["total", f"{total / mib:.1f}"],
        [f"semantic extra ({len(semantic_only)} distributions)", f"{extra / mib:.1f}"],
        ["model files (engram-models/)", f"{models / mib:.1f}"],
        ["without the semantic channel", f"{(total - extra - models) / mib:.1f}"],
        ["Lambda limit (code + layers)", f"{LIMIT_BYTES / mib:.1f}"],
    ])


def channel_costs(root: Path, queries: list[str], runs: int) -> str:
    """The three tables as text."""
    parts = [
        "\nquery embedding alone, in process (ms)",
        table(["median", "p95"], [query_embedding(root, queries)]),
        f"\nsemantic cold start, fresh interpreter (median of {runs})",
        table(["import ms", "model check + session ms", "first embedding ms", "peak RSS MiB"],
              [cold_start(root, runs)]),
    ]
    split = layer_split(root)
    parts += ["\nLambda layer", split] if split is not None else [
        "\nLambda layer: not built (run `python infra/package.py` first)"]
    return "\n".join(parts)
