"""`rl ingest A B --merge`: the two halves of the GENE NERSC-method profile (time + DRAM bytes in one ncu run, the
SASS FLOP counters in another) joined per kernel launch into one run, as CSV exports and as reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.ingest.merge import match_launches
from rooflake.schema import BadArgument
from rooflake.store import Store

from _support import FIXTURES, fixture

GENE = "wdmapp__gene-paper-artifacts-pop2020__roofline__time-{}__nvroof_dgdxy__ncuroof-time-1"
DRAM_CSV = FIXTURES / "csv" / f"{GENE.format('dram')}.csv"
FLOPS_CSV = FIXTURES / "csv" / f"{GENE.format('flops')}.csv"


def _ingest(store: Path, *files: Path) -> str:
    r = CliRunner().invoke(app, ["ingest", *map(str, files), "--merge", "--store", str(store)])
    assert r.exit_code == 0, r.output
    return r.stdout


def _kernels(store: Path) -> list[dict]:
    con = queries.connect(Store(store))
    cols = "short_name, duration_ns, flops_fp64, bytes_dram, flags, nvtx_path, provenance"
    rows = con.execute(f"SELECT {cols} FROM kernels ORDER BY kernel_id").fetchall()
    return [dict(zip(cols.split(", "), r, strict=True)) for r in rows]


def test_gene_csv_halves_become_one_run(tmp_path: Path) -> None:
    out = _ingest(tmp_path, FLOPS_CSV, DRAM_CSV)  # any order: the uninstrumented half gives the time
    assert "8 launches matched by launch order" in out and "taken from the uninstrumented half" in out
    k = _kernels(tmp_path)
    assert len(k) == 8
    first = k[0]
    assert first["short_name"] == "ij_deriv_kernel"
    # time from the time-dram half: 1,209,252.43 cycles / 1,309,394,950.84 cycles/s (the FLOP half's 184,880,856.57
    # cycles ran instrumented)
    assert first["duration_ns"] == pytest.approx(1209252.43 / 1309394950.84 * 1e9, rel=1e-12)
    assert (first["flops_fp64"], first["bytes_dram"]) == (330301440.0, 690960320.0)
    assert "duration_from_instrumented_cycles" not in first["flags"]
    con = queries.connect(Store(tmp_path))
    (fmt, path, n) = con.execute("SELECT source_format, source_path, n_kernels FROM runs").fetchone()
    assert (fmt, n) == ("ncu-csv", 8) and " + " in path
    again = _ingest(tmp_path, DRAM_CSV, FLOPS_CSV)
    assert again.startswith("exists")


def test_gene_report_halves_keep_their_nvtx_path(tmp_path: Path) -> None:
    _ingest(tmp_path, fixture(GENE.format("dram")), fixture(GENE.format("flops")))
    k = _kernels(tmp_path)
    assert len(k) == 8 and k[0]["flops_fp64"] == 330301440.0 and k[0]["bytes_dram"] == 690960320.0
    assert k[0]["nvtx_path"].endswith("eRK_stage_1/CalFRhs0/dgdxy")
    assert (
        dict(k[0]["provenance"])["duration_ns"]
        == "sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second * 1e9"
    )


def test_launches_match_by_name_and_occurrence_when_orders_differ() -> None:
    a = [{"name": n} for n in ("k1", "k2", "k1")]
    b = [{"name": n} for n in ("k2", "k1", "k1", "k3")]
    pairs, how = match_launches(a, b)
    assert pairs == [(0, 1), (1, 0), (2, 2)] and how == "kernel name and occurrence"


def test_merge_takes_two_ncu_files(tmp_path: Path) -> None:
    ert = (
        FIXTURES
        / "ert"
        / "ebugger__Empirical-Roofline-Toolkit__Empirical_Roofline_Tool-1.1.0__Results__roofline.titan.ccs.ornl.gov.02.json"
    )
    # one file is a bad argument (exit 2); a file of another format, bad input (exit 1)
    for files, msg, code in (([DRAM_CSV], "got 1 files", 2), ([DRAM_CSV, ert], "not ert-json files", 1)):
        r = CliRunner().invoke(app, ["ingest", *map(str, files), "--merge", "--store", str(tmp_path)])
        assert r.exit_code == code and r.stderr.startswith("Error: ") and msg in r.stderr, r.output
    with pytest.raises(BadArgument):
        from rooflake.pipeline.merge import ingest_merged

        ingest_merged([DRAM_CSV, FLOPS_CSV, DRAM_CSV], tmp_path)
