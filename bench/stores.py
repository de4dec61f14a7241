"""Stores of many runs for the benchmarks: the fixture reports ingested once, then copied under new run ids.

``make_store(dst, n)`` writes ``n`` runs (``runs``, ``kernels``, ``ceilings``, and ``metrics`` when asked) as
rooflake lays them out (``STORE/<table>/run_id=<id>/part-0.parquet``, zstd, no float statistics), run ``i`` a copy
of fixture run ``i % k`` with labels ``copy=<i>`` and ``model=<fixture index>``. ``cached_store(n)`` keeps one store
per size under ``$RL_BENCH_CACHE`` (default: the system temporary directory) so that repeated benchmark runs do
not rebuild the 10,000-run store (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("RL_FIXTURES", ROOT.parent / "shared" / "fixtures"))
REPORTS = sorted((FIXTURES / "ncu").glob("*.ncu-rep"))
TABLES = ("runs", "kernels", "ceilings")
CACHE = Path(os.environ.get("RL_BENCH_CACHE", tempfile.gettempdir())) / "rooflake-bench-stores"


def run_id(i: int) -> str:
    """The id of copy ``i``: 16 hex digits."""
    return f"{i:016x}"


def make_store(dst: Path, n_runs: int, tables: tuple[str, ...] = TABLES) -> list[str]:
    """Write ``n_runs`` copies of the fixture runs into ``dst``; returns their ids in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rooflake.pipeline import ingest_paths
    from rooflake.store.publish import stat_columns

    src = dst.parent / f".{dst.name}-src"
    shutil.rmtree(src, ignore_errors=True)
    list(ingest_paths(REPORTS, src))
    runs = sorted(p.name for p in (src / "runs").iterdir())
    parts = {t: [src / t / r / "part-0.parquet" for r in runs] for t in tables}
    loaded = {t: [pq.read_table(p) if p.exists() else None for p in ps] for t, ps in parts.items()}
    ids = []
    for i in range(n_runs):
        rid = run_id(i)
        j = i % len(runs)
        for t in tables:
            tab = loaded[t][j]
            if tab is None:
                continue
            tab = tab.set_column(0, "run_id", pa.array([rid] * tab.num_rows, pa.string()))
            if t == "runs":
                labels = pa.array([[("copy", str(i)), ("model", str(j))]], tab.schema.field("labels").type)
                tab = tab.set_column(tab.schema.get_field_index("labels"), "labels", labels)
            out = dst / t / f"run_id={rid}"
            out.mkdir(parents=True)
            pq.write_table(
                tab, out / "part-0.parquet", compression="zstd", write_statistics=stat_columns(tab.schema)
            )
        ids.append(rid)
    shutil.rmtree(src, ignore_errors=True)
    return ids


def _cached(name: str, make: Callable[[Path, int], object], n_runs: int) -> Path:
    """``CACHE / name``, made by ``make(dst, n_runs)`` once (``.done`` marks a finished one)."""
    dst = CACHE / name
    if not (dst / ".done").exists():
        shutil.rmtree(dst, ignore_errors=True)
        dst.mkdir(parents=True)
        make(dst, n_runs)
        (dst / ".done").write_text("")
    return dst


def cached_store(n_runs: int) -> Path:
    """A store of ``n_runs`` copies under :data:`CACHE`, built once."""
    return _cached(f"runs{n_runs}", make_store, n_runs)


def copy_store(src: Path, dst: Path) -> Path:
    """A copy of store ``src`` at ``dst`` (hard links: compaction replaces files, it never writes into one)."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link, ignore=shutil.ignore_patterns(".done"))
    return dst


def _fixture_runs(dst: Path, tables: tuple[str, ...]) -> dict[str, list[object]]:
    """The fixture reports ingested once beside ``dst``: per table, each run's Arrow table (None: no file)."""
    import pyarrow.parquet as pq

    from rooflake.pipeline import ingest_paths

    src = dst.parent / f".{dst.name}-src"
    shutil.rmtree(src, ignore_errors=True)
    list(ingest_paths(REPORTS, src))
    runs = sorted(p.name for p in (src / "runs").iterdir())
    loaded = {
        t: [pq.read_table(p) if (p := src / t / r / "part-0.parquet").exists() else None for r in runs]
        for t in tables
    }
    shutil.rmtree(src, ignore_errors=True)
    return loaded


def make_compacted(dst: Path, n_runs: int, tables: tuple[str, ...] = TABLES) -> list[str]:
    """Write at ``dst`` the store ``rl compact`` makes of ``make_store(dst, n_runs)``: per table one file
    ``<table>/compacted/part-<gen>.parquet``, rows sorted by run id in row groups of
    ``rooflake.store.compact.ROW_GROUP_ROWS`` (zstd, no float statistics), and ``compacted.json`` naming the files
    and runs. Built directly in Arrow, chunk by chunk (100,000 runs in seconds, where writing 300,000 partition
    files and compacting them takes many minutes on 2 cores). Returns the run ids."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rooflake.schema import SCHEMA_VERSION
    from rooflake.schema import TABLES as SCHEMAS
    from rooflake.store.compact import ROW_GROUP_ROWS, Manifest, write_manifest
    from rooflake.store.publish import stat_columns

    loaded = _fixture_runs(dst, tables)
    k = len(loaded["runs"])
    ids = [run_id(i) for i in range(n_runs)]
    gen = f"{time.time_ns():020d}"
    files: dict[str, list[str]] = {}
    for t in tables:
        meta = {**(SCHEMAS[t].metadata or {}), b"rooflake.schema_version": SCHEMA_VERSION.encode()}
        schema = SCHEMAS[t].with_metadata(meta)
        (dst / t / "compacted").mkdir(parents=True, exist_ok=True)
        rel = f"{t}/compacted/part-{gen}.parquet"
        writer = pq.ParquetWriter(
            dst / rel, schema, compression="zstd", write_statistics=stat_columns(schema)
        )
        for lo in range(0, n_runs, 2000):
            chunk = []
            for i in range(lo, min(lo + 2000, n_runs)):
                tab = loaded[t][i % k]
                if tab is None:
                    continue
                tab = tab.set_column(0, "run_id", pa.array([ids[i]] * tab.num_rows, pa.string()))
                if t == "runs":
                    lab = pa.array(
                        [[("copy", str(i)), ("model", str(i % k))]], tab.schema.field("labels").type
                    )
                    tab = tab.set_column(tab.schema.get_field_index("labels"), "labels", lab)
                chunk.append(tab.select(schema.names).cast(schema))
            if chunk:
                writer.write_table(pa.concat_tables(chunk), row_group_size=ROW_GROUP_ROWS)
        writer.close()
        files[t] = [rel]
    write_manifest(dst, Manifest(gen, files, frozenset(ids)))
    return ids


def cached_compacted(n_runs: int) -> Path:
    """A compacted store of ``n_runs`` copies under :data:`CACHE` (:func:`make_compacted`), built once."""
    return _cached(f"runs{n_runs}-direct-compacted", make_compacted, n_runs)


if __name__ == "__main__":
    import sys

    for n in sys.argv[1:]:
        print(cached_store(int(n)))
