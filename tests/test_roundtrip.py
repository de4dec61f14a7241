"""Values survive Parquet -> DuckDB exactly: NaN, +-inf, int64/uint64 extremes, unicode kernel names."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflake import queries
from rooflake.schema import duck
from rooflake.store import Store

from _support import tiny_run

doubles = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 5e-324, 1.7976931348623157e308]
)
int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.sampled_from([-(2**63), 2**63 - 1, 0])
uint64s = st.integers(min_value=0, max_value=2**64 - 1) | st.sampled_from([2**64 - 1, 2**53 + 1])
names = st.text(min_size=0, max_size=40)  # any unicode, including NUL, surrogates excluded by hypothesis


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(doubles, int64s, uint64s, names, doubles), min_size=1, max_size=8),
)
def test_values_round_trip(rows: list[tuple[float, int, int, str, float]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        kernels = [
            {"kernel_id": i, "name": name, "duration_ns": dur, "grid_size": grid, "flops_fp32": fl}
            for i, (dur, grid, _, name, fl) in enumerate(rows)
        ]
        metrics = [
            {"kernel_id": i, "metric_name": f"m{i}", "kind": "uint64", "value_double": dur, "value_uint64": u}
            for i, (dur, _, u, _, _) in enumerate(rows)
        ]
        tiny_run(root, "c" * 16, kernels, [], metrics)
        con = queries.connect(Store(root))
        got = con.execute(
            "SELECT kernel_id, name, duration_ns, grid_size, flops_fp32, isnan(duration_ns) FROM kernels ORDER BY kernel_id"
        ).fetchall()
        assert len(got) == len(rows)
        for (_kid, name, dur, grid, fl, dur_isnan), (edur, egrid, _, ename, efl) in zip(
            got, rows, strict=True
        ):
            assert name == ename
            assert same(dur, edur) and same(fl, efl)
            assert dur_isnan == math.isnan(edur)  # NaN stays visible to SQL predicates
            assert grid == egrid
        got_m = con.execute("SELECT value_uint64, value_double FROM metrics ORDER BY kernel_id").fetchall()
        for (u, dv), (edur, _, eu, _, _) in zip(got_m, rows, strict=True):
            assert u == eu and same(dv, edur)
        # filters see NaN as NaN (no min/max statistics folding)
        n_nan = con.execute("SELECT count(*) FROM kernels WHERE isnan(duration_ns)").fetchone()[0]
        assert n_nan == sum(math.isnan(r[0]) for r in rows)


def test_a_duck_table_is_written_in_row_groups_of_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckTable.write_parquet gathers DuckDB's Arrow batches into row groups (here 1,000 rows from 256-row
    batches): every row once, values and NULLs as DuckDB gave them, every column OPTIONAL, the metadata kept; its
    ``tidy`` runs every TIDY_GROUPS groups."""
    monkeypatch.setattr(duck, "FETCH_ROWS", 256)
    monkeypatch.setattr(duck, "ROW_GROUP_ROWS", 1000)
    monkeypatch.setattr(duck, "TIDY_GROUPS", 2)
    tidied: list[int] = []
    schema = pa.schema([pa.field("i", pa.int64()), pa.field("name", pa.string())])  # nullable, as the store's
    con = duckdb.connect()
    select = "SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'k' || i END AS name FROM range(5000) AS t(i)"
    duck.DuckTable(con, select, schema, 5000, tidy=lambda: tidied.append(1)).write_parquet(
        tmp_path / "t.parquet", {b"k": b"v"}, write_statistics=True
    )
    f = pq.ParquetFile(tmp_path / "t.parquet")
    assert f.metadata.num_row_groups == 5
    assert len(tidied) == 2  # after groups 2 and 4
    assert all(f.metadata.row_group(g).num_rows == 1024 for g in range(4))  # whole batches: 4 x 256
    got = f.read()
    want = con.sql(select).to_arrow_table().cast(schema)
    assert got.sort_by("i").to_pylist() == want.sort_by("i").to_pylist()
    assert f.schema_arrow.metadata[b"k"] == b"v"
    assert all(
        f.schema.column(c).max_definition_level == 1 for c in range(2)
    )  # OPTIONAL, though i has no NULL
    encodings = f.metadata.row_group(0).column(0).encodings  # integers delta-encoded, strings in a dictionary
    assert "DELTA_BINARY_PACKED" in encodings and "PLAIN_DICTIONARY" not in encodings
    assert "RLE_DICTIONARY" in f.metadata.row_group(0).column(1).encodings


