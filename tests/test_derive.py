"""Derived FLOPs, bytes, durations and ceilings equal the formulas (DESIGN.md section 5) applied by hand to the raw
metrics of reports from four ncu generations, and agree with ncu's own ``derived__*`` section metrics."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rooflake import queries
from rooflake.ingest.derive import derive
from rooflake.schema.catalog import QUANTITIES
from rooflake.store import Store

from _support import fixture

INST = "sass_thread_inst_executed_op_{}_pred_on"


def _load(store: Path, name: str, kernel_id: int = 0) -> tuple[dict[str, float], dict, dict[str, float]]:
    con = queries.connect(Store(store))
    run = con.execute(
        "SELECT run_id FROM runs WHERE source_path = ?", [str(fixture(name).resolve())]
    ).fetchone()[0]
    raw = dict(
        con.execute(
            "SELECT metric_name, value_double FROM metrics WHERE run_id = ? AND kernel_id = ? AND value_double IS NOT NULL",
            [run, kernel_id],
        ).fetchall()
    )
    cur = con.execute("SELECT * FROM kernels WHERE run_id = ? AND kernel_id = ?", [run, kernel_id])
    cols = [d[0] for d in cur.description]
    kernel = dict(zip(cols, cur.fetchone(), strict=True))
    ceilings = dict(
        con.execute(
            "SELECT ceiling, value FROM ceilings WHERE run_id = ? AND kernel_id = ?", [run, kernel_id]
        ).fetchall()
    )
    return raw, kernel, ceilings


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def test_h100_ncu_2025_hierarchical_and_ops_path_tensor(fixture_store: Path) -> None:
    m, k, c = _load(fixture_store, "AlpriElse")
    t = m["gpu__time_duration.sum"] * 1e-9
    clk = m["smsp__cycles_elapsed.avg.per_second"]
    rate = lambda op: m[f"smsp__{INST.format(op)}.sum.per_cycle_elapsed"]  # noqa: E731
    assert k["duration_ns"] == m["gpu__time_duration.sum"] == 284704.0
    assert close(k["flops_fp32"], (rate("fadd") + rate("fmul") + 2 * rate("ffma")) * clk * t)
    assert close(k["flops_fp64"], (rate("dadd") + rate("dmul") + 2 * rate("dfma")) * clk * t)
    # hadd/hmul rates are absent (ncu's derived__..._hadd_pred_on_x2 holds no value): NULL with the reason
    assert k["flops_fp16"] is None
    assert k["provenance"]["flops_fp16"].startswith(
        "NULL: missing smsp__sass_thread_inst_executed_op_hadd_pred_on"
    )
    src = [
        n for n in m if n.startswith("sm__ops_path_tensor_src_") and n.endswith(".sum") and "_op_" not in n
    ]
    assert len(src) == 8
    assert k["flops_tensor"] == sum(m[n] for n in src)
    assert k["bytes_l1"] == 128 * m["l1tex__lsu_writeback_active_mem_lgds.sum"]
    assert close(k["bytes_l2"], 32 * m["lts__lts2xbar_cycles_active.sum.per_second"] * t)
    assert k["bytes_dram"] == m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
    # ncu's own derived metrics of the hierarchical sections agree
    assert close(k["bytes_l2"], m["derived__lts__lts2xbar_bytes.sum.per_second"] * t)
    assert close(k["bytes_l1"], m["derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second"] * t)
    assert math.isclose(k["bytes_dram"], m["dram__bytes.sum.per_second"] * t, rel_tol=1e-6)
    # ceilings: peak_sustained x the unit's clock
    assert close(c["DRAM"], m["dram__bytes.sum.peak_sustained"] * m["dram__cycles_elapsed.avg.per_second"])
    assert close(
        c["L2"],
        m["derived__lts__lts2xbar_bytes.sum.peak_sustained"] * m["lts__cycles_elapsed.avg.per_second"],
    )
    assert close(
        c["L1"],
        m["derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained"]
        * m["l1tex__cycles_elapsed.avg.per_second"],
    )
    sm_clk = m["sm__cycles_elapsed.avg.per_second"]
    assert close(c["FP32"], 2 * m[f"sm__{INST.format('ffma')}.sum.peak_sustained"] * sm_clk)
    assert close(c["FP32"], m["derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"] * sm_clk)
    assert close(c["FP64"], m["derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2"] * sm_clk)
    assert close(c["FP16"], m["derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4"] * sm_clk)
    # each finest path's own peak, as ncu's Tensor section pairs them: the dense hgmma roof is half the src_fp16
    # aggregate's peak (which counts 2:4 sparsity), so the aggregate is no roof of its own
    dense = m["sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained"]
    assert close(c["TENSOR FP16 HGMMA"], dense * sm_clk)
    assert dense * 2 == m["sm__ops_path_tensor_src_fp16.sum.peak_sustained"]
    assert close(c["TENSOR FP16 HGMMA SPARSE"], 2 * dense * sm_clk) and "TENSOR FP16" not in c
    # a silu kernel runs no Tensor-Core op: no tensor roof, and the reason
    assert k["flops_tensor"] == 0 and k["provenance"]["tensor_roof"] == "NULL: no Tensor-Core op counted"


def test_a10g_ncu_2023_1_roofline_set_x512_tensor(fixture_store: Path) -> None:
    m, k, c = _load(fixture_store, "AveryClapp__ESMM-Research__profile_output", kernel_id=1)
    t = m["gpu__time_duration.sum"] * 1e-9
    clk = m["smsp__cycles_elapsed.avg.per_second"]
    rate = lambda op: m[f"smsp__{INST.format(op)}.sum.per_cycle_elapsed"]  # noqa: E731
    assert close(k["flops_fp32"], (rate("fadd") + rate("fmul") + 2 * rate("ffma")) * clk * t)
    assert k["flops_fp32"] > 1e9
    assert close(
        k["flops_fp32"],
        (rate("fadd") + rate("fmul") + m["derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2"])
        * clk
        * t,
    )
    assert close(k["flops_fp16"], (2 * rate("hadd") + 2 * rate("hmul") + 4 * rate("hfma")) * clk * t)
    # ncu 2023.1's own section scales tensor instructions by 512 (derived__*_x512); that holds on Volta only, so on
    # this Ampere GPU the count is NULL with the reason, and there is no TENSOR roof
    assert "derived__smsp__inst_executed_pipe_tensor_x512" in m
    assert k["flops_tensor"] is None and "Volta" in k["provenance"]["flops_tensor"]
    assert not [n for n in c if n.startswith("TENSOR")]
    assert k["provenance"]["tensor_roof"] == k["provenance"]["flops_tensor"]
    assert close(k["bytes_l1"], m["derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second"] * t)
    assert close(k["bytes_l2"], m["l1tex__m_xbar2l1tex_read_bytes.sum.per_second"] * t)
    assert close(k["bytes_dram"], m["dram__bytes.sum.per_second"] * t)
    assert close(
        c["L2"],
        m["l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained"] * m["lts__cycles_elapsed.avg.per_second"],
    )
    assert close(
        c["L1"],
        m["derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained"]
        * m["l1tex__cycles_elapsed.avg.per_second"],
    )


def test_gtx1660_ncu_2024_1_full_set_counters(fixture_store: Path) -> None:
    m, k, c = _load(fixture_store, "LakshyaSingh354")
    assert k["bytes_l2"] == m["l1tex__m_xbar2l1tex_read_bytes.sum"]
    assert k["bytes_l1"] == 128 * m["l1tex__lsu_writeback_active_mem_lg.sum"]
    assert k["provenance"]["bytes_l1"] == "128*l1tex__lsu_writeback_active_mem_lg.sum"
    assert set(c) == {
        "DRAM",
        "FP32",
        "FP64",
    }  # --set full holds no L1/L2 peaks on this GPU: no invented roofs


def test_v100_pre_2021_nersc_split_run(fixture_store: Path) -> None:
    m, k, c = _load(fixture_store, "wdmapp__gene-paper-artifacts-pop2020__roofline__time-flops")
    d = f"sm__{INST.format('d{}')}.sum"
    assert k["flops_fp64"] == m[d.format("add")] + m[d.format("mul")] + 2 * m[d.format("fma")]
    # NERSC time: sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second
    assert close(k["duration_ns"], m["sm__cycles_elapsed.avg"] / m["sm__cycles_elapsed.avg.per_second"] * 1e9)
    assert k["bytes_dram"] is None and k["provenance"]["bytes_dram"].startswith("NULL:")
    assert c == {}  # no peak_sustained metrics were collected
    m2, k2, _ = _load(fixture_store, "wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram")
    assert k2["bytes_dram"] == m2["dram__bytes.sum"] and k2["flops_fp64"] is None


def test_reports_without_counters_give_null_never_zero(fixture_store: Path) -> None:
    for name in (
        "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv",
        "2388612861",
    ):
        _, k, c = _load(fixture_store, name)
        for q in QUANTITIES:
            assert k[q] is None
            assert k["provenance"][q].startswith("NULL: ")
        assert {"no_flop_counters", "no_byte_counters"} <= set(k["flags"])


@pytest.mark.parametrize("fp16,factors", [("ncu", (2, 2, 4)), ("nersc", (1, 1, 2))])
def test_fp16_conventions(fp16: str, factors: tuple[int, int, int]) -> None:
    base = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
    v = {base.format("hadd"): 3.0, base.format("hmul"): 5.0, base.format("hfma"): 7.0}
    d = derive(v, 8.0, fp16)
    assert d.quantities["flops_fp16"] == factors[0] * 3 + factors[1] * 5 + factors[2] * 7


def test_cc_picks_the_sections_l2_and_l1_counters() -> None:
    v = {
        "lts__lts2xbar_cycles_active.sum": 10.0,
        "l1tex__m_xbar2l1tex_read_bytes.sum": 7.0,
        "lts__t_bytes.sum": 9.0,
        "l1tex__lsu_writeback_active_mem_lgds.sum": 2.0,
        "l1tex__lsu_writeback_active_mem_lg.sum": 3.0,
        "l1tex__t_bytes.sum": 11.0,
    }
    assert derive(v, 9.0).quantities["bytes_l2"] == 320.0
    assert derive(v, 8.6).quantities["bytes_l2"] == 7.0
    assert derive(v, 9.0).quantities["bytes_l1"] == 256.0
    assert derive(v, 8.6).quantities["bytes_l1"] == 384.0
    assert derive({"lts__t_bytes.sum": 9.0}, 8.6).quantities["bytes_l2"] == 9.0  # NERSC fallback


def test_tensor_aggregate_names_not_double_counted() -> None:
    v = {
        "sm__ops_path_tensor_src_fp16.sum": 100.0,
        "sm__ops_path_tensor_src_fp16_sparsity_on.sum": 40.0,  # a finer split of src_fp16: not added again
        "sm__ops_path_tensor_op_hmma_src_fp16.sum": 100.0,  # op_* names are never summed with src_*
        "sm__ops_path_tensor_src_int8.sum": 5.0,
    }
    assert derive(v, 9.0).quantities["flops_tensor"] == 105.0


def test_nan_duration_propagates_and_is_flagged() -> None:
    v = {
        "gpu__time_duration.sum": float("nan"),
        "dram__bytes.sum.per_second": float("nan"),
        "dram__bytes.sum.peak_sustained": 0.0,
        "dram__cycles_elapsed.avg.per_second": float("nan"),
    }
    d = derive(v, 9.0)
    assert math.isnan(d.quantities["bytes_dram"])
    assert {"nan_duration", "nan_metrics", "zero_peak"} <= set(d.flags)


def test_the_reports_own_roofline_section_picks_the_counters() -> None:
    v = {"lts__lts2xbar_cycles_active.sum": 10.0, "l1tex__m_xbar2l1tex_read_bytes.sum": 7.0}
    section = frozenset({"l1tex__m_xbar2l1tex_read_bytes.sum.per_second", "dram__bytes.sum.per_second"})
    assert derive(v, 9.0).quantities["bytes_l2"] == 320.0  # by compute capability
    assert derive(v, 9.0, section=section).quantities["bytes_l2"] == 7.0  # as the report's own section says


def test_section_metric_names_are_read_from_the_report() -> None:
    import ncu_report

    from rooflake.ingest.ncu_rep import roofline_section_metrics

    ctx = ncu_report.load_report(str(fixture("AveryClapp__ESMM-Research__profile_output")))
    names = roofline_section_metrics(ctx.range_by_idx(0).action_by_idx(0))
    assert "l1tex__m_xbar2l1tex_read_bytes.sum.per_second" in names
    assert "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second" in names
    ctx = ncu_report.load_report(str(fixture("ZSL98")))  # no roofline sections
    assert roofline_section_metrics(ctx.range_by_idx(0).action_by_idx(0)) == frozenset()


def test_x512_tensor_count_only_on_volta() -> None:
    v = {
        "sm__inst_executed_pipe_tensor.sum": 10.0,
        "sm__inst_executed_pipe_tensor.sum.peak_sustained": 80.0,
        "sm__cycles_elapsed.avg.per_second": 1e9,
    }
    volta = derive(v, 7.0)
    assert volta.quantities["flops_tensor"] == 5120.0
    assert [c.value for c in volta.ceilings if c.ceiling == "TENSOR FP16"] == [80 * 512 * 1e9]
    assert volta.provenance["tensor_roof"] == "TENSOR FP16"
    ampere = derive(v, 8.6)
    assert ampere.quantities["flops_tensor"] is None and "Volta" in ampere.provenance["flops_tensor"]
    assert not [c for c in ampere.ceilings if c.ceiling.startswith("TENSOR")]


def test_cycle_derived_duration_next_to_sass_counters_is_flagged() -> None:
    """NERSC split runs: the FLOP half's sm__cycles_elapsed was collected with instrumented SASS counters."""
    v = {
        "sm__cycles_elapsed.avg": 1e6,
        "sm__cycles_elapsed.avg.per_second": 1e9,
        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum": 5.0,
    }
    d = derive(v, 7.0)
    assert d.duration_ns == 1e6 and "duration_from_instrumented_cycles" in d.flags
    assert "duration_from_instrumented_cycles" not in derive({"gpu__time_duration.sum": 5.0, **v}, 7.0).flags
