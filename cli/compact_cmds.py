"""``rl compact``: rewrite a store's many small run partitions into one file per table (whole-history speed)."""

from __future__ import annotations

from pathlib import Path

import typer

from rooflake.cli.common import StoreOpt, app, guard


@app.command()
@guard
def compact(store: StoreOpt = None) -> None:
    """Rewrite every run's small partitions into one compacted file per table, without changing any answer.

    Queries over the whole history then read a few files instead of three per run; a one-run query skips other
    runs' row groups. Safe beside readers and ingests (it holds the store's lock; an ingest waits), safe to kill
    (the store answers as before), and idempotent: run it from cron, e.g. nightly. A run re-ingested with --force
    afterwards is read from its new partitions until the next compaction. On object storage (s3://) the compacted
    files are uploaded, then compacted.json commits them; run one compaction per store at a time there.
    """
    from rooflake.store import Store
    from rooflake.store.compact import compact as compact_store

    s = Store(store)
    r = compact_store(s.url if s.url is not None else Path(str(s.root)))
    typer.echo(
        f"store {s.root}: {r.runs} runs compacted, {r.partitions_removed} partition folders removed, "
        f"{r.files_before} -> {r.files_after} Parquet files (generation {r.generation})"
    )
