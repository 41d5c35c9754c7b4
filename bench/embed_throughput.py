"""Batch embedding: records/s one text per model call vs one batch per call, and the query
embedding's latency (docs/semantic.md, "Batch embedding").

Run: ``.venv/bin/python bench/embed_throughput.py [--model DIR] [--compare DIR]
[--texts N]``. Two sets of the first N Cranfield documents (default 200): "long", title
then abstract (the text the projector embeds for such a record, ~200 tokens), and
"short", the title alone (~15 tokens, the length of a conversation turn). "one at a
time" calls ``OnnxEmbedder.embed`` once per text, as the projector did before; "batched"
hands it the whole list (model calls of at most MAX_BATCH texts and MAX_BATCH_TOKENS
padded tokens, shortest first). Each mode runs
twice, interleaved, and the faster run counts (the box is shared: the numbers are noisy).
The query latency is the median and p95 of
embedding each of the first 100 Cranfield queries alone (what a search pays); with
``--compare`` a second model folder (e.g. the previous file) embeds each query right after
the first, so both latencies see the same load.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from engram_memory.adapters.embedding.onnx_embedder import (
    MAX_BATCH,
    MAX_BATCH_TOKENS,
    OnnxEmbedder,
)
from harness import ROOT, machine, percentile, table
from ir_eval import load_cranfield, primary_text, titles
from reference_data import reference_data

DATA = reference_data() / "cranfield"


def rate(embedder: OnnxEmbedder, texts: list[str], batched: bool) -> float:
    """Records per second for one pass over ``texts``."""
    start = time.perf_counter()
    if batched:
        embedder.embed(texts)
    else:
        for text in texts:
            embedder.embed([text])
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "all-minilm-l6-v2")
    parser.add_argument("--compare", type=Path, help="a second model folder (query latency)")
    parser.add_argument("--texts", type=int, default=200)
    options = parser.parse_args()
    collection, title = load_cranfield(DATA), titles(DATA)
    docs = list(collection.docs.items())[:options.texts]
    sets = {"long": [f"{primary_text(title[d], text)}\n{text}" for d, text in docs],
            "short": [primary_text(title[d], text)[:120] for d, text in docs]}
    embedder = OnnxEmbedder(options.model)
    embedder.load()
    embedder.embed(sets["long"][:4])  # warm-up
    runs: dict[str, list[float]] = {}
    for _ in range(2):
        for size, texts in sets.items():
            for batched in (False, True):
                name = f"{size}, " + (
                    f"batched (≤ {MAX_BATCH} texts, ≤ {MAX_BATCH_TOKENS} tokens per call)"
                    if batched else "one at a time")
                runs.setdefault(name, []).append(rate(embedder, texts, batched))
    embedders = {options.model.name: embedder}
    if options.compare:
        embedders[f"{options.compare.name} (compared)"] = OnnxEmbedder(options.compare)
    latencies: dict[str, list[float]] = {name: [] for name in embedders}
    for query in list(collection.queries.values())[:101]:
        for name, model in embedders.items():
            start = time.perf_counter()
            model.embed([query])
            latencies[name].append((time.perf_counter() - start) * 1000)
    print(f"{machine()}; model {options.model.name}; {len(docs)} Cranfield records")
    print(table(["mode", "records/s (best of 2)"],
                [[name, f"{max(values):.1f}"] for name, values in runs.items()]))
    for name, values in latencies.items():
        values = values[1:]  # the first call of a compared model loads it
        print(f"query embedding, {name}: median {statistics.median(values):.1f} ms, "
              f"p95 {percentile(values, 95):.1f} ms (100 queries, each alone)")


if __name__ == "__main__":
    main()
