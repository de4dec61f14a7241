"""Compaction: many small run partitions rewritten into one file per table, without changing any answer.

Layout (DESIGN.md section 3)::

    STORE/<table>/run_id=<id>/part-0.parquet        what ingest writes: one file per run and table
    STORE/<table>/compacted/part-<gen>.parquet      what `rl compact` writes: every compacted run, sorted by run_id
    STORE/compacted.json                            the commit: generation, its files, the runs they hold

A run lives in exactly one place. While its ``runs/run_id=<id>/part-0.parquet`` exists it is read from its
partitions (a fresh ingest, or a ``--force`` re-ingest of a compacted run); otherwise, if ``compacted.json`` names
it, from the compacted files of that generation (the views' ``__published`` table, ``read_branch.sql``). So:

1. the new compacted files are written under ``STORE/.staging/``, fsynced, and renamed into ``compacted/``;
2. ``compacted.json`` is replaced atomically (write, fsync, rename): nothing visible changes yet, every compacted
   run still has its ``runs`` partition, which wins;
3. per compacted run, its ``runs`` partition is removed first (from then on its compacted rows are the ones read),
   then its data partitions (left-overs no view reads, as their run has no ``runs`` partition);
4. the files of older generations are removed.

On object storage (``s3://``, :func:`compact_remote`) the same layout is written without rename or lock: the
compacted files are uploaded under new names, ``compacted.json`` is put last (conditionally, over the manifest the
listing read: that PUT is the commit), then the replaced partitions are deleted
(:func:`rooflake.store.remote.commit_compaction`).

Locally, all of it holds the store's flock, so no ingest swaps a run in between (an ingest waits for it). A compaction killed
anywhere leaves a store that answers as before: before step 2 the staged files are not named by the manifest;
after it the next compaction finishes steps 3 and 4. Compacted files are written like every other part (zstd, no
float statistics: see :func:`rooflake.store.publish.stat_columns`), sorted by ``run_id`` in row groups of
:data:`ROW_GROUP_ROWS` rows, so a one-run query skips the row groups of other runs by their statistics.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflake.store.layout import ALL_TABLES, DATA_TABLES, partition

MANIFEST = "compacted.json"
COMPACTED = "compacted"
ROW_GROUP_ROWS = 65_536


@dataclass(frozen=True)
class Manifest:
    """A committed compaction: ``generation`` (a sortable text), ``files`` (table -> paths relative to the store
    root), ``runs`` (the run ids the files hold)."""

    generation: str = ""
    files: dict[str, list[str]] = field(default_factory=dict)
    runs: frozenset[str] = frozenset()


def read_manifest(root: Path) -> Manifest:
    """The store's ``compacted.json`` (an empty :class:`Manifest` when the store was never compacted)."""
    try:
        raw = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Manifest()
    return Manifest(
        str(raw["generation"]), {t: list(fs) for t, fs in raw["files"].items()}, frozenset(raw["runs"])
    )


def compacted_runs(root: Path) -> frozenset[str]:
    """Ids of the runs the last compaction holds (some may since have been re-ingested as partitions)."""
    if not (root / MANIFEST).exists():
        return frozenset()
    return read_manifest(root).runs


def write_manifest(root: Path, manifest: Manifest) -> None:
    """Replace ``compacted.json`` atomically (a temporary file, fsync, rename, fsync of the folder)."""
    from rooflake.store.publish import fsync_dir

    tmp = root / f".{MANIFEST}.{os.getpid()}"
    body = {"generation": manifest.generation, "files": manifest.files, "runs": sorted(manifest.runs)}
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(body, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / MANIFEST)
    fsync_dir(root)


@dataclass(frozen=True)
class CompactResult:
    """What one compaction did: ``runs`` (runs the compacted files hold), ``partitions_removed`` (run partition
    folders deleted), ``files_before`` / ``files_after`` (Parquet files of the store), ``generation``."""

    runs: int
    partitions_removed: int
    files_before: int
    files_after: int
    generation: str


def _parquet_files(root: Path) -> int:
    return sum(1 for t in ALL_TABLES if (root / t).is_dir() for _ in (root / t).glob("*/*.parquet"))


def _write_table(con: Any, table: str, path: Path) -> int:
    """Write every row of ``table``'s view, sorted by run, to ``path`` (zstd, no float statistics, row groups of
    :data:`ROW_GROUP_ROWS`), streamed in batches; fsync. Returns the rows written (0: no file)."""
    import pyarrow.parquet as pq

    from rooflake.schema import SCHEMA_VERSION, TABLES
    from rooflake.schema.duck import sql_template
    from rooflake.store.publish import stat_columns

    rel = con.sql(sql_template("rooflake.store", "compact_rows.sql", table=table))
    reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(ROW_GROUP_ROWS)
    schema = TABLES[table].with_metadata(
        {**(TABLES[table].metadata or {}), b"rooflake.schema_version": SCHEMA_VERSION.encode()}
    )
    rows = 0
    writer = None
    for batch in reader:
        if batch.num_rows == 0:
            continue
        if writer is None:
            writer = pq.ParquetWriter(path, schema, compression="zstd", write_statistics=stat_columns(schema))
        writer.write_batch(batch.cast(schema), row_group_size=ROW_GROUP_ROWS)
        rows += batch.num_rows
    if writer is not None:
        writer.close()
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
    return rows


