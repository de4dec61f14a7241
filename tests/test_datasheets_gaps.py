"""The datasheet catalog's gaps filled with cited sources (schema/datasheets.csv): L2 of the RTX 4060 Ti and the
A10G, the A10G's SM count, and a GTX 1660 SUPER entry. Each number equals what the driver reports for the same GPU
in a real Nsight Compute report (`device__attribute_*` metrics of the fixtures), and every row names its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflake import queries
from rooflake.pipeline import ingest_paths
from rooflake.schema import datasheets as ds
from rooflake.store import Store
from rooflake.views.ceilings import machine_ceilings

from _support import fixture

REPORTS = {
    "A10G": fixture("AveryClapp__ESMM-Research__profile.ncu-rep"),
    "RTX 4060 Ti": fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before"),
    "GTX 1660 SUPER": fixture("LakshyaSingh354__CudaCode__gemm__reps__naive"),
}
ATTRIBUTE = {
    "SM_COUNT": "device__attribute_multiprocessor_count",
    "L2_BYTES": "device__attribute_l2_cache_size",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("datasheet_gaps")
    assert all(r.status == "ingested" for r in ingest_paths(list(REPORTS.values()), root, workers=1))
    return root


def _catalog(gpu: str) -> dict[str, dict]:
    return {r["quantity"]: r for r in ds._rows(ds.NUMBERS_FILE) if r["gpu"] == gpu}


@pytest.mark.parametrize("gpu", list(REPORTS))
def test_sm_count_and_l2_equal_the_drivers_attributes(store: Path, gpu: str) -> None:
    sql = (
        "SELECT r.gpu_name, r.compute_capability, m.metric_name, min(m.value_double) AS v FROM metrics m "
        "JOIN runs r USING (run_id) WHERE m.metric_name IN ($a, $b) GROUP BY ALL"
    )
    rows = queries.execute(Store(store), sql, {"a": ATTRIBUTE["SM_COUNT"], "b": ATTRIBUTE["L2_BYTES"]})
    mine = [r for r in rows.to_pylist() if ds.match(r["gpu_name"], r["compute_capability"]) == gpu]
    assert len(mine) == 2
    catalog = _catalog(gpu)
    for r in mine:
        quantity = next(q for q, m in ATTRIBUTE.items() if m == r["metric_name"])
        assert float(catalog[quantity]["value"]) == r["v"], (gpu, quantity)
        assert catalog[quantity]["source_url"].startswith("https://")


def test_every_new_row_cites_a_source() -> None:
    for gpu, quantities in {"A10G": ["SM_COUNT", "L2_BYTES"], "RTX 4060 Ti": ["L2_BYTES"],
                            "GTX 1660 SUPER": ["SM_COUNT", "L2_BYTES", "BOOST_CLOCK", "DRAM", "FP32"]}.items():  # fmt: skip
        for q in quantities:
            row = _catalog(gpu)[q]
            assert row["source_url"].startswith("https://") and row["checked_in"].startswith("https://"), (
                gpu,
                q,
            )
            assert row["basis"] in ("third-party", "derived") and (row["basis"] != "derived" or row["note"])


def test_gtx_1660_super_datasheet_roofs(store: Path) -> None:
    """GTX 1660 SUPER: 14 Gbps x 192 bit / 8 = 336 GB/s; 2 x 1408 CUDA cores x 1785 MHz = 5.02656 TFLOP/s; no
    Tensor Cores (TU116), so no tensor roof."""
    assert ds.match("NVIDIA GeForce GTX 1660 SUPER", "7.5") == "GTX 1660 SUPER"
    run = queries.execute(
        Store(store), "SELECT run_id FROM runs WHERE gpu_name = 'NVIDIA GeForce GTX 1660 SUPER'"
    ).to_pylist()[0]["run_id"]
    sheet = {
        r["ceiling"]: r["value"] for r in machine_ceilings(Store(store), run).select("datasheet").to_pylist()
    }
    assert sheet == {"DRAM": 336e9, "FP32": 5.02656e12}
    assert sheet["FP32"] == 22 * 64 * 2 * 1785e6  # Turing: 64 FP32 lanes per SM
