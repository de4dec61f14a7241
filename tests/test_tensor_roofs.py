"""Tensor-Core roofs: one rule for every architecture from Volta to Blackwell (DESIGN.md section 5, "Tensor roofs").

A kernel's tensor roof is the peak that ncu's SpeedOfLight_HierarchicalTensorRooflineChart pairs with the op path
carrying its tensor ops (the most ops when several do): the dense peak for dense ops. The metric names per
architecture come from ncu's own section file (tests/data/ncu_tensor_section_2025.txt) and from the fixture reports;
the fraction of that roof must equal ncu's own ``<metric>.sum.pct_of_peak_sustained_elapsed`` / 100.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest

from rooflake.ingest.derive import derive
from rooflake.schema.catalog import TensorPath

SECTION = Path(__file__).parent / "data" / "ncu_tensor_section_2025.txt"
CLOCK = 2.0e9  # Hz, sm__cycles_elapsed.avg.per_second of the synthetic kernels
T_NS = 1.0e6  # ns


def _section() -> dict[float, list[TensorPath]]:
    """Compute capability -> the op paths ncu's Tensor roofline section charts on it."""
    out: dict[float, list[TensorPath]] = defaultdict(list)
    for line in SECTION.read_text().splitlines():
        if line and not line.startswith("#"):
            cc, base = line.split()
            path = TensorPath.parse(base)
            assert path is not None, base
            out[float(cc)].append(path)
    return dict(out)


ARCHS = _section()


def _leaves(paths: list[TensorPath]) -> list[TensorPath]:
    return [p for p in paths if not any(p.covers(o) for o in paths)]


def _report(paths: list[TensorPath], ops: dict[TensorPath, float]) -> dict[str, float]:
    """Metric values of a synthetic kernel: ``ops`` on the given finest paths, and on every aggregate the sum of the
    paths it covers (as the hardware counts them); peaks as on Hopper: sparse = 2 x dense, an aggregate's peak the
    largest of its parts'."""
    v = {"gpu__time_duration.sum": T_NS, "sm__cycles_elapsed.avg.per_second": CLOCK}
    leaves = _leaves(paths)
    peak = {p: 1000.0 + 10 * i for i, p in enumerate(leaves)}
    peak |= {p: 2 * peak[p] for p in leaves if p.sparsity == "on"}
    for p in paths:
        parts = [p] if p in leaves else [q for q in leaves if p.covers(q)]
        v[f"{p.base}.sum"] = sum(ops.get(q, 0.0) for q in parts)
        v[f"{p.base}.sum.peak_sustained"] = max(peak[q] for q in parts)
    return v


def test_the_section_lists_every_architecture_from_turing_to_blackwell() -> None:
    assert sorted(ARCHS) == [7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 11.0, 12.0, 12.1]
    names = {p.base for paths in ARCHS.values() for p in paths}
    assert "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32" in names  # Turing
    assert "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off" in names  # Ampere, Ada
    assert {
        "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off",
        "sm__ops_path_tensor_src_fp16",
    } <= names  # Hopper
    assert "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32_sparsity_off" in names  # Blackwell


@pytest.mark.parametrize("cc", sorted(ARCHS))
def test_paths_partition_the_ops_and_roof_names_are_unique(cc: float) -> None:
    """Every path the section charts is either a finest path or an aggregate of finest paths, each finest path
    lies in exactly one coarsest one (so the sum over the coarsest counts every op once), and the roof names of the
    finest paths differ."""
    paths = ARCHS[cc]
    leaves = _leaves(paths)
    roots = [p for p in paths if not any(o.covers(p) for o in paths)]
    for leaf in leaves:
        assert sum(1 for r in roots if r == leaf or r.covers(leaf)) == 1, leaf.base
    for p in paths:
        assert p in leaves or any(p.covers(q) for q in leaves)
    assert len({p.roof for p in leaves}) == len(leaves)


