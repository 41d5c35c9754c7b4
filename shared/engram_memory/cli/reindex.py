"""``engram-memory reindex``: rebuild the search projection of deployed tables."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``reindex``."""
    reindex = sub.add_parser("reindex", help="rebuild the search projection of deployed tables",
                             description="Rebuild the search projection of deployed tables "
                                         "(docs/search.md).")
    reindex.add_argument("--drop-stale", action="store_true",
                         help="then delete the projection items of other generations")
    reindex.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Re-index every record of ENGRAM_TABLE_NAME into ENGRAM_PROJECTION_TABLE_NAME.

    Uses the ambient AWS credentials and the ``ENGRAM_*`` table settings; safe to run
    while the projector runs, and again after an interruption (services/reindex.py).
    """
    from engram_memory import bootstrap
    from engram_memory.adapters.dynamodb.projection_generations import delete_other_generations
    from engram_memory.composition import projection as projection_root
    from engram_memory.domain.ranking import PROJECTION_GENERATION

    scopes = projection_root.rebuild().run()
    print(f"generation {PROJECTION_GENERATION}: {len(scopes)} workspaces indexed up to their "
          "journal head")
    if args.drop_stale:
        dropped = delete_other_generations(bootstrap.dynamodb_client(),
                                           bootstrap.settings().projection_table_name)
        print(f"deleted {dropped} items of other generations")
    return 0
