"""`rl whatif` rows name what they are modelled against: ceilings_source and ceilings_machine on every row, and per
kernel the ceiling behind each bound (bound_ceiling, bound_scaled_ceiling), for every --ceilings source the command
accepts, on real reports: the H100 PCIe silu kernels (AlpriElse/cs599k) against their report's peaks, the datasheet,
the kingspeak P100 ERT results and a measured-ceilings document both labelled for the H100, and the FlashAttention
kernel of an RTX 4060 Ti report (a tensor roof). Before, no column said which roofs a prediction used."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.store import Store
from rooflake.views.time_roofline import time_roofline
from rooflake.views.whatif import parse_scales, whatif

from _support import FIXTURES, fixture

H100 = fixture("AlpriElse__cs599k")  # NVIDIA H100 PCIe, ncu 2025.1
FA3 = fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before")  # RTX 4060 Ti, tensor
ERT_P100 = (
    FIXTURES
    / "ert"
    / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
)
GPU = {"gpu": "NVIDIA H100 PCIe"}
T_O = 1000.0
#: --ceilings -> (ceilings_source, ceilings_machine) of the H100 run's rows
EXPECTED = {
    "default": ("ncu-report", "NVIDIA H100 PCIe|9.0|1095MHz"),  # its own peaks, at the clock ncu locked
    "report": ("ncu-report", "NVIDIA H100 PCIe|9.0|1095MHz"),
    "datasheet": ("datasheet", "H100 PCIe"),
    "ert": ("ert", "H100 PCIe"),
    "measured": ("measured", "H100 PCIe"),
}
NEW = ["bound_ceiling", "bound_scaled_ceiling", "ceilings_source", "ceilings_machine"]
LATER = ["unknown_terms", "untimed"]  # appended after them


def _measured_doc(path: Path) -> Path:
    """A measured-ceilings document (as `rl ceilings measure --device cuda` writes it) for the H100's machine."""
    entries = [
        ("DRAM", "bandwidth", 1.5e12, "byte/s", "torch copy of 1 GiB"),
        ("FP32", "compute", 40e12, "FLOP/s", "best of 3 torch.mm fp32"),
    ]
    doc = {
        "rooflake_measured_ceilings": 1,
        "measured_at": "2026-01-02T03:04:05+00:00",
        "host": "h100-host",
        "device": "cuda",
        "ceilings": [
            {"ceiling": c, "kind": k, "value": v, "unit": u, "machine_key": "NVIDIA H100 PCIe", "method": m}
            for c, k, v, u, m in entries
        ],
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("whatif_source") / "store"
    doc = _measured_doc(root.parent / "measured.json")
    assert all(r.status == "ingested" for r in ingest_paths([H100, FA3], root, workers=1))
    res = list(ingest_paths([ERT_P100, doc], root, GPU, workers=1))
    assert all(r.status == "ingested" for r in res), res
    return root


def _run(store: Path, report: Path) -> str:
    con = queries.connect(Store(store))
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]


@pytest.mark.parametrize("source", list(EXPECTED))
def test_every_row_names_the_roofs_it_is_modelled_against(store: Path, source: str) -> None:
    run = _run(store, H100)
    w = whatif(Store(store), run, parse_scales(["dram=2"]), launch_overhead_ns=T_O, ceilings=source)
    rows = w.rows.to_pylist()
    assert w.rows.column_names[16:20] == NEW and w.rows.column_names[20:] == LATER and len(rows) > 0
    assert {(r["ceilings_source"], r["ceilings_machine"]) for r in rows} == {EXPECTED[source]}
    # the columns name the rows the view says it used (run_roofs: the roofs scaled)
    used = w.ceilings.to_pylist()
    assert {(r["source"], r["machine_key"]) for r in used if not r["overlay"]} == {EXPECTED[source]}
    # per kernel: the ceiling behind each bound is a row of those roofs, and T_min is the term it gives
    roofs = {r["ceiling"]: r["value"] for r in used}
    terms = time_roofline(Store(store), run, launch_overhead_ns=T_O, ceilings=source).rows.to_pylist()
    by_kernel = {t["kernel_id"]: t for t in terms if t["grain"] == "kernel"}
    modelled = [r for r in rows if r["grain"] == "kernel" and r["modelled"]]
    # the P100 ERT measured FP64 only: the silu kernels' FP32 term is unknown, never the FP64 roof's 0 FLOPs
    assert len(modelled) == (0 if source == "ert" else 3)
    for r in rows:
        assert ("compute" in r["unknown_terms"]) == (source == "ert"), r
    for r in modelled:
        t = by_kernel[r["kernel_id"]]
        assert r["bound_ceiling"] in roofs and r["bound_scaled_ceiling"] in roofs, (r, sorted(roofs))
        level = r["bound_ceiling"].lower()
        if source in ("default", "report"):  # each launch's own peaks (its clock), not the medians
            assert t[f"bw_{level}"] == pytest.approx(roofs[r["bound_ceiling"]], rel=0.02)
        else:
            assert r["t_min_ns"] == pytest.approx(
                t[f"bytes_{level}"] / roofs[r["bound_ceiling"]] * 1e9, rel=1e-12
            )
    for r in rows:
        if r["grain"] != "kernel":
            assert r["bound_ceiling"] is None and r["bound_scaled_ceiling"] is None