@pytest.mark.parametrize(
    ("cc", "leaf"), [(cc, leaf) for cc, paths in sorted(ARCHS.items()) for leaf in _leaves(paths)], ids=str
)
def test_each_path_is_the_roof_of_a_kernel_that_runs_on_it(cc: float, leaf: TensorPath) -> None:
    """A kernel whose ops run on one path gets that path's own peak as its roof (as ncu pairs them), its ops counted
    once however many aggregates also count them, and its fraction of the roof = ops / T / peak."""
    paths = ARCHS[cc]
    v = _report(paths, {leaf: 3.0e9})
    d = derive(v, cc)
    assert d.quantities["flops_tensor"] == 3.0e9
    assert d.provenance["tensor_roof"] == leaf.roof
    roof = {c.ceiling: c for c in d.ceilings}[leaf.roof]
    assert roof.value == v[f"{leaf.base}.sum.peak_sustained"] * CLOCK
    assert roof.formula == f"{leaf.base}.sum.peak_sustained * sm__cycles_elapsed.avg.per_second"


TYPICAL = [  # (cc, the path of a dense FP16-in kernel, or FP8 where named, and its roof's name)
    (7.5, "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32", "TENSOR FP16/BF16/TF32→FP32"),
    (8.0, "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off", "TENSOR FP16→FP32"),
    (8.6, "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off", "TENSOR FP16→FP32"),
    (8.9, "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off", "TENSOR FP16→FP32"),
    (8.9, "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on", "TENSOR FP16→FP32 SPARSE"),
    (9.0, "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off", "TENSOR FP16 HGMMA"),
    (9.0, "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off", "TENSOR FP16→FP32 HMMA"),
    (9.0, "sm__ops_path_tensor_src_fp8_sparsity_off", "TENSOR FP8"),
    (10.0, "sm__ops_path_tensor_op_utchmma_src_fp16_dst_fp32_sparsity_off", "TENSOR FP16→FP32 UTCHMMA"),
    (
        10.0,
        "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32_sparsity_off",
        "TENSOR FP4/FP6/FP8→FP32 UTCQMMA",
    ),
    (10.3, "sm__ops_path_tensor_op_utcqmma_src_fp8_dst_fp32_sparsity_off", "TENSOR FP8→FP32 UTCQMMA"),
    (12.0, "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off", "TENSOR FP16→FP32 HMMA"),
    (12.0, "sm__ops_path_tensor_src_fp8_dst_fp32_sparsity_off", "TENSOR FP8→FP32"),
]


@pytest.mark.parametrize(("cc", "base", "roof"), TYPICAL, ids=lambda x: str(x))
def test_the_roof_name_says_the_source_type(cc: float, base: str, roof: str) -> None:
    path = TensorPath.parse(base)
    assert path is not None and path in ARCHS[cc] and path.roof == roof
    d = derive(_report(ARCHS[cc], {path: 1e9}), cc)
    assert d.provenance["tensor_roof"] == roof


def test_hopper_dense_hgmma_kernel_gets_the_dense_peak_not_the_aggregate() -> None:
    """On Hopper the aggregate src_fp16's peak is the largest of its paths' (the 2:4-sparse HGMMA one); a dense
    HGMMA kernel's roof is its own path's peak (test_derive checks the factor 2 on the H100 fixture)."""
    hgmma = TensorPath.parse("sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off")
    assert hgmma is not None
    v = _report(ARCHS[9.0], {hgmma: 5e9})
    d = derive(v, 9.0)
    roof = {c.ceiling: c.value for c in d.ceilings}[d.provenance["tensor_roof"]]
    assert roof == v[f"{hgmma.base}.sum.peak_sustained"] * CLOCK
    assert roof < v["sm__ops_path_tensor_src_fp16.sum.peak_sustained"] * CLOCK  # half of it on a real H100
    assert d.quantities["flops_tensor"] == 5e9  # not 10e9: the aggregate and its split are never both added


