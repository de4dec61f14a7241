"""Every fixture report ingests whole; kernel and metric counts equal what ncu_report itself reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ncu_report
import pytest
from _support import NCU_REPORTS, fixture

from rooflake import queries
from rooflake.store import Store


def _actions(path: Path) -> list:
    ctx = ncu_report.load_report(str(path))
    return [ctx.range_by_idx(r).action_by_idx(a) for r in range(ctx.num_ranges()) for a in range(ctx.range_by_idx(r).num_actions())]


def _run_id(con, path: Path) -> str:
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(path.resolve())]).fetchone()[0]


@pytest.mark.parametrize("path", NCU_REPORTS, ids=lambda p: p.name[:40])
def test_counts_equal_the_report(fixture_store: Path, path: Path) -> None:
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, path)
    actions = _actions(path)
    n_kernels, n_metrics = con.execute(
        "SELECT n_kernels, n_metrics FROM runs WHERE run_id = ?", [run]
    ).fetchone()
    assert n_kernels == len(actions) == con.execute("SELECT count(*) FROM kernels WHERE run_id = ?", [run]).fetchone()[0]
    expected_metrics = sum(len(a.metric_names()) for a in actions)
    assert n_metrics == expected_metrics
    assert con.execute("SELECT count(*) FROM metrics WHERE run_id = ?", [run]).fetchone()[0] == expected_metrics
    # names: demangled, function base name, mangled as the API gives them
    names = con.execute("SELECT name, short_name, mangled_name FROM kernels WHERE run_id = ? ORDER BY kernel_id", [run]).fetchall()
    for (name, short, mangled), a in zip(names, actions, strict=True):
        assert name == a.name(ncu_report.IAction.NameBase_DEMANGLED)
        assert short == a.name(ncu_report.IAction.NameBase_FUNCTION)
        assert mangled == a.name(ncu_report.IAction.NameBase_MANGLED)


def test_every_value_of_one_report_is_lossless(fixture_store: Path) -> None:
    """Every metric of the H100 report: kind-dispatched value, unit and instance values equal the API's."""
    path = fixture("AlpriElse")
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, path)
    rows = con.execute(
        "SELECT kernel_id, metric_name, unit, kind, value_double, value_string, value_uint64, instance_values, "
        "instance_strings, instance_ids FROM metrics WHERE run_id = ?",
        [run],
    ).fetchall()
    stored = {(r[0], r[1]): r[2:] for r in rows}
    checked = 0
    for kid, a in enumerate(_actions(path)):
        for name in a.metric_names():
            m = a.metric_by_name(name)
            unit, kind, vd, vs, vu, iv, istr, ids = stored[(kid, name)]
            assert unit == m.unit()
            v = m.value()
            if m.kind() == ncu_report.IMetric.ValueKind_STRING:
                assert (kind, vs, vd) == ("string", v, None)
            elif v is None:
                assert vd is None and vs is None
            else:
                assert vd == float(v) or (math.isnan(vd) and math.isnan(float(v)))
                if m.kind() in (ncu_report.IMetric.ValueKind_UINT64, ncu_report.IMetric.ValueKind_UINT32):
                    assert vu == int(v)
            n = m.num_instances()
            if n:
                inst = [m.value(i) for i in range(n)]
                got = iv if iv is not None else istr
                assert len(got) == n
                for x, y in zip(got, inst, strict=True):
                    if isinstance(y, str):
                        assert x == y
                    elif y is None:
                        assert x is None
                    else:
                        assert x == float(y) or (math.isnan(x) and math.isnan(float(y)))
                if m.has_correlation_ids():
                    c = m.correlation_ids()
                    assert ids == [str(c.value(i)) for i in range(c.num_instances())]
            checked += 1
    assert checked > 6000


def test_nan_action_of_h800_is_kept_and_flagged(fixture_store: Path) -> None:
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, fixture("flyinglandlord"))
    rows = con.execute(
        "SELECT kernel_id, short_name, duration_ns, flags FROM kernels WHERE run_id = ? ORDER BY kernel_id", [run]
    ).fetchall()
    assert len(rows) == 5
    nan_rows = [r for r in rows if r[2] is not None and math.isnan(r[2])]
    assert [r[1] for r in nan_rows] == ["flash_fwd_kernel"]
    assert {"nan_duration", "zero_peak"} <= set(nan_rows[0][3])
    # its metrics are all stored, NaN kept as NaN (not 0, not NULL)
    n, n_nan = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE isnan(value_double)) FROM metrics WHERE run_id = ? AND kernel_id = ?",
        [run, nan_rows[0][0]],
    ).fetchone()
    assert n > 800 and n_nan > 100


def test_run_records_producer_command_line_and_derivation(fixture_store: Path) -> None:
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, fixture("flyinglandlord"))
    producer, cmd, cc, gpu, derivation = con.execute(
        "SELECT producer, command_line, compute_capability, gpu_name, derivation FROM runs WHERE run_id = ?", [run]
    ).fetchone()
    assert producer == "ncu 2023.3.0.0 (build 33266684) (public-release)"
    assert cmd.startswith("/usr/local/cuda-12.3/nsight-compute-2023.3.0/") and "--set full" in cmd
    assert (cc, gpu) == ("9.0", "NVIDIA H800")
    d = json.loads(derivation)
    # exact split counters are preferred over rate x duration, also for the NaN action
    assert d["bytes_dram"] == ["dram__bytes_read.sum + dram__bytes_write.sum"]
    assert d["flops_fp32"] == [
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed * smsp__cycles_elapsed.avg.per_second"
        " * duration + smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed * "
        "smsp__cycles_elapsed.avg.per_second * duration + 2*smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
        ".per_cycle_elapsed * smsp__cycles_elapsed.avg.per_second * duration"
    ]
    old = _run_id(con, fixture("wdmapp__gene-paper-artifacts-pop2020__roofline__time-flops"))
    assert con.execute("SELECT producer FROM runs WHERE run_id = ?", [old]).fetchone()[0].startswith("ncu (pre-2021.2")


def test_nvtx_paths(fixture_store: Path) -> None:
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, fixture("wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram"))
    path, stack = con.execute("SELECT nvtx_path, nvtx_stack FROM kernels WHERE run_id = ? AND kernel_id = 0", [run]).fetchone()
    assert stack == ["GENE", "gsub", "timeloop", "t_loop", "eRK_standard", "eRK_stage_1", "CalFRhs0", "dgdxy"]
    assert path == "<default domain>:" + "/".join(stack)
    run = _run_id(con, fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx"))
    paths = [r[0] for r in con.execute("SELECT nvtx_path FROM kernels WHERE run_id = ? ORDER BY kernel_id", [run]).fetchall()]
    assert paths[0] == "<default domain>:run_test/init_data"
    run = _run_id(con, fixture("AveryClapp__ESMM-Research__profile.ncu-rep"))
    assert con.execute("SELECT count(*) FROM kernels WHERE run_id = ? AND nvtx_path IS NOT NULL", [run]).fetchone()[0] == 0
