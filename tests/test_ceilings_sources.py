"""`rl ceilings`: every ceiling of a machine side by side by source, on the real reports.

Report peaks hold at the clock ncu profiled at (ncu locks the GPU to its base clock by default), datasheet peaks at
the boost clock: on the A100 and H100 fixtures, report / datasheet is what the clocks predict."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.schema import RUNS, BadArgument, RooflineDataError, UsageError
from rooflake.store import Store
from rooflake.views.ceilings import machine_ceilings

from _support import FIXTURES, fixture

A100_80 = fixture("panjd123__cutlass__report-s4")  # NVIDIA A100 80GB PCIe, ncu 2024.1
H100 = fixture("AlpriElse__cs599k")  # NVIDIA H100 PCIe, ncu 2025.1
ADA = fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before")  # RTX 4060 Ti
ERT_P100 = (
    FIXTURES
    / "ert"
    / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
)


def _run_id(store: Path, report: Path) -> str:
    con = queries.connect(Store(store))
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]


def _side(result) -> dict[str, dict]:
    return {r["ceiling"]: r for r in result.side_by_side.to_pylist()}


@pytest.mark.parametrize(
    ("report", "gpu", "boost_hz", "base_hz"),
    [(A100_80, "A100 PCIe 80GB", 1.41e9, 1.0623e9), (H100, "H100 PCIe", 1.755e9, 1.1000e9)],
    ids=["A100-80GB-PCIe", "H100-PCIe"],
)
def test_report_over_datasheet_is_what_the_clocks_predict(
    fixture_store: Path, report: Path, gpu: str, boost_hz: float, base_hz: float
) -> None:
    result = machine_ceilings(Store(fixture_store), _run_id(fixture_store, report))
    assert result.machine["datasheet_gpu"] == gpu
    side = _side(result)
    for name in ("FP32", "FP64"):
        row = side[name]
        assert row["datasheet_clock_hz"] == boost_hz
        assert row["report_clock_hz"] == pytest.approx(base_hz, rel=1e-3)  # the clock ncu profiled at
        assert row["clock_ratio"] == pytest.approx(row["report_clock_hz"] / boost_hz)
        # report / datasheet = report clock / boost clock, to the datasheet's rounding (H100 PCIe FP64: 26 printed
        # for 114 SMs x 64 FLOP/clk x 1.755 GHz = 25.6)
        assert row["report_over_datasheet"] == pytest.approx(row["clock_ratio"], rel=0.02)
        assert row["report_per_clock_over_datasheet"] == pytest.approx(1.0, abs=0.02)
    # DRAM: HBM runs at its own clock whatever ncu locks: the report's peak is the datasheet's (printed 1,935 GB/s
    # and 2 TB/s)
    assert side["DRAM"]["report_over_datasheet"] == pytest.approx(1.0, abs=0.025)
    assert side["DRAM"]["clock_ratio"] is None


def test_tensor_roofs_pair_by_source_type(fixture_store: Path) -> None:
    side = _side(machine_ceilings(Store(fixture_store), _run_id(fixture_store, H100)))
    fp16 = side["TENSOR FP16"]
    # the report's fastest dense FP16 path (hgmma) against the datasheet's dense FP16 (1,513* / 2)
    assert (fp16["report_ceiling"], fp16["datasheet"]) == ("TENSOR FP16 HGMMA", 756.5e12)
    assert fp16["report"] == pytest.approx(114 * 4096 * fp16["report_clock_hz"], rel=1e-6)
    assert not any(name.endswith("SPARSE") for name in side)


def test_derived_geforce_datasheet_matches_the_report_per_clock(fixture_store: Path) -> None:
    side = _side(machine_ceilings(Store(fixture_store), _run_id(fixture_store, ADA)))
    assert side["FP32"]["report_per_clock_over_datasheet"] == pytest.approx(1.0, abs=1e-3)


def test_long_rows_name_source_clock_and_runs(fixture_store: Path) -> None:
    run = _run_id(fixture_store, A100_80)
    result = machine_ceilings(Store(fixture_store), run)
    rows = {(r["source"], r["ceiling"]): r for r in result.rows.to_pylist()}
    fp32 = rows[("ncu-report", "FP32")]
    assert (fp32["run_ids"], fp32["n_rows"]) == ([run], 2)  # two launches, one median
    assert fp32["formula"].startswith("2 * sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
    sheet = rows[("datasheet", "DRAM")]
    assert (sheet["value"], sheet["run_ids"], sheet["source_name"]) == (1935e9, [], "1,935GB/s")
    assert result.select("default").column("source").unique().to_pylist() == ["ncu-report"]
    assert (
        result.select("datasheet").num_rows
        == result.select("all").num_rows - result.select("report").num_rows
    )


def test_gpu_option_gathers_report_runs_of_that_gpu(fixture_store: Path) -> None:
    result = machine_ceilings(Store(fixture_store), gpu="H100 PCIe")
    rows = {(r["source"], r["ceiling"]): r for r in result.rows.to_pylist()}
    assert rows[("ncu-report", "FP32")]["run_ids"] == [_run_id(fixture_store, H100)]
    assert result.machine["run_id"] is None
    with pytest.raises(UsageError, match="A100 PCIe 40GB, A100 PCIe 80GB, A100 SXM4 40GB, A100 SXM4 80GB"):
        machine_ceilings(Store(fixture_store), gpu="A100")
    with pytest.raises(BadArgument, match="not both"):  # a usage error: `rl ceilings RUN --gpu X` exits 2
        machine_ceilings(Store(fixture_store), "abc", gpu="A100")


def test_ert_results_join_the_machine_they_are_labelled_for(tmp_path: Path) -> None:
    store = tmp_path / "store"
    list(ingest_paths([H100], store))
    list(ingest_paths([ERT_P100], store, {"gpu": "NVIDIA H100 PCIe"}))  # a label names the machine ERT ran on
    result = machine_ceilings(Store(store), _run_id(store, H100))
    side = _side(result)
    assert side["FP64"]["ert"] == 4258.4e9
    assert side["FP64"]["ert_over_report"] == pytest.approx(4258.4e9 / side["FP64"]["report"])
    assert side["DRAM"]["ert_over_datasheet"] == pytest.approx(508.35e9 / 2000e9)
    ert = {r["ceiling"]: r for r in result.select("ert").to_pylist()}
    assert ert["FP64"]["source_name"] == "FP64 GFLOPs" and ert["FP64"]["measured_at"] is not None
    with pytest.raises(RooflineDataError):  # the ERT host's name is not a machine name: nothing matches it
        machine_ceilings(Store(store), gpu="kp361.kingspeak.peaks")


def test_a_machine_known_only_from_ert(tmp_path: Path) -> None:
    list(ingest_paths([ERT_P100], tmp_path, {"machine": "kingspeak-p100"}))
    result = machine_ceilings(Store(tmp_path), gpu="kingspeak-p100")
    assert result.machine["datasheet_gpu"] is None  # the P100 is not in the catalog
    assert {r["source"] for r in result.rows.to_pylist()} == {"ert"}
    assert _side(result)["L2"]["ert"] == 1301.09e9
    assert result.select("default").num_rows == 0  # report, measured, datasheet: none; ERT only when asked


def _bare_run(store: Path, run_id: str, gpu_name: str, cc: str | None) -> None:
    row = {
        "run_id": run_id,
        "source_path": f"/tiny/{run_id}",
        "source_format": "nsys-sqlite",
        "gpu_name": gpu_name,
        "compute_capability": cc,
        "n_kernels": 0,
        "ingested_at": datetime(2026, 1, 1, tzinfo=timezone.utc),
        "labels": [],
        "schema_version": "1",
    }
    Store(store).publish(run_id, {"runs": pa.table({f.name: [row.get(f.name)] for f in RUNS}, schema=RUNS)})


def test_a_run_without_report_peaks_defaults_to_the_datasheet(tmp_path: Path) -> None:
    _bare_run(tmp_path, "00000000000000aa", "NVIDIA A100-SXM4-80GB", "8.0")
    result = machine_ceilings(Store(tmp_path), "00000000000000aa")
    default = {r["ceiling"]: r["value"] for r in result.select("default").to_pylist()}
    assert default["DRAM"] == 2039e9 and default["FP32"] == 19.5e12
    assert result.select("report").num_rows == 0


def test_no_ceiling_anywhere_says_how_to_add_one(tmp_path: Path) -> None:
    _bare_run(tmp_path, "00000000000000bb", "NVIDIA GeForce GTX 1650", "7.5")
    with pytest.raises(RooflineDataError, match="--label machine=NAME"):
        machine_ceilings(Store(tmp_path), "00000000000000bb")


def test_rl_ceilings_command(fixture_store: Path) -> None:
    run = _run_id(fixture_store, A100_80)
    r = CliRunner().invoke(app, ["ceilings", run[:6], "--store", str(fixture_store)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == f"run {run}  NVIDIA A100 80GB PCIe (CC 8.0)  datasheet: A100 PCIe 80GB"
    r = CliRunner().invoke(
        app, ["ceilings", "--gpu", "H100 PCIe", "--store", str(fixture_store), "-f", "csv"]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith(
        "ceiling,kind,unit,report_ceiling,report"
    )  # minimal CSV quoting
    r = CliRunner().invoke(app, ["ceilings", "--gpu", "A100", "--store", str(fixture_store)])
    assert r.exit_code != 0 and "names 4 GPUs of the datasheet catalog" in r.stderr