def test_a_duck_table_s_own_group_sizes_bound_its_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``group=(rows, bytes)`` bounds the row groups instead of ROW_GROUP_ROWS / ROW_GROUP_BYTES, above them or
    below: whichever of its two limits is reached first ends a group (here 2,048 rows where the default is 1,000;
    then ~8 KiB of 256-row batches of ~2 KiB)."""
    monkeypatch.setattr(duck, "FETCH_ROWS", 256)
    monkeypatch.setattr(duck, "ROW_GROUP_ROWS", 1000)
    schema = pa.schema([pa.field("i", pa.int64())])
    con = duckdb.connect()
    select = "SELECT i FROM range(5000) AS t(i)"
    sizes = {}
    for name, group in (("rows", (2048, 1 << 30)), ("bytes", (1 << 30, 8000))):
        duck.DuckTable(con, select, schema, 5000, group=group).write_parquet(
            tmp_path / f"{name}.parquet", {}, write_statistics=True
        )
        meta = pq.ParquetFile(tmp_path / f"{name}.parquet").metadata
        sizes[name] = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    assert sizes["rows"] == [2048, 2048, 904]
    assert sizes["bytes"] == [1024] * 4 + [904]  # 4 batches of 256 rows x 8 bytes = 8 KiB


def test_a_failing_duck_table_raises_duckdbs_own_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query that fails while its rows stream raises the DuckDB exception it would raise when executed (the
    Arrow stream hands it over as an OSError); DuckDB's IO errors (a file it cannot read, a spill folder it
    cannot write) are OSError, as a file the writer cannot write: publish reports them as store errors."""
    monkeypatch.setattr(duck, "FETCH_ROWS", 256)
    schema = pa.schema([pa.field("x", pa.int64())])
    con = duckdb.connect()
    failing = "SELECT CASE WHEN i > 3000 THEN error('boom') ELSE i END AS x FROM range(5000) AS t(i)"
    with pytest.raises(duckdb.InvalidInputException, match="boom"):
        duck.DuckTable(con, failing, schema, 5000).write_parquet(
            tmp_path / "a.parquet", {}, write_statistics=True
        )
    missing = f"SELECT 1::BIGINT AS x FROM read_parquet('{tmp_path / 'none.parquet'}')"
    with pytest.raises(OSError, match="IO Error"):
        duck.DuckTable(con, missing, schema, 1).write_parquet(
            tmp_path / "b.parquet", {}, write_statistics=True
        )
    assert con.execute("SELECT 42").fetchall() == [(42,)]  # the connection still answers


