"""What is wrong with a store's files: damaged or missing partitions, unpublished leftovers, dead writers' staging.

One damaged Parquet file fails every query of its table for every run (a view reads all of a table's files), so
:func:`doctor` reads each file on its own, with the engine the views use, and names the ones that fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rooflake.schema import TABLES, DamagedStoreError
from rooflake.schema.duck import duck_connect, sql_file
from rooflake.store.layout import ALL_TABLES, COMPACTED, PART, STAGING, partition, run_ids
from rooflake.store.manifest import MANIFEST, RECOVER, Manifest, read_manifest
from rooflake.store.publish import writer_alive

PROBLEMS = pa.schema(
    [
        pa.field(
            "table", pa.string(), metadata={"description": "store table (runs, kernels, …; '' for staging)"}
        ),
        pa.field("run_id", pa.string(), metadata={"description": "run whose partition it is"}),
        pa.field("path", pa.string(), metadata={"description": "file or folder concerned"}),
        pa.field(
            "problem",
            pa.string(),
            metadata={
                "description": "damaged | other-columns | missing | unpublished | stale-staging (Store.doctor)"
            },
        ),
        pa.field("error", pa.string(), metadata={"description": "what the reader said, or what is missing"}),
    ]
)
BATCH_ROWS = 65536


def _columns_error(table: str, schema: pa.Schema) -> str | None:
    """What differs between a file's columns and its table's (``rooflake.schema.TABLES``), or None."""
    want = TABLES[table].names
    if schema.names == want:
        return None
    version = (schema.metadata or {}).get(b"rooflake.schema_version", b"?").decode()
    missing = [c for c in want if c not in schema.names]
    extra = [c for c in schema.names if c not in want]
    return (
        f"written with other columns (schema version {version}; missing {missing or 'none'}, extra "
        f"{extra or 'none'}{', other order' if not missing and not extra else ''}): re-ingest its file with --force"
    )


def read_error(con: Any, table: str, path: Path | str, filesystem: Any = None) -> tuple[str, str] | None:
    """``(problem, error)`` when ``path`` cannot be read as a file of ``table``: ``damaged`` (its footer and every
    page read by pyarrow, their checksums verified: :func:`verify_pages`; then every value decoded by DuckDB) or
    ``other-columns``; None when it reads. ``filesystem``: the fsspec filesystem of a
    path on object storage (registered with ``con`` too)."""
    import duckdb

    try:
        schema = verify_pages(path, filesystem)
    except DAMAGE as e:
        return "damaged", _why(e)
    try:
        rel = con.sql(sql_file("rooflake.store", "read_part.sql"), params={"path": str(path)})
        reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch)(BATCH_ROWS)
        for _batch in reader:
            pass
    except (duckdb.Error, *DAMAGE) as e:
        return "damaged", _why(e)
    columns = _columns_error(table, schema)
    return None if columns is None else ("other-columns", columns)


#: what pyarrow (and DuckDB's Python side) raise for a damaged Parquet file: a footer that does not parse, a page
#: whose checksum fails, a text that is not UTF-8, thrift's errors (an ``OSError``), a length out of range
DAMAGE = (OSError, pa.ArrowException, ValueError, IndexError, EOFError)


def _why(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def verify_pages(path: Path | str, filesystem: Any = None) -> pa.Schema:
    """Read every page of the Parquet file ``path`` with pyarrow, checking each page's CRC where the writer stored
    one (the store writes them: ``write_page_checksum``); returns the file's schema. Raises one of :data:`DAMAGE`
    when the file is damaged: its footer, a page whose checksum fails, a value that cannot be decoded."""
    with pq.ParquetFile(path, filesystem=filesystem, page_checksum_verification=True) as f:
        for _batch in f.iter_batches(batch_size=BATCH_ROWS):
            pass
        return f.schema_arrow


def _row(table: str, run_id: str, path: Path, problem: str, error: str) -> dict[str, str]:
    return {"table": table, "run_id": run_id, "path": str(path), "problem": problem, "error": error}


def _counts(path: Path) -> list[dict[str, Any]]:
    """The ``runs`` row(s) of a readable runs file: run id and row counts."""
    return pq.read_table(path, columns=["run_id", "n_kernels", "n_metrics"]).to_pylist()


def _missing(root: Path, published: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Partitions a published run's counts say exist and that have no file."""
    out = []
    for r in published:
        for table, n in (("kernels", r["n_kernels"]), ("metrics", r["n_metrics"])):
            path = partition(root, table, r["run_id"]) / PART
            if n and not path.exists():
                why = f"the runs row counts {n} {table} rows; the file does not exist"
                out.append(_row(table, r["run_id"], path, "missing", why))
    return out


