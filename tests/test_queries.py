"""Golden tests of the named queries on tiny tables built in code (hand-computed expected values)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rooflake import queries
from rooflake.store import Store

from _support import tiny_run

# one machine: DRAM 1 TB/s, L2 4 TB/s, L1 16 TB/s, FP32 10 TFLOP/s, FP64 5 TFLOP/s
CEIL = {"DRAM": 1e12, "L2": 4e12, "L1": 16e12, "FP32": 10e12, "FP64": 5e12}


def _ceilings(kernel_ids: list[int]) -> list[dict]:
    return [{"kernel_id": k, "ceiling": c, "value": v} for k in kernel_ids for c, v in CEIL.items()]


KERNELS = [
    # compute-bound GEMM: AI_dram = 1e12 / 1e9 = 1000 FLOP/B > ridge 10; runs at 5 TFLOP/s (half the roof)
    {"kernel_id": 0, "name": "gemm", "duration_ns": 2e8, "flops_fp32": 1e12, "flops_fp64": 0.0,
     "bytes_l1": 1e11, "bytes_l2": 1e10, "bytes_dram": 1e9},
    # DRAM-bound stream: AI_dram = 0.25; attainable_dram = 0.25 TFLOP/s < L2's 1 and L1's 4; achieved 0.2 TFLOP/s
    {"kernel_id": 1, "name": "stream", "duration_ns": 5e6, "flops_fp32": 1e9, "flops_fp64": 0.0,
     "bytes_l1": 4e9, "bytes_l2": 4e9, "bytes_dram": 4e9},
    # L2-bound: AI_l2 = 0.1 -> 0.4 TFLOP/s; AI_dram = 10 -> min(10, 10) TFLOP/s; AI_l1 = 0.1 -> 1.6 TFLOP/s
    {"kernel_id": 2, "name": "l2bound", "duration_ns": 1e6, "flops_fp32": 1e8,
     "bytes_l1": 1e9, "bytes_l2": 1e9, "bytes_dram": 1e7},
    # copy: no FLOPs
    {"kernel_id": 3, "name": "copy", "duration_ns": 1e6, "flops_fp32": 0.0, "flops_fp64": 0.0,
     "bytes_l1": 1e9, "bytes_l2": 1e9, "bytes_dram": 1e9},
    # above the roof (a physics violation: kept and marked)
    {"kernel_id": 4, "name": "impossible", "duration_ns": 1e3, "flops_fp32": 1e9, "bytes_dram": 1e9},
    # failed replay: NaN duration
    {"kernel_id": 5, "name": "nan", "duration_ns": float("nan"), "flops_fp32": 1e9, "bytes_dram": 1e9},
]  # fmt: skip


@pytest.fixture()
def con(tmp_path: Path):
    tiny_run(tmp_path, "a" * 16, [dict(k) for k in KERNELS], _ceilings([0, 1, 2, 3, 4, 5]))
    return queries.connect(Store(tmp_path))


def _row(con, kernel_id: int, precision: str = "fp32") -> dict:
    cur = con.execute(
        "SELECT * FROM kernel_roofline WHERE kernel_id = ? AND precision = ?", [kernel_id, precision]
    )
    cols = [d[0] for d in cur.description]
    return dict(zip(cols, cur.fetchone(), strict=True))


def test_compute_bound(con) -> None:
    r = _row(con, 0)
    assert r["ai_dram"] == 1000 and r["ai_l2"] == 100 and r["ai_l1"] == 10
    assert r["achieved_flops_per_s"] == pytest.approx(5e12)
    assert r["attainable_l1"] == 10e12 and r["attainable_flops_per_s"] == 10e12
    assert r["ridge_dram"] == 10 and r["ridge_l1"] == 10e12 / 16e12
    assert r["fraction_of_roof"] == pytest.approx(0.5)
    assert r["bound"] == "FP32" and r["is_dominant"] and not r["above_roof"] and not r["zero_flops"]
    fp64 = _row(con, 0, "fp64")
    assert not fp64["is_dominant"] and fp64["zero_flops"] and fp64["bound"] is None


def test_dram_bound(con) -> None:
    r = _row(con, 1)
    assert r["ai_dram"] == 0.25
    assert r["attainable_dram"] == pytest.approx(0.25e12)
    assert r["attainable_flops_per_s"] == pytest.approx(0.25e12)
    assert r["achieved_flops_per_s"] == pytest.approx(0.2e12)
    assert r["fraction_of_roof"] == pytest.approx(0.8)
    assert r["bound"] == "DRAM"


def test_l2_bound(con) -> None:
    r = _row(con, 2)
    assert r["attainable_l2"] == pytest.approx(0.4e12)
    assert r["attainable_dram"] == pytest.approx(10e12)
    assert r["attainable_l1"] == pytest.approx(1.6e12)
    assert r["bound"] == "L2"


def test_zero_flop_and_missing_precisions(con) -> None:
    r = _row(con, 3)
    assert r["zero_flops"] and r["ai_dram"] == 0 and r["bound"] is None
    # no fp16 / tensor counters anywhere: no rows for them (NULL is not 0)
    assert (
        con.execute("SELECT count(*) FROM kernel_roofline WHERE precision IN ('fp16', 'tensor')").fetchone()[
            0
        ]
        == 0
    )


def test_above_roof_and_nan_are_kept_and_marked(con) -> None:
    r = _row(con, 4)
    assert r["achieved_flops_per_s"] == pytest.approx(1e15) and r["above_roof"]
    n = _row(con, 5)
    assert math.isnan(n["achieved_flops_per_s"]) and not n["above_roof"]
    assert r["bytes_l2"] is None and r["ai_l2"] is None and r["attainable_l2"] is None


def test_run_ceilings_median_and_invalid(tmp_path: Path) -> None:
    ceilings = [
        {"kernel_id": 0, "ceiling": "DRAM", "value": 1.0e12, "clock_hz": 1.0e9},
        {"kernel_id": 1, "ceiling": "DRAM", "value": 1.2e12, "clock_hz": 1.2e9},
        {"kernel_id": 2, "ceiling": "DRAM", "value": 1.1e12, "clock_hz": 1.1e9},
        {"kernel_id": 3, "ceiling": "DRAM", "value": float("nan"), "clock_hz": float("nan")},
        {"kernel_id": 4, "ceiling": "DRAM", "value": 0.0, "clock_hz": 1.0e9},
    ]
    tiny_run(tmp_path, "b" * 16, [{"kernel_id": i, "name": f"k{i}"} for i in range(5)], ceilings)
    rows = queries.run(Store(tmp_path), "run_ceilings").to_pylist()
    assert len(rows) == 1
    r = rows[0]
    assert (r["value"], r["value_min"], r["value_max"]) == (1.1e12, 1.0e12, 1.2e12)
    assert r["clock_hz"] == 1.1e9 and r["n_kernels"] == 3 and r["n_invalid"] == 2


def test_every_query_has_a_documented_header() -> None:
    for name in queries.names():
        sql = queries.load(name)
        assert sql.startswith(f"-- {name}: ")
        assert "-- Columns:" in sql


def test_physics_checks(con) -> None:
    rows = con.execute('SELECT kernel_id, "check" FROM physics_checks ORDER BY 1, 2').fetchall()
    # kernel 4 runs at 1e15 FLOP/s against a 1 TFLOP/s DRAM roof; kernel 5 has a NaN duration
    assert (4, "above_roof") in rows and (5, "nan_duration") in rows
    # kernel 2 (L2-bound): AI_L1 0.1 = AI_L2 0.1 <= AI_DRAM 10: in order; kernel 0 too
    assert not [r for r in rows if r[1] == "ai_order_violated"]
    assert {r[1] for r in rows} <= {"above_roof", "nan_duration", "missing_roof"}
    # kernels 4 and 5 have DRAM bytes only: no missing roof; every kernel's levels have roofs here
    assert not [r for r in rows if r[1] == "missing_roof"]


def test_physics_checks_on_other_findings(tmp_path: Path) -> None:
    kernels = [
        {"kernel_id": 0, "name": "sgemm", "duration_ns": 100.0, "flops_fp32": 1e6, "bytes_l1": 1e3, "bytes_l2": 1e4,
         "bytes_dram": 1e2, "flags": ["gemm_without_flops"]},
    ]  # fmt: skip
    ceilings = [
        {"kernel_id": 0, "ceiling": "DRAM", "value": 0.0},
        {"kernel_id": 0, "ceiling": "FP32", "value": 1e13},
    ]
    tiny_run(tmp_path, "e" * 16, kernels, ceilings)
    con = queries.connect(Store(tmp_path))
    checks = {c for (c,) in con.execute('SELECT "check" FROM physics_checks').fetchall()}
    # a zero DRAM peak also puts the point above its (zero) roof: both are reported
    assert checks == {"ai_order_violated", "gemm_without_flops", "zero_peak", "missing_roof", "above_roof"}


def test_only_the_views_a_query_names_are_built() -> None:
    needed = queries.dependencies("SELECT * FROM physics_checks WHERE run_id = $r")
    assert needed == ["kernel_roofs", "kernel_roofline", "physics_checks"]  # dependencies first
    assert queries.dependencies("SELECT 1 -- kernel_roofline in a comment") == []
    # a table macro brings the views it reads
    assert queries.dependencies("SELECT * FROM time_roofline('r', 1000)") == [
        "kernel_roofs",
        "kernel_roofline",
        "time_roofline",
    ]


def test_nvtx_layer_macro_is_the_layer_label(tmp_path: Path) -> None:
    """One label rule for every layer view, and usable in ad-hoc SQL."""
    got = queries.execute(
        Store(tmp_path),
        "SELECT nvtx_layer('d', ['a', 'b/c', 'e'], 2) AS two, nvtx_layer('d', ['a'], 3) AS deep,"
        " nvtx_layer('d', NULL, 1) AS outside, nvtx_layer('d', [], 1) AS empty",
    ).to_pylist()
    assert got == [
        {"two": "d:a/b/c", "deep": "d:a", "outside": "(no NVTX range)", "empty": "(no NVTX range)"}
    ]


def test_a_failed_replay_has_no_bound_and_an_uncounted_pipe_is_not_zero_flops(tmp_path: Path) -> None:
    """A failed replay (every value NaN) was FP64-bound (DuckDB orders NaN above every number: `NaN >= peak`), its
    NaN the dominant precision, and listed as "no FLOP counters"; an int8 GEMM whose Tensor-Core counts the report
    lacks (FP64 and FP32 counted, 0) was listed as "zero FLOPs" beside copies."""
    from rooflake.render.tables import zero_flop_table

    nan = float("nan")
    kernels = [
        {"kernel_id": 0, "name": "replay", "duration_ns": nan, "flops_fp64": nan, "flops_fp32": nan,
         "bytes_dram": nan, "flags": ["nan_duration", "nan_metrics"]},
        {"kernel_id": 1, "name": "imma_gemm", "duration_ns": 1e6, "flops_fp64": 0.0, "flops_fp32": 0.0,
         "bytes_dram": 1e9},  # fp16 and tensor: no counter
        {"kernel_id": 2, "name": "copy", "duration_ns": 1e6, "flops_fp64": 0.0, "flops_fp32": 0.0,
         "flops_fp16": 0.0, "flops_tensor": 0.0, "bytes_dram": 1e9},
        {"kernel_id": 3, "name": "half_nan", "duration_ns": 1e6, "flops_fp64": nan, "flops_fp32": 1e9,
         "bytes_dram": 1e9},
    ]  # fmt: skip
    tiny_run(tmp_path, "f" * 16, kernels, _ceilings([0, 1, 2, 3]))
    rows = queries.execute(Store(tmp_path), "SELECT * FROM kernel_roofline ORDER BY kernel_id, precision")
    got = {(r["kernel_id"], r["precision"]): r for r in rows.to_pylist()}
    assert got[(0, "fp64")]["bound"] is None and got[(0, "fp32")]["bound"] is None
    assert got[(3, "fp32")]["is_dominant"] and not got[(3, "fp64")]["is_dominant"]  # a number beats a NaN
    assert (
        got[(1, "fp32")]["flops_uncounted"] == ["fp16", "tensor"]
        and got[(2, "fp32")]["flops_uncounted"] == []
    )
    reasons = dict(zero_flop_table(rows).select("kernel_id", "reason").iter_rows())
    assert reasons == {
        0: "failed replay (NaN values)",
        1: "0 FLOPs where counted, no counter for fp16, tensor",
        2: "zero FLOPs",
    }


def test_a_failed_replay_leaves_its_layer_sums_to_the_other_launches(tmp_path: Path) -> None:
    """One failed replay (FLOPs and duration NaN) made its layer's FLOPs, bytes, AI and FLOP/s NaN while
    ``counters_complete`` said true; a launch with FLOPs but a NaN duration put its FLOPs into FLOP/s without its
    time. Both now count as launches without counters: the sums are the other launches', hand-computed."""
    nan = float("nan")
    kernels = [
        {"kernel_id": 0, "name": "gemm", "duration_ns": 2e6, "flops_fp32": 4e9, "flops_fp64": 0.0,
         "bytes_l1": 8e8, "bytes_l2": 4e8, "bytes_dram": 2e8},
        {"kernel_id": 1, "name": "stream", "duration_ns": 1e6, "flops_fp32": 1e8, "flops_fp64": 0.0,
         "bytes_l1": 4e8, "bytes_l2": 4e8, "bytes_dram": 4e8},
        {"kernel_id": 2, "name": "replay", "duration_ns": nan, "flops_fp64": nan, "flops_fp32": nan,
         "bytes_l1": nan, "bytes_l2": nan, "bytes_dram": nan, "flags": ["nan_duration", "nan_metrics"]},
        {"kernel_id": 3, "name": "no_time", "duration_ns": nan, "flops_fp32": 1e9, "flops_fp64": 0.0,
         "bytes_l1": 1e8, "bytes_l2": 1e8, "bytes_dram": 1e8, "flags": ["nan_duration"]},
    ]  # fmt: skip
    tiny_run(tmp_path, "e" * 16, kernels, _ceilings([0, 1, 2, 3]))
    (row,) = queries.execute(Store(tmp_path), "SELECT * FROM layer_summary WHERE depth = 1").to_pylist()
    assert (row["launches"], row["nan_durations"], row["launches_with_counters"]) == (4, 2, 2)
    assert row["counters_complete"] is False
    assert row["flops"] == 4.1e9 and row["flops_fp32"] == 4.1e9 and row["flops_fp64"] == 0.0
    assert (row["bytes_l1"], row["bytes_l2"], row["bytes_dram"]) == (1.2e9, 8e8, 6e8)
    assert row["ai_dram"] == pytest.approx(4.1e9 / 6e8) and row["ai_l1"] == pytest.approx(4.1e9 / 1.2e9)
    assert row["counted_time_ns"] == 3e6 and row["kernel_time_ns"] == 3e6
    assert row["flops_per_s"] == pytest.approx(4.1e9 / 3e-3)


