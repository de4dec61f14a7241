"""``--ceilings report|datasheet|ert|measured|all`` on the roofline views, on the real fixtures.

The H100 PCIe report (ncu 2025.1, three FP32 SiLU kernels) has report peaks at the clock ncu profiled at and a
datasheet entry (H100 PCIe: DRAM 2,000 GB/s, FP32 51 TFLOP/s at the 1,755 MHz boost clock); the ERT results of the
kingspeak P100 are labelled for it (``--label gpu=...``) to give the machine a third source; the llama3 nsys export
(RTX 4060 Ti, no report peaks) gets the datasheet's roofs (288 GB/s, 22.06 TFLOP/s). Each test checks the roofs
drawn and the points' numbers against the chosen source's values."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.render import roofline_chart, time_roofline_chart
from rooflake.render.roofs import PRECISION_CEILINGS, tensor_family
from rooflake.schema import RooflineDataError, UsageError
from rooflake.store import Store
from rooflake.views.ceilings import MACHINE_CEILINGS, machine_ceilings, run_roofs, source_ceilings
from rooflake.views.roofline import roofline
from rooflake.views.time_roofline import time_roofline

from _support import FIXTURES, fixture, tiny_run

H100 = fixture("AlpriElse__cs599k")  # NVIDIA H100 PCIe
A10G = fixture("AveryClapp__ESMM-Research__profile_output")  # NVIDIA A10G
NSYS = FIXTURES / "nsys" / "Sh1mwww__llama3-inference__demo.sqlite"  # NVIDIA GeForce RTX 4060 Ti
ERT_P100 = (
    FIXTURES
    / "ert"
    / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
)
RUN_CEILINGS = [
    "run_id",
    "machine_key",
    "ceiling",
    "kind",
    "value",
    "value_min",
    "value_max",
    "clock_hz",
    "unit",
    "formula",
    "source",
    "n_kernels",
    "n_invalid",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ceilings_choice")
    assert all(r.status == "ingested" for r in ingest_paths([H100, A10G, NSYS], root, workers=1))
    assert all(r.status == "ingested" for r in ingest_paths([ERT_P100], root, {"gpu": "NVIDIA H100 PCIe"}))
    return root


def _run(store: Path, path: Path) -> str:
    con = queries.connect(Store(store))
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(path.resolve())]).fetchone()[0]


def _by_ceiling(rows: Any) -> dict[str, float]:
    return {r["ceiling"]: r["value"] for r in rows.to_pylist()}


def _roof_lines(chart: Any) -> list[dict[str, Any]]:
    spec = chart.to_dict()
    return spec["datasets"]["rl_ceilings"]


def _dash_of(chart: Any) -> dict[str, list[int]]:
    """Legend label -> stroke dash of every roof drawn."""
    layer = next(lay for lay in chart.to_dict()["layer"] if lay.get("name") == "ceilings")
    scale = layer["encoding"]["strokeDash"]["scale"]
    return dict(zip(scale["domain"], scale["range"], strict=True))


# ------------------------------------------------------------------------------------------------ library


def test_rows_of_each_source_have_run_ceilings_columns(store: Path) -> None:
    run = _run(store, H100)
    report = source_ceilings(Store(store), run, "report")
    assert report.column_names == [*RUN_CEILINGS, "source_label", "overlay"]
    plain = queries.run(Store(store), "run_ceilings", filters={"run_id": run})
    assert _by_ceiling(report) == _by_ceiling(plain)  # the report's own: exactly run_ceilings
    sheet = source_ceilings(Store(store), run, "datasheet")
    assert set(sheet.column("source").to_pylist()) == {"datasheet"}
    assert {k: _by_ceiling(sheet)[k] for k in ("DRAM", "FP32", "FP64", "TENSOR FP16")} == {
        "DRAM": 2000e9,
        "FP32": 51e12,
        "FP64": 26e12,
        "TENSOR FP16": 756.5e12,
    }
    assert {r["ceiling"]: r["source_label"] for r in sheet.to_pylist()}["FP32"] == (
        "datasheet, boost clock 1.75 GHz"
    )
    ert = source_ceilings(Store(store), run, "ert")
    assert _by_ceiling(ert) == {"DRAM": 508.35e9, "L1": 1723.76e9, "L2": 1301.09e9, "FP64": 4258.4e9}
    assert source_ceilings(Store(store), run).equals(report)  # default: the report's own


def test_declared_machine_ceilings_schema_is_the_query_output(store: Path) -> None:
    """The empty rows given in place of the machine's other sources when the report's own peaks are read (the
    default on an ncu run: no other run's files are listed) have the step's real columns and types."""
    real = machine_ceilings(Store(store), _run(store, H100)).rows
    assert real.num_rows > 0
    assert real.schema.names == MACHINE_CEILINGS.names
    assert [str(t) for t in real.schema.types] == [str(t) for t in MACHINE_CEILINGS.types]


def test_all_marks_every_source_but_the_default_as_overlay(store: Path) -> None:
    roofs = run_roofs(Store(store), _run(store, H100), "all")
    assert roofs.source == "ncu-report" and roofs.tables is None  # points keep each launch's own peaks
    by_source = {(r["source"], r["overlay"]) for r in roofs.rows.to_pylist()}
    assert by_source == {("ncu-report", False), ("ert", True), ("datasheet", True)}


def test_points_follow_the_chosen_roofs(store: Path) -> None:
    run = _run(store, H100)
    v = roofline(Store(store), run, "dram", ceilings="datasheet")
    pts = [p for p in v.points.to_pylist() if p["precision"] == "fp32"]
    assert len(pts) == 3
    for p in pts:
        assert (p["bw_dram"], p["peak_flops_per_s"], p["peak_ceiling"]) == (2000e9, 51e12, "FP32")
        assert p["ridge_dram"] == 51e12 / 2000e9
        assert p["attainable_dram"] == pytest.approx(min(51e12, p["ai_dram"] * 2000e9), rel=1e-12)
        assert p["fraction_of_roof"] == pytest.approx(p["achieved_flops_per_s"] / p["attainable_flops_per_s"])
        assert p["bw_l1"] is None and "L1" in p["levels_without_roof"]  # the datasheet has no L1 roof
    own = roofline(Store(store), run, "dram")  # default: the report's peaks, at ncu's clock
    report_fp32 = {p["peak_flops_per_s"] for p in own.points.to_pylist() if p["precision"] == "fp32"}
    assert all(math.isclose(v, 32.1e12, rel_tol=0.01) for v in report_fp32)
    assert set(own.ceilings.column("source").to_pylist()) == {"ncu-report"}


def test_layer_grain_follows_the_chosen_roofs(store: Path) -> None:
    v = roofline(Store(store), _run(store, H100), "dram", grain="layer", ceilings="datasheet")
    fp32 = [p for p in v.points.to_pylist() if p["precision"] == "fp32"]
    assert fp32 and all((p["bw_dram"], p["peak_flops_per_s"]) == (2000e9, 51e12) for p in fp32)


def test_time_roofline_follows_the_chosen_roofs(store: Path) -> None:
    v = time_roofline(Store(store), _run(store, H100), launch_overhead_ns=1000.0, ceilings="datasheet")
    for k in v.points.to_pylist():
        assert (k["bw_dram"], k["peak_flops_per_s"]) == (2000e9, 51e12)
        assert k["dram_time_ns"] == pytest.approx(k["bytes_dram"] / 2000e9 * 1e9, rel=1e-12)
        assert k["compute_time_ns"] == pytest.approx(k["flops"] / 51e12 * 1e9, rel=1e-12)
    assert set(v.ceilings.column("source").to_pylist()) == {"datasheet"}
    chart = time_roofline_chart(v.points, v.ceilings, level="dram")
    labels = {r["label"] for r in chart.to_dict()["datasets"]["rl_tc_flops_lines"]}
    assert "T = F/P, FP32 51 TFLOP/s (datasheet, boost clock 1.75 GHz)" in labels


def test_an_nsys_run_gets_datasheet_roofs(store: Path) -> None:
    run = _run(store, NSYS)
    roofs = run_roofs(Store(store), run)  # default: no report peaks, no measured: the datasheet
    assert roofs.source == "datasheet" and roofs.machine["datasheet_gpu"] == "RTX 4060 Ti"
    assert _by_ceiling(roofs.rows) == {"DRAM": 288e9, "FP32": 22.06464e12}
    con = queries.connect(Store(store))
    params = {"run_id": run, "launch_overhead_ns": 1000.0}
    with_roofs = queries.fetch(con, "time_roofline", params, tables=roofs.tables, filters={"grain": "kernel"})
    assert with_roofs.num_rows == 64 and set(with_roofs.column("bw_dram").to_pylist()) == {288e9}
    without = queries.fetch(con, "time_roofline", params, filters={"grain": "kernel"})
    assert set(without.column("bw_dram").to_pylist()) == {None}  # the report's roofs: none for nsys
    with pytest.raises(
        RooflineDataError, match="has no report ceilings .* sources with ceilings for it: datasheet"
    ):
        run_roofs(Store(store), run, "report")


def test_tensor_roof_pairs_by_source_type(tmp_path: Path) -> None:
    """A kernel whose tensor roof is ncu's TENSOR FP16→FP32 is drawn against a source's dense TENSOR FP16."""
    run = "c" * 16
    prov = [("tensor_roof", "TENSOR FP16→FP32")]
    tiny_run(tmp_path, run, [{"kernel_id": 0, "flops_tensor": 1e9, "provenance": prov}], [])
    chosen = pa.table({"ceiling": ["TENSOR FP16", "TENSOR TF32", "DRAM"], "kind": ["compute"] * 2 + ["bandwidth"],
                       "value": [312e12, 156e12, 2e12]})  # fmt: skip
    con = queries.connect(Store(tmp_path))
    kr = queries.fetch(con, "chosen_kernel_roofs", {"run_id": run}, tables={"chosen_ceilings": chosen})
    assert kr.to_pylist()[0] | {"run_id": run} == {
        "run_id": run, "kernel_id": 0, "bw_l1": None, "bw_l2": None, "bw_dram": 2e12, "peak_fp64": None,
        "peak_fp32": None, "peak_fp16": None, "peak_tensor": 312e12, "tensor_roof": "TENSOR FP16",
    }  # fmt: skip
    rr = queries.fetch(con, "chosen_run_roofs", {"run_id": run}, tables={"chosen_ceilings": chosen})
    assert (rr["peak_tensor"][0].as_py(), rr["tensor_roof"][0].as_py()) == (312e12, "TENSOR FP16")


def test_errors_name_the_run_machine_and_sources(store: Path) -> None:
    run = _run(store, A10G)
    with pytest.raises(RooflineDataError) as e:
        run_roofs(Store(store), run, "ert")
    msg = str(e.value)
    assert msg.startswith(f"run {run} has no ert ceilings for its machine (NVIDIA A10G, datasheet: A10G)")
    assert "sources with ceilings for it: report, datasheet" in msg and "--label machine=NAME" in msg
    with pytest.raises(RooflineDataError, match="has no measured ceilings"):
        roofline(Store(store), run, "dram", ceilings="measured")
    with pytest.raises(UsageError, match="unknown ceiling source 'boost'"):
        run_roofs(Store(store), run, "boost")


# ------------------------------------------------------------------------------------------------ charts


def test_chart_draws_the_chosen_source_and_names_it(store: Path) -> None:
    v = roofline(Store(store), _run(store, H100), "dram", ceilings="datasheet")
    chart = roofline_chart(v.points, v.ceilings, level="dram")
    lines = _roof_lines(chart)
    assert {r["ceiling"]: r["value"] for r in lines} == {"DRAM": 2000e9, "FP32": 51e12}
    assert {r["label"] for r in lines} == {
        "DRAM 2 TB/s (datasheet)",
        "FP32 51 TFLOP/s (datasheet, boost clock 1.75 GHz)",
    }
    assert "Roofs: datasheet" in chart.to_dict()["title"]["subtitle"]


def test_all_overlays_every_source_dashed(store: Path) -> None:
    v = roofline(Store(store), _run(store, H100), "all", ceilings="all")
    chart = roofline_chart(v.points, v.ceilings, level="all")
    dash = _dash_of(chart)
    solid = {k for k, d in dash.items() if d == [1, 0]}
    dashed = {k for k, d in dash.items() if d != [1, 0]}
    assert solid and all("(ncu-report, " in k for k in solid)
    assert {k.split(" (")[0].split(" ")[0] for k in dashed if "(ert)" in k} == {"L1", "L2", "DRAM"}
    assert (
        "DRAM 2 TB/s (datasheet)" in dashed and "FP32 51 TFLOP/s (datasheet, boost clock 1.75 GHz)" in dashed
    )
    values = {(r["label"], r["value"]) for r in _roof_lines(chart)}
    assert ("DRAM 508 GB/s (ert)", 508.35e9) in values
    # an ERT bandwidth roof has no FP32 roof of its own: it ends at the report's FP32 roof
    ert_dram = [r for r in _roof_lines(chart) if r["label"] == "DRAM 508 GB/s (ert)"]
    report_fp32 = next(r["value"] for r in _roof_lines(chart) if r["label"].startswith("FP32 32.1 TFLOP/s"))
    assert max(r["flops_per_s"] for r in ert_dram) == pytest.approx(report_fp32)
    assert "Roofs: ncu-report; dashed: ert, datasheet" in chart.to_dict()["title"]["subtitle"]


def test_precision_fallback_has_no_stale_names() -> None:
    assert PRECISION_CEILINGS["tensor"] == ("TENSOR FP16", "TENSOR")
    assert [tensor_family(n) for n in ("TENSOR FP16→FP32", "TENSOR FP16 HGMMA", "TENSOR FP16", "TENSOR FP16 SPARSE")] == [
        "TENSOR FP16", "TENSOR FP16", "TENSOR FP16", None,
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_ceilings_option(store: Path, tmp_path: Path) -> None:
    run = _run(store, H100)
    out = tmp_path / "ds.html"
    r = CliRunner().invoke(
        app, ["roofline", run[:6], "--ceilings", "datasheet", "-o", str(out), "--store", str(store)]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.rstrip().endswith("0 kernels without FLOPs, roofs: datasheet (H100 PCIe))")
    assert "datasheet, boost clock 1.75 GHz" in out.read_text(encoding="utf-8")
    r = CliRunner().invoke(
        app, ["roofline", run[:6], "--time", "--ceilings", "all", "-o", str(tmp_path / "t.html"), "--store", str(store)]
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    a10g = _run(store, A10G)
    r = CliRunner().invoke(
        app, ["roofline", a10g, "--ceilings", "ert", "-o", str(out), "--store", str(store)]
    )
    assert r.exit_code == 1
    assert r.stderr.count("Error:") == 1
    assert f"Error: run {a10g} has no ert ceilings for its machine (NVIDIA A10G, datasheet: A10G)" in r.stderr
    r = CliRunner().invoke(
        app, ["roofline", a10g, "--ceilings", "boost", "-o", str(out), "--store", str(store)]
    )
    assert r.exit_code == 2 and "'boost' is not one of" in r.stderr
    nsys = _run(store, NSYS)
    r = CliRunner().invoke(
        app, ["roofline", nsys, "--time", "--ceilings", "report", "-o", str(out), "--store", str(store)]
    )
    assert r.exit_code == 1 and "sources with ceilings for it: datasheet" in r.stderr
