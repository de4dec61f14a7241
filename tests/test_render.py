"""render/: roofline specs from tiny kernel_roofline / run_ceilings tables, saving, one real report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rooflake.render import (
    roofline_chart,
    save_chart,
    spec_dict,
    time_roofline_chart,
    trajectory_chart,
    zero_flop_table,
)
from rooflake.render.marks import LEVEL_SHAPE
from rooflake.schema import RooflineDataError, UsageError

FIXTURE = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "fixtures"
    / "ncu"
    / "AveryClapp__ESMM-Research__profile_output.ncu-rep"
)

# Machine: DRAM 1 TB/s, L2 4 TB/s, L1 16 TB/s, FP32 20 TFLOP/s, FP64 10 TFLOP/s.
BW = {"dram": 1e12, "l2": 4e12, "l1": 1.6e13}
PEAK = {"fp64": 1e13, "fp32": 2e13, "fp16": 4e13, "tensor": 1.6e14}
LONG_NAME = "void gemm_kernel<float, 128, 128>(" + "float const*, " * 100 + "int)"

# name, precision with FLOPs, FLOPs, bytes at l1/l2/dram, duration_ns
KERNELS = [
    (LONG_NAME, "gemm_kernel", "fp32", 1.5e12, (5e10, 2e10, 1e10), 1e8),  # compute-bound, AI_DRAM 150
    ("void stream_triad(float*)", "stream_triad", "fp32", 1e9, (8e9, 4e9, 4e9), 5e6),  # DRAM-bound, AI 0.25
    ("void copy_kernel(float*)", "copy_kernel", "fp32", 0.0, (4e9, 4e9, 4e9), 1e7),  # no FLOPs
]


def kernel_roofline(kernels: list[tuple[Any, ...]] = KERNELS, peak: dict[str, float] = PEAK) -> pl.DataFrame:
    """Rows shaped like the kernel_roofline query: one per kernel x precision (fp64 and the kernel's own)."""
    rows = []
    for kid, (name, short, prec, flops, (q1, q2, qd), dur) in enumerate(kernels):
        for p in dict.fromkeys(["fp64", prec]):
            f = flops if p == prec else 0.0
            r: dict[str, Any] = {
                "run_id": "synthetic0000000",
                "kernel_id": kid,
                "name": name,
                "short_name": short,
                "nvtx_path": "<default>:train/step",
                "precision": p,
                "is_dominant": p == prec if flops > 0 else p == "fp64",
                "duration_ns": dur,
                "flops": f,
                "bytes_l1": q1,
                "bytes_l2": q2,
                "bytes_dram": qd,
                "achieved_flops_per_s": f / (dur * 1e-9),
                "peak_flops_per_s": peak[p],
                "zero_flops": f == 0,
                "flags": [],
            }
            att = {}
            for lv, q in (("l1", q1), ("l2", q2), ("dram", qd)):
                r[f"ai_{lv}"] = f / q if q else None
                r[f"bw_{lv}"] = BW[lv]
                r[f"ridge_{lv}"] = peak[p] / BW[lv]
                att[lv] = min(peak[p], r[f"ai_{lv}"] * BW[lv]) if q else None
                r[f"attainable_{lv}"] = att[lv]
            r["attainable_flops_per_s"] = min(v for v in att.values() if v is not None)
            r["fraction_of_roof"] = r["achieved_flops_per_s"] / r["attainable_flops_per_s"] if f else None
            r["bound"] = None
            if f:
                low = min(att, key=lambda k: att[k] or math.inf)
                r["bound"] = p.upper() if att[low] >= peak[p] else low.upper()
            r["above_roof"] = bool(f) and r["achieved_flops_per_s"] > r["attainable_flops_per_s"] * 1.001
            rows.append(r)
    return pl.DataFrame(rows)


def run_ceilings(extra: dict[str, tuple[str, float]] | None = None) -> pl.DataFrame:
    rows = [
        ("DRAM", "bandwidth", BW["dram"]),
        ("L2", "bandwidth", BW["l2"]),
        ("L1", "bandwidth", BW["l1"]),
        ("FP64", "compute", PEAK["fp64"]),
        ("FP32", "compute", PEAK["fp32"]),
    ] + [(k, kind, v) for k, (kind, v) in (extra or {}).items()]
    return pl.DataFrame(
        [
            {
                "run_id": "synthetic0000000",
                "machine_key": "Test GPU|9.0|1000MHz",
                "ceiling": c,
                "kind": kind,
                "value": v,
                "value_min": v,
                "value_max": v,
                "clock_hz": 1e9,
                "unit": "byte/s" if kind == "bandwidth" else "FLOP/s",
                "formula": "x.peak_sustained * y.per_second",
                "source": "ncu-report",
                "n_kernels": 3,
                "n_invalid": 0,
            }
            for c, kind, v in rows
        ]
    )


def layer_data(chart: Any, name: str) -> list[dict[str, Any]]:
    """The data rows of the layer called ``name`` in ``chart.to_dict()`` (inline datasets resolved)."""
    spec = chart.to_dict()
    layers = [lay for lay in spec["layer"] if lay.get("name") == name]
    assert len(layers) == 1, [lay.get("name") for lay in spec["layer"]]
    data = layers[0].get("data", spec.get("data"))
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def layer(chart: Any, name: str) -> dict[str, Any]:
    return next(lay for lay in chart.to_dict()["layer"] if lay.get("name") == name)


def test_one_point_per_flop_kernel_at_dram():
    chart = roofline_chart(kernel_roofline(), run_ceilings(), level="dram", precision="all")
    pts = layer_data(chart, "points")
    assert len(pts) == 2
    by_kernel = {p["kernel"]: p for p in pts}
    assert set(by_kernel) == {"gemm_kernel", "stream_triad"}  # copy_kernel has no FLOPs: not drawn
    assert by_kernel["gemm_kernel"]["ai"] == pytest.approx(150.0)
    assert by_kernel["stream_triad"]["ai"] == pytest.approx(0.25)
    assert by_kernel["gemm_kernel"]["achieved_flops_per_s"] == pytest.approx(1.5e13)
    assert {p["level"] for p in pts} == {"DRAM"}
    assert len(by_kernel["gemm_kernel"]["name"]) <= 80 and by_kernel["gemm_kernel"]["name"].endswith("…")
    enc = layer(chart, "points")["encoding"]
    assert enc["x"]["scale"]["type"] == "log" and enc["y"]["scale"]["type"] == "log"
    assert enc["x"]["field"] == "ai" and enc["y"]["field"] == "achieved_flops_per_s"
    tips = {t["field"] for t in enc["tooltip"]}
    assert {"name", "short_name", "nvtx_path", "precision", "level", "ai", "achieved_flops_per_s"} <= tips
    assert {"attainable_flops_per_s", "fraction_of_roof", "bound", "duration_ns", "flags"} <= tips
    json.dumps(chart.to_dict(), allow_nan=False)  # valid JSON: no NaN leaks into the spec


@pytest.mark.parametrize("level", ["dram", "l2", "l1"])
def test_ceilings_of_the_level_with_values(level: str):
    chart = roofline_chart(kernel_roofline(), run_ceilings(), level=level)
    lines = layer_data(chart, "ceilings")
    values = {r["ceiling"]: r["value"] for r in lines}
    # the level's bandwidth roof, and FP32 (the only precision with drawn points); nothing else
    assert values == {level.upper(): BW[level], "FP32": PEAK["fp32"]}
    w, p = BW[level], PEAK["fp32"]
    ridge = p / w
    for r in lines:
        if r["ceiling"] == "FP32":
            assert r["flops_per_s"] == p and r["ai"] >= ridge * (1 - 1e-9)  # horizontal from the ridge point
        else:
            assert r["flops_per_s"] == pytest.approx(min(w * r["ai"], p))  # y = min(W x, P)
    bw_rows = [r for r in lines if r["kind"] == "bandwidth"]
    assert max(r["ai"] for r in bw_rows) == pytest.approx(ridge)  # the slope meets the flat roof at the ridge
    labels = {r["label"] for r in lines}
    assert "FP32 20 TFLOP/s (ncu-report)" in labels
    assert f"{level.upper()} {({'dram': '1', 'l2': '4', 'l1': '16'})[level]} TB/s (ncu-report)" in labels
    # the x range covers the points and the ridge point
    ai = [r["ai"] for r in lines]
    assert min(ai) <= 0.25 / 10 and max(ai) >= 150 * 10


def test_level_all_gives_three_points_per_kernel_with_three_shapes():
    chart = roofline_chart(kernel_roofline(), run_ceilings(), level="all")
    pts = layer_data(chart, "points")
    assert len(pts) == 6
    for kernel, ai in (("gemm_kernel", (30.0, 75.0, 150.0)), ("stream_triad", (0.125, 0.25, 0.25))):
        mine = {p["level"]: p["ai"] for p in pts if p["kernel"] == kernel}
        assert mine == pytest.approx({"L1": ai[0], "L2": ai[1], "DRAM": ai[2]})
    shape = layer(chart, "points")["encoding"]["shape"]
    assert shape["field"] == "level"
    assert shape["scale"]["domain"] == ["L1", "L2", "DRAM"] and len(set(shape["scale"]["range"])) == 3
    assert {r["ceiling"] for r in layer_data(chart, "ceilings")} == {"L1", "L2", "DRAM", "FP32"}
    assert len(layer_data(chart, "links")) == 6


def test_precision_selects_rows_and_compute_ceiling():
    kernels = KERNELS + [("void hmma_kernel()", "hmma_kernel", "tensor", 1e12, (1e9, 1e9, 1e9), 1e7)]
    # no peak_ceiling on the points: the fastest dense FP16 Tensor-Core roof (render.roofs.tensor_family)
    ceil = run_ceilings({"TENSOR": ("compute", 1e14), "TENSOR FP16→FP32": ("compute", 1.2e14)})
    chart = roofline_chart(kernel_roofline(kernels), ceil, precision="tensor")
    assert [p["kernel"] for p in layer_data(chart, "points")] == ["hmma_kernel"]
    assert {r["ceiling"] for r in layer_data(chart, "ceilings")} == {"DRAM", "TENSOR FP16→FP32"}
    # precision 'all': the dominant precisions are fp32 (two kernels) and tensor
    chart = roofline_chart(kernel_roofline(kernels), ceil, precision="all")
    assert len(layer_data(chart, "points")) == 3
    assert {r["ceiling"] for r in layer_data(chart, "ceilings")} == {"DRAM", "FP32", "TENSOR FP16→FP32"}
    comp = {r["ceiling"]: r for r in layer_data(chart, "ceilings") if r["kind"] == "compute"}
    dram = [r for r in layer_data(chart, "ceilings") if r["ceiling"] == "DRAM"]
    assert max(r["flops_per_s"] for r in dram) == pytest.approx(1.2e14)  # clipped at the largest compute roof
    assert comp["FP32"]["flops_per_s"] == PEAK["fp32"]


def test_zero_flop_kernel_listed_with_share_of_time():
    z = zero_flop_table(kernel_roofline())
    assert z.columns[:6] == ["run_id", "kernel_id", "name", "short_name", "duration_ns", "share_of_time"]
    assert z.height == 1
    row = z.row(0, named=True)
    assert row["short_name"] == "copy_kernel" and row["reason"] == "zero FLOPs"
    assert row["share_of_time"] == pytest.approx(1e7 / (1e8 + 5e6 + 1e7))
    assert row["total_share_of_time"] == pytest.approx(row["share_of_time"])


def test_zero_flop_table_nan_duration_left_out_of_total():
    kernels = KERNELS + [("void cast_kernel()", "cast_kernel", "fp32", 0.0, (1e6, 1e6, 1e6), float("nan"))]
    z = zero_flop_table(kernel_roofline(kernels))
    assert z.get_column("short_name").to_list() == ["copy_kernel", "cast_kernel"]  # unknown duration last
    assert z.get_column("share_of_time").to_list()[0] == pytest.approx(1e7 / 1.15e8)
    assert z.get_column("share_of_time").to_list()[1] is None


def test_flagged_and_above_roof_points_are_kept_and_outlined():
    pts = kernel_roofline().with_columns(
        pl.when(pl.col("short_name") == "stream_triad")
        .then(pl.lit(["nan_metrics"]))
        .otherwise(pl.col("flags"))
        .alias("flags"),
        (pl.col("short_name") == "gemm_kernel").alias("above_roof"),
    )
    chart = roofline_chart(pts, run_ceilings())
    data = {p["kernel"]: p for p in layer_data(chart, "points")}
    assert data["gemm_kernel"]["flagged"] and data["stream_triad"]["flagged"]
    assert data["stream_triad"]["flags"] == "nan_metrics"
    stroke = layer(chart, "points")["encoding"]["stroke"]
    assert stroke["condition"]["test"] == "datum.flagged" and stroke["condition"]["value"] != stroke["value"]


def test_accepts_arrow_tables():
    chart = roofline_chart(kernel_roofline().to_arrow(), run_ceilings().to_arrow())
    assert len(layer_data(chart, "points")) == 2
    assert zero_flop_table(kernel_roofline().to_arrow()).height == 1


def test_no_drawable_point_raises_roofline_data_error():
    no_flops = kernel_roofline().with_columns(pl.lit(0.0).alias("flops"), pl.lit(True).alias("zero_flops"))
    with pytest.raises(RooflineDataError, match="FLOPs"):
        roofline_chart(no_flops, run_ceilings())
    no_bytes = kernel_roofline().with_columns(pl.lit(None, dtype=pl.Float64).alias("ai_l2"))
    with pytest.raises(RooflineDataError, match="L2 bytes"):
        roofline_chart(no_bytes, run_ceilings(), level="l2")
    nan_time = kernel_roofline().with_columns(
        pl.lit(float("nan")).alias("duration_ns"), pl.lit(float("nan")).alias("achieved_flops_per_s")
    )
    with pytest.raises(RooflineDataError, match="duration"):
        roofline_chart(nan_time, run_ceilings())
    with pytest.raises(RooflineDataError, match="fp64"):
        roofline_chart(kernel_roofline(), run_ceilings(), precision="fp64")


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="level"):
        roofline_chart(kernel_roofline(), run_ceilings(), level="l3")
    with pytest.raises(ValueError, match="precision"):
        roofline_chart(kernel_roofline(), run_ceilings(), precision="int8")