def _made(con) -> set[str]:
    """The views and table macros the cursor's database holds now (the statement names none of them)."""
    sql = (
        "SELECT function_name FROM duckdb_functions() WHERE function_type = 'table_macro' "
        "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal"
    )
    return {r[0] for r in con.execute(sql).fetchall()}


def test_a_name_in_a_comment_creates_nothing(con) -> None:
    """Named queries are created when a statement names them, and a name in a comment names nothing: the first
    kernel_roofline of a command created trajectory, time_roofline and both comparisons, which its header's
    comments lead to (0.16 s of creating instead of 0.01; store.database._words)."""
    queries.fetch(con, "kernel_roofline")
    made = _made(con)
    assert "kernel_roofs" in made  # what kernel_roofline reads
    assert not made & {"kernel_roofline", "trajectory", "time_roofline", "compare_kernels", "compare_layers"}
    con.sql("SELECT 1 -- kernel_roofline\n /* trajectory */").fetchall()
    assert not _made(con) & {"kernel_roofline", "trajectory"}
    # named outside a comment: made, and it runs
    rows = con.sql("SELECT count(*) FROM kernel_roofline -- x").fetchall()
    assert rows == [(9,)]  # kernel x precision counted: fp32 of 6 kernels, fp64 of 3
    assert "kernel_roofline" in _made(con)
