"""``rl sql`` without ``--unsafe`` never writes, whatever wraps the statement: checked by property over statement
kinds x wrappers (EXPLAIN, EXPLAIN ANALYZE in its spellings, CTEs, multi-statements, PIVOT) x targets (a store
file, a path outside, ``compacted.json``, a new file in the store). Every try exits 1 with one ``Error:`` line and
leaves the store byte for byte as it was; and the database itself refuses what the statement check might miss."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.pipeline import ingest_file
from rooflake.store import Store

from _support import FIXTURES, fixture, snapshot

A10G = fixture("AveryClapp__ESMM-Research__profile_output")
NVTX = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx")
NSYS = FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mock.sqlite"

STATEMENTS = [
    "COPY (SELECT 'forged' AS name) TO '{t}'",
    "COPY (SELECT * FROM kernels) TO '{t}' (FORMAT parquet)",
    "COPY kernels TO '{t}' (FORMAT csv)",
    "COPY (SELECT 1 AS x) TO '{t}' (FORMAT json, USE_TMP_FILE false)",
    "CREATE TABLE t AS SELECT * FROM kernels",
    "CREATE TABLE t AS PIVOT kernels ON short_name USING count(*)",
    "CREATE VIEW kernels AS SELECT 1 AS x",
    "INSERT INTO kernels SELECT * FROM kernels",
    "ATTACH '{t}' AS x",
    "EXPORT DATABASE '{t}'",
    "SET enable_external_access = true",
    "DROP VIEW runs",
]
WRAPPERS = [
    "{s}",
    "EXPLAIN {s}",
    "EXPLAIN ANALYZE {s}",
    "explain analyse {s}",
    "EXPLAIN (ANALYZE) {s}",
    "EXPLAIN (ANALYZE, FORMAT JSON) {s}",
    "EXPLAIN /* x */ ANALYZE {s}",
    "WITH c AS (SELECT 1) {s}",
    "SELECT 1; {s}",
    "{s}; SELECT 1",
    "SELECT 1;\nEXPLAIN ANALYZE {s};",
    "PIVOT kernels ON short_name USING count(*); {s}",
    "PIVOT kernels ON short_name USING count(*); EXPLAIN ANALYZE {s}",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs compacted (compacted.json and compacted files) and one run as partitions."""
    root = tmp_path_factory.mktemp("lockdown") / "store"
    ingest_file(A10G, root)
    ingest_file(NVTX, root)
    assert CliRunner().invoke(app, ["compact", "--store", str(root)]).exit_code == 0
    ingest_file(NSYS, root)
    assert (root / "compacted.json").is_file()
    return root


def _targets(root: Path, outside: Path) -> list[Path]:
    return [
        next((root / "kernels").glob("run_id=*/part-0.parquet")),
        next((root / "kernels" / "compacted").glob("*.parquet")),
        root / "compacted.json",
        root / "new.parquet",
        root / "runs" / "run_id=feedfacefeedface" / "part-0.parquet",
        outside / "out.parquet",
    ]


def _assert_refused(root: Path, outside: Path, sql: str) -> None:
    before = snapshot(root)
    r = CliRunner().invoke(app, ["sql", "--store", str(root), sql])
    assert r.exit_code == 1, (sql, r.output, r.exception)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), (sql, r.stderr)
    assert snapshot(root) == before, sql
    assert not any(outside.iterdir()), sql


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    statement=st.sampled_from(STATEMENTS),
    wrapper=st.sampled_from(WRAPPERS),
    target=st.integers(0, 5),
)
def test_no_statement_form_writes(
    store: Path, tmp_path: Path, statement: str, wrapper: str, target: int
) -> None:
    """Before: `EXPLAIN ANALYZE COPY … TO 'STORE/kernels/…/part-0.parquet'` replaced a partition with forged kernel
    names (EXPLAIN ANALYZE runs its statement), and `EXPLAIN (ANALYZE) COPY`, `EXPLAIN ANALYZE CREATE TABLE` ran
    too: the check looked at the outer statement only."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    t = _targets(store, outside)[target]
    _assert_refused(store, outside, wrapper.format(s=statement.format(t=t)))


def test_explain_analyze_copy_over_a_partition_is_refused(store: Path, tmp_path: Path) -> None:
    """The campaign's own statement, spelled out."""
    part = next((store / "kernels").glob("run_id=*/part-0.parquet"))
    _assert_refused(store, tmp_path, f"EXPLAIN ANALYZE COPY (SELECT 'forged' AS name) TO '{part}'")
    assert CliRunner().invoke(app, ["doctor", "--store", str(store)]).exit_code == 0


