"""`rl trajectory --ceilings SOURCE`: every run of the sweep is drawn against the roofs of the source asked for, as
`rl roofline --ceilings` draws one run (same values, same errors), on a real before/after pair: the hand-written
FlashAttention forward on an RTX 4060 Ti (Bias92/flashattn-cuda, `--set full`, Tensor Cores) and its optimised twin.
The datasheet gives that GPU's DRAM (288 GB/s) and FP32 but no Tensor-Core peak: the tensor points' peak and
attainable are NULL there, never another precision's roof."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.schema import UsageError
from rooflake.store import Store
from rooflake.views.trajectory import trajectory

from _support import fixture

BEFORE = fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before")
AFTER = fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__db_full_after")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trajectory_ceilings")
    for path, variant in ((BEFORE, "1"), (AFTER, "2")):
        assert all(
            r.status == "ingested" for r in ingest_paths([path], root, {"variant": variant}, workers=1)
        )
    return root


def _dram(t: object) -> list[dict]:
    return [r for r in t.rows.to_pylist() if r["level"] == "dram"]  # type: ignore[attr-defined]


def test_datasheet_roofs_for_every_run(store: Path) -> None:
    t = trajectory(Store(store), "variant", grain="kernel", ceilings="datasheet")
    points = _dram(t)
    assert len(points) == 2 and {p["precision"] for p in points} == {"tensor"}
    for p in points:
        assert p["bw"] == 288e9 and p["peak_flops_per_s"] is None and p["attainable_flops_per_s"] is None
    assert set(t.ceilings.column("source").to_pylist()) == {"datasheet"}
    assert sorted(set(t.ceilings.column("run_id").to_pylist())) == sorted({p["run_id"] for p in points})


def test_default_keeps_each_reports_own_peaks(store: Path) -> None:
    t = trajectory(Store(store), "variant", grain="kernel")
    for p in _dram(t):
        own = {r["ceiling"]: r["value"] for r in t.ceilings.to_pylist() if r["run_id"] == p["run_id"]}
        assert p["bw"] == own["DRAM"] and p["peak_flops_per_s"] == own["TENSOR FP16→FP32"]
        assert p["attainable_flops_per_s"] == min(own["TENSOR FP16→FP32"], p["ai"] * own["DRAM"])
    assert set(t.ceilings.column("source").to_pylist()) == {"ncu-report"}
    assert trajectory(Store(store), "variant", grain="kernel", ceilings="report").rows == t.rows


def test_cli_names_the_roofs_and_refuses_as_roofline_does(store: Path, tmp_path: Path) -> None:
    args = [
        "trajectory",
        "--vary",
        "variant",
        "--by",
        "kernel",
        "-o",
        str(tmp_path / "t.html"),
        "--store",
        str(store),
    ]
    out = CliRunner().invoke(app, [*args, "--ceilings", "datasheet"])
    assert out.exit_code == 0, out.output
    assert "roofs: datasheet (" in out.output
    assert CliRunner().invoke(app, [*args, "--ceilings", "nope"]).exit_code == 2
    assert CliRunner().invoke(app, [*args, "--ceilings", "all"]).exit_code == 2
    ert = CliRunner().invoke(app, [*args, "--ceilings", "ert"])
    assert ert.exit_code == 1 and ert.output.startswith("Error: ") and "ert" in ert.output
    with pytest.raises(UsageError, match="ceilings 'all'"):
        trajectory(Store(store), "variant", grain="kernel", ceilings="all")


def test_the_chart_draws_the_points_own_tensor_roof(store: Path) -> None:
    """The chart drew the first tensor roof the ceilings held (TENSOR FP16→FP16, 80.3 TFLOP/s) over points judged
    against TENSOR FP16→FP32 (40.2 TFLOP/s): 61.5 % and 86.7 % of their roof looked like 31 % and 44 %. The rows
    name their roof (peak_ceiling), and the chart draws that one."""
    import json

    from rooflake.render import spec_dict, trajectory_chart

    t = trajectory(Store(store), "variant", grain="kernel")
    assert {p["peak_ceiling"] for p in _dram(t)} == {"TENSOR FP16→FP32"}
    spec = spec_dict(trajectory_chart(t.rows, t.ceilings, level="dram"))
    text = json.dumps(spec, ensure_ascii=False)
    assert "TENSOR FP16→FP32" in text and "TENSOR FP16→FP16" not in text
    # one RTX 4060 Ti profiled at 2308 and 2303 MHz (one machine key per clock): it said "on 2 machines"
    assert "median over 2 runs on one GPU at 2 clocks" in text and "machines" not in text


def test_a_run_of_the_sweep_without_counters_is_named(tmp_path: Path) -> None:
    """A run of the sweep whose report has no roofline counters was left out without a word ("2 runs" of 3)."""
    runs = [("AveryClapp__ESMM-Research__profile_output", "1"), ("AveryClapp__ESMM-Research__profile.", "2")]
    ids = {}
    for name, batch in runs:
        (r,) = ingest_paths([fixture(name)], tmp_path, {"model": "esmm", "batch": batch}, workers=1)
        assert r.status == "ingested"
        ids[batch] = r.run_id
    t = trajectory(Store(tmp_path), "batch", grain="kernel")
    assert t.undrawn == [ids["2"]] and t.runs == 1
    out = CliRunner().invoke(
        app,
        [
            "trajectory",
            "--vary",
            "batch",
            "--by",
            "kernel",
            "-o",
            str(tmp_path / "t.html"),
            "--store",
            str(tmp_path),
        ],
    )
    assert out.exit_code == 0 and f"no point in 1 run ({ids['2']}: no roofline counters)" in out.stdout, (
        out.output
    )
