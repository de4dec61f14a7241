"""Trajectories (Javed, Ibrahim, Lu 2019; Ibrahim, Williams, Oliker): the trajectory query on a batch sweep built in
code (hand-computed points and order, through the table macro), the chart spec (lines, arrows, labels), the view and
`rl trajectory` end to end."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.render.save import spec_dict
from rooflake.render.trajectory import ARROW_SHAPE, trajectory_chart
from rooflake.schema import CEILINGS, KERNELS, METRICS, RUNS, RooflineDataError, UsageError
from rooflake.store import Store
from rooflake.views.trajectory import trajectory

# one machine: DRAM 1 TB/s, L2 4 TB/s, L1 16 TB/s, FP32 10 TFLOP/s
CEIL = {"DRAM": 1e12, "L2": 4e12, "L1": 16e12, "FP32": 10e12}
A, B = "<default domain>:A", "<default domain>:B"


def _run(root: Path, run_id: str, labels: dict[str, str], kernels: list[dict], n: int) -> None:
    """Publish a hand-built run with ``labels`` (tests/_support.tiny_run writes no labels); ``n`` orders
    ingest times."""

    def table(schema: pa.Schema, rows: list[dict], **defaults: object) -> pa.Table:
        cols = {f.name: [r.get(f.name, defaults.get(f.name)) for r in rows] for f in schema}
        return pa.table(cols, schema=schema)

    run = {
        "run_id": run_id,
        "source_path": f"/tiny/{run_id}",
        "source_format": "test",
        "n_kernels": len(kernels),
        "ingested_at": datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=n),
        "labels": list(labels.items()),
        "schema_version": "1",
    }
    ceilings = [
        {"kernel_id": k["kernel_id"], "ceiling": c, "value": v, "clock_hz": 1e9, "source": "test",
         "kind": "bandwidth" if c in ("DRAM", "L2", "L1") else "compute",
         "unit": "byte/s" if c in ("DRAM", "L2", "L1") else "FLOP/s", "machine_key": "GPU|8.0|1000"}
        for k in kernels for c, v in CEIL.items()
    ]  # fmt: skip
    Store(root).publish(
        run_id,
        {
            "runs": table(RUNS, [run]),
            "kernels": table(KERNELS, kernels, run_id=run_id, provenance=[], flags=[]),
            "ceilings": table(CEILINGS, ceilings, run_id=run_id),
            "metrics": table(METRICS, [], run_id=run_id),
        },
    )


def _k(kid: int, name: str, path: str, flops: float, q: tuple[float, float, float], dur: float) -> dict:
    return {"kernel_id": kid, "name": f"void {name}(float*)", "short_name": name, "nvtx_path": path,
            "nvtx_domain": "<default domain>", "nvtx_stack": [path.split(":")[1]], "device_id": 0,
            "duration_ns": dur, "flops_fp32": flops, "flops_fp64": 0.0,
            "bytes_l1": q[0], "bytes_l2": q[1], "bytes_dram": q[2]}  # fmt: skip


# gemm in layer A: AI_DRAM 10 -> 12.5 -> 16, 1.0 -> 1.25 -> 1.6 TFLOP/s (up and to the right)
GEMM = {8: (1e9, 1e8, 1e6), 16: (2e9, 1.6e8, 1.6e6), 32: (4e9, 2.5e8, 2.5e6)}  # FLOP, DRAM byte, ns


def _kernels(batch: int) -> list[dict]:
    s = batch / 8
    f, qd, t = GEMM[batch]
    ks = [
        _k(0, "gemm", A, f, (4 * f / 10, 2 * f / 10, qd), t),  # AI_L1 2.5, AI_L2 5 at every batch
        # AI 0.25 at every batch, 0.1 -> 0.141 -> 0.2 TFLOP/s (straight up)
        _k(1, "bias", A, 1e7 * s, (4e7 * s, 4e7 * s, 4e7 * s), 1e5 * math.sqrt(s)),
        # relu launched twice in B: occurrences 1 and 2; the first stays put, the second gets slower per FLOP
        _k(2, "relu", B, 1e6 * s, (8e6 * s, 8e6 * s, 8e6 * s), 1e4 * s),
        _k(3, "relu", B, 1e6 * s, (8e6 * s, 8e6 * s, 8e6 * s), 1e4 * s * s),
    ]
    if batch != 16:  # profiled in two runs of three: fewer points, never a zero
        ks.append(_k(4, "extra", B, 2e6 * s, (1e6, 1e6, 1e6), 1e4))
    return ks


RUN = {8: "8" * 16, 16: "1" * 16, 32: "3" * 16}
OTHER = "0" * 16  # model=other, batch=8: its own series


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    # ingested out of order, and with run ids whose order is neither numeric nor lexical batch order
    for n, batch in enumerate((32, 8, 16)):
        _run(root, RUN[batch], {"model": "m", "batch": str(batch)}, _kernels(batch), n)
    # plus a kernel above its roof: AI 1, 1 PFLOP/s against a 1 TFLOP/s DRAM roof
    impossible = _k(2, "impossible", A, 1e9, (1e9, 1e9, 1e9), 1e3)
    _run(root, OTHER, {"model": "other", "batch": "8"}, [*_kernels(8)[:2], impossible], 3)
    _run(root, "f" * 16, {"model": "m"}, _kernels(8), 4)  # no batch label: in no series
    return root


def _rows(root: Path, vary: str = "batch", where: str = "TRUE", depth: int = 1) -> list[dict[str, Any]]:
    con = queries.connect(Store(root))
    sql = f"SELECT * FROM trajectory($vary, $depth) WHERE {where} "
    sql += "ORDER BY series, entity_kind, entity, level, step, run_id"
    cur = con.execute(sql, {"vary": vary, "depth": depth})
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _traj(rows: list[dict], entity: str, level: str = "dram", series: str = "model=m") -> list[dict]:
    return [r for r in rows if r["entity"] == entity and r["level"] == level and r["series"] == series]


def test_query_is_parameterized() -> None:
    assert queries.parameters("trajectory") == ["vary", "depth"]
    assert "trajectory" not in queries.views()


def test_kernel_points_in_numeric_order(sweep: Path) -> None:
    rows = _rows(sweep, where="entity_kind = 'kernel'")
    gemm = _traj(rows, f"{A} | void gemm(float*) #1")
    # 8 < 16 < 32 numerically (lexically '16' < '32' < '8')
    assert [(r["value"], r["value_num"], r["step"], r["run_id"]) for r in gemm] == [
        ("8", 8.0, 1, RUN[8]),
        ("16", 16.0, 2, RUN[16]),
        ("32", 32.0, 3, RUN[32]),
    ]
    assert [r["ai"] for r in gemm] == pytest.approx([10.0, 12.5, 16.0])
    assert [r["flops_per_s"] for r in gemm] == pytest.approx([1.0e12, 1.25e12, 1.6e12])
    r0 = gemm[0]
    assert (r0["vary"], r0["label"], r0["short_name"], r0["occurrence"], r0["nvtx_path"]) == (
        "batch", "gemm #1", "gemm", 1, A,
    )  # fmt: skip
    assert (r0["value_order"], r0["n_runs"], r0["n_values"], r0["n_points"]) == ("numeric", 3, 3, 3)
    assert (r0["precision"], r0["flops"], r0["bytes"], r0["duration_ns"]) == ("fp32", 1e9, 1e8, 1e6)
    assert dict(r0["labels"]) == {"model": "m", "batch": "8"}
    # the other levels of the same kernel
    assert [r["ai"] for r in _traj(rows, f"{A} | void gemm(float*) #1", "l2")] == pytest.approx([5.0] * 3)
    assert [r["ai"] for r in _traj(rows, f"{A} | void gemm(float*) #1", "l1")] == pytest.approx([2.5] * 3)


def test_kernel_identity_by_occurrence(sweep: Path) -> None:
    rows = _rows(sweep, where="entity_kind = 'kernel'")
    first = _traj(rows, f"{B} | void relu(float*) #1")
    second = _traj(rows, f"{B} | void relu(float*) #2")
    assert [r["flops_per_s"] for r in first] == pytest.approx([1e11] * 3)  # 1e6 s FLOP / 1e4 s ns
    assert [r["flops_per_s"] for r in second] == pytest.approx([1e11, 5e10, 2.5e10])  # / 1e4 s^2 ns
    assert [r["ai"] for r in second] == pytest.approx([0.125] * 3)


def test_kernel_missing_from_one_run(sweep: Path) -> None:
    rows = _rows(sweep, where="entity_kind = 'kernel'")
    extra = _traj(rows, f"{B} | void extra(float*) #1")
    # batch 16 did not profile it: two points, the step of 16 skipped (never a zero)
    assert [(r["value"], r["step"], r["n_points"]) for r in extra] == [("8", 1, 2), ("32", 3, 2)]
    assert [r["ai"] for r in extra] == pytest.approx([2.0, 8.0])
    assert [r["flops_per_s"] for r in extra] == pytest.approx([2e11, 8e11])


def test_layer_points(sweep: Path) -> None:
    rows = _rows(sweep, where="entity_kind = 'layer'")
    assert {r["entity"] for r in rows} == {A, B}
    a = _traj(rows, A)
    # layer A = gemm + bias: sum F / sum Q_DRAM, sum F / sum time
    exp_ai = [(1e9 + 1e7) / (1e8 + 4e7), (2e9 + 2e7) / (1.6e8 + 8e7), (4e9 + 4e7) / (2.5e8 + 1.6e8)]
    exp_fs = [(1e9 + 1e7) / 1.1e-3, (2e9 + 2e7) / (1.6e-3 + 1e-4 * math.sqrt(2)), (4e9 + 4e7) / 2.7e-3]
    assert [r["value"] for r in a] == ["8", "16", "32"] and [r["step"] for r in a] == [1, 2, 3]
    assert [r["ai"] for r in a] == pytest.approx(exp_ai)
    assert [r["flops_per_s"] for r in a] == pytest.approx(exp_fs)
    b = _traj(rows, B)
    # layer B at batch 16 has no 'extra': relu x 2 only
    assert b[1]["flops"] == pytest.approx(4e6) and b[1]["bytes"] == pytest.approx(3.2e7)
    assert b[1]["duration_ns"] == pytest.approx(2e4 + 4e4)
    assert all(r["label"] == r["nvtx_path"] == r["entity"] and r["occurrence"] is None for r in a + b)
    assert all(r["flags"] == [] for r in a + b)


def test_series_and_runs_outside(sweep: Path) -> None:
    rows = _rows(sweep)
    # model=other is its own series (one run), the run without a batch label is in none
    assert {(r["series"], r["run_id"]) for r in rows} == {("model=m", RUN[b]) for b in RUN} | {
        ("model=other", OTHER)
    }
    other = [r for r in rows if r["series"] == "model=other"]
    assert {r["n_runs"] for r in other} == {1} and {r["step"] for r in other} == {1}
    assert {r["entity"] for r in other if r["entity_kind"] == "kernel"} == {
        f"{A} | void gemm(float*) #1",
        f"{A} | void bias(float*) #1",
        f"{A} | void impossible(float*) #1",
    }
    # the series is filterable by the labels map
    only = _rows(sweep, where="labels['model'] = 'm'")
    assert {r["series"] for r in only} == {"model=m"}


def test_roofs_and_above_roof(sweep: Path) -> None:
    rows = _rows(sweep, where="entity_kind = 'kernel'")
    gemm = _traj(rows, f"{A} | void gemm(float*) #1")
    # attainable = min(P, AI * W): AI 10 is the DRAM ridge (10 TFLOP/s / 1 TB/s)
    assert [r["attainable_flops_per_s"] for r in gemm] == pytest.approx([10e12] * 3)
    assert (gemm[0]["peak_flops_per_s"], gemm[0]["bw"]) == (10e12, 1e12)
    relu = _traj(rows, f"{B} | void relu(float*) #1", "l2")
    assert relu[0]["attainable_flops_per_s"] == pytest.approx(0.125 * 4e12)
    assert not any(r["above_roof"] for r in rows if r["series"] == "model=m")
    bad = _traj(rows, f"{A} | void impossible(float*) #1", series="model=other")
    assert bad[0]["flops_per_s"] == pytest.approx(1e15) and bad[0]["above_roof"]
    # the chart keeps it and outlines it in red
    spec = _spec(trajectory_chart(pl.DataFrame(bad)))
    pts = spec["datasets"][_layer(spec, "points")["data"]["name"]]
    assert [p["flagged"] for p in pts] == [True]
    assert "above its roof" in " ".join(spec["title"]["subtitle"])


def test_lexical_order(sweep: Path) -> None:
    # vary the model instead: runs with batch=8 form one series, 'm' < 'other' lexically
    rows = _rows(sweep, vary="model", where="entity_kind = 'layer' AND level = 'dram'")
    a = [r for r in rows if r["series"] == "batch=8" and r["entity"] == A]
    assert [(r["value"], r["value_num"], r["step"], r["value_order"]) for r in a] == [
        ("m", None, 1, "lexical"),
        ("other", None, 2, "lexical"),
    ]
    # the run without a batch label: series '' with one run
    assert {r["series"] for r in rows} == {"batch=8", "batch=16", "batch=32", ""}


def test_unknown_label_gives_no_rows(sweep: Path) -> None:
    assert _rows(sweep, vary="threads") == []


# --------------------------------------------------------------------------------------------------- chart


def _chart_rows(sweep: Path, by: str = "kernel") -> pl.DataFrame:
    return pl.DataFrame(_rows(sweep, where=f"entity_kind = '{by}' AND series = 'model=m'"))


def _ceilings(sweep: Path) -> Any:
    return queries.run(Store(sweep), "run_ceilings", filters={"run_id": list(RUN.values())})


def _spec(chart: Any) -> dict[str, Any]:
    return spec_dict(chart)


def _layer(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(lyr for lyr in spec["layer"] if lyr.get("name") == name)


def test_chart_lines_arrows_points(sweep: Path) -> None:
    chart = trajectory_chart(_chart_rows(sweep), _ceilings(sweep), level="dram")
    spec = _spec(chart)
    names = [lyr.get("name") for lyr in spec["layer"]]
    assert names == [
        "ceilings", "ceiling_labels_bandwidth", "ceiling_labels_compute", "lines", "arrows", "points", "values",
    ]  # fmt: skip
    lines = _layer(spec, "lines")
    assert lines["mark"]["type"] == "line"
    assert lines["encoding"]["order"]["field"] == "seq"  # rank in (step, run_id) order
    assert (
        lines["encoding"]["x"]["scale"]["type"] == "log" and lines["encoding"]["y"]["scale"]["type"] == "log"
    )
    pts = spec["datasets"][lines["data"]["name"]]
    # one line per entity: gemm, bias, relu #1, relu #2, extra
    assert len({p["trajectory"] for p in pts}) == 5
    gemm = [p for p in pts if p["trajectory"] == "gemm #1"]
    assert [(p["seq"], p["step"], p["value"]) for p in gemm] == [(0, 1, "8"), (1, 2, "16"), (2, 3, "32")]
    assert [p["run_id"] for p in gemm] == [RUN[8], RUN[16], RUN[32]]
    extra = [p for p in pts if p["trajectory"] == "extra #1"]
    assert [(p["seq"], p["step"], p["value"]) for p in extra] == [(0, 1, "8"), (1, 3, "32")]
    # arrows: one per segment, from step to the next, pointing along it on screen
    arrows = _layer(spec, "arrows")
    assert arrows["mark"]["type"] == "point" and arrows["mark"]["shape"] == ARROW_SHAPE
    assert arrows["encoding"]["angle"]["field"] == "angle"
    arr = spec["datasets"][arrows["data"]["name"]]
    g = sorted((a for a in arr if a["trajectory"] == "gemm #1"), key=lambda a: a["from_step"])
    assert [(a["from_value"], a["to_value"]) for a in g] == [("8", "16"), ("16", "32")]
    assert [(a["from_step"], a["to_step"]) for a in g] == [(1, 2), (2, 3)]
    # gemm moves up and to the right: on screen (y down, angle clockwise from +x) between -90 and 0 degrees
    assert all(-90 < a["angle"] < 0 for a in g)
    # the arrow sits at the log-space midpoint of its segment
    assert g[0]["ai"] == pytest.approx(math.sqrt(10 * 12.5))
    assert g[0]["flops_per_s"] == pytest.approx(math.sqrt(1e12 * 1.25e12))
    r2 = sorted((a for a in arr if a["trajectory"] == "relu #2"), key=lambda a: a["from_step"])
    assert [a["angle"] for a in r2] == pytest.approx([90.0, 90.0])  # straight down: same AI, lower FLOP/s
    assert len([a for a in arr if a["trajectory"] == "extra #1"]) == 1  # two points, one segment
    b = sorted((a for a in arr if a["trajectory"] == "bias #1"), key=lambda a: a["from_step"])
    assert [a["angle"] for a in b] == pytest.approx([-90.0, -90.0])  # straight up
    # relu #1 stays put (same AI and FLOP/s at every batch): no arrow, one label with every value
    assert not [a for a in arr if a["trajectory"] == "relu #1"]
    assert len(arr) == 2 + 2 + 0 + 2 + 1
    # the varied value is written at every point
    values = _layer(spec, "values")
    assert values["mark"]["type"] == "text" and values["encoding"]["text"]["field"] == "text"
    texts = spec["datasets"][values["data"]["name"]]
    assert sorted(t["text"] for t in texts if t["trajectory"] == "gemm #1") == ["16", "32", "8"]
    assert [t["text"] for t in texts if t["trajectory"] == "relu #1"] == ["8, 16, 32"]  # one spot, one text
    # the roofs of DRAM and FP32 (the points' precision)
    roofs = {r["ceiling"] for r in spec["datasets"][_layer(spec, "ceilings")["data"]["name"]]}
    assert roofs == {"DRAM", "FP32"}
    sub = " ".join(spec["title"]["subtitle"])
    assert "batch" in sub and "8 → 16 → 32" in sub


def test_chart_all_levels_and_no_ceilings(sweep: Path) -> None:
    spec = _spec(trajectory_chart(_chart_rows(sweep, "layer"), None, level="all"))
    assert [lyr["name"] for lyr in spec["layer"]] == ["lines", "arrows", "points", "values"]
    pts = spec["datasets"][_layer(spec, "lines")["data"]["name"]]
    assert {(p["trajectory"], p["level"]) for p in pts} == {
        (e, lv) for e in (A, B) for lv in ("L1", "L2", "DRAM")
    }
    assert _layer(spec, "points")["encoding"]["shape"]["field"] == "level"


def test_chart_errors(sweep: Path) -> None:
    with pytest.raises(ValueError, match="level"):
        trajectory_chart(_chart_rows(sweep), level="hbm")
    empty = _chart_rows(sweep).with_columns(pl.lit(None, dtype=pl.Float64).alias("flops_per_s"))
    with pytest.raises(RooflineDataError, match="no point"):
        trajectory_chart(empty)


# --------------------------------------------------------------------------------------------------- end to end


def _rl(*args: str) -> Any:
    return CliRunner().invoke(app, ["trajectory", *args])


def test_rl_trajectory_svg(sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.svg"
    r = _rl("--vary", "batch", "--where", "model=m", "--out", str(out), "--store", str(sweep))
    assert r.exit_code == 0, r.stderr
    svg = out.read_text()
    assert svg.startswith("<svg") and "<path" in svg
    assert "1 series" in r.stdout and "2 layers" in r.stdout and "3 runs" in r.stdout


def test_rl_trajectory_filters(sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.html"
    r = _rl(
        "--vary",
        "batch",
        "--layer",
        "B$",
        "--level",
        "l2",
        "--by",
        "kernel",
        "-o",
        str(out),
        "--store",
        str(sweep),
    )
    assert out.stat().st_size > 0
    # model=other has one run only: left out, said so
    assert "3 kernels" in r.stdout and "1 series" in r.stdout and "single" in r.stdout
    r = _rl("--vary", "batch", "--where", "batch=8", "--store", str(sweep))
    assert r.exit_code == 1 and "varied label" in r.stderr


def test_view_errors(sweep: Path) -> None:
    store = Store(sweep)
    t = trajectory(store, "batch", None, "B$", level="l2", grain="kernel")
    assert t.series == ["model=m"] and t.single == ["model=other"] and t.runs == 3
    with pytest.raises(RooflineDataError, match="threads"):
        trajectory(store, "threads")
    with pytest.raises(RooflineDataError, match="fewer than 2"):
        trajectory(store, "batch", {"model": "other"})
    with pytest.raises(RooflineDataError, match="nomatch"):
        trajectory(store, "batch", None, "nomatch")
    with pytest.raises(UsageError, match="batch"):
        trajectory(store, "batch", {"batch": "8"})