@pytest.mark.parametrize(
    "sql",
    [
        "PIVOT kernels ON short_name USING count(*)",
        "SELECT * FROM (PIVOT kernels ON short_name USING count(*))",
        "WITH p AS (PIVOT kernels ON short_name USING count(*)) SELECT count(*) FROM p",
        "EXPLAIN ANALYZE SELECT count(*) FROM kernels",
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1",
        "EXPLAIN SELECT * FROM runs",
        "SELECT 1; SELECT count(*) FROM runs",
    ],
)
def test_queries_still_run(store: Path, sql: str) -> None:
    """Before: PIVOT (which DuckDB parses as a MULTI statement when it finds its values first) was refused as a
    write. Queries, in every wrapper, run and read the store."""
    before = snapshot(store)
    r = CliRunner().invoke(app, ["sql", "--store", str(store), "-f", "json", sql])
    assert r.exit_code == 0, (sql, r.output, r.exception)
    assert snapshot(store) == before


def test_the_database_refuses_writes_outside_its_table_folders(store: Path, tmp_path: Path) -> None:
    """The second lock, which no statement check is needed for: a locked-down connection cannot write
    compacted.json, a new file in the store's folder or .staging, nor anything outside the store."""
    con = Store(store).connect()
    before = snapshot(store)
    for target in (
        store / "compacted.json",
        store / "x.csv",
        store / ".staging" / "x.csv",
        tmp_path / "x.csv",
    ):
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"COPY (SELECT 1 AS x) TO '{target}'")
    assert snapshot(store) == before and not list(tmp_path.iterdir())
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(3,)]


# ---- a store on object storage ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3_store() -> Iterator[str]:
    pytest.importorskip("s3fs", reason="s3:// stores need s3fs")
    moto_server = pytest.importorskip("moto.server", reason="needs moto in server mode")
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        boto3.client("s3").create_bucket(Bucket="lockdown")
        ingest_file(A10G, "s3://lockdown/store")
        yield "s3://lockdown/store"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_nothing_is_written_to_an_s3_store(s3_store: str) -> None:
    """Before: `EXPLAIN ANALYZE COPY … TO 's3://…'` created objects in the store. Now the statement is refused, and
    a locked-down connection reads through a read-only view of the filesystem: even a plain COPY into a table's
    prefix (which its views must read) fails, and the bucket holds what it held."""
    import s3fs

    fs = s3fs.S3FileSystem()
    before = sorted(fs.find("lockdown"))
    part = next(p for p in before if "/kernels/" in p)
    for sql in (
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO 's3://{part}'",
        "COPY runs TO 's3://lockdown/x.csv'",
    ):
        r = CliRunner().invoke(app, ["sql", "--store", s3_store, sql])
        assert r.exit_code == 1 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.output
    con = Store(s3_store).connect()
    for target in (
        f"s3://{part}",
        "s3://lockdown/store/kernels/new.parquet",
        "s3://lockdown/store/compacted.json",
    ):
        with pytest.raises(duckdb.Error):
            con.execute(f"COPY (SELECT 1 AS x) TO '{target}'")
    assert con.execute("SELECT count(*) FROM kernels").fetchall() == [(4,)]
    fs.invalidate_cache()
    assert sorted(fs.find("lockdown")) == before