#: a partition of a run the compacted files hold and no runs partition publishes: a leftover
LEFT_PARTITION = (
    "a partition of a run the compacted files hold (a compaction stopped while removing them): rl reads the "
    "compacted rows, a plain glob over the table reads them twice; the next rl compact deletes it"
)


def _unnamed(root: Path, table: str, named: set[Path]) -> list[dict[str, str]]:
    """Compacted files of ``table`` that ``compacted.json`` does not name (``named``): unpublished leftovers."""
    folder = root / table / COMPACTED
    why = (
        "a compacted file compacted.json does not name (a compaction running, or one stopped before its commit): "
        "rl ignores it, a plain glob over the table reads its rows twice; the next rl compact deletes it"
    )
    found = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    return [_row(table, "", f, "unpublished", why) for f in found if f not in named]


def _staging(root: Path) -> list[dict[str, str]]:
    d = root / STAGING
    out = []
    for p in sorted(d.iterdir()) if d.is_dir() else []:
        parts = p.name.split(".")
        if len(parts) == 3 and parts[1].isdigit() and not writer_alive(p):
            why = f"left by process {parts[1]}, which is gone; the next ingest cleans it"
            out.append(_row("", parts[0], p, "stale-staging", why))
    return out


def _manifest(root: Path) -> tuple[Manifest, list[dict[str, str]]]:
    """The store's ``compacted.json``, and its doctor's row when it is damaged (an empty manifest then: no
    compacted file is read, and none is called a leftover)."""
    try:
        return read_manifest(root), []
    except (DamagedStoreError, OSError) as e:
        why = str(e) if isinstance(e, DamagedStoreError) else f"cannot be read ({e.strerror or e}): {RECOVER}"
        return Manifest(), [_row("", "", root / MANIFEST, "damaged", why)]


def doctor(root: Path) -> pa.Table:
    """Check every file of the store at ``root``; one row per problem found (none: the store is healthy).

    Columns (:data:`PROBLEMS`): ``table``, ``run_id``, ``path``, ``problem``, ``error``. Problems:
    ``damaged`` — a Parquet file that cannot be read whole by DuckDB (torn, truncated, invalid UTF-8), which
    fails every query of its table; ``other-columns`` — a file written with other columns than its table's
    (another schema version), which fails the table's queries as well; ``missing`` — a published run whose
    ``runs`` row counts kernels or metrics that have no file; ``unpublished`` — a partition whose run has no
    ``runs`` row (invisible: a writer died before its commit), or a leftover a plain glob would read twice (a
    compacted file ``compacted.json`` does not name, a partition of a run the compacted files hold and no ``runs``
    partition publishes); ``stale-staging`` — a dead writer's staging folder.
    The files of the last compaction (``compacted.json``) are checked as ``damaged`` or ``other-columns`` too, with
    an empty ``run_id`` (each holds many runs); a compacted run has no partitions to check. A ``compacted.json``
    that cannot be read is ``damaged`` (table and ``run_id`` empty; its error says how to recover). Reads every file;
    raises nothing for a damaged store (only ``OSError`` when ``root`` cannot be listed)."""

    con = duck_connect()
    published: list[dict[str, Any]] = []
    manifest, rows = _manifest(root)
    named = not rows  # which compacted files compacted.json names is known
    runs = set(run_ids(root, "runs", compacted=False)) | manifest.runs  # published: a runs file, or compacted
    for table in ALL_TABLES:
        for name in manifest.files.get(table, []):  # compacted files: rows of many runs
            found = read_error(con, table, root / name)
            if found is not None:
                rows.append(_row(table, "", root / name, *found))
        if named:
            rows += _unnamed(root, table, {root / n for n in manifest.files.get(table, [])})
        for run_id in run_ids(root, table, compacted=False):
            path = partition(root, table, run_id) / PART
            if table == "runs" and not path.exists():
                continue  # a compacted run: its rows are in the compacted files, checked above
            found = read_error(con, table, path)
            if found is not None:
                rows.append(_row(table, run_id, path, *found))
            elif table == "runs":
                published += _counts(path)
            elif run_id not in runs:
                why = "no runs row: its rows are invisible; re-ingest the file or delete the folder"
                rows.append(_row(table, run_id, path, "unpublished", why))
            elif run_id in manifest.runs and not (partition(root, "runs", run_id) / PART).exists():
                rows.append(_row(table, run_id, path, "unpublished", LEFT_PARTITION))
    rows += _missing(root, published) + _staging(root)
    return pa.Table.from_pylist(rows, schema=PROBLEMS)