def test_the_path_with_most_ops_wins_and_all_ops_count() -> None:
    paths = ARCHS[8.9]
    fp16 = TensorPath.parse("sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off")
    tf32 = TensorPath.parse("sm__ops_path_tensor_src_tf32_dst_fp32_sparsity_off")
    assert fp16 is not None and tf32 is not None
    d = derive(_report(paths, {fp16: 1e9, tf32: 4e9}), 8.9)
    assert d.provenance["tensor_roof"] == "TENSOR TF32→FP32"
    assert d.quantities["flops_tensor"] == 5e9


def test_rates_only_report_counts_rate_times_clock_times_duration() -> None:
    base = "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off"
    v = {
        "gpu__time_duration.sum": T_NS,
        "sm__cycles_elapsed.avg.per_second": CLOCK,
        f"{base}.sum.per_cycle_elapsed": 1000.0,
        f"{base}.sum.peak_sustained": 4000.0,
    }
    d = derive(v, 8.9)
    assert d.quantities["flops_tensor"] == pytest.approx(1000.0 * CLOCK * T_NS * 1e-9, rel=1e-15)
    assert d.provenance["tensor_roof"] == "TENSOR FP16→FP32"


def test_volta_tensor_pipe_times_512() -> None:
    """Volta (and ncu sections before 2023.2): sm__inst_executed_pipe_tensor x 512, roof peak x 512 x clock."""
    v = {
        "gpu__time_duration.sum": T_NS,
        "sm__cycles_elapsed.avg.per_second": CLOCK,
        "smsp__inst_executed_pipe_tensor.sum": 1e6,
        "sm__inst_executed_pipe_tensor.sum.peak_sustained": 640.0,
    }
    d = derive(v, 7.0)
    assert d.quantities["flops_tensor"] == 512e6
    assert d.provenance["tensor_roof"] == "TENSOR FP16"
    assert [c.value for c in d.ceilings if c.ceiling == "TENSOR FP16"] == [640 * 512 * CLOCK]
    assert (
        derive({**v, "smsp__inst_executed_pipe_tensor.sum": 0.0}, 7.0)
        .provenance["tensor_roof"]
        .startswith("NULL: no Tensor-Core op")
    )


def test_no_tensor_metrics_say_which_and_how_to_collect() -> None:
    d = derive({"gpu__time_duration.sum": T_NS, "sm__cycles_elapsed.avg.per_second": CLOCK}, 8.9)
    assert d.quantities["flops_tensor"] is None
    for reason in (d.provenance["flops_tensor"], d.provenance["tensor_roof"]):
        assert reason.startswith("NULL: missing the Tensor-Core op counts sm__ops_path_tensor_*")
        assert "SpeedOfLight_HierarchicalTensorRooflineChart" in reason


# ---------------------------------------------------------------------------------------- real reports (fixtures)

FA_FULL = (
    "Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before_n4096_full",
    "Bias92__flashattn-cuda__docs__profiling__ncu_sections__db_full_after_n4096_full",
)
FA_BARE = (
    "Bias92__flashattn-cuda__docs__profiling__ncu__fa3_before_n4096",
    "Bias92__flashattn-cuda__docs__profiling__ncu__db_full_after_n4096",
)
FA_OPS = 4 * 1 * 8 * 4096**2 * 64  # 4 B H N^2 D: QK^T and PV, 2 FLOP per multiply-add
FA_PATH = "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off"


def _con(store: Path):  # -> duckdb connection over the store
    from rooflake import queries
    from rooflake.store import Store

    return queries.connect(Store(store))


def _run(con, name: str) -> str:
    from _support import fixture

    return con.execute(
        "SELECT run_id FROM runs WHERE source_path = ?", [str(fixture(name).resolve())]
    ).fetchall()[0][0]


def _metric(con, run: str, name: str) -> float:
    return con.execute(
        "SELECT value_double FROM metrics WHERE run_id = ? AND kernel_id = 0 AND metric_name = ?", [run, name]
    ).fetchall()[0][0]