def test_the_sources_give_other_numbers(store: Path) -> None:
    """The same run modelled against each source: other roofs, other T_min, and the rows say which."""
    run = _run(store, H100)
    t_min = {}
    for source in ("report", "datasheet", "ert", "measured"):
        w = whatif(Store(store), run, parse_scales([]), launch_overhead_ns=T_O, ceilings=source)
        t_min[w.total["ceilings_source"]] = w.total["t_min_ns"]
    assert len(set(t_min.values())) == 4, t_min


def test_a_tensor_bound_names_the_kernels_tensor_roof(store: Path) -> None:
    run = _run(store, FA3)
    w = whatif(Store(store), run, parse_scales(["dram=100", "l2=100", "l1=100"]), launch_overhead_ns=T_O)
    (k,) = w.kernels.to_pylist()
    peak = queries.execute(
        Store(store), "SELECT peak_ceiling FROM kernel_roofline WHERE run_id = $run_id AND precision = 'tensor'",
        {"run_id": run},
    ).to_pylist()[0]["peak_ceiling"]  # fmt: skip
    assert (k["bound"], k["bound_scaled"]) == ("TENSOR", "TENSOR")
    assert k["bound_ceiling"] == k["bound_scaled_ceiling"] == peak == "TENSOR FP16→FP32"
    assert (k["ceilings_source"], k["ceilings_machine"]) == (
        "ncu-report",
        "NVIDIA GeForce RTX 4060 Ti|8.9|2308MHz",
    )
    sheet = whatif(Store(store), run, parse_scales(["dram=2"]), launch_overhead_ns=T_O, ceilings="datasheet")
    (k,) = sheet.kernels.to_pylist()
    # the datasheet gives no tensor roof for it: its compute term is unknown (it took FP32's: bound_scaled FP32, a
    # prediction modelled without the pipe that does 98% of its FLOPs)
    assert not k["modelled"] and "compute" in k["unknown_terms"] and k["bound_scaled_ceiling"] is None
    assert k["predicted_ns"] == k["duration_ns"]
    assert (k["ceilings_source"], k["ceilings_machine"]) == ("datasheet", "RTX 4060 Ti")


@pytest.mark.parametrize("source", list(EXPECTED))
def test_rl_whatif_json_and_csv_carry_the_columns(store: Path, source: str) -> None:
    run = _run(store, H100)
    args = [
        "whatif",
        run,
        "-s",
        "dram=2",
        "--by",
        "kernel",
        "--launch-overhead",
        "1000",
        "--store",
        str(store),
    ]
    args += [] if source == "default" else ["--ceilings", source]
    out = CliRunner().invoke(app, [*args, "-f", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert len(rows) == 3 and {(r["ceilings_source"], r["ceilings_machine"]) for r in rows} == {
        EXPECTED[source]
    }
    table = list(csv.reader(io.StringIO(CliRunner().invoke(app, [*args, "-f", "csv"]).stdout)))
    # appended: the columns before keep their places (README's `cut -d, -f5,7,10,12,13,14`)
    assert table[0][:16] == [
        "run_id", "grain", "kernel_id", "layer", "name", "n_kernels", "duration_ns", "t_min_ns", "inefficiency",
        "bound", "t_min_scaled_ns", "bound_scaled", "predicted_ns", "speedup", "share_of_predicted", "modelled",
    ]  # fmt: skip
    assert table[0][16:] == NEW + LATER and {tuple(r[18:20]) for r in table[1:]} == {EXPECTED[source]}


def test_plain_sql_names_the_reports_own_peaks(store: Path) -> None:
    """From `rl sql`/DuckDB the macro reads the store's kernel_roofs, the report's own peaks."""
    run = _run(store, H100)
    rows = queries.execute(
        Store(store),
        "SELECT DISTINCT ceilings_source, ceilings_machine FROM whatif($run_id, 1000)",
        {"run_id": run},
    ).to_pylist()
    assert rows == [{"ceilings_source": "ncu-report", "ceilings_machine": None}]
