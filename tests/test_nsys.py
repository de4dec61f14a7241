"""Nsight Systems exports: every fixture ingests with the source's row counts and values; kernels are attributed to
the NVTX stack open on their launching thread at launch time (checked by hand on real rows and on a tiny export
built in code); layer_summary golden test."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.ingest.nvtx import range_name
from rooflake.pipeline import ingest_file
from rooflake.store import Store

from _support import FIXTURES

NSYS = FIXTURES / "nsys"
EXPORTS = sorted(NSYS.glob("*.sqlite"))
# NVTX event types that are ranges or marks (ENUM_NSYS_EVENT_TYPE): NvtxMark, NvtxPushPopRange, NvtxStartEndRange,
# NvtxtMark, NvtxtPushPopRange, NvtxtStartEndRange (ingest/nsys/macros.sql names them for the reader)
RANGE_TYPES = (34, 59, 60, 65, 70, 71)


def _count(db: sqlite3.Connection, sql: str) -> int:
    try:
        return db.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:  # table missing in this export
        return 0


@pytest.fixture(scope="module")
def nsys_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nsys_store")
    for path in EXPORTS:
        ingest_file(path, root)
    return root


def _run(con, path: Path) -> str:
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(path.resolve())]).fetchall()[0][
        0
    ]


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name[:40])
def test_counts_and_values_equal_the_export(nsys_store: Path, path: Path) -> None:
    con = queries.connect(Store(nsys_store))
    run = _run(con, path)
    db = sqlite3.connect(path)
    n_kernels = _count(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    n_ranges = _count(db, f"SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN {RANGE_TYPES}")
    n_memops = _count(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY") + _count(
        db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET"
    )
    got = con.execute(
        "SELECT (SELECT count(*) FROM kernels WHERE run_id = $r), (SELECT count(*) FROM ranges WHERE run_id = $r),"
        " (SELECT count(*) FROM memops WHERE run_id = $r), (SELECT n_kernels FROM runs WHERE run_id = $r)",
        {"r": run},
    ).fetchall()[0]
    assert got == (n_kernels, n_ranges, n_memops, n_kernels)
    if n_kernels:
        src = sorted(
            db.execute(
                "SELECT k.start, k.end, k.end - k.start, s.value, k.correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = k.demangledName"
            ).fetchall()
        )
        ours = sorted(
            con.execute(
                "SELECT start_ns, end_ns, duration_ns, name, correlation_id FROM kernels WHERE run_id = ?",
                [run],
            ).fetchall()
        )
        assert [(a, b, int(c), d, e) for a, b, c, d, e in ours] == src
        assert all(float(c).is_integer() for _, _, c, _, _ in ours)  # integer ns, no rounding
    if n_ranges:
        has_text_id = "textId" in [r[1] for r in db.execute("PRAGMA table_info(NVTX_EVENTS)")]
        text = "coalesce(n.text, s.value)" if has_text_id else "n.text"
        join = "LEFT JOIN StringIds s ON s.id = n.textId" if has_text_id else ""
        src_r = sorted(
            db.execute(
                f"SELECT n.start, {text} FROM NVTX_EVENTS n {join} WHERE n.eventType IN {RANGE_TYPES}"
            ).fetchall()
        )
        ours_r = sorted(con.execute("SELECT start_ns, text FROM ranges WHERE run_id = ?", [run]).fetchall())
        assert ours_r == src_r
    version = con.execute("SELECT source_schema_version FROM runs WHERE run_id = ?", [run]).fetchall()[0][0]
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):  # the older exports name it EXPORT_META_DATA
        if _count(db, f"SELECT count(*) FROM {table}"):
            row = db.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_SCHEMA_VERSION'").fetchone()
            assert version == (row[0] if row else "none (no META_DATA_EXPORT table)")
            break
    else:
        assert version.startswith("none")


def test_kernel_less_export_says_so(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app, ["ingest", str(NSYS / "CO18326__uvmTorch__report1.sqlite"), "--store", str(tmp_path)]
    )
    assert r.exit_code == 0
    assert "0 kernels" in r.stdout and "no kernel table" in r.stdout


def _expected_stacks(path: Path) -> dict[int, list[str] | None]:
    """By hand, per kernel correlation id: the push/pop ranges open on the launching thread at the launch call's
    start (start <= t < end), outermost first, PyTorch op suffixes cut."""
    db = sqlite3.connect(path)
    has_text_id = "textId" in [r[1] for r in db.execute("PRAGMA table_info(NVTX_EVENTS)")]
    text = "coalesce(n.text, s.value)" if has_text_id else "n.text"
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if has_text_id else ""
    ranges = db.execute(
        f"SELECT n.start, n.end, n.globalTid, {text} FROM NVTX_EVENTS n {join} WHERE n.eventType = 59"
    ).fetchall()
    out: dict[int, list[str] | None] = {}
    for corr, pid in db.execute("SELECT correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall():
        launch = db.execute(
            "SELECT start, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = ? AND (globalTid & ~16777215) = ?",
            [corr, pid],
        ).fetchone()
        if launch is None:
            out[corr] = None
            continue
        t, tid = launch
        open_ = sorted(
            (s, -(e or 2**62), name)
            for s, e, g, name in ranges
            if g == tid and s <= t and (e is None or t < e)
        )
        names = [range_name(n) for _, _, n in open_]
        out[corr] = names or None
    return out


@pytest.mark.parametrize(
    "name",
    [
        "Sh1mwww__llama3-inference__demo.sqlite",
        "LeiWang1999__memfusion_artifact__report1.sqlite",
        "MohanadOdema__DLProf__nsys_profile.sqlite",
        "NVIDIA__Fuser__report1@da819b5f.sqlite",
    ],
)
def test_attribution_equals_the_rows_by_hand(nsys_store: Path, name: str) -> None:
    path = NSYS / name
    con = queries.connect(Store(nsys_store))
    run = _run(con, path)
    ours = {
        corr: stack
        for corr, stack in con.execute(
            "SELECT correlation_id, nvtx_stack FROM kernels WHERE run_id = ?", [run]
        ).fetchall()
    }
    assert ours == _expected_stacks(path)


def test_a_few_real_kernels_spelled_out(nsys_store: Path) -> None:
    """llama3 demo: the SGEMM of layer 0's attention was launched (cudaLaunchKernel, correlation 1450) while
    weight_streaming_demo > layer_0_forward > layer_0_attention > attention_simulation were open on its thread."""
    path = NSYS / "Sh1mwww__llama3-inference__demo.sqlite"
    db = sqlite3.connect(path)
    t, tid = db.execute(
        "SELECT start, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 1450"
    ).fetchone()
    open_ranges = db.execute(
        "SELECT text FROM NVTX_EVENTS WHERE globalTid = ? AND start <= ? AND end > ? ORDER BY start",
        [tid, t, t],
    ).fetchall()
    assert [r[0] for r in open_ranges] == [
        "weight_streaming_demo",
        "layer_0_forward",
        "layer_0_attention",
        "attention_simulation",
    ]
    con = queries.connect(Store(nsys_store))
    row = con.execute(
        "SELECT short_name, launch_api, launch_start_ns, nvtx_path, attribution FROM kernels "
        "WHERE run_id = ? AND correlation_id = 1450",
        [_run(con, path)],
    ).fetchall()[0]
    assert row == (
        "ampere_sgemm_128x64_nn",
        "cudaLaunchKernel_v7000",
        t,
        "<default domain>:weight_streaming_demo/layer_0_forward/layer_0_attention/attention_simulation",
        "push_pop",
    )


def test_tensorrt_domain_and_text_ids(nsys_store: Path) -> None:
    con = queries.connect(Store(nsys_store))
    run = _run(con, NSYS / "LeiWang1999__memfusion_artifact__report1.sqlite")
    domains = con.execute("SELECT DISTINCT domain FROM ranges WHERE run_id = ?", [run]).fetchall()
    assert domains == [("TensorRT",)]
    paths = con.execute(
        "SELECT count(*) FROM kernels WHERE run_id = ? AND nvtx_path LIKE 'TensorRT:%'", [run]
    ).fetchall()
    assert paths == [(36,)]


def test_layers_of_one_device_show_its_coverage(nsys_store: Path) -> None:
    """`rl layers RUN --device 1` of the two-GPU export: its coverage lines are device 1's (device 0's were
    printed too), and its shares are of device 1's ops."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    run = _run(
        queries.connect(Store(nsys_store)), NSYS / "GindaChen__nsys-ai__tests__fixtures__h100_2gpu_1s.sqlite"
    )
    res = CliRunner().invoke(app, ["layers", run, "--device", "1", "--store", str(nsys_store)])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stdout.splitlines() if line.startswith("device ")]
    assert lines and all(line.startswith("device 1: ") for line in lines), lines


