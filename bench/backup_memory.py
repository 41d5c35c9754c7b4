"""Where the export's and the restore's memory goes on moto: ``tracemalloc`` at two sizes.

Run: ``.venv/bin/python bench/backup_memory.py [--sizes 1000,10000]`` (slow: tracing slows
every phase several times; ~5 min for 1k and 10k on an idle 2-core machine).

bench/backup_scale.py's sessions (moto's paged Query windowed, its item tracker cleared
before each phase and after each request: bench/moto_item_tracker.py). Per size, the
export and then the restore of ``backup_scale``'s planted workspace, each traced from its
start: the peak of Python allocations, what is still allocated once the phase is over
(tracker cleared, garbage collected), and of that, moto's stream records (measured by
dropping the ones the phase added) and the rest (the items moto keeps in its tables); then
the lines that allocated what stays. If ``peak - kept`` holds across sizes, what grows
with the records is what moto stores, not what the commands or the routes hold.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import moto_item_tracker
from backup_scale import Session, session, workspaces
from search_scale import Corpus

MIB = 2**20


def main_table(bench: Session) -> Any:
    """moto's model of the main table."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[bench.settings.table_name]


def trace(name: str, size: int, run: Callable[[], object], table: Any) -> None:
    """Run one phase under tracemalloc and print its peak, what stays and where."""
    shard = table.stream_shard
    moto_item_tracker.clear()
    gc.collect()
    items_before = sum(len(partition) for partition in table.items.values())
    records_before = len(shard.items)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        run()
        moto_item_tracker.clear()
        gc.collect()
        peak = tracemalloc.get_traced_memory()[1]
        after = tracemalloc.take_snapshot()
        kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        added = len(shard.items) - records_before
        held = tracemalloc.get_traced_memory()[0]
        del shard.items[records_before:]  # moto's stream records, the phase's only
        gc.collect()
        stream = held - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    items = sum(len(partition) for partition in table.items.values()) - items_before
    print(f"{size:,} {name}: traced peak {peak / MIB:.1f} MiB, kept {kept / MIB:.1f} MiB, "
          f"peak - kept {(peak - kept) / MIB:.1f} MiB; moto added {items:,} table items "
          f"and {added:,} stream records: stream {stream / MIB:.1f} MiB, the rest "
          f"{(kept - stream) / MIB:.1f} MiB ({kept / size / 1024:.1f} KiB per record)",
          flush=True)
    for stat in after.compare_to(before, "lineno")[:5]:
        frame = stat.traceback[0]
        where = frame.filename.split("site-packages/")[-1].split("python3.11/")[-1]
        print(f"    {stat.size_diff / MIB:6.1f} MiB  {where}:{frame.lineno}")


def main() -> None:
    """Parse the sizes, trace each one's export and restore."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1000,10000")
    sizes = tuple(int(s) for s in parser.parse_args().sizes.split(","))
    workspaces(sizes)
    with session(window=True, forget=moto_item_tracker.clear) as bench, \
            tempfile.TemporaryDirectory(prefix="engram-backup-memory-") as scratch:
        table, corpus = main_table(bench), Corpus()
        for size in sizes:
            source = bench.plant(size, corpus)
            bundle = Path(scratch) / f"{source}.bundle"
            trace("export", size, partial(bench.export, source, bundle), table)
            trace("restore", size, partial(bench.restore, bundle, f"dst-{size}"), table)
            bundle.unlink()


if __name__ == "__main__":
    main()
