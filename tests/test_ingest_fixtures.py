"""Every fixture report ingests whole; kernel and metric counts equal what ncu_report itself reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ncu_report
import pytest

from rooflake import queries
from rooflake.store import Store

from _support import NCU_REPORTS, api_values, fixture


def _actions(path: Path) -> list:
    ctx = ncu_report.load_report(str(path))
    return [
        ctx.range_by_idx(r).action_by_idx(a)
        for r in range(ctx.num_ranges())
        for a in range(ctx.range_by_idx(r).num_actions())
    ]


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
    assert (
        n_kernels
        == len(actions)
        == con.execute("SELECT count(*) FROM kernels WHERE run_id = ?", [run]).fetchone()[0]
    )
    expected_metrics = sum(len(a.metric_names()) for a in actions)
    assert n_metrics == expected_metrics
    assert (
        con.execute("SELECT count(*) FROM metrics WHERE run_id = ?", [run]).fetchone()[0] == expected_metrics
    )
    # names: demangled, function base name, mangled as the API gives them
    names = con.execute(
        "SELECT name, short_name, mangled_name FROM kernels WHERE run_id = ? ORDER BY kernel_id", [run]
    ).fetchall()
    for (name, short, mangled), a in zip(names, actions, strict=True):
        assert name == a.name(ncu_report.IAction.NameBase_DEMANGLED)
        assert short == a.name(ncu_report.IAction.NameBase_FUNCTION)
        assert mangled == a.name(ncu_report.IAction.NameBase_MANGLED)


def _same(stored: object, api: object) -> bool:
    if isinstance(api, str) and api in ("nan", "inf", "-inf"):
        return isinstance(stored, float) and repr(stored) == api
    if isinstance(api, str):
        return stored == api
    if api is None:
        return stored is None
    return stored == float(api)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name",
    ["AlpriElse", "eschnett", "panjd123", "wdmapp__gene-paper-artifacts-pop2020__roofline__time-flops"],
)
def test_every_value_unit_and_instance_is_lossless(fixture_store: Path, name: str) -> None:
    """Every metric: unit, kind-dispatched value and instance values equal the API's in a fresh process (these
    four reports are among those whose units ncu_report gets wrong after another report was loaded)."""
    path = fixture(name)
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, path)
    rows = con.execute(
        "SELECT kernel_id, metric_name, unit, kind, value_double, value_string, value_uint64, instance_values, "
        "instance_strings, instance_ids FROM metrics WHERE run_id = ?",
        [run],
    ).fetchall()
    stored = {(r[0], r[1]): r[2:] for r in rows}
    api = api_values(path)
    assert len(api) == len(stored)
    for kid, metric, unit, kind, value, inst, ids in api:
        s_unit, s_kind, vd, vs, vu, iv, istr, s_ids = stored[(kid, metric)]
        assert s_unit == unit, (kid, metric)
        if (
            kind == ncu_report.IMetric.ValueKind_STRING
            or isinstance(value, str)
            and value not in ("nan", "inf", "-inf")
        ):
            assert (s_kind, vs, vd) == ("string", value, None), (kid, metric)
        else:
            assert _same(vd, value), (kid, metric, vd, value)
            if (
                kind in (ncu_report.IMetric.ValueKind_UINT64, ncu_report.IMetric.ValueKind_UINT32)
                and value is not None
            ):
                assert vu == int(value)
        if inst:
            got = iv if iv is not None else istr
            assert len(got) == len(inst) and all(_same(x, y) for x, y in zip(got, inst, strict=True)), (
                kid,
                metric,
            )
        assert s_ids == ids, (kid, metric)


def test_second_report_in_one_process_keeps_its_units(tmp_path: Path) -> None:
    """ncu_report returns wrong units for a report loaded after another one; rooflake reads it in a fresh process."""
    from rooflake.pipeline import ingest_file

    first, second = fixture("LakshyaSingh354"), fixture("eschnett")
    ingest_file(first, tmp_path)
    res = ingest_file(second, tmp_path)
    con = queries.connect(Store(tmp_path))
    units = dict(
        con.execute(
            "SELECT metric_name, unit FROM metrics WHERE run_id = ? AND kernel_id = 0", [res.run_id]
        ).fetchall()
    )
    expected = {name: unit for kid, name, unit, *_ in api_values(second) if kid == 0}
    assert units == expected


def test_nan_action_of_h800_is_kept_and_flagged(fixture_store: Path) -> None:
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, fixture("flyinglandlord"))
    rows = con.execute(
        "SELECT kernel_id, short_name, duration_ns, flags FROM kernels WHERE run_id = ? ORDER BY kernel_id",
        [run],
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
        "SELECT producer, command_line, compute_capability, gpu_name, derivation FROM runs WHERE run_id = ?",
        [run],
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
    assert (
        con.execute("SELECT producer FROM runs WHERE run_id = ?", [old])
        .fetchone()[0]
        .startswith("ncu (pre-2021.2")
    )


def test_nvtx_paths(fixture_store: Path) -> None:
    con = queries.connect(Store(fixture_store))
    run = _run_id(con, fixture("wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram"))
    path, stack = con.execute(
        "SELECT nvtx_path, nvtx_stack FROM kernels WHERE run_id = ? AND kernel_id = 0", [run]
    ).fetchone()
    assert stack == ["GENE", "gsub", "timeloop", "t_loop", "eRK_standard", "eRK_stage_1", "CalFRhs0", "dgdxy"]
    assert path == "<default domain>:" + "/".join(stack)
    run = _run_id(con, fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx"))
    paths = [
        r[0]
        for r in con.execute(
            "SELECT nvtx_path FROM kernels WHERE run_id = ? ORDER BY kernel_id", [run]
        ).fetchall()
    ]
    assert paths[0] == "<default domain>:run_test/init_data"
    run = _run_id(con, fixture("AveryClapp__ESMM-Research__profile.ncu-rep"))
    assert (
        con.execute(
            "SELECT count(*) FROM kernels WHERE run_id = ? AND nvtx_path IS NOT NULL", [run]
        ).fetchone()[0]
        == 0
    )