def _remove_partitions(root: Path, runs: frozenset[str]) -> int:
    """Delete the partitions of ``runs`` (compacted now): ``runs`` first, so each run is read from the compacted
    files from then on, then its data partitions, which no view reads any more. Returns the folders removed."""
    n = 0
    for run_id in sorted(runs):
        for table in ("runs", *DATA_TABLES):
            folder = partition(root, table, run_id)
            if folder.is_dir():
                shutil.rmtree(folder)
                n += 1
    return n


def _remove_old_files(root: Path, manifest: Manifest) -> None:
    keep = {root / f for fs in manifest.files.values() for f in fs}
    for table in ALL_TABLES:
        for f in (root / table / COMPACTED).glob("*.parquet") if (root / table / COMPACTED).is_dir() else []:
            if f not in keep:
                f.unlink()


def compact(root: Path | str) -> CompactResult:
    """Rewrite every published run of the store at ``root`` into one file per table (see the module docstring),
    holding the store's flock; a URL (``s3://…``): :func:`compact_remote`. Every query answers as before. Raises
    :class:`StoreError` when the store cannot be written (it is then as before)."""
    from rooflake.schema import StoreError

    if isinstance(root, str):
        from rooflake.store.remote import is_url

        if is_url(root):
            return compact_remote(root)
        root = Path(root)
    from rooflake.store import database
    from rooflake.store.layout import ensure_root
    from rooflake.store.publish import fsync_dir, remove_stage, store_lock

    staging = ensure_root(root)
    before = _parquet_files(root)
    stage = staging / f"compact.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        with store_lock(root):
            db = database.build(root)
            db.union.update(
                ALL_TABLES
            )  # read every file by name: no guess, and streamed (never materialized)
            runs = frozenset(db.sources.published)
            generation = f"{time.time_ns():020d}"
            stage.mkdir()
            files: dict[str, list[str]] = {}
            for table in ALL_TABLES:
                if _write_table(db.cursor(), table, stage / f"{table}.parquet"):
                    dest = root / table / COMPACTED
                    dest.mkdir(parents=True, exist_ok=True)
                    os.replace(stage / f"{table}.parquet", dest / f"part-{generation}.parquet")
                    fsync_dir(dest)
                    files[table] = [f"{table}/{COMPACTED}/part-{generation}.parquet"]
            manifest = Manifest(generation, files, runs)
            write_manifest(root, manifest)
            removed = _remove_partitions(root, runs)
            _remove_old_files(root, manifest)
    except OSError as e:
        raise StoreError(f"cannot compact store {root}: {e.strerror or e}") from e
    finally:
        remove_stage(stage)
    return CompactResult(len(runs), removed, before, _parquet_files(root), generation)


def _remote_files(snapshot: Any) -> int:
    """Parquet files a snapshot of a remote store reads: committed partitions and compacted files."""
    return sum(len(fs) for fs in snapshot.files.values()) + sum(len(fs) for fs in snapshot.compacted.values())


def compact_remote(url: str) -> CompactResult:
    """Compact the store on object storage at ``url``: list it (:class:`rooflake.store.remote.Snapshot`), write
    every table's rows as its view reads them, sorted by run, to a local temporary file each (as :func:`compact`
    does), and publish them with :func:`rooflake.store.remote.commit_compaction` (the files, then
    ``compacted.json`` as the commit, then the partitions it replaced are deleted). Ingests meanwhile are safe
    (a run published or re-ingested after the listing keeps its partitions, which win); readers see the store
    before or after (a reader whose listing went stale lists again: ``database.Database.refresh``). No lock
    exists on object storage: run one compaction per store at a time; a second one that commits first makes this
    one fail, changing nothing. Raises :class:`StoreError` when the store cannot be read or written."""
    import tempfile

    import duckdb

    from rooflake.schema import StoreError
    from rooflake.store import database, remote

    snapshot = remote.Snapshot.take(url)
    before = _remote_files(snapshot)
    with tempfile.TemporaryDirectory(prefix="rooflake-compact-") as tmp:
        staged: dict[str, Path] = {}
        try:
            db = database.build(snapshot)
            db.union.update(ALL_TABLES)  # read every file by name, streamed
            for table in ALL_TABLES:
                if _write_table(db.cursor(), table, Path(tmp) / f"{table}.parquet"):
                    staged[table] = Path(tmp) / f"{table}.parquet"
        except (OSError, duckdb.Error) as e:
            raise StoreError(f"cannot compact store {url}: {' '.join(str(e).split())}") from e
        generation, removed = remote.commit_compaction(url, snapshot, staged)
    after = _remote_files(remote.Snapshot.take(url))
    return CompactResult(len(snapshot.published()), removed, before, after, generation)
