"""The datasheet catalog shipped in the package: every number sourced, units known, names matched, and the numbers
consistent with each other (FP32 peak = SMs x FP32 lanes per SM x 2 x boost clock). Needs no fixture."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflake.schema import datasheets as ds

ROOT = Path(__file__).resolve().parents[1]
# FP32 lanes per SM, from the architecture whitepapers (Volta, Turing, GA100: 64; GA10x, Ada, Hopper,
# Blackwell: 128); one FMA = 2 FLOPs
FP32_LANES = {
    "Volta": 64,
    "Turing": 64,
    "Ampere-GA100": 64,
    "Ampere": 128,
    "Ada Lovelace": 128,
    "Hopper": 128,
    "Blackwell": 128,
}
ALLOWED = {"FP64", "FP32", "DRAM", *ds.PROPERTIES} | {
    f"TENSOR {p}" for p in ("FP64", "TF32", "BF16", "FP16", "FP8", "FP4", "INT8")
}
BASES = {"dense", "sparse/2", "derived", "third-party"}


def _num(gpu: str, quantity: str) -> float | None:
    t = ds.numbers()
    hit = t.filter(pc.and_(pc.equal(t["gpu"], gpu), pc.equal(t["quantity"], quantity)))
    return hit["value"][0].as_py() if hit.num_rows else None


def _basis(gpu: str, quantity: str) -> str | None:
    return next(
        (r["basis"] for r in ds._rows(ds.NUMBERS_FILE) if (r["gpu"], r["quantity"]) == (gpu, quantity)), None
    )


def test_every_number_has_a_source_a_check_and_a_known_unit() -> None:
    rows = ds._rows(ds.NUMBERS_FILE)
    keys = {g["gpu"] for g in ds.gpus()}
    assert len(rows) > 100
    for r in rows:
        assert r["gpu"] in keys, r
        assert r["quantity"] in ALLOWED, r
        assert r["unit"] in ds.UNITS, r
        assert r["basis"] in BASES, r
        assert r["source_url"].startswith("https://") and r["checked_in"].startswith("https://"), r
        assert r["published"], r
        if r["basis"] == "derived":
            assert r["note"], f"a derived number says how: {r}"
        float(r["value"])
    for g in ds.gpus():
        re.compile(g["match"])
        assert g["source_url"].startswith("https://"), g


def test_sparse_rates_are_halved_and_base_units_are_exact() -> None:
    assert _num("H100 SXM5", "TENSOR FP16") == 989.5e12  # printed 1,979* (with sparsity)
    assert _num("H100 PCIe", "TENSOR TF32") == 378e12  # printed 756*
    assert _num("A100 PCIe 40GB", "TENSOR FP16") == 312e12  # printed 312 | 624*: dense as printed
    assert _num("B200", "TENSOR FP4") == 9e15
    assert _num("A100 PCIe 80GB", "DRAM") == 1935e9
    assert _num("A100 SXM4 40GB", "L2_BYTES") == 41943040
    assert _num("H100 SXM5", "BOOST_CLOCK") == 1.98e9


@pytest.mark.parametrize(
    ("name", "cc", "gpu"),
    [
        # device names as the fixture reports and exports write them (../shared/fixtures/README.md)
        ("NVIDIA A100-PCIE-40GB", "8.0", "A100 PCIe 40GB"),
        ("NVIDIA A100 80GB PCIe", "8.0", "A100 PCIe 80GB"),
        ("NVIDIA A100-SXM4-80GB", "8.0", "A100 SXM4 80GB"),
        ("NVIDIA H100 PCIe", "9.0", "H100 PCIe"),
        ("NVIDIA H100 80GB HBM3", "9.0", "H100 SXM5"),
        ("NVIDIA H800", "9.0", "H800"),
        ("NVIDIA A10G", "8.6", "A10G"),
        ("NVIDIA A10", "8.6", "A10"),
        ("Tesla T4", "7.5", "T4"),
        ("NVIDIA A40", "8.6", "A40"),
        ("Tesla V100-SXM2-16GB", "7.0", "V100 SXM2"),
        ("NVIDIA GeForce RTX 3070", "8.6", "RTX 3070"),
        ("NVIDIA GeForce RTX 4060 Ti", "8.9", "RTX 4060 Ti"),
        ("NVIDIA GeForce RTX 5060 Ti", "12.0", "RTX 5060 Ti"),
        ("NVIDIA L4", None, "L4"),
        ("NVIDIA L40S", "8.9", "L40S"),
        ("NVIDIA H200", "9.0", "H200"),
        ("NVIDIA GH200 480GB", "9.0", "GH200"),
        ("NVIDIA B200", "10.0", "B200"),
    ],
)
def test_device_names_match_their_model(name: str, cc: str | None, gpu: str) -> None:
    assert ds.match(name, cc) == gpu


def test_no_match_is_none_not_a_guess() -> None:
    assert ds.match("NVIDIA GeForce GTX 1650", "7.5") is None
    assert ds.match("NVIDIA A100-PCIE-40GB", "9.0") is None  # the compute capability disagrees
    assert ds.match(None) is None
    assert ds.candidates("A100") == ["A100 PCIe 40GB", "A100 PCIe 80GB", "A100 SXM4 40GB", "A100 SXM4 80GB"]


def test_fp32_peaks_agree_with_sm_count_and_boost_clock() -> None:
    """FP32 = SMs x lanes x 2 x boost: the numbers of one GPU, from different pages, tell one story (to the 1% the
    datasheets round to)."""
    checked = 0
    for g in ds.gpus():
        sms, boost, fp32 = (_num(g["gpu"], q) for q in ("SM_COUNT", "BOOST_CLOCK", "FP32"))
        if None in (sms, boost, fp32):
            continue
        arch = "Ampere-GA100" if g["gpu"].startswith("A100") else g["architecture"]
        predicted = sms * FP32_LANES[arch] * 2 * boost
        assert predicted == pytest.approx(fp32, rel=0.01), (g["gpu"], predicted, fp32)
        checked += not str(_basis(g["gpu"], "FP32")).startswith(
            "derived"
        )  # GeForce FP32 is this very formula
    assert checked >= 8


def test_ceilings_hold_at_the_boost_clock() -> None:
    t = ds.ceilings()
    rows = {(r["gpu"], r["ceiling"]): r for r in t.to_pylist()}
    h = rows[("H100 PCIe", "FP32")]
    assert (h["kind"], h["value"], h["clock_hz"], h["source"]) == ("compute", 51e12, 1.755e9, "datasheet")
    assert "resources.nvidia.com" in h["details"]
    d = rows[("A100 PCIe 80GB", "DRAM")]
    assert (d["kind"], d["unit"], d["clock_hz"]) == ("bandwidth", "byte/s", None)
    assert not any(r["ceiling"] in ds.PROPERTIES for r in t.to_pylist())


def test_the_wheel_ships_the_catalog() -> None:
    if sys.version_info < (3, 11):
        pytest.skip("tomllib needs Python 3.11")
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = conf["tool"]["setuptools"]["package-data"]["rooflake.schema"]
    assert "*.csv" in data


_NAMES = st.text(alphabet="NVIDIAGeForceTeslaRTXHAB0123456789 -_/()ti", max_size=40)


@settings(max_examples=200, deadline=None)
@given(names=st.lists(_NAMES, max_size=8))
def test_the_sql_datasheet_name_is_normalise(names: list[str]) -> None:
    """The datasheet_name macro (SQL, made from the words normalise drops) writes every name as normalise does:
    the catalog's own names, the device names of the fixtures' reports, and made-up ones."""
    import duckdb

    from rooflake.queries import macros
    from rooflake.schema.gpu_names import normalise

    real = ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4060 Ti", "Tesla V100-SXM2-16GB", "NVIDIA A100-PCIE-40GB",
            "NVIDIA A10G", "", "  ", "GEFORCE--nvidia"]  # fmt: skip
    every = [*real, *(g["gpu"] for g in ds.gpus()), *names]
    con = duckdb.connect()
    con.execute(macros())
    got = con.execute("SELECT datasheet_name(n) FROM unnest($names) AS t(n)", {"names": every}).fetchall()
    assert [g for (g,) in got] == [normalise(n) for n in every]
