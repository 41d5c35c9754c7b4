"""Read units of each of search_scale's queries, by DynamoDB call, for several (K, B, C).

Run: ``.venv/bin/python bench/read_units_by_query.py [--records 50000] [--variants
2000/8000/200,3000/12000/100]`` (a variant is postings per term K / per-search budget B /
completion cap C). Loads search_scale's synthetic records once, then runs its fixed query
set once per variant through the real search handler and prints, per query, the read units
(priced as search_scale prices them: from item sizes, halved when eventually consistent)
split by call and consistency, and each variant's mean and max: where a search's units go,
so a budget can be chosen by cost (docs/decisions/score-completion.md).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gc
import os
from typing import Any

from harness import table
from search_scale import BASE_ENV, QUERY_RANKS, Corpus, CostMeter, load, search_event


class CallMeter(CostMeter):
    """search_scale's meter, also splitting the units by call and consistency."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.by_call: collections.defaultdict[str, float] = collections.defaultdict(float)

    def _price(self, parsed: dict[str, Any], model: Any) -> float:
        priced = super()._price(parsed, model)
        kind = "consistent" if getattr(self._local, "consistent", False) else "eventual"
        with self._lock:  # a search's calls run in several threads at once
            self.by_call[f"{model.name} {kind}"] += priced
        return priced


def main() -> None:
    """Load once, run every variant, print one row per query and variant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50000)
    parser.add_argument("--variants", default="2000/8000/200,3000/12000/100,4000/16000/50")
    args = parser.parse_args()
    variants = [tuple(int(x) for x in v.split("/")) for v in args.variants.split(",")]
    os.environ.update(BASE_ENV)
    os.environ["ENGRAM_SEARCH_POSTINGS_PER_TERM"] = "0"

    import boto3
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from moto import mock_aws

    prepare_moto_dynamodb()
    with mock_aws():
        from engram_memory import bootstrap
        from engram_memory.composition import search as search_root
        from engram_memory.local.inprocess_invoker import (
            LocalLambdaContext,
            default_functions_dir,
            load_handler,
        )
        from engram_memory.local.provisioning import create_tables

        bootstrap.reset()
        dynamodb = bootstrap.dynamodb_client()
        meter = CallMeter(dynamodb)
        create_tables(boto3.client("dynamodb", region_name="us-east-1"), bootstrap.settings())
        corpus = Corpus()
        service = search_root.service()
        deployed = service._config
        load(corpus, 0, args.records, dynamodb)
        gc.collect()
        gc.freeze()
        handler = load_handler(default_functions_dir(), "search")
        assert handler is not None
        calls = ["GetItem consistent", "Query eventual", "BatchGetItem eventual",
                 "BatchGetItem consistent"]
        rows: list[list[str]] = []
        for k, b, c in variants:
            config = dataclasses.replace(deployed, postings_per_term=k, postings_budget=b,
                                         completion_cap=c)
            service._config = config
            service._completion._config = config
            totals = []
            for ranks in QUERY_RANKS:
                meter.by_call.clear()
                meter.take()
                envelope = handler(search_event(corpus, ranks),
                                   LocalLambdaContext(function_name="search"))
                if not envelope["ok"]:
                    raise SystemExit(f"search failed: {envelope['error']['code']}")
                units, _ = meter.take()
                totals.append(units)
                other = set(meter.by_call) - set(calls)
                if other:
                    raise SystemExit(f"calls with no column: {sorted(other)}")
                rows.append([f"{k} / {b} / {c}", " ".join(map(str, ranks)), f"{units:.1f}",
                             *(f"{meter.by_call.get(call, 0.0):g}" for call in calls)])
            rows.append([f"{k} / {b} / {c}", "**mean / max**",
                         f"**{sum(totals) / len(totals):.1f} / {max(totals):.1f}**",
                         "", "", "", ""])
        print(f"{args.records} records, search_scale's queries (vocabulary ranks), read units "
              f"per search by call")
        print(table(["K / B / C", "query ranks", "read units", *calls], rows))


if __name__ == "__main__":
    main()
