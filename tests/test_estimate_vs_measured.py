"""Predicted vs measured per layer (issue 12): an annotated run's kernels beside an estimate run's ops, golden on tiny
tables; and the real FlashAttention reports against the analytic attention estimate."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from rooflake import queries
from rooflake.pipeline.tables import ingest_tables
from rooflake.schema import ESTIMATES
from rooflake.store import Store

from _support import tiny_run

RUN = "c" * 16


def _estimates(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in ESTIMATES} for r in rows], schema=ESTIMATES)


@pytest.fixture()
def store(tmp_path: Path) -> tuple[Store, str]:
    k = {"device_id": 0, "nvtx_domain": "rooflake", "duration_ns": 1000.0}
    kernels = [
        # conv1 measured 2x its algorithmic FLOPs, DRAM as modelled; fc matches; relu has no estimate row
        {**k, "kernel_id": 0, "name": "conv", "short_name": "conv", "nvtx_stack": ["forward", "conv1"],
         "flops_fp32": 2e9, "bytes_dram": 1e6, "bytes_l2": 4e6},
        {**k, "kernel_id": 1, "name": "gemm", "short_name": "gemm", "nvtx_stack": ["forward", "fc"],
         "flops_fp32": 1e8, "bytes_dram": 2e5, "bytes_l2": 3e5},
        {**k, "kernel_id": 2, "name": "relu", "short_name": "relu", "nvtx_stack": ["forward", "act", "act.relu"],
         "flops_fp32": None, "bytes_dram": None, "bytes_l2": None},
    ]  # fmt: skip
    tiny_run(tmp_path, RUN, kernels, [])
    est = _estimates([
        {"op_id": 0, "module_path": "conv1", "phase": "forward", "op": "aten.convolution", "flops": 1e9,
         "bytes_compulsory": 5e5, "bytes_dram": 1e6, "bytes_l2": 4e6},
        {"op_id": 1, "module_path": "fc", "phase": "forward", "op": "aten.addmm", "flops": 1e8,
         "bytes_compulsory": 1e5, "bytes_dram": 2e5, "bytes_l2": 3e5},
        {"op_id": 2, "module_path": "fc", "phase": "backward", "op": "aten.mm", "flops": 2e8,
         "bytes_compulsory": 1e5},
    ])  # fmt: skip
    res = ingest_tables(tmp_path, {"estimates": est}, identity="tiny model", source_format="torch-model",
                        producer="test")  # fmt: skip
    return Store(tmp_path), str(res.run_id)


def test_layers_side_by_side(store: tuple[Store, str]) -> None:
    s, est = store
    rows = {r["layer"]: r for r in queries.run(s, "estimate_vs_measured", {"run_id": RUN, "estimates_run_id": est})
            .to_pylist()}  # fmt: skip
    assert set(rows) == {"rooflake:forward/conv1", "rooflake:forward/fc", "rooflake:forward/act",
                         "rooflake:backward/fc"}  # fmt: skip
    conv = rows["rooflake:forward/conv1"]
    assert conv["flops_ratio"] == 2.0 and conv["dram_ratio"] == 1.0 and conv["l2_ratio"] == 1.0
    assert len(conv["gaps"]) == 1 and conv["gaps"][0].startswith("FLOPs: executed > algorithmic")
    fc = rows["rooflake:forward/fc"]
    assert fc["flops_ratio"] == 1.0 and fc["gaps"] == []
    act = rows["rooflake:forward/act"]
    assert act["flops_measured"] is None and act["ops"] == 0 and act["gaps"][0].startswith("no estimate")
    back = rows["rooflake:backward/fc"]
    assert (
        back["kernels"] == 0 and back["flops_analytic"] == 2e8 and back["gaps"][0].startswith("no measured")
    )


def test_deeper_layers_use_module_path_prefixes(store: tuple[Store, str]) -> None:
    s, est = store
    rows = queries.run(
        s, "estimate_vs_measured", {"run_id": RUN, "estimates_run_id": est, "depth": 3}
    ).to_pylist()
    assert "rooflake:forward/act/act.relu" in {r["layer"] for r in rows}


def test_flash_attention_reports_against_the_analytic_estimate(tmp_path: Path) -> None:
    """The real FlashAttention reports (RTX 4060 Ti; B=1, H=8, N=4096, D=64, FP16): their tensor-op counter equals
    4·B·H·N²·D exactly, and their DRAM reads equal the modelled compulsory Q, K, V reads to 1 % (docs/model.md)."""
    torch = pytest.importorskip("torch")
    import duckdb

    from rooflake.instrument.estimate import estimate_rows
    from rooflake.instrument.traffic import GpuSpec
    from rooflake.pipeline import ingest_file

    from _support import NCU

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):  # type: ignore[no-untyped-def]
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    x = torch.empty(1, 8, 4096, 64, dtype=torch.float16)
    (row,) = estimate_rows(Attention(), (x, x, x), gpu=GpuSpec("RTX 4060 Ti", 34, 32 * 2**20))
    qkv_reads = 3 * 8 * 4096 * 64 * 2
    for name in ("fa3_before_n4096_full", "db_full_after_n4096_full"):
        (report,) = NCU.glob(f"*ncu_sections__{name}.ncu-rep")
        ingest_file(report, tmp_path / "s")
        tensor, dram_read = _fa_values(duckdb.connect(), tmp_path / "s", report.name)
        assert tensor == row["flops"] == 34_359_738_368
        assert dram_read == pytest.approx(qkv_reads, rel=0.01)


def _fa_values(con, store: Path, file_name: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    return con.execute(
        f"""SELECT k.flops_tensor, m.value_double
            FROM '{store}/kernels/*/*.parquet' k
            JOIN '{store}/metrics/*/*.parquet' m USING (run_id, kernel_id)
            JOIN '{store}/runs/*/*.parquet' r USING (run_id)
            WHERE m.metric_name = 'dram__bytes_read.sum' AND r.source_path LIKE '%' || $f""",
        {"f": file_name},
    ).fetchone()


def test_rl_layers_with_an_estimate_run(store: tuple[Store, str]) -> None:
    from typer.testing import CliRunner

    from rooflake.cli import app

    s, est = store
    res = CliRunner().invoke(
        app, ["layers", RUN[:5], "--with", est, "-d", "2", "-f", "csv", "--store", str(s.root)]
    )
    assert res.exit_code == 0, res.output
    header, *lines = res.output.splitlines()
    assert header.startswith("layer,kernels,ops") and len(lines) == 4
    assert any(line.startswith("rooflake:forward/conv1,1,1,1000,2000000000,1000000000,2,") for line in lines)
