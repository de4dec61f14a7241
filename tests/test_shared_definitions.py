"""Rules and data with one definition: the GEMM-name rule of the physics flag `gemm_without_flops` (ingest/derive.py,
used by both ncu readers), and the datasheet catalog, the same rows from Python and from `rl sql`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.ingest import derive, ncu_csv, ncu_rep
from rooflake.schema import datasheets

from _support import ROOT, tiny_run

FLOPS = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")


def _derived(**flops: float | None) -> derive.Derived:
    return derive.Derived(1000.0, {q: flops.get(q) for q in FLOPS}, {})


def test_the_gemm_rule_is_defined_once() -> None:
    """The regular expression is written in derive.py only; the readers import the rule."""
    pattern = derive.GEMM_RE.pattern
    holders = [p.name for p in (ROOT / "ingest").glob("*.py") if pattern in p.read_text(encoding="utf-8")]
    assert holders == ["derive.py"]
    assert (
        ncu_rep.flag_gemm_without_flops is ncu_csv.flag_gemm_without_flops is derive.flag_gemm_without_flops
    )


@pytest.mark.parametrize(
    ("name", "flops", "flagged"),
    [
        ("ampere_sgemm_128x64_nn", {"flops_fp32": 0.0, "flops_fp64": 0.0}, True),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>", {"flops_tensor": 0.0}, True),
        ("implicit_convolve_sgemm", {"flops_fp32": 0.0}, True),
        ("flash_fwd_kernel", {"flops_fp16": 0.0}, True),
        ("ampere_sgemm_128x64_nn", {"flops_fp32": 2.0e9}, False),  # counts FLOPs
        ("ampere_sgemm_128x64_nn", {}, False),  # no counters: missing, not zero
        ("vectorAdd", {"flops_fp32": 0.0}, False),  # not GEMM-named: a zero-FLOP kernel
    ],
)
def test_gemm_without_flops(name: str, flops: dict[str, float], flagged: bool) -> None:
    d = _derived(**flops)
    derive.flag_gemm_without_flops(d, name)
    assert d.flags == (["gemm_without_flops"] if flagged else [])


def _sql(store: Path, query: str) -> list[dict]:
    res = CliRunner().invoke(app, ["sql", "--store", str(store), "--format", "json", query])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_rl_sql_reads_the_datasheet_catalog(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()  # (an empty store: a folder that does not exist is refused)
    rows = _sql(store, "select * from datasheets")
    assert len(rows) == datasheets.numbers().num_rows
    h100 = _sql(
        store,
        "select value, unit, published, compute_capability, architecture, source_url from datasheets "
        "where gpu = 'H100 SXM5' and quantity = 'DRAM'",
    )
    assert h100 == [
        {
            "value": 3.35e12,
            "unit": "byte/s",
            "published": "3,350 GB/sec",
            "compute_capability": "9.0",
            "architecture": "Hopper",
            "source_url": "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
        }
    ]
    gpus = _sql(store, "select gpu, match from datasheet_gpus")
    assert [g["gpu"] for g in gpus] == [g["gpu"] for g in datasheets.gpus()]
    assert all(re.compile(g["match"]) for g in gpus)


def test_the_catalog_joins_the_store(tmp_path: Path) -> None:
    """A run's kernels beside their GPU's datasheet numbers, in one statement over the store and the catalog."""
    store = tmp_path / "store"
    kernels = [{"kernel_id": 0, "name": "k", "gpu_name": "NVIDIA H100 PCIe", "duration_ns": 1000.0}]
    tiny_run(store, "r1", kernels, [])
    rows = _sql(
        store,
        "select k.gpu_name, d.quantity, d.value from kernels k join datasheets d on d.gpu = 'H100 PCIe' "
        "where d.quantity in ('DRAM', 'FP32') order by d.quantity",
    )
    assert rows == [
        {"gpu_name": "NVIDIA H100 PCIe", "quantity": "DRAM", "value": 2.0e12},
        {"gpu_name": "NVIDIA H100 PCIe", "quantity": "FP32", "value": 5.1e13},
    ]
