"""``rl compact``: rewrite a store's many small run partitions into one file per table (whole-history speed)."""

from __future__ import annotations

from pathlib import Path

import typer

from rooflake.cli.common import StoreOpt, app, existing_store, guard


@app.command()
@guard
def compact(store: StoreOpt = None) -> None:
    """Fold the runs ingested since the last compaction into compacted files, without changing any answer.

    Queries over the whole history then read a few files instead of three per run; a one-run query skips other
    runs' row groups. Incremental: each compaction writes one new generation (a file per table) holding the new
    runs only, and merges small generations into it, so its work follows the new runs and a store keeps at most 8
    generations. Safe beside readers and ingests (an ingest waits), safe to kill (the store answers as before),
    idempotent: run it from cron, e.g. nightly. A run re-ingested with --force afterwards is read from its new
    partitions until the next compaction. One compaction per store at a time: a second one fails at once and
    changes nothing (on s3:// too: a lock object, and compacted.json's conditional PUT is the commit).
    """
    from rooflake.store import Store
    from rooflake.store.compact import compact as compact_store

    s = Store(store)
    existing_store(s)
    r = compact_store(s.url if s.url is not None else Path(str(s.root)))
    typer.echo(
        f"store {s.root}: {r.runs} runs compacted ({r.written} written now, {r.merged} generations merged, "
        f"{r.segments} in all), {r.partitions_removed} partitions removed, "
        f"{r.files_before} -> {r.files_after} Parquet files "
        + (f"(generation {r.generation})" if r.generation else "(nothing to compact: no generation written)")
    )