def test_save_html_offline_with_zero_flop_table(tmp_path: Path):
    pts = kernel_roofline()
    out = tmp_path / "roofline.html"
    save_chart(roofline_chart(pts, run_ceilings()), out, below=zero_flop_table(pts))
    text = out.read_text(encoding="utf-8")
    assert "stream_triad" in text
    assert "Kernels without FLOPs (no place on a log-AI axis)" in text and "copy_kernel" in text
    assert "<script src=" not in text.replace(" ", "") and "cdn.jsdelivr" not in text
    assert [p.name for p in tmp_path.iterdir()] == ["roofline.html"]  # no temporary file left behind


def test_save_svg_and_png(tmp_path: Path):
    pts = kernel_roofline()
    chart = roofline_chart(pts, run_ceilings(), level="all")
    save_chart(chart, tmp_path / "r.svg", below=zero_flop_table(pts))
    svg = (tmp_path / "r.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "copy_kernel" in svg
    save_chart(chart, tmp_path / "sub" / "r.png")
    assert (tmp_path / "sub" / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_save_unknown_suffix_raises(tmp_path: Path):
    chart = roofline_chart(kernel_roofline(), run_ceilings())
    with pytest.raises(UsageError, match=r"r\.pdf.*\.html, \.png, \.svg"):
        save_chart(chart, tmp_path / "r.pdf")
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not FIXTURE.is_file(), reason=f"fixture report missing: {FIXTURE}")
def test_real_report_a10g_gemms(tmp_path: Path):
    from rooflake import queries
    from rooflake.pipeline import ingest_file
    from rooflake.store import Store

    res = ingest_file(FIXTURE, tmp_path / "store")
    con = queries.connect(Store(tmp_path / "store"))
    params = {"r": res.run_id}
    points = con.sql("SELECT * FROM kernel_roofline WHERE run_id = $r", params=params).to_arrow_table()
    ceilings = con.sql("SELECT * FROM run_ceilings WHERE run_id = $r", params=params).to_arrow_table()
    pl_points = pl.from_arrow(points)
    assert isinstance(pl_points, pl.DataFrame)
    with_flops = pl_points.filter(pl.col("is_dominant") & (pl.col("flops") > 0))
    assert with_flops.height == 4  # the four GEMM variants

    chart = roofline_chart(points, ceilings, level="dram")
    pts = layer_data(chart, "points")
    assert len(pts) == with_flops.height
    assert sorted(p["ai"] for p in pts) == pytest.approx(sorted(with_flops.get_column("ai_dram").to_list()))
    lines = layer_data(chart, "ceilings")
    ceil = pl.from_arrow(ceilings)
    assert isinstance(ceil, pl.DataFrame)
    expected = {
        r["ceiling"]: r["value"] for r in ceil.iter_rows(named=True) if r["ceiling"] in ("DRAM", "FP32")
    }
    assert set(expected) == {"DRAM", "FP32"}
    assert {r["ceiling"]: r["value"] for r in lines} == expected
    for p in pts:  # every point lies under its roof
        assert p["achieved_flops_per_s"] <= min(expected["FP32"], expected["DRAM"] * p["ai"]) * 1.01


def _shape_map(spec: dict[str, Any]) -> dict[str, str]:
    """level/bound -> marker of every shape scale in ``spec`` (any nesting)."""
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            shape = node.get("encoding", {}).get("shape")
            if isinstance(shape, dict) and "scale" in shape:
                found.update(zip(shape["scale"]["domain"], shape["scale"]["range"], strict=True))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return found


def test_one_marker_per_memory_level_on_every_chart():
    """L1 triangle-up, L2 square, DRAM circle on the roofline, the time-based roofline (bound markers) and the
    trajectories alike (the time chart drew L2 with the roofline's L1 marker before issue 9)."""
    expected = {"L1": "triangle-up", "L2": "square", "DRAM": "circle"}
    assert expected == LEVEL_SHAPE
    roofline = roofline_chart(kernel_roofline(), run_ceilings(), level="all")
    time_rows = pl.DataFrame(
        [
            {"run_id": "synthetic0000000", "grain": "kernel", "kernel_id": i, "name": f"k{i}", "duration_ns": 2e6,
             "flops": 1e9, "bytes_dram": 1e8, "t_min_ns": 1e6, "launch_overhead_ns": 3000.0, "bound": bound,
             "inefficiency": 2.0}
            for i, bound in enumerate(["L1", "L2", "DRAM", "FP32", "TENSOR FP16→FP32", "launch_overhead"])
        ]
    )  # fmt: skip
    time = time_roofline_chart(time_rows, run_ceilings())
    traj_rows = pl.DataFrame(
        [
            {"series": "", "entity": "k", "level": lv, "run_id": f"r{step}", "value": str(step), "step": step,
             "ai": 1.0 * step, "flops_per_s": 1e12 * step}
            for lv in ("l1", "l2", "dram")
            for step in (1, 2)
        ]
    )  # fmt: skip
    trajectory = trajectory_chart(traj_rows, None, level="all")
    for chart in (roofline, time, trajectory):
        shapes = _shape_map(spec_dict(chart))
        assert {lv: shapes[lv] for lv in expected} == expected
    bounds = _shape_map(spec_dict(time))
    assert bounds["FP32"] == bounds["TENSOR FP16→FP32"] == "cross"  # every compute bound, named by the data
    assert bounds["launch_overhead"] == "diamond"
    assert len({bounds[b] for b in ("L1", "L2", "DRAM", "FP32", "launch_overhead")}) == 5


def test_tensor_roof_named_by_the_data():
    """The compute roof drawn is the points' peak_ceiling, labelled with the ceiling's own label (issue 10's
    TENSOR FP16→FP32), whatever the ceiling's name; without those columns the precision's usual roof."""
    tensor = [("void flash_fwd(half*)", "flash_fwd", "tensor", 3.4e10, (4e9, 2e9, 1e9), 1.39e6)]
    points = kernel_roofline(tensor).with_columns(
        pl.when(pl.col("precision") == "tensor")
        .then(pl.lit("TENSOR_FP16_DST_FP32_SPARSITY_OFF"))
        .alias("peak_ceiling")
    )
    ceilings = run_ceilings({"TENSOR_FP16_DST_FP32_SPARSITY_OFF": ("compute", 4.008e13)}).with_columns(
        pl.when(pl.col("ceiling").str.starts_with("TENSOR")).then(pl.lit("TENSOR FP16→FP32")).alias("label")
    )
    chart = roofline_chart(points, ceilings, level="dram", precision="tensor")
    labels = {r["label"] for r in layer_data(chart, "ceilings")}
    assert "TENSOR FP16→FP32 40.1 TFLOP/s (ncu-report)" in labels
    assert {r["text"] for r in layer_data(chart, "ceiling_labels_compute")} == {
        "TENSOR FP16→FP32 40.1 TFLOP/s"
    }
    subtitle = " ".join(chart.to_dict()["title"]["subtitle"])
    assert "No valid ceiling" not in subtitle
    # the same rows without peak_ceiling: the usual TENSOR FP16 / TENSOR roof is wanted, and missing here
    plain = roofline_chart(points.drop("peak_ceiling"), ceilings, level="dram", precision="tensor")
    assert "No valid ceiling in this run for: TENSOR FP16/TENSOR" in " ".join(
        plain.to_dict()["title"]["subtitle"]
    )


def test_roof_named_by_points_but_not_by_the_ceilings():
    """A peak_ceiling that no ceiling row names (nor labels) is drawn at the points' own peak_flops_per_s."""
    tensor = [("void mma_kernel(half*)", "mma_kernel", "tensor", 3.4e10, (4e9, 2e9, 1e9), 1.39e6)]
    points = kernel_roofline(tensor).with_columns(
        pl.when(pl.col("precision") == "tensor").then(pl.lit("TENSOR FP16→FP32")).alias("peak_ceiling"),
        pl.when(pl.col("precision") == "tensor")
        .then(4.0e13)
        .otherwise(pl.col("peak_flops_per_s"))
        .alias("peak_flops_per_s"),
    )
    chart = roofline_chart(points, run_ceilings(), level="dram", precision="tensor")
    assert {r["text"] for r in layer_data(chart, "ceiling_labels_compute")} == {"TENSOR FP16→FP32 40 TFLOP/s"}
    assert "No valid ceiling" not in " ".join(chart.to_dict()["title"]["subtitle"])


def test_no_kernel_at_all_names_no_unknown_run():
    """A run without kernel rows (an nsys run in ``rl report``) says so, without a made-up run id ("run ?": the
    report's note sits under the run's own heading)."""
    empty = kernel_roofline().head(0)
    with pytest.raises(
        RooflineDataError, match=r"^no kernel can be drawn .*of 0 kernel\(s\), none has roofline rows"
    ):
        roofline_chart(empty, run_ceilings())
    with pytest.raises(RooflineDataError, match=r"^run \S+: no kernel can be drawn"):
        roofline_chart(kernel_roofline().with_columns(pl.lit(0.0).alias("flops")), run_ceilings())
