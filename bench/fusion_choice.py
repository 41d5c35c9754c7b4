"""How the fusion rule and weight were chosen: candidates on development queries only.

Run: ``.venv/bin/python bench/fusion_choice.py [--cranfield DIR] [--locomo DIR]`` (the two
sets under ``../shared/data`` by default; a few minutes here). Both channels are computed
once per set exactly as bench/retrieval_eval.py ``--path in-process`` computes them (the
functions the projector and search Lambdas run); every candidate fuses them with
domain/fusion.py. Each set's judged queries are split by the integer their id ends with:
odd = development (where a candidate is chosen), even = held out (where it is judged).
The choice maximizes the smaller of the two sets' development gains over lexical at
nDCG@10 (a rule must not lose on either kind of memory), among the candidates that are at
least lexical at nDCG@10 and Recall@10 on both development halves. Printed: nDCG@10 and
R@10 per set and half for lexical, semantic and every candidate, then the choice and its
held-out numbers.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from engram_memory.domain.fusion import FusionConfig, fuse
from engram_memory.semantic_wiring import fusion_config
from harness import table
from reference_data import reference_data
from retrieval_eval import (
    DEPTH,
    BeirSet,
    Channels,
    channels_in_process,
    judged_queries,
    load_beir,
    measures,
)

DATA = reference_data()
CONVEX_LEXICAL = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)  # α: α·lexical + (1−α)·semantic


def convex(alpha: float) -> FusionConfig:
    """The convex combination with lexical weight α, as the settings configure it."""
    return fusion_config("convex", alpha)


CANDIDATES = [
    *(FusionConfig(rule="rrf", rrf_k=k, lexical_weight=w)
      for k in (10, 60) for w in (1.0, 2.0, 3.0, 5.0)),
    *(convex(a) for a in CONVEX_LEXICAL),
]


def half(qid: str) -> str:
    """``dev`` for ids ending in an odd integer, ``held-out`` for even ones."""
    match = re.search(r"(\d+)$", qid)
    return "dev" if match is not None and int(match.group(1)) % 2 == 1 else "held-out"


def label(config: FusionConfig) -> str:
    """A candidate's row name."""
    if config.rule == "convex":
        alpha = config.lexical_weight / (config.lexical_weight + config.semantic_weight)
        return f"convex α_lex={alpha:.2f}"
    return f"rrf k={config.rrf_k} w_lex={config.lexical_weight:g}"


class SetRuns:
    """One set's channels, its judgements and its two halves."""

    def __init__(self, name: str, beir: BeirSet, scope_field: str | None) -> None:
        self.name, self.qrels = name, beir.qrels
        queries = judged_queries(beir, None)
        self.channels: Channels = channels_in_process(beir, scope_field, queries)
        ids = [str(q["_id"]) for q in queries]
        self.halves = {h: [q for q in ids if half(q) == h] for h in ("dev", "held-out")}
        self.halves["all"] = ids

    def ranked(self, config: FusionConfig | None, mode: str = "fused") -> dict[str, list[str]]:
        doc_of, out = self.channels.doc_of, {}
        for qid, lexical in self.channels.lexical.items():
            semantic = self.channels.semantic[qid]
            hits = (lexical if mode == "lexical" else semantic if mode == "semantic"
                    else fuse(lexical, semantic, config or FusionConfig()))
            out[qid] = [doc_of[h.record_id] for h in hits[:DEPTH]]
        return out

    def scores(self, ranked: dict[str, list[str]]) -> dict[str, dict[str, float]]:
        return {h: measures(ranked, self.qrels, qids) for h, qids in self.halves.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cranfield", type=Path, default=DATA / "cranfield")
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo-dev")
    options = parser.parse_args(argv)
    sets = [SetRuns("cranfield", load_beir(options.cranfield), None),
            SetRuns("locomo-dev", load_beir(options.locomo), "conversation")]
    rows: dict[str, list[dict[str, dict[str, float]]]] = {
        "lexical": [s.scores(s.ranked(None, "lexical")) for s in sets],
        "semantic": [s.scores(s.ranked(None, "semantic")) for s in sets]}
    configs = {label(c): c for c in CANDIDATES}
    for name, config in configs.items():
        rows[name] = [s.scores(s.ranked(config)) for s in sets]
    lexical = rows["lexical"]

    def gain(name: str, measure: str, i: int, part: str = "dev") -> float:
        return rows[name][i][part][measure] - lexical[i][part][measure]

    safe = [n for n in configs if all(gain(n, m, i) >= 0 for m in ("ndcg@10", "recall@10")
                                      for i in range(len(sets)))]
    chosen = max(safe or list(configs),
                 key=lambda n: min(gain(n, "ndcg@10", i) for i in range(len(sets))))
    headers = ["ranking"] + [f"{s.name} {h} {m}" for s in sets for h in ("dev", "held-out")
                             for m in ("nDCG@10", "R@10")]
    print(", ".join(f"{s.name}: {len(s.halves['dev'])} dev / {len(s.halves['held-out'])} "
                    "held-out queries" for s in sets))
    print(table(headers, [[name, *(f"{r[h][m]:.4f}" for r in rs for h in ("dev", "held-out")
                                   for m in ("ndcg@10", "recall@10"))]
                          for name, rs in rows.items()]))
    print(f"\nchosen on dev: {chosen} ({len(safe)} of {len(configs)} candidates never below "
          "lexical on either dev half)")
    print(table(["set", "half", "mode", "nDCG@10", "R@10", "R@100"],
                [[s.name, h, mode, *(f"{rows[mode][i][h][m]:.4f}"
                                     for m in ("ndcg@10", "recall@10", "recall@100"))]
                 for i, s in enumerate(sets) for h in ("dev", "held-out", "all")
                 for mode in ("lexical", "semantic", chosen)]))


if __name__ == "__main__":
    main()
