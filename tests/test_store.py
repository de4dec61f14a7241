"""The store: Hive layout, dedupe, --force, atomic publish, crash leftovers, concurrent ingest, labels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.ingest import file_sha256
from rooflake.pipeline import ingest_file
from rooflake.store import Store

from _support import NCU_REPORTS, fixture, snapshot

REPORT = fixture("AveryClapp__ESMM-Research__profile_output")
RL = Path(sys.executable).with_name("rl")


def test_layout_hive_partitions_and_schema_version(tmp_path: Path) -> None:
    res = ingest_file(REPORT, tmp_path)
    assert res.status == "ingested" and res.run_id == file_sha256(REPORT)[:16]
    for table in ("runs", "kernels", "metrics", "ceilings"):
        part = tmp_path / table / f"run_id={res.run_id}" / "part-0.parquet"
        assert part.is_file()
        meta = pq.read_schema(part).metadata
        assert meta[b"rooflake.schema_version"] == b"1"
    assert not any((tmp_path / ".staging").iterdir())
    # plain DuckDB and polars read the same files
    import duckdb
    import polars as pl

    n = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{tmp_path}/kernels/*/*.parquet', hive_partitioning=true)"
    ).fetchall()
    assert n == [(4,)]
    assert pl.scan_parquet(tmp_path / "kernels" / "**" / "*.parquet").collect().height == 4


def test_reingest_is_a_noop_and_force_replaces(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["ingest", str(REPORT), "--store", str(tmp_path), "--label", "batch=64"])
    assert r.exit_code == 0 and r.stdout.startswith("ingested")
    before = snapshot(tmp_path)
    r = CliRunner().invoke(app, ["ingest", str(REPORT), "--store", str(tmp_path)])
    assert r.exit_code == 0 and "already in the store" in r.stdout
    assert snapshot(tmp_path) == before
    r = CliRunner().invoke(
        app, ["ingest", str(REPORT), "--store", str(tmp_path), "--force", "--json", "-l", "batch=128"]
    )
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["status"] == "replaced" and out["kernels"] == 4
    con = queries.connect(Store(tmp_path))
    assert con.execute("SELECT count(*), any_value(labels['batch']) FROM runs").fetchall() == [(1, "128")]
    assert con.execute("SELECT count(*) FROM kernels").fetchall() == [(4,)]


def test_half_written_run_is_invisible_and_stale_staging_cleaned(tmp_path: Path) -> None:
    res = ingest_file(REPORT, tmp_path)
    # simulate a crash after the data partitions moved but before the runs row: drop the runs partition
    shutil.rmtree(tmp_path / "runs" / f"run_id={res.run_id}")
    con = queries.connect(Store(tmp_path))
    assert con.execute("SELECT count(*) FROM kernels").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM metrics").fetchall() == [(0,)]
    # a staging dir of a dead process is removed by the next ingest
    dead = tmp_path / ".staging" / "0123456789abcdef.999999999.dead"
    (dead / "kernels").mkdir(parents=True)
    ingest_file(REPORT, tmp_path)  # the run is re-ingested since it has no runs row
    from rooflake.pipeline import ingest_paths

    list(ingest_paths([REPORT], tmp_path))
    assert not dead.exists()
    assert queries.connect(Store(tmp_path)).execute("SELECT count(*) FROM kernels").fetchall() == [(4,)]


def test_two_concurrent_ingests_both_succeed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    half = len(NCU_REPORTS) // 2
    a = [str(p) for p in NCU_REPORTS[:half]] + [str(REPORT)]
    b = [str(p) for p in NCU_REPORTS[half:]] + [str(REPORT)]
    env = {**os.environ, "RL_STORE": str(store)}
    procs = [
        subprocess.Popen(
            [str(RL), "ingest", *files, "--workers", "1"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for files in (a, b)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    con = queries.connect(Store(store))
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(len(NCU_REPORTS),)]
    kernels = con.execute("SELECT count(*) FROM kernels").fetchall()[0][0]
    assert kernels == con.execute("SELECT sum(n_kernels) FROM runs").fetchall()[0][0]
    assert not any((store / ".staging").iterdir())


def test_runs_lists_labels(tmp_path: Path) -> None:
    CliRunner().invoke(
        app, ["ingest", str(REPORT), "--store", str(tmp_path), "-l", "model=esmm", "-l", "batch=1"]
    )
    r = CliRunner().invoke(app, ["runs", "--store", str(tmp_path), "--format", "json"])
    assert r.exit_code == 0
    (row,) = json.loads(r.stdout)
    assert row["labels"] == "batch=1,model=esmm" and row["gpu_name"] == "NVIDIA A10G" and row["kernels"] == 4


def test_failed_force_replace_keeps_the_old_run(tmp_path: Path, monkeypatch) -> None:
    import errno

    from rooflake.schema import StoreError

    ingest_file(REPORT, tmp_path)
    before = snapshot(tmp_path)
    real_replace = os.replace

    def failing_replace(src, dst):  # the commit, the new runs file renamed over the old one, fails
        if "/runs/" in str(dst) and ".staging" in str(src):
            raise OSError(errno.EIO, "simulated I/O error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StoreError, match="simulated I/O error"):
        ingest_file(
            REPORT, tmp_path, force=True, fp16="nersc"
        )  # other kernels (FP16 factors) than the old run
    monkeypatch.setattr(os, "replace", real_replace)
    assert snapshot(tmp_path) == before
    assert queries.connect(Store(tmp_path)).execute("SELECT count(*) FROM kernels").fetchall() == [(4,)]
    assert not any((tmp_path / ".staging").iterdir())


def test_crash_in_the_middle_of_a_force_swap_is_undone(tmp_path: Path) -> None:
    """What a writer killed mid-swap leaves (its new kernels renamed over the old ones, a table the old run lacked
    moved in, the runs file not yet): the next clean-up puts the old run back exactly."""
    res = ingest_file(REPORT, tmp_path)
    before = snapshot(tmp_path)
    stage = tmp_path / ".staging" / f"{res.run_id}.999999999.dead"
    for t in ("runs", "kernels", "metrics", "ceilings"):
        (stage / "old" / t).mkdir(parents=True)
        os.link(
            tmp_path / t / f"run_id={res.run_id}" / "part-0.parquet", stage / "old" / t / "part-0.parquet"
        )
    kernels = tmp_path / "kernels" / f"run_id={res.run_id}" / "part-0.parquet"
    shutil.copyfile(
        tmp_path / "metrics" / f"run_id={res.run_id}" / "part-0.parquet", tmp_path / "new.parquet"
    )
    os.replace(tmp_path / "new.parquet", kernels)  # "new" kernels in place
    shutil.copytree(
        tmp_path / "ceilings" / f"run_id={res.run_id}", tmp_path / "ranges" / f"run_id={res.run_id}"
    )
    for t in ("metrics", "runs"):  # staged, not moved in yet
        (stage / t).mkdir()
        shutil.copyfile(stage / "old" / "kernels" / "part-0.parquet", stage / t / "part-0.parquet")
    (stage / "manifest").write_text("kernels\nmetrics\nceilings\nranges\nruns")
    assert Store(tmp_path).clean_staging() == 1
    assert snapshot(tmp_path) == before
    assert Store(tmp_path).clean_staging() == 0


def test_conform_select_refuses_unknown_columns() -> None:
    """A typo in a reader's column map must fail loudly, not write NULLs."""
    import pyarrow as pa

    from rooflake.schema.duck import conform_select

    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    assert conform_select(schema, {"a": "x.a"}) == 'CAST(x.a AS BIGINT) AS "a", NULL::VARCHAR AS "b"'
    with pytest.raises(KeyError, match="not columns of the schema"):
        conform_select(schema, {"a": "x.a", "c": "x.c"})