@pytest.mark.parametrize("name", FA_FULL)
def test_flashattention_tensor_roof_and_fraction_equal_ncus(fixture_store: Path, name: str) -> None:
    """The mma.sync FP16->FP32 kernel: its roof is the dense FP16->FP32 peak, its fraction of it is ncu's own
    pct_of_peak_sustained_elapsed of the same metric, it is bound by that roof and its dominant precision is tensor."""
    con = _con(fixture_store)
    run = _run(con, name)
    row = con.execute(
        "SELECT * FROM kernel_roofline WHERE run_id = ? AND kernel_id = 0 AND precision = 'tensor'", [run]
    ).fetchall()[0]
    cols = [d[0] for d in con.description]
    r = dict(zip(cols, row, strict=True))
    assert r["flops"] == FA_OPS == _metric(con, run, f"{FA_PATH}.sum") == 34_359_738_368
    roof = con.execute(
        "SELECT ceiling, value FROM ceilings WHERE run_id = ? AND kernel_id = 0 AND ceiling = 'TENSOR FP16→FP32'",
        [run],
    ).fetchall()[0]
    peak = _metric(con, run, f"{FA_PATH}.sum.peak_sustained") * _metric(
        con, run, "sm__cycles_elapsed.avg.per_second"
    )
    assert roof[1] == peak == r["peak_flops_per_s"]
    assert r["is_dominant"] and r["bound"] == "TENSOR" and r["attainable_flops_per_s"] == peak
    pct = _metric(con, run, f"{FA_PATH}.sum.pct_of_peak_sustained_elapsed")
    assert math.isclose(r["fraction_of_roof"], pct / 100, rel_tol=1e-9)
    kr = con.execute("SELECT tensor_roof, peak_tensor FROM kernel_roofs WHERE run_id = ?", [run]).fetchall()[
        0
    ]
    assert kr == ("TENSOR FP16→FP32", peak)
    rr = con.execute("SELECT tensor_roof, peak_tensor FROM run_roofs WHERE run_id = ?", [run]).fetchall()[0]
    assert rr == ("TENSOR FP16→FP32", peak)  # one kernel: the median of one peak


def test_flashattention_measured_numbers(fixture_store: Path) -> None:
    """The figures of the before/after pair (RTX 4060 Ti, ncu 2025.4.1), as ncu reports them."""
    con = _con(fixture_store)
    got = {}
    for name in FA_FULL:
        run = _run(con, name)
        got[name] = con.execute(
            "SELECT duration_ns, fraction_of_roof, peak_flops_per_s FROM kernel_roofline "
            "WHERE run_id = ? AND precision = 'tensor'",
            [run],
        ).fetchall()[0]
    (t0, f0, p0), (t1, f1, p1) = got[FA_FULL[0]], got[FA_FULL[1]]
    assert (t0, t1) == (1_389_856.0, 989_088.0)
    assert round(f0, 6) == 0.615297 and round(f1, 6) == 0.866690  # ncu: 61.53 % and 86.67 %
    assert round(p0 / 1e12, 2) == 40.18 and round(p1 / 1e12, 2) == 40.08  # TFLOP/s at the profiled clocks


def test_hopper_report_without_tensor_ops_has_the_dense_roofs_and_no_kernel_roof(fixture_store: Path) -> None:
    con = _con(fixture_store)
    run = _run(con, "AlpriElse")
    roofs = dict(con.execute("SELECT ceiling, value FROM run_ceilings WHERE run_id = ?", [run]).fetchall())
    clock = _metric(con, run, "sm__cycles_elapsed.avg.per_second")
    dense = _metric(con, run, "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained")
    assert math.isclose(roofs["TENSOR FP16 HGMMA"], dense * clock, rel_tol=1e-9)
    assert "TENSOR FP16" not in roofs  # the aggregate's peak is the sparse one: no roof of its own
    assert con.execute("SELECT tensor_roof, peak_tensor FROM run_roofs WHERE run_id = ?", [run]).fetchall()[
        0
    ] == (
        None,
        None,
    )


