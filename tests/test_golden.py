"""Every metric value in the store equals NVIDIA's own CSV export (``ncu --csv --page raw --print-units base``).

The CSV prints integers exactly and rounds other numbers to two decimals: compare to the printed precision.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from rooflake import queries
from rooflake.store import Store

from _support import GOLDEN, NCU

GOLDEN_FILES = sorted(GOLDEN.glob("*.raw.csv"))
# columns of the CSV that describe the launch rather than name a metric
NON_METRIC = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
    "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
}
INT_RE = re.compile(r"-?\d+")
DEC_RE = re.compile(r"-?\d+\.\d+")


def test_there_are_golden_files() -> None:
    assert len(GOLDEN_FILES) >= 8


@pytest.mark.parametrize("golden", GOLDEN_FILES, ids=lambda p: p.name[:45])
def test_store_equals_ncu_csv(fixture_store: Path, golden: Path) -> None:
    report = NCU / golden.name.replace(".raw.csv", ".ncu-rep")
    with open(golden, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[2:]
    con = queries.connect(Store(fixture_store))
    run = con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]
    stored: dict[tuple[int, str], tuple] = {
        (k, n): (d, s, u, inst)
        for k, n, d, s, u, inst in con.execute(
            "SELECT kernel_id, metric_name, value_double, value_string, value_uint64, "
            "coalesce(len(instance_values), len(instance_strings), 0) FROM metrics WHERE run_id = ?",
            [run],
        ).fetchall()
    }
    n_kernels = con.execute("SELECT count(*) FROM kernels WHERE run_id = ?", [run]).fetchone()[0]
    assert n_kernels == len(body)
    metric_cols = [(i, h) for i, h in enumerate(header) if h not in NON_METRIC]
    compared = {"int": 0, "dec": 0, "str": 0, "empty": 0}
    for row in body:
        kid = int(row[header.index("ID")])
        for i, name in metric_cols:
            assert (kid, name) in stored, f"kernel {kid}: metric {name} of the CSV is missing from the store"
            d, s, u, inst = stored[(kid, name)]
            text = row[i]
            if INT_RE.fullmatch(text) and s is None:
                if u is not None:
                    assert u == int(text), (kid, name, u, text)
                else:
                    assert d is not None and d == int(text), (kid, name, d, text)
                compared["int"] += 1
            elif DEC_RE.fullmatch(text) and s is None:
                decimals = len(text.split(".")[1])
                assert d is not None and math.isclose(
                    d, float(text), rel_tol=1e-12, abs_tol=0.5 * 10**-decimals + 1e-9
                ), (
                    kid,
                    name,
                    d,
                    text,
                )
                compared["dec"] += 1
            elif text in ("", "no data", "n/a"):
                # instanced metrics and metrics without a value (kind 0) print nothing or 'no data'
                assert inst > 0 or (d is None and s is None), (kid, name, d, s, text)
                compared["empty"] += 1
            else:
                # string metrics; ncu may print a shortened enum (cudaFuncCachePreferNone -> CachePreferNone)
                assert s is not None and (s == text or s.endswith(text)), (kid, name, s, text)
                compared["str"] += 1
    assert compared["int"] + compared["dec"] > 100 * len(body) * 0.5