def test_duck_row_equals_the_pyarrow_row_and_stays_nullable(tmp_path: Path) -> None:
    """The nsys reader's runs row is built by DuckDB from SQL literals (pyarrow would import pandas): it must hold
    exactly the values pyarrow builds, quotes and all, with OPTIONAL columns like every pyarrow-written partition."""
    from datetime import datetime, timezone

    import duckdb
    import pyarrow as pa

    from rooflake.schema import RUNS
    from rooflake.schema.duck import duck_row

    row = {
        "run_id": "0123456789abcdef",
        "source_path": '/tmp/it\'s a "path"/run.sqlite',
        "source_bytes": 2**40 + 7,
        "producer": "nsys 2024.6.2.225",
        "derivation": '{"all": ["it\'s"]}',
        "n_kernels": 0,
        "ingested_at": datetime(2026, 11, 22, 1, 2, 3, 456789, tzinfo=timezone.utc),
        "labels": [("model", "it's"), ("z", "")],
        "command_line": None,
    }
    con = duckdb.connect()
    got = duck_row(con, RUNS, row)
    want = pa.table({f.name: [row.get(f.name)] for f in RUNS}, schema=RUNS)
    assert got.to_arrow().to_pylist() == want.to_pylist()
    got.write_parquet(tmp_path / "runs.parquet", {}, write_statistics=True)
    written = pq.read_table(tmp_path / "runs.parquet")
    assert written.to_pylist() == want.to_pylist()
    assert all(f.nullable for f in written.schema)
    assert duck_row(con, RUNS, {}).to_arrow().to_pylist() == [dict.fromkeys(RUNS.names)]
    as_dict = duck_row(con, RUNS, {**row, "labels": dict(row["labels"])}).to_arrow()
    assert as_dict.to_pylist() == want.to_pylist()  # a dict for a map column: its items, not its keys


def test_connect_sees_a_run_swapped_in_the_same_clock_tick(tmp_path: Path) -> None:
    """Store.connect keys its cached database on one stat of STORE/runs (mtime, link count). A run folder removed
    and another added in the same tick of the file system's clock leave both as they were (as on btrfs, or ext4
    past 65,000 folders, where the link count stays 1): a database built while the folder had just changed is
    not reused (found in review: the second run was never seen by that Store object)."""
    a, b = tmp_path / "a", tmp_path / "b"
    ingest_file(fixture("AlpriElse"), a)
    ingest_file(fixture("eschnett"), b)
    run_b = Store(b).run_ids()[0]
    runs = a / "runs"
    os.utime(runs)  # changed just now
    stamp = os.stat(runs).st_mtime_ns
    store = Store(a)
    (run_a,) = [r for (r,) in store.connect().execute("SELECT run_id FROM runs").fetchall()]
    for table in os.listdir(b):  # run a out, run b in: the runs folder keeps its link count
        src = b / table / f"run_id={run_b}"
        if src.is_dir():
            shutil.rmtree(a / table / f"run_id={run_a}", ignore_errors=True)
            shutil.copytree(src, a / table / f"run_id={run_b}")
    os.utime(runs, ns=(stamp, stamp))  # ... in the same tick
    assert os.stat(runs).st_nlink == 3 and os.stat(runs).st_mtime_ns == stamp
    assert store.connect().execute("SELECT run_id FROM runs").fetchall() == [(run_b,)]
