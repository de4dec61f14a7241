"""ERT roofline.json: every real file in ../shared/fixtures/ert read to exact values, detected by content, stored by
`rl ingest --label machine=...` as ceilings with source 'ert'; free-text levels, spec entries and bad files in
small synthetic JSON built here."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.ingest import detect_format, ert_json
from rooflake.schema import InputError, UnsupportedFormatError
from rooflake.store import Store

from _support import FIXTURES

ERT = FIXTURES / "ert"
CASCADELAKE = ERT / "HPCL__roofline_python__examples__input_files__roofline_cascadelake_DP.json"
P100 = ERT / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
TITAN = (
    ERT
    / "ebugger__Empirical-Roofline-Toolkit__Empirical_Roofline_Tool-1.1.0__Results__roofline.titan.ccs.ornl.gov.02.json"
)


def _ceilings(path: Path) -> dict[str, dict]:
    out = ert_json.read(path, run_id="r")
    return {r["ceiling"]: r for r in out["ceilings"].to_pylist()}


def test_every_ert_fixture_is_detected_by_content(tmp_path: Path) -> None:
    files = sorted(ERT.glob("*"))
    assert len(files) == 3
    for f in files:
        assert detect_format(f) == "ert-json"
    renamed = tmp_path / "results.txt"  # the suffix plays no part
    shutil.copy(TITAN, renamed)
    assert detect_format(renamed) == "ert-json"


def test_cpu_file_four_levels_and_four_flop_ceilings() -> None:
    c = _ceilings(CASCADELAKE)
    assert {k: v["value"] for k, v in c.items()} == {
        "L1": 13932.9e9,
        "L2": 3608.6e9,
        "L3": 1361.2e9,  # no rooflake level: keeps its own name
        "DRAM": 203.2e9,
        "FP64": 3499.9e9,  # the highest FP64 entry is the roof
        "FP64_VECTOR": 1749.95e9,
        "FP64_SCALAR_FMA": 218.75e9,
        "FP64_SCALAR": 109.375e9,
    }
    assert c["FP64"]["source_name"] == "FP64 Vector GFLOPs FMA"
    assert c["FP64_SCALAR"]["source_name"] == "FP64 Scalar GFLOPs"
    assert {v["kind"] for k, v in c.items() if k.startswith("FP64")} == {"compute"}
    assert c["L3"]["kind"] == "bandwidth" and c["L3"]["unit"] == "byte/s"
    assert c["DRAM"]["measured_at"] == datetime.fromtimestamp(1619015024.88, tz=timezone.utc)
    assert json.loads(c["FP64"]["details"])["OPENMP_THREADS"] == 2
    assert {v["source"] for v in c.values()} == {"ert"}
    run = ert_json.read(CASCADELAKE, run_id="r")["run"]
    assert (run["producer"], run["host"], run["n_kernels"]) == ("ERT 1.1.0", "cn624", 0)
    assert run["command_line"].endswith("--cpu_bind=cores ./ERT_CODE")


def test_gpu_file_with_text_metadata_lines() -> None:
    c = _ceilings(P100)
    assert {k: v["value"] for k, v in c.items()} == {
        "L1": 1723.76e9,
        "L2": 1301.09e9,
        "DRAM": 508.35e9,
        "FP64": 4258400000000.0,  # exact: 4258.4 GFLOP/s is not 4258399999999.9995 FLOP/s
    }
    meta = json.loads(c["FP64"]["details"])
    assert (meta["FLOPS"], meta["GPU_BLOCKS"], meta["GPU_THREADS"]) == (1024, 2560, 64)
    assert c["FP64"]["machine_key"] == "kp361.kingspeak.peaks"
    assert c["FP64"]["measured_at"] == datetime.fromtimestamp(1617137563.6617634, tz=timezone.utc)


def test_ert_1_1_0_single_gflops_entry_is_fp64() -> None:
    c = _ceilings(TITAN)
    assert {k: v["value"] for k, v in c.items()} == {"L1": 559.14e9, "DRAM": 160.66e9, "FP64": 1225.48e9}
    assert c["FP64"]["source_name"] == "GFLOPs"
    assert c["L1"]["machine_key"] == c["FP64"]["machine_key"] == "titan-login8.ccs.ornl.gov"


def test_free_text_levels_spec_entries_and_precisions(tmp_path: Path) -> None:
    doc = {
        "empirical": {
            "gbytes": {
                "data": [["MCDRAM", 450.5], ["DRAM", 90.0], ["HBM", 1.0], ["L1 ", 10.0], ["L1", 12.0]]
            },
            "gflops": {"data": [["FP32 GFLOPs", 20.0], ["SP GFLOPs no FMA", 10.0]]},
            "metadata": {"ERT_VERSION": "1.1.0", "CONFIG": {"ERT_PRECISION": ["FP32"]}},
        },
        "spec": {"gbytes": {"data": [["HBM", 900.0]]}, "gflops": {"data": [["GFLOPs", 15700.0]]}},
    }
    f = tmp_path / "roofline.json"
    f.write_text(json.dumps(doc))
    rows = ert_json.read(f, run_id="r")["ceilings"].to_pylist()
    got = {(r["source"], r["ceiling"], r["source_name"]): r["value"] for r in rows}
    assert got == {
        ("ert", "MCDRAM", "MCDRAM"): 450.5e9,
        ("ert", "DRAM", "DRAM"): 90e9,
        ("ert", "HBM", "HBM"): 1e9,  # DRAM is taken by the entry before it: keeps its own name
        ("ert", "L1", "L1 "): 10e9,
        ("ert", "L1_", "L1"): 12e9,  # L1 listed twice: two L1 ceilings in one run before
        ("ert", "FP32", "FP32 GFLOPs"): 20e9,
        ("ert", "FP32_NO_FMA", "SP GFLOPs no FMA"): 10e9,
        ("ert-spec", "DRAM", "HBM"): 900e9,
        ("ert-spec", "FP32", "GFLOPs"): 15700e9,  # no precision in the label: the config's ERT_PRECISION
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"empirical": {"gflops": {"data": [["FP64 GFLOPs", "fast"]]}}}, "not a [name, number] pair"),
        # impossible ceilings: stored as -1e12 FLOP/s, 0 and inf byte/s before
        (
            {"empirical": {"gflops": {"data": [["FP64 GFLOPs", -1000]]}}},
            "-1000 is not a positive, finite rate",
        ),
        ({"empirical": {"gbytes": {"data": [["DRAM", 0]]}}}, "0 is not a positive, finite rate"),
        ({"empirical": {"gbytes": {"data": [["DRAM", 1e308]]}}}, "1e+308 is not a positive, finite rate"),
        (
            {"empirical": {"gflops": {"data": []}, "gbytes": {"data": []}}},
            "holds no gflops or gbytes entries",
        ),
        ({"empirical": []}, "no 'empirical' object"),
    ],
)
def test_bad_ert_files_say_why(tmp_path: Path, doc: dict, message: str) -> None:
    f = tmp_path / "roofline.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=re.escape(message)):
        ert_json.read(f, run_id="r")


def test_json_that_is_not_ert_is_not_read_as_ert(tmp_path: Path) -> None:
    f = tmp_path / "other.json"
    f.write_text(json.dumps({"gflops": 1}))
    with pytest.raises(UnsupportedFormatError, match="empirical"):
        detect_format(f)


def test_rl_ingest_stores_ert_ceilings_with_the_machine_label(tmp_path: Path) -> None:
    store = tmp_path / "store"
    r = CliRunner().invoke(
        app, ["ingest", str(P100), "--store", str(store), "--label", "machine=kingspeak-p100"]
    )
    assert r.exit_code == 0, r.output
    assert "4 ERT ceilings: L1, L2, DRAM, FP64" in r.stdout
    con = queries.connect(Store(store))
    run = con.execute("SELECT run_id, source_format, producer, host, labels['machine'] FROM runs").fetchall()
    assert run[0][1:] == ("ert-json", "ERT 1.1.0", "kp361.kingspeak.peaks", "kingspeak-p100")
    rows = con.execute(
        "SELECT ceiling, value, source, source_name, kernel_id FROM ceilings ORDER BY kind, ceiling"
    ).fetchall()
    assert rows == [
        ("DRAM", 508.35e9, "ert", "DRAM", None),
        ("L1", 1723.76e9, "ert", "L1", None),
        ("L2", 1301.09e9, "ert", "L2", None),
        ("FP64", 4258.4e9, "ert", "FP64 GFLOPs", None),
    ]
