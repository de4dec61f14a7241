"""The named queries on Spark (issue 15): every query gives the same rows on Spark (pyspark, local mode) as on DuckDB
over a store of real fixture runs (order-insensitive, floats to 1e-9 relative); each hand fix of the DuckDB → Spark
translation (rooflake.spark.translate.REWRITES) checked on both engines; unpublished runs hidden; rl sql --engine
spark; ingest fanned out over two local executors equal to a plain ingest. One Spark session for the module
(two cores, one shuffle partition, no UI). Skipped without pyspark, sqlglot or Java."""

from __future__ import annotations

import decimal
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (pip install 'rooflake[spark]')")
pytest.importorskip("sqlglot", reason="the Spark tests need sqlglot (pip install 'rooflake[spark]')")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("the Spark tests need Java 17 (java on PATH or JAVA_HOME)", allow_module_level=True)

from rooflake import queries  # noqa: E402
from rooflake import spark as rs  # noqa: E402
from rooflake.schema import ESTIMATES, QueryError  # noqa: E402
from rooflake.spark.translate import REWRITES, to_spark  # noqa: E402
from rooflake.store import Store  # noqa: E402

from _support import FIXTURES, NCU  # noqa: E402

FA3 = "Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before_n4096_full.ncu-rep"
DB_FULL = "Bias92__flashattn-cuda__docs__profiling__ncu_sections__db_full_after_n4096_full.ncu-rep"
OTHERS = [
    "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx.ncu-rep",  # NVTX ranges
    "ZSL98__bitwise_spgemm__profiling_results__sgemm.ncu-rep",  # GTX 1660 SUPER, ceilings
    "LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep",  # A100, 11 kernels
    "wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram__nvroof_dgdxy__ncuroof-time-1.ncu-rep",  # V100 FP64
]
NSYS = (
    FIXTURES / "nsys" / "MohanadOdema__DLProf__nsys_profile.sqlite"
)  # kernels, memops, NVTX push/pop ranges, PyProf shape texts (ops)
TRACE = Path(__file__).parent / "data" / "torch" / "h100_bert-small_inference.json.gz"  # ops with shapes


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Six Nsight Compute reports (the FlashAttention pair labelled as a sweep over `variant`), one Nsight Systems
    export, and a tiny estimates run for the range/estimate queries."""
    from rooflake.pipeline import ingest_paths
    from rooflake.pipeline.tables import ingest_tables

    root = tmp_path_factory.mktemp("spark_store")
    batches = [
        ([NCU / FA3], {"model": "attention", "variant": "fa3"}),
        ([NCU / DB_FULL], {"model": "attention", "variant": "db_full"}),
        ([NCU / n for n in OTHERS] + [NSYS, TRACE], {}),
    ]
    for paths, labels in batches:
        results = list(ingest_paths(paths, root, labels, workers=2))
        assert all(r.status == "ingested" for r in results), results
    rows = [
        {"op_id": 0, "module_path": "conv2d", "phase": "forward", "op": "aten.convolution", "flops": 1e9,
         "bytes_compulsory": 500_000, "bytes_dram": 1e6, "bytes_l2": 4e6},
        {"op_id": 1, "module_path": "linear", "phase": "forward", "op": "aten.addmm", "flops": 1e8,
         "bytes_compulsory": 100_000, "bytes_dram": 2e5, "bytes_l2": 3e5},
    ]  # fmt: skip
    est = pa.Table.from_pylist([{f.name: r.get(f.name) for f in ESTIMATES} for r in rows], schema=ESTIMATES)
    ingest_tables(
        root, {"estimates": est}, identity="spark test model", source_format="torch-model", producer="test"
    )
    return Store(root)


@pytest.fixture(scope="module")
def spark(store: Store) -> Any:
    s = rs.session("local[2]")  # two executor threads: the machine has two cores
    s.conf.set("spark.sql.shuffle.partitions", "1")  # kilobytes of rows: one reducer, no adaptive re-planning
    s.conf.set("spark.sql.adaptive.enabled", "false")
    s.sparkContext.setLogLevel("ERROR")
    rs.register(s, store)
    yield s
    s.stop()


def _run(store: Store, source: str) -> str:
    rows = store.query("SELECT run_id FROM runs WHERE source_path LIKE '%' || $f", {"f": source}).to_pylist()
    assert len(rows) == 1, source
    return str(rows[0]["run_id"])


# ---- comparing tables ----------------------------------------------------------------------------------------


def _norm(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    return v


def _key(v: Any) -> tuple:
    if isinstance(v, float):
        return (1, "nan" if math.isnan(v) else f"{v:.8g}")
    if v is None:
        return (0, "")
    if isinstance(v, tuple):
        return (2, tuple(_key(x) for x in v))
    return (3, str(v))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return bool(a == b)


def _rows(t: pa.Table) -> list[tuple]:
    rows = [tuple(_norm(v) for v in r.values()) for r in t.to_pylist()]
    return sorted(rows, key=lambda r: tuple(_key(v) for v in r))


def assert_same_rows(spark_table: pa.Table, duck_table: pa.Table) -> None:
    """Same column names, and the same rows in any order (floats to 1e-9 relative, NaN equal to NaN)."""
    assert spark_table.column_names == duck_table.column_names
    a, b = _rows(spark_table), _rows(duck_table)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        bad = [(c, u, v) for c, u, v in zip(spark_table.column_names, x, y, strict=True) if not _same(u, v)]
        assert not bad, bad


def both(spark: Any, store: Store, sql: str) -> tuple[pa.Table, pa.Table]:
    """DuckDB-dialect ``sql`` on Spark (through :func:`to_spark`) and on DuckDB."""
    return spark.sql(to_spark(sql)).toArrow(), queries.execute(store, sql)


# ---- every named query, same rows ----------------------------------------------------------------------------


def test_the_store_has_rows_for_the_queries(store: Store) -> None:
    """The comparisons below compare something: the fixture runs fill every table the queries read."""
    counts = store.query(
        "SELECT (SELECT count(*) FROM kernels) k, (SELECT count(*) FROM ceilings) c, (SELECT count(*) FROM ranges) r, "
        "(SELECT count(*) FROM memops) m, (SELECT count(*) FROM estimates) e"
    ).to_pylist()[0]
    assert all(v > 0 for v in counts.values()), counts


@pytest.mark.parametrize("name", list(queries.views()))
def test_parameter_free_query_same_rows_on_spark(spark: Any, store: Store, name: str) -> None:
    duck = queries.run(store, name)
    assert duck.num_rows > 0, f"{name} has no rows on the fixture store: the comparison would prove nothing"
    assert_same_rows(spark.table(name).toArrow(), duck)


def _cases(store: Store) -> dict[str, list[dict[str, Any]]]:
    fa3, db, nsys = _run(store, FA3), _run(store, DB_FULL), _run(store, NSYS.name)
    nvtx, est, trace = _run(store, OTHERS[0]), _run(store, "spark test model"), _run(store, TRACE.name)
    key = store.query("SELECT min(machine_key) AS k FROM ceilings").to_pylist()[0]["k"]
    return {
        "compare_kernels": [{"base_run": fa3, "new_run": db}],
        "compare_layers": [{"base_run": nsys, "new_run": nvtx, "depth": 2}],
        "nsys_ncu_match": [{"nsys_run": nsys, "ncu_run": nvtx}],
        "time_roofline": [
            {"run_id": nsys, "launch_overhead_ns": 2000.0},
            {"run_id": fa3, "launch_overhead_ns": 1500.0, "launch_overhead_source": "measured"},
        ],
        "trajectory": [{"vary": "variant", "depth": 1}],
        "whatif": [
            {"run_id": fa3, "launch_overhead_ns": 2000.0, "scale_dram": 2.0},
            {"run_id": nsys, "launch_overhead_ns": 2000.0, "depth": 2},
        ],  # fmt: skip
        "range_roofline": [{"run_id": nsys, "estimates_run_id": est, "machine_key": key}],
        "estimate_vs_measured": [{"run_id": nsys, "estimates_run_id": est, "domain": "<default domain>"}],
        "op_roofline": [{"run_id": trace}, {"run_id": nsys, "launch_overhead_ns": 2000.0}],
        "op_summary": [{"run_id": trace}],
        "steps": [{"run_id": trace}],
        "ranks": [{"job": "torch"}],
        "collectives": [{"run_id": trace}],  # the trace's folder: its job (one rank, no distributedInfo)
        "datasheet_gpu": [{"run_id": fa3}, {"run_id": trace}],
    }


def test_every_parameterized_query_has_a_case(store: Store) -> None:
    assert set(_cases(store)) == {n for n in queries.names() if queries.parameters(n)}


@pytest.mark.parametrize("name", [n for n in queries.names() if queries.parameters(n)])
def test_parameterized_query_same_rows_on_spark(spark: Any, store: Store, name: str) -> None:
    for params in _cases(store)[name]:
        duck = queries.run(store, name, params)
        assert_same_rows(rs.query(spark, name, **params).toArrow(), duck)


def test_query_names_missing_and_unknown_parameters(spark: Any) -> None:
    with pytest.raises(QueryError, match="missing launch_overhead_ns, run_id"):
        rs.query(spark, "time_roofline")
    with pytest.raises(QueryError, match="unknown depth"):
        rs.query(spark, "kernel_roofline", depth=1)


# ---- the hand fixes, one test each, on both engines -----------------------------------------------------------

FIX_SQL = {
    "len-of-list": "SELECT kernel_id, len(nvtx_stack) AS n, len(name) AS chars FROM kernels",
    "list-slice": "SELECT kernel_id, nvtx_stack[2:3] AS mid, nvtx_stack[1:2] AS head FROM kernels",
    "map_extract_value": "SELECT kernel_id, map_extract_value(provenance, 'tensor_roof') AS roof, "
    "map_extract_value(provenance, 'no such key') AS none FROM kernels",
    "isfinite": "SELECT x, isfinite(x) AS finite FROM (VALUES (1.5), ('inf'::DOUBLE), ('-inf'::DOUBLE), "
    "('nan'::DOUBLE), (NULL)) AS t (x)",
    "quantile_cont": "SELECT run_id, quantile_cont(duration_ns, 0.25) AS p25, quantile_cont(duration_ns, 0.9) AS p90 "
    "FROM kernels GROUP BY run_id",
    "printf-%g": "SELECT kernel_id, printf('%.4g | %.4g | %s | %.3g%% | %d', duration_ns, 0.125::DOUBLE, name, "
    "100.0::DOUBLE, kernel_id) AS text FROM kernels",
    "union-branch-aliases": "SELECT kernel_id AS id, name AS label FROM kernels UNION ALL "
    "SELECT range_id, name FROM ranges",
}


def test_every_rewrite_has_a_test_and_says_why() -> None:
    assert [r.name for r in REWRITES] == list(FIX_SQL)
    assert all(len(r.why) > 60 for r in REWRITES)


@pytest.mark.parametrize("fix", list(FIX_SQL))
def test_rewrite_gives_duckdb_rows_on_spark(spark: Any, store: Store, fix: str) -> None:
    sp, duck = both(spark, store, FIX_SQL[fix])
    assert duck.num_rows > 0
    assert_same_rows(sp, duck)


def test_rewrites_in_the_spark_text() -> None:
    assert "SIZE(kernels.nvtx_stack)" in to_spark(FIX_SQL["len-of-list"])
    assert "LENGTH(kernels.name)" in to_spark(FIX_SQL["len-of-list"])
    assert "SLICE(kernels.nvtx_stack, 1, 2)" in to_spark(FIX_SQL["list-slice"])
    assert "ELEMENT_AT(kernels.provenance, 'tensor_roof')" in to_spark(FIX_SQL["map_extract_value"])
    assert "PERCENTILE(kernels.duration_ns, 0.25)" in to_spark(FIX_SQL["quantile_cont"])
    assert "PRINTF('%s | %s | %s | %.3g%% | %d'" not in to_spark(FIX_SQL["printf-%g"])  # %.3g%% is a %g too
    assert "PRINTF('%s | %s | %s | %s%% | %d'" in to_spark(FIX_SQL["printf-%g"])
    union = to_spark(FIX_SQL["union-branch-aliases"]).split("UNION ALL")[1]
    assert " AS " not in union.split("FROM")[0]


def test_printf_g_drops_trailing_zeros_as_c_does(spark: Any, store: Store) -> None:
    """C's (DuckDB's) %g: 0.125 not 0.1250, 1.5e+12 not 1.500e+12, 100 not 100.0; exponents as C writes them."""
    sql = (
        "SELECT printf('%.4g', x) AS g FROM (VALUES (0.125::DOUBLE), (1.5e12::DOUBLE), (100.0::DOUBLE), "
        "(1e-5::DOUBLE), (0.0::DOUBLE), (123456789.0::DOUBLE), (-2.5e-7::DOUBLE)) AS t (x)"
    )
    sp, duck = both(spark, store, sql)
    assert sorted(sp.column("g").to_pylist()) == sorted(duck.column("g").to_pylist())
    assert "0.125" in duck.column("g").to_pylist() and "1.5e+12" in duck.column("g").to_pylist()


def test_macros_are_inlined(spark: Any, store: Store) -> None:
    sql = (
        "SELECT kernel_id, nvtx_layer(nvtx_domain, nvtx_stack, 2) AS layer, "
        "flops_total(flops_fp64, flops_fp32, flops_fp16, flops_tensor) AS flops, "
        "dominant_precision(flops_fp64, flops_fp32, flops_fp16, flops_tensor) AS prec, p.precision "
        "FROM kernels CROSS JOIN precisions() AS p"
    )
    text = to_spark(sql)
    assert not any(
        m in text.lower() for m in ("nvtx_layer", "flops_total", "dominant_precision", "precisions(")
    )
    assert_same_rows(*both(spark, store, sql))


# ---- the store's rules and the CLI -----------------------------------------------------------------------------


def test_unpublished_runs_are_hidden(tmp_path: Path, spark: Any, store: Store) -> None:
    """A run whose tables are in place but whose `runs` row is not (a publish in progress) is not seen."""
    from rooflake.pipeline import ingest_file

    small = NCU / "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv.ncu-rep"
    res = ingest_file(small, tmp_path / "s")
    s = Store(tmp_path / "s")
    assert rs.execute(s, "SELECT count(*) AS n FROM kernels", spark=spark).to_pylist() == [{"n": 1}]
    (s.partition("runs", str(res.run_id)) / "part-0.parquet").rename(tmp_path / "runs-row")
    assert (s.partition("kernels", str(res.run_id)) / "part-0.parquet").exists()
    for table in ("kernels", "metrics", "ceilings"):
        assert rs.execute(s, f"SELECT count(*) AS n FROM {table}", spark=spark).to_pylist() == [{"n": 0}]
    rs.register(spark, Store(tmp_path / "empty"))  # no store at all: every view empty, with its columns
    assert spark.table("kernel_roofline").columns == queries.columns("kernel_roofline")
    rs.register(spark, store)  # the module's views back, for the other tests


def test_execute_binds_markers_and_parameterized_views(spark: Any, store: Store) -> None:
    fa3 = _run(store, FA3)
    got = rs.execute(
        store,
        "SELECT count(*) AS n FROM time_roofline WHERE grain = :g",
        {"run_id": fa3, "launch_overhead_ns": "2000", "g": "kernel"},
        spark=spark,
    )
    assert got.to_pylist() == [{"n": 1}]
    with pytest.raises(QueryError, match="read-only"):
        rs.execute(store, "CREATE TABLE t AS SELECT 1", spark=spark)
    with pytest.raises(QueryError, match=":x"):
        rs.execute(store, "SELECT :x", spark=spark)
    rs.register(spark, store)


def test_rl_sql_engine_spark(spark: Any, store: Store) -> None:
    from typer.testing import CliRunner

    from rooflake.cli import app

    sql = "SELECT run_id, count(*) AS n FROM kernel_roofline GROUP BY run_id ORDER BY run_id"
    args = ["sql", sql, "--store", str(store.root), "-f", "csv"]
    res = CliRunner().invoke(app, [*args, "--engine", "spark"])
    duck = CliRunner().invoke(app, args)
    assert res.exit_code == 0 and duck.exit_code == 0, res.output
    assert res.stdout == duck.stdout and res.stdout.count("\n") > 3
    bad = CliRunner().invoke(
        app, ["sql", "DROP VIEW kernels", "--store", str(store.root), "--engine", "spark"]
    )
    assert bad.exit_code == 1 and "Error:" in bad.output
    rs.register(spark, store)


# ---- ingest fanned out -------------------------------------------------------------------------------------------


def _contents(root: Path) -> dict[str, list[str]]:
    """Every table's rows (``runs`` without ``ingested_at``), as sorted reprs: a store's content."""
    from rooflake.store import ALL_TABLES

    s = Store(root)
    out = {}
    for t in ALL_TABLES:
        rows = s.query(f"SELECT * FROM {t}").to_pylist()
        out[t] = sorted(repr({k: v for k, v in r.items() if k != "ingested_at"}) for r in rows)
    return out


def test_ingest_on_executors_equals_a_plain_ingest(spark: Any, tmp_path: Path, fixture_store: Path) -> None:
    """Every fixture .ncu-rep and a file no reader knows, over the two local executors: one result per file in the
    order given (the bad one an error naming it), a store equal to the process pool's (conftest fixture_store);
    again: each file 'exists' (the run id is the file's SHA-256)."""
    from rooflake.pipeline import ingest_file

    from _support import NCU_REPORTS

    bad = tmp_path / "notes.txt"
    bad.write_text("not a report\n")
    paths = [*NCU_REPORTS, bad]
    results = rs.ingest(spark, paths, tmp_path / "s", ingest_file)
    assert [r["path"] for r in results] == [str(p) for p in paths]
    assert [r["status"] for r in results] == ["ingested"] * len(NCU_REPORTS) + ["error"]
    assert "notes.txt" in results[-1]["error"] and results[0]["kernels"] >= 1
    assert _contents(tmp_path / "s") == _contents(fixture_store)
    again = rs.ingest(spark, paths[:3], tmp_path / "s", ingest_file)
    assert [r["status"] for r in again] == ["exists"] * 3
