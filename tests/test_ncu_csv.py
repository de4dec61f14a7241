"""ncu CSV exports: every real file of ../shared/fixtures/csv read to exact values; NVIDIA's own raw exports of the
fixture reports (../shared/fixtures/golden) give the same derived values as the reports themselves, to the CSV's
printed precision; a CSV that is not an ncu export says why."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.ingest import detect_format, ncu_csv
from rooflake.schema import UnsupportedFormatError
from rooflake.store import Store

from _support import FIXTURES, GOLDEN, NCU

CSV = FIXTURES / "csv"
DETAILS = (
    CSV
    / "CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3__ncu.details.csv"
)
BERT = (
    CSV
    / "leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention__actual_parameter_analysis__data__5-9__bert_torch_nsight.csv"
)
NERSC = CSV / "wangzy0327__cuda-roofline__src__output_A100.csv"
GENE_DRAM = (
    CSV / "wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram__nvroof_dgdxy__ncuroof-time-1.csv"
)
GENE_FLOPS = (
    CSV / "wdmapp__gene-paper-artifacts-pop2020__roofline__time-flops__nvroof_dgdxy__ncuroof-time-1.csv"
)
QUANTITIES = (
    "duration_ns",
    "flops_fp64",
    "flops_fp32",
    "flops_fp16",
    "flops_tensor",
    "bytes_l1",
    "bytes_l2",
    "bytes_dram",
)


def _read(path: Path) -> dict:
    return ncu_csv.read(path, run_id="r")


def _metric(out: dict, kernel_id: int, name: str) -> dict:
    return next(
        m for m in out["metrics"].to_pylist() if (m["kernel_id"], m["metric_name"]) == (kernel_id, name)
    )


def test_every_csv_fixture_is_an_ncu_export() -> None:
    files = sorted(CSV.glob("*.csv"))
    assert len(files) == 5
    for f in files:
        assert detect_format(f) == "ncu-csv"
    for f in sorted(GOLDEN.glob("*.raw.csv")):
        assert detect_format(f) == "ncu-csv"


def test_details_page_labels_metric_names_units_and_rules() -> None:
    out = _read(DETAILS)
    k = out["kernels"].to_pylist()
    assert len(k) == 1 and out["run"]["compute_capability"] == "12.0"
    assert (k[0]["duration_ns"], k[0]["bytes_dram"]) == (6750.0, 2.33e6)  # 6.75 us; 2.33 Mbyte + 0 byte
    assert k[0]["flops_tensor"] == 0.0  # src_bf16_dst_fp32 = 0; src_bf16_dst_bf16 is n/a on this GPU
    assert (k[0]["grid_x"], k[0]["block_x"], k[0]["block_y"], k[0]["block_size"]) == (224, 32, 4, 128)
    assert (k[0]["short_name"], k[0]["stream_id"], k[0]["device_id"]) == ("kernel", 7, 0)
    dram = _metric(out, 0, "dram__bytes_read.sum")
    assert (dram["unit"], dram["kind"], dram["value_double"]) == ("byte", "double", 2.33e6)
    sm = _metric(out, 0, "GPU Speed Of Light Throughput: SM Frequency")  # a label, kept with its section
    assert (sm["unit"], sm["value_double"]) == ("cycle/second", 1.99e9)
    bw = _metric(out, 0, "Memory Workload Analysis: Memory Throughput")
    assert (bw["unit"], bw["value_double"]) == ("byte/second", 345.14e9)
    assert _metric(out, 0, "GPU Speed Of Light Throughput: Memory Throughput")["unit"] == "%"
    na = _metric(out, 0, "flop_count_sp.sum")
    assert (na["kind"], na["value_double"], na["value_string"]) == ("unknown", None, None)
    rule = _metric(out, 0, "rule:SOLBottleneck")
    assert rule["unit"] == "OPT" and rule["value_string"].startswith("This kernel grid is too small")


def test_old_columns_ragged_rows_and_thousands_separators() -> None:
    out = _read(BERT)
    k = out["kernels"].to_pylist()
    assert len(k) == 26 and out["run"]["n_metrics"] == 1611
    assert (
        _metric(out, 0, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")["value_uint64"] == 6400
    )  # "6,400"
    clock = _metric(out, 0, "sm__cycles_elapsed.avg.per_second")["value_double"]
    assert clock == 967585940.83  # "967,585,940.83"
    assert (k[0]["flops_fp32"], k[0]["flops_fp16"], k[0]["bytes_dram"]) == (655360.0, 262144.0, 128.0)
    assert (k[0]["block_size"], k[0]["grid_size"], k[0]["registers_per_thread"]) == (256, 256, 47)
    assert (
        k[0]["compute_capability"] is None and k[0]["flops_tensor"] is None
    )  # no CC: x512 cannot be trusted
    rules = [
        m for m in out["metrics"].to_pylist() if m["kernel_id"] == 0 and m["metric_name"].startswith("rule:")
    ]
    assert [r["metric_name"] for r in rules] == ["rule:Occupancy"]  # the 15-field rows


def test_nersc_metric_list_after_tool_output() -> None:
    out = _read(NERSC)
    assert "10 lines of tool output before the header skipped" in out["run"]["note"]
    k = out["kernels"].to_pylist()
    assert len(k) == 11 and k[0]["compute_capability"] == "8.0"
    assert (k[0]["bytes_dram"], k[0]["bytes_l2"], k[0]["bytes_l1"]) == (
        823404288.0,
        1937900416.0,
        838860800.0,
    )
    # NERSC time: sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second
    assert k[0]["duration_ns"] == pytest.approx(1708634.20 / 765001631.38 * 1e9, rel=1e-12)
    assert dict(k[0]["provenance"])["flops_tensor"].startswith("NULL: only sm__inst_executed_pipe_tensor.sum")


def test_gene_split_run_halves() -> None:
    dram, flops = _read(GENE_DRAM)["kernels"].to_pylist(), _read(GENE_FLOPS)["kernels"].to_pylist()
    assert len(dram) == len(flops) == 8
    assert [k["short_name"] for k in dram] == [k["short_name"] for k in flops]
    assert (dram[0]["bytes_dram"], dram[0]["flops_fp64"]) == (690960320.0, None)
    # dadd 0 + dmul 55,050,240 + 2 x dfma 137,625,600
    assert (flops[0]["flops_fp64"], flops[0]["bytes_dram"]) == (330301440.0, None)
    assert "duration_from_instrumented_cycles" in flops[0]["flags"]


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.raw.csv")), ids=lambda p: p.name[:40])
def test_golden_raw_csv_derives_what_the_report_does(fixture_store: Path, golden: Path) -> None:
    """The raw page of NVIDIA's own export gives the report's derived values: exact for counters, to the printed
    two decimals for values derived from rates (count = rate x clock x duration)."""
    report = NCU / golden.name.replace(".raw.csv", ".ncu-rep")
    con = queries.connect(Store(fixture_store))
    run = con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]
    cols = ", ".join(QUANTITIES)
    rep = con.execute(
        f"SELECT {cols}, name, nvtx_path, provenance FROM kernels WHERE run_id = ? ORDER BY kernel_id", [run]
    ).fetchall()
    csv = _read(golden)["kernels"].to_pylist()
    assert len(rep) == len(csv)
    compared = 0
    for r, c in zip(rep, csv, strict=True):
        assert (r[len(QUANTITIES)], r[len(QUANTITIES) + 1]) == (c["name"], c["nvtx_path"])
        how = dict(r[-1])
        for i, q in enumerate(QUANTITIES):
            if r[i] is None or c[q] is None:
                assert r[i] is None and c[q] is None, (q, r[i], c[q])
                continue
            assert dict(c["provenance"])[q] == how[q]  # the same formula
            rel = 1e-3 if ".per_" in how[q] else 1e-9
            assert math.isclose(r[i], c[q], rel_tol=rel, abs_tol=1e-6), (q, r[i], c[q], how[q])
            compared += 1
    assert compared >= len(rep)
    rep_ceil = con.execute(
        "SELECT kernel_id, ceiling, value FROM ceilings WHERE run_id = ? ORDER BY 1, 2", [run]
    )
    csv_ceil = sorted(
        (x["kernel_id"], x["ceiling"], x["value"]) for x in _read(golden)["ceilings"].to_pylist()
    )
    for a, b in zip(rep_ceil.fetchall(), csv_ceil, strict=True):
        assert a[:2] == b[:2] and math.isclose(a[2], b[2], rel_tol=1e-9)


def test_a_csv_that_is_not_an_ncu_export_says_why(tmp_path: Path) -> None:
    f = tmp_path / "results.csv"
    f.write_text("batch,time_ms,gflops\n1,2.5,100\n")
    with pytest.raises(UnsupportedFormatError, match="not an Nsight Compute export"):
        detect_format(f)
    r = CliRunner().invoke(app, ["ingest", str(f), "--store", str(tmp_path / "store")])
    assert r.exit_code == 1
    assert r.stderr.count("Error:") == 1 and "ncu --import" in r.stderr


def test_rl_ingest_a_csv_export(tmp_path: Path) -> None:
    store = tmp_path / "store"
    r = CliRunner().invoke(app, ["ingest", str(GENE_FLOPS), "--store", str(store)])
    assert r.exit_code == 0, r.output
    con = queries.connect(Store(store))
    assert con.execute("SELECT source_format, n_kernels FROM runs").fetchall() == [("ncu-csv", 8)]
    assert con.execute("SELECT sum(flops_fp64) FROM kernels").fetchone()[0] > 0


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        ("1,024", "byte", ("byte", "uint64", 1024.0, None, 1024)),
        # a negative integer was kind uint64 with no uint64 value: a double now, as exact as the text
        ("-1", "nsecond", ("nsecond", "double", -1.0, None, None)),
        ("-3", "usecond", ("nsecond", "double", -3000.0, None, None)),
        ("2.5", "Kbyte", ("byte", "double", 2500.0, None, None)),
        ("n/a", "byte", ("byte", "unknown", None, None, None)),
        ("fast", "", ("", "string", None, "fast", None)),
    ],
)
def test_parse_value(text: str, unit: str, expected: tuple) -> None:
    assert ncu_csv.parse_value(text, unit) == expected