def test_two_gpus_keep_their_device(nsys_store: Path) -> None:
    con = queries.connect(Store(nsys_store))
    run = _run(con, NSYS / "GindaChen__nsys-ai__tests__fixtures__h100_2gpu_1s.sqlite")
    per_device = con.execute(
        "SELECT device_id, count(*) FROM kernels WHERE run_id = ? GROUP BY 1 ORDER BY 1", [run]
    ).fetchall()
    db = sqlite3.connect(NSYS / "GindaChen__nsys-ai__tests__fixtures__h100_2gpu_1s.sqlite")
    assert (
        per_device
        == db.execute(
            "SELECT deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1 ORDER BY 1"
        ).fetchall()
    )
    shares = con.execute(
        "SELECT device_id, sum(share_of_gpu_time) FROM layer_summary WHERE run_id = ? AND depth = 1 GROUP BY 1",
        [run],
    ).fetchall()
    assert all(s == pytest.approx(1.0) for _, s in shares) and len(shares) == 2


def test_range_names_sql_and_python_agree(nsys_store: Path) -> None:
    """The SQL of the nsys reader and rooflake.ingest.nvtx.range_name (used for ncu) name every range alike."""
    con = queries.connect(Store(nsys_store))
    rows = con.execute("SELECT text, name FROM ranges").fetchall()
    assert len(rows) > 30000
    assert [n for _, n in rows] == [range_name(t) for t, _ in rows]


