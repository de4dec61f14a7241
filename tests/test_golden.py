"""Every metric value in the store equals NVIDIA's own CSV export (``ncu --csv --page raw --print-units base``),
for every fixture report Nsight Compute 2022.3 opens (the comparison: ``_support.assert_store_equals_ncu_csv``)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from rooflake import queries
from rooflake.store import Store

from _support import GOLDEN, NCU, assert_store_equals_ncu_csv

GOLDEN_FILES = sorted(GOLDEN.glob("*.raw.csv"))


def test_there_are_golden_files() -> None:
    assert len(GOLDEN_FILES) >= 8


@pytest.mark.parametrize("golden", GOLDEN_FILES, ids=lambda p: p.name[:45])
def test_store_equals_ncu_csv(fixture_store: Path, golden: Path) -> None:
    report = NCU / golden.name.replace(".raw.csv", ".ncu-rep")
    with open(golden, newline="") as f:
        rows = list(csv.reader(f))
    con = queries.connect(Store(fixture_store))
    run = con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]
    assert_store_equals_ncu_csv(con, run, rows)