def test_a_duck_table_whose_file_fails_mid_write_leaves_the_connection_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Parquet writer failing on the second row group (a full disk) raises its OSError while DuckDB is
    computing the third on the worker thread: that step is waited for, then the stream is closed (not closed
    under the worker's feet: "generator already executing"), and the connection answers the next statement, with
    no worker thread left."""
    import threading
    import time

    monkeypatch.setattr(duck, "FETCH_ROWS", 256)
    monkeypatch.setattr(duck, "ROW_GROUP_ROWS", 1000)
    events: list[str] = []
    stepping = threading.Event()
    real_groups = duck.DuckTable._row_groups

    def slow_groups(self: duck.DuckTable) -> Generator[pa.Table, None, None]:
        try:
            for n, group in enumerate(real_groups(self)):
                if n == 2:  # the third group takes a while
                    events.append("step")
                    stepping.set()
                    time.sleep(0.3)
                    events.append("step done")
                yield group
        finally:
            events.append("closed")

    written: list[int] = []
    real_write = pq.ParquetWriter.write_table

    def full_disk(self: pq.ParquetWriter, table: pa.Table, row_group_size: int | None = None) -> None:
        if len(written) == 1:
            assert stepping.wait(10)  # the worker is inside the third step (a deadlock guard, not a timing)
            raise OSError(28, "No space left on device")
        written.append(table.num_rows)
        real_write(self, table, row_group_size)

    monkeypatch.setattr(duck.DuckTable, "_row_groups", slow_groups)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full_disk)
    schema = pa.schema([pa.field("i", pa.int64())])
    con = duckdb.connect()
    with pytest.raises(OSError, match="No space left"):
        duck.DuckTable(con, "SELECT i FROM range(50000) AS t(i)", schema, 50000).write_parquet(
            tmp_path / "t.parquet", {}, write_statistics=True
        )
    assert written == [1024]
    assert events[-2:] == ["step done", "closed"]  # the pending step finished, then the stream was closed
    assert con.execute("SELECT 42").fetchall() == [(42,)]
    assert not [t for t in threading.enumerate() if t.name.startswith("rooflake-prefetch")]


def test_prefetched_computes_each_next_item_on_the_worker_while_the_caller_holds_this_one() -> None:
    """duck.prefetched asks for item i+1 on its worker thread before the caller is done with item i, and gives
    every item in order; cancel is not called on a normal exit."""
    import threading

    asked: list[threading.Event] = [threading.Event() for _ in range(6)]
    threads: set[str] = set()
    cancels: list[int] = []

    def items() -> Generator[int, None, None]:
        for i in range(5):
            asked[i].set()
            threads.add(threading.current_thread().name)
            yield i

    got = []
    with duck.prefetched(items(), cancel=lambda: cancels.append(1)) as taken:
        for i in taken:
            if (
                i < 4
            ):  # a deadlock guard, not a timing: the worker asks for the next item while we hold this one
                assert asked[i + 1].wait(10)
            got.append(i)
    assert got == [0, 1, 2, 3, 4]
    assert threads and all(t.startswith("rooflake-prefetch") for t in threads)
    assert not cancels


def test_prefetched_raises_the_producers_error_where_its_item_is_taken_and_closes_it() -> None:
    """An exception of the producer comes out at the item it stopped at, with its class; the producer is closed
    on leaving, early included."""
    closed: list[bool] = []

    def items(fail_at: int | None) -> Generator[int, None, None]:
        try:
            for i in range(10):
                if i == fail_at:
                    raise ValueError(f"bad item {i}")
                yield i
        finally:
            closed.append(True)

    taken = []
    with pytest.raises(ValueError, match="bad item 4"), duck.prefetched(items(4)) as got:
        for i in got:
            taken.append(i)
    assert taken == [0, 1, 2, 3]
    with duck.prefetched(items(None)) as got:
        assert next(got) == 0  # left early: the producer, one item ahead, is closed
    assert closed == [True, True]


def test_prefetched_cancels_the_worker_on_a_signal_and_keeps_the_first_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Leaving by an exception (SIGTERM's SystemExit in the CLI) calls cancel (DuckDB's interrupt) so that the
    worker's step ends early; a second signal while waiting for the worker (KeyboardInterrupt out of the pool's shutdown)
    calls it again, the worker is still waited for and closed, and the first exception is the one raised."""
    import concurrent.futures

    events: list[str] = []
    real_shutdown = concurrent.futures.ThreadPoolExecutor.shutdown
    interrupted: list[int] = []

    def shutdown_interrupted_once(pool: Any, *args: Any, **kwargs: Any) -> Any:
        if not interrupted:
            interrupted.append(1)
            raise KeyboardInterrupt
        return real_shutdown(pool, *args, **kwargs)

    def items() -> Generator[int, None, None]:
        try:
            yield from range(3)
        finally:
            events.append("closed")

    monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "shutdown", shutdown_interrupted_once)
    with (
        pytest.raises(SystemExit) as stopped,
        duck.prefetched(items(), cancel=lambda: events.append("cancel")) as got,
    ):
        next(got)
        raise SystemExit(143)
    assert stopped.value.code == 143
    assert events == ["cancel", "cancel", "closed"]
