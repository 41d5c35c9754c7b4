"""Where the export's and the restore's memory goes on moto: ``tracemalloc`` at two sizes.

Run: ``.venv/bin/python bench/backup_memory.py [--sizes 1000,10000]`` (slow: tracing slows
every phase several times; ~5 min for 1k and 10k on an idle 2-core machine).

bench/backup_scale.py's sessions (moto's paged Query windowed, its item tracker cleared
before each phase and after each request: bench/moto_item_tracker.py). Per size, the
export and then the restore of ``backup_scale``'s planted workspace, each traced from its
start: the peak of Python allocations, what is still allocated once the phase is over
(tracker cleared, garbage collected), and of that, moto's stream records (measured by
dropping the ones the phase added) and the rest (the items moto keeps in its tables); the
lines that allocated what stays, then a table. If ``peak - kept`` holds across sizes, what
grows with the records is what moto stores, not what the commands or the routes hold.
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
from harness import machine, table
from search_scale import Corpus

MIB = 2**20


def main_table(bench: Session) -> Any:
    """moto's model of the main table."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[bench.settings.table_name]


def trace(name: str, size: int, run: Callable[[], object], moto_table: Any) -> list[str]:
    """Run one phase under tracemalloc, print where what stays was allocated; its row."""
    shard = moto_table.stream_shard
    moto_item_tracker.clear()
    gc.collect()
    items_before = sum(len(partition) for partition in moto_table.items.values())
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
    items = sum(len(partition) for partition in moto_table.items.values()) - items_before
    print(f"... {size:,} {name}: moto added {items:,} table items and {added:,} stream "
          "records; what stays, by the line that allocated it:", flush=True)
    for stat in after.compare_to(before, "lineno")[:5]:
        frame = stat.traceback[0]
        where = frame.filename.split("site-packages/")[-1].split("python3.11/")[-1]
        print(f"...   {stat.size_diff / MIB:6.1f} MiB  {where}:{frame.lineno}")
    return [f"{size:,}", name, f"{peak / MIB:.1f}", f"{kept / MIB:.1f}",
            f"{(peak - kept) / MIB:.1f}", f"{stream / MIB:.1f}",
            f"{(kept - stream) / MIB:.1f}", f"{kept / size / 1024:.1f}"]


def main() -> None:
    """Parse the sizes, trace each one's export and restore."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1000,10000")
    sizes = tuple(int(s) for s in parser.parse_args().sizes.split(","))
    workspaces(sizes)
    rows: list[list[str]] = []
    with session(window=True, forget=moto_item_tracker.clear) as bench, \
            tempfile.TemporaryDirectory(prefix="engram-backup-memory-") as scratch:
        main, corpus = main_table(bench), Corpus()
        for size in sizes:
            source = bench.plant(size, corpus)
            bundle = Path(scratch) / f"{source}.bundle"
            rows.append(trace("export", size, partial(bench.export, source, bundle), main))
            rows.append(trace("restore", size, partial(bench.restore, bundle, f"dst-{size}"),
                              main))
            bundle.unlink()
    print(f"backup_memory: {machine()}; moto Query: window; moto tracker: cleared")
    print("MiB of Python allocations (tracemalloc) from the phase's start; kept: still "
          "allocated after it; stream: moto's stream records among them; table: the rest")
    print(table(["records", "phase", "peak MiB", "kept MiB", "peak - kept MiB", "stream MiB",
                 "table MiB", "kept KiB/record"], rows))


if __name__ == "__main__":
    main()