def test_range_name_rules() -> None:
    assert range_name("aten::mm, op_id = 123") == "aten::mm"
    assert range_name("aten::addmm, seq = 12, sizes = [[64], [64, 512]]") == "aten::addmm"
    assert (
        range_name("{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': []}")
        == "torch.nn.functional.conv2d"
    )
    assert range_name("{'traceMarker': ['a.py:1'], 'funcStack': '/<module>/Net::forward/relu'}") == "relu"
    assert range_name("encoder.layer.3/attention") == "encoder.layer.3/attention"


def test_streamed_parquet_has_every_row_and_the_schema(nsys_store: Path) -> None:
    """nsys tables are streamed from DuckDB to pyarrow's Parquet writer a few row groups at a time
    (rooflake.schema.duck.DuckTable), not fetched whole: every id comes exactly once (rows in no particular order),
    and Arrow readers see the same schema (field units and descriptions) and store metadata."""
    import sqlite3 as _sqlite3

    import pyarrow.parquet as pq

    from rooflake.schema import KERNELS, MEMOPS, RANGES

    big = NSYS / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    db = _sqlite3.connect(big)
    expected = {
        "kernels": list(range(_count(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"))),
        "ranges": [
            r[0] for r in db.execute(f"SELECT rowid FROM NVTX_EVENTS WHERE eventType IN {RANGE_TYPES}")
        ],
        "memops": list(
            range(
                _count(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
                + _count(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET")
            )
        ),
    }
    con = queries.connect(Store(nsys_store))
    run = _run(con, big)
    for table, schema, key in (("kernels", KERNELS, "kernel_id"), ("ranges", RANGES, "range_id"),
                               ("memops", MEMOPS, "op_id")):  # fmt: skip
        (path,) = (nsys_store / table / f"run_id={run}").glob("*.parquet")
        got = pq.read_table(path)
        assert len(expected[table]) > 1000
        assert sorted(got.column(key).to_pylist()) == sorted(expected[table]), table
        assert got.schema.names == schema.names
        assert [f.type for f in got.schema] == [f.type for f in schema], table
        for f in schema:
            assert got.schema.field(f.name).metadata == f.metadata, (table, f.name)
        meta = pq.read_schema(path).metadata
        assert meta[b"rooflake.schema_version"] == b"1"
    kernels = pq.read_table(next((nsys_store / "kernels" / f"run_id={run}").glob("*.parquet")))
    assert kernels.column("provenance")[0].as_py() == [("*", "NULL: no counters in Nsight Systems")]
    assert kernels.schema.field("provenance").nullable and kernels.schema.field("flags").nullable


def test_every_partition_keeps_the_declared_nullability(nsys_store: Path) -> None:
    """The reader's partitions must not depend on the data: DuckDB's own Parquet writer, which wrote them before,
    made a column REQUIRED where its statistics showed no NULL in the rows at hand (a text column every event of
    one export fills, a start time). Every column is OPTIONAL, as the schema declares it, so the partitions of a
    table concatenate across runs and beside pyarrow-written ones."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rooflake.schema import COVERAGE, KERNELS, MEMOPS, RANGES

    for table, schema in (
        ("kernels", KERNELS),
        ("ranges", RANGES),
        ("memops", MEMOPS),
        ("coverage", COVERAGE),
    ):
        files = sorted((nsys_store / table).glob("run_id=*/*.parquet"))
        assert len(files) > 1, table
        parts = [pq.read_table(f) for f in files]
        for f, part in zip(files, parts, strict=True):
            assert [x.nullable for x in part.schema] == [x.nullable for x in schema], f
        assert pa.concat_tables(parts).num_rows == sum(p.num_rows for p in parts)


def test_read_gives_arrow_tables_equal_to_the_store(nsys_store: Path) -> None:
    """rooflake.ingest.read (no store) fetches the tables that are streamed to Parquet: same schema, same rows."""
    import pyarrow as pa

    from rooflake.ingest import read
    from rooflake.schema import KERNELS, RANGES

    path = NSYS / "Sh1mwww__llama3-inference__demo.sqlite"
    con = queries.connect(Store(nsys_store))
    run = _run(con, path)
    out = read(path, run_id=run)
    assert isinstance(out["kernels"], pa.Table) and out["kernels"].schema.equals(KERNELS, check_metadata=True)
    assert out["ranges"].schema.equals(RANGES)
    for table, key, col in (("kernels", "kernel_id", "nvtx_path"), ("ranges", "range_id", "name")):
        sql = f"SELECT {key}, {col} FROM {table} WHERE run_id = ? ORDER BY {key}"
        stored = con.execute(sql, [run]).fetchall()
        got = sorted(zip(out[table].column(key).to_pylist(), out[table].column(col).to_pylist(), strict=True))
        assert got == stored and len(got) > 50, table


@pytest.mark.parametrize(
    "name",
    [
        "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite",
        "GindaChen__nsys-ai__tests__fixtures__h100_2gpu_1s.sqlite",
    ],
)
def test_sweep_in_groups_gives_the_same_tables(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The NVTX stack sweep reads the lanes in groups of whole threads (bounded memory): one thread per group must
    give exactly the tables one group gives (two threads with push/pop ranges in each of these exports)."""
    from rooflake.ingest import nsys_sweep, read, sqlscript

    def tables() -> dict[str, list[str]]:
        out = read(NSYS / name, run_id="r")
        return {k: sorted(map(repr, v.to_pylist())) for k, v in out.items() if k != "run"}

    one = tables()
    groups = []
    run = sqlscript.batches

    def spy(con, file: str, batch_rows: int, **params):
        if file == "nsys/sweep_ranges.sql":
            groups.append((params["lo"], params["hi"]))
        return run(con, file, batch_rows, **params)

    monkeypatch.setattr(sqlscript, "batches", spy)
    monkeypatch.setattr(nsys_sweep, "GROUP_RANGES", 1)
    many = tables()
    assert len(groups) > 1  # really read in groups
    assert many == one
    assert len(one["ranges"]) > 200 and any("'depth': 2" in r for r in one["ranges"])


@pytest.mark.parametrize(
    ("export", "detail"),
    [
        # no kernel under an NVTX range: the share is 0, not NULL (the detail was NULL, printf of a NULL share)
        ("GindaChen__nsys-ai__tests__fixtures__mock", "device 0: 0.0% of GPU time under an NVTX range"),
        ("NVIDIA__Fuser__report1@da819b5f", "device 0: 34.5% of GPU time under an NVTX range"),
    ],
)
def test_low_attribution_coverage_says_the_share(tmp_path: Path, export: str, detail: str) -> None:
    res = ingest_file(NSYS / f"{export}.sqlite", tmp_path)
    got = queries.execute(
        Store(tmp_path),
        """SELECT detail FROM physics_checks WHERE run_id = $r AND "check" = 'low_attribution_coverage'""",
        {"r": res.run_id},
    ).to_pylist()
    assert got == [{"detail": detail}]


@pytest.mark.parametrize("preset", [None, "mimalloc"])
def test_ingest_gives_arrow_memory_to_the_system_allocator(tmp_path: Path, preset: str | None) -> None:
    """`rl ingest` makes the C library's allocator pyarrow's default pool (set before pyarrow is first used, which
    reads it once): what a reader's Arrow buffers took is given back when freed (issue 14: the x8 copy's peak, 498
    -> 479 MiB). A pool named in ARROW_DEFAULT_MEMORY_POOL is kept. Checked in a fresh process, after the ingest."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(__import__('pyarrow').default_memory_pool().backend_name))\n"
        "from rooflake.cli import main\n"
        f"sys.argv = ['rl', 'ingest', {str(NSYS / 'GindaChen__nsys-ai__tests__fixtures__mock.sqlite')!r},"
        f" '--store', {str(tmp_path / 's')!r}]\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if preset:
        env["ARROW_DEFAULT_MEMORY_POOL"] = preset
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert "ingested" in got.stdout, got.stderr
    assert got.stdout.strip().splitlines()[-1] == (preset or "system")