@pytest.mark.parametrize("name", FA_BARE)
def test_report_without_tensor_metrics_says_what_is_missing(fixture_store: Path, name: str) -> None:
    """Profiled with SpeedOfLight + Occupancy only: no FLOP count at all (NULL, not 0), the reason names the missing
    metrics and how to collect them, and the kernel is no zero-FLOP kernel."""
    con = _con(fixture_store)
    run = _run(con, name)
    flops, prov = con.execute(
        "SELECT flops_tensor, provenance FROM kernels WHERE run_id = ? AND kernel_id = 0", [run]
    ).fetchall()[0]
    assert flops is None
    assert "sm__ops_path_tensor_*" in prov["flops_tensor"]
    assert "SpeedOfLight_HierarchicalTensorRooflineChart" in prov["tensor_roof"]
    assert not con.execute(
        "SELECT count(*) FROM kernel_roofline WHERE run_id = ? AND zero_flops", [run]
    ).fetchall()[0][0]


def _compare_kernels(store: Path, base: str, new: str) -> list[dict]:
    """compare_kernels rows through the library's compare function (rooflake.views.compare, or its older home)."""
    from rooflake.store import Store

    try:
        from rooflake.views.compare import compare
    except ImportError:  # before the views layer
        from rooflake.queries import compare as old

        return old(Store(store), base, new)["kernels"].to_pylist()
    return compare(Store(store), base, new).kernels.to_pylist()


def test_before_after_pair_compares_as_it_should(fixture_store: Path) -> None:
    """The optimised kernel has a new name; it is paired with the old one: same tensor ops, 1.39 -> 0.99 ms, a
    higher fraction of the same FP16->FP32 roof."""
    con = _con(fixture_store)
    before, after = (_run(con, n) for n in FA_FULL)
    (row,) = _compare_kernels(fixture_store, before, after)
    assert row["status"] == "renamed"
    assert row["name"].startswith("void fa3_fwd_kernel") and row["new_name"].startswith(
        "void fa3db_full_fwd_kernel"
    )
    assert row["base_precision"] == row["new_precision"] == "tensor"
    assert row["base_flops"] == row["new_flops"] == FA_OPS
    assert (row["base_time_ns"], row["new_time_ns"]) == (1_389_856.0, 989_088.0)
    assert row["base_bound"] == row["new_bound"] == "TENSOR"
    assert (
        round(row["base_fraction_of_roof"], 4) == 0.6153 and round(row["new_fraction_of_roof"], 4) == 0.8667
    )


def test_before_after_pair_without_counters_counts_nothing(fixture_store: Path) -> None:
    """Without counters the work cannot be compared: no pairing by guess, and no FLOP count (NULL, never 0)."""
    con = _con(fixture_store)
    before, after = (_run(con, n) for n in FA_BARE)
    rows = {r["status"]: r for r in _compare_kernels(fixture_store, before, after)}
    assert sorted(rows) == ["new", "removed"]
    assert rows["removed"]["base_time_ns"] == 1_377_376.0 and rows["new"]["new_time_ns"] == 987_296.0
    assert rows["removed"]["base_flops"] is None and rows["new"]["new_flops"] is None
    assert rows["removed"]["base_fraction_of_roof"] is None and rows["new"]["new_fraction_of_roof"] is None


@pytest.mark.parametrize("name", FA_BARE)
def test_rl_roofline_of_a_report_without_tensor_metrics_names_them(
    fixture_store: Path, tmp_path: Path, name: str
):
    """`rl roofline` on the section-less report: one Error line naming the missing tensor metrics and how to collect
    them, no chart, and no '0 FLOP' anywhere."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    run = _run(_con(fixture_store), name)
    out = tmp_path / "roofline.html"
    r = CliRunner().invoke(app, ["roofline", run, "--store", str(fixture_store), "--out", str(out)])
    text = r.stdout + (r.stderr or "")
    assert r.exit_code == 1 and text.count("Error:") == 1 and not out.exists()
    assert "flops_tensor: missing the Tensor-Core op counts sm__ops_path_tensor_*" in text
    assert "--section SpeedOfLight_HierarchicalTensorRooflineChart" in text
    assert "0 FLOP" not in text and "zero-FLOP" not in text
