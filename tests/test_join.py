"""nsys x ncu join (nsys_ncu_match) and per-layer rooflines: golden tests on tiny runs built in code."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.store import Store
from rooflake.views.layers import layers, match_runs
from rooflake.views.roofline import roofline

from _support import fixture, tiny_run

P1, P2, P3, P9 = (f"<default domain>:model/{x}" for x in ("p1", "p2", "p3", "p9"))


def _k(kid: int, name: str, path: str | None, **kw: object) -> dict:
    stack = path.split(":", 1)[1].split("/") if path else None
    return {"kernel_id": kid, "name": name, "short_name": name, "nvtx_path": path, "nvtx_stack": stack,
            "nvtx_domain": "<default domain>" if path else None, **kw}  # fmt: skip


NCU = [
    _k(0, "A", P1, flops_fp32=100.0, bytes_dram=10.0, duration_ns=5.0),
    _k(1, "A", P1, flops_fp32=110.0, bytes_dram=11.0, duration_ns=5.0),
    _k(2, "B", P2, flops_fp32=200.0, bytes_dram=20.0, duration_ns=5.0),
    _k(3, "C", P9, flops_fp32=300.0, bytes_dram=30.0, duration_ns=5.0),  # profiled under another path
    _k(4, "D", P1, flops_fp32=400.0, bytes_dram=40.0, duration_ns=5.0),  # never launched in the nsys run
]
NSYS = [
    _k(0, "A", P1, start_ns=0, duration_ns=1000.0, device_id=0),
    _k(1, "A", P1, start_ns=10, duration_ns=1000.0, device_id=0),
    _k(2, "A", P1, start_ns=20, duration_ns=1000.0, device_id=0),  # a third launch: ncu's mean per launch
    _k(3, "B", P2, start_ns=30, duration_ns=2000.0, device_id=0),
    _k(4, "C", P3, start_ns=40, duration_ns=3000.0, device_id=0),
    _k(5, "E", P1, start_ns=50, duration_ns=4000.0, device_id=0),  # ncu never profiled it
]
EXPECTED = {  # nsys kernel -> (ncu kernel, match, flops_fp32)
    0: (0, "path_name_occurrence", 100.0),
    1: (1, "path_name_occurrence", 110.0),
    2: (None, "name_mean", 105.0),
    3: (2, "path_name_occurrence", 200.0),
    4: (3, "name_occurrence", 300.0),
    5: (None, None, None),
}


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    ceilings = [
        {"kernel_id": 0, "ceiling": "DRAM", "value": 1e12},
        {"kernel_id": 0, "ceiling": "FP32", "value": 1e13},
    ]
    tiny_run(tmp_path, "c" * 16, NCU, ceilings, source_format="ncu-rep")
    tiny_run(tmp_path, "d" * 16, NSYS, [], source_format="nsys-sqlite")
    return Store(tmp_path)


def test_match(store: Store) -> None:
    m = match_runs(store, "d", "c")
    got = {r["kernel_id"]: (r["ncu_kernel_id"], r["match"], r["flops_fp32"]) for r in m.kernels.to_pylist()}
    assert got == EXPECTED
    assert [r["name"] for r in m.unmatched_nsys.to_pylist()] == ["E"]
    assert [r["kernel_id"] for r in m.unmatched_ncu.to_pylist()] == [4]
    summary = {r["match"]: (r["launches"], r["kernel_time_ns"]) for r in m.summary.to_pylist()}
    assert summary == {
        "path_name_occurrence": (3, 4000.0),
        "name_occurrence": (1, 3000.0),
        "name_mean": (1, 1000.0),
        "unmatched": (1, 4000.0),
    }


def test_time_weighted_layers(store: Store) -> None:
    res = layers(store, "d", depth=2, with_run="c")
    rows = {r["layer"]: r for r in res.table.to_pylist()}
    p1 = rows[P1]
    assert p1["launches"] == 4 and p1["kernel_time_ns"] == 7000.0
    assert p1["flops_fp32"] == 100 + 110 + 105  # E has no counters: not 0, left out of the sum
    # E (no counters) is left out of FLOPs and of the time they are divided by, and the layer says so
    assert (p1["launches_with_counters"], p1["counted_time_ns"], p1["counters_complete"]) == (
        3,
        3000.0,
        False,
    )
    assert p1["flops_per_s"] == pytest.approx((100 + 110 + 105) * 1e9 / 3000)
    assert rows[P3]["flops_fp32"] == 300.0 and rows[P3]["ai_dram"] == 10.0
    # without --with the nsys run has no counters at all
    plain = {r["layer"]: r for r in layers(store, "d", depth=2).table.to_pylist()}
    assert plain[P1]["flops"] is None


def test_layer_points_and_chart(store: Store, tmp_path: Path) -> None:
    data = roofline(store, "d", grain="layer", depth=2, with_run="c")
    dominant = [r for r in data.points.to_pylist() if r["is_dominant"]]
    assert sorted(r["name"] for r in dominant) == [P1, P2, P3]
    p2 = next(r for r in dominant if r["name"] == P2)
    assert p2["ai_dram"] == 10.0 and p2["achieved_flops_per_s"] == pytest.approx(200 * 1e9 / 2000)
    assert p2["attainable_dram"] == pytest.approx(min(1e13, 10.0 * 1e12))
    assert p2["attainable_l1"] is None  # no L1 roof: not "at peak"
    assert p2["bound"] == "FP32" and p2["fraction_of_roof"] == pytest.approx(1e8 / 1e13)
    p1 = next(r for r in dominant if r["name"] == P1)
    assert p1["flags"] == ["counters_incomplete"]
    out = tmp_path / "layers.svg"
    r = CliRunner().invoke(
        app,
        [
            "roofline",
            "d",
            "--by",
            "layer",
            "--depth",
            "2",
            "--with",
            "c",
            "--store",
            str(store.root),
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes().lstrip().startswith(b"<svg")


def test_layers_of_a_real_ncu_run_with_an_nvtx_stack(tmp_path: Path) -> None:
    """GENE (V100, NERSC split run): 8 kernels under GENE/.../eRK_standard/eRK_stage_<1..4>/CalFRhs0/dgdxy."""
    r = CliRunner().invoke(
        app,
        [
            "ingest",
            str(fixture("wdmapp__gene-paper-artifacts-pop2020__roofline__time-flops")),
            "--store",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 0
    (row,) = layers(Store(tmp_path), None, depth=5).table.to_pylist()
    assert row["layer"].endswith("/t_loop/eRK_standard") and row["launches"] == 8 and row["flops_fp64"] > 0
    stages = layers(Store(tmp_path), None, depth=8).table.to_pylist()
    assert sorted(r["layer"].split("/")[5] for r in stages) == [f"eRK_stage_{i}" for i in range(1, 5)]
    assert all(r["launches"] == 2 for r in stages)
    assert sum(r["share_of_gpu_time"] for r in stages) == pytest.approx(1.0)


def test_with_names_a_pair_of_a_trace_and_an_ncu_run(store: Store) -> None:
    """Either order names the same pair (the trace's layers, the ncu run's counters); two runs of one kind are a
    usage error naming the run of the wrong kind."""
    run = CliRunner().invoke
    there = ["--store", str(store.root), "-f", "csv"]
    one, other = (
        run(app, ["layers", "d", "--with", "c", *there]),
        run(app, ["layers", "c", "--with", "d", *there]),
    )
    assert one.exit_code == other.exit_code == 0, one.output + other.output
    assert one.stdout == other.stdout and "p1" in one.stdout
    r = run(app, ["layers", "c", "--with", "c", "--store", str(store.root)])
    assert r.exit_code == 1
    assert r.stderr.startswith(
        "Error: run cccccccccccccccc is a ncu-rep run: the layer run must be a trace (Nsight Systems or "
        "torch.profiler)"
    )
    r = run(app, ["layers", "d", "--with", "d", "--store", str(store.root)])
    assert r.exit_code == 1
    assert r.stderr.startswith(
        "Error: run dddddddddddddddd (--with) is a nsys-sqlite run: it must be an Nsight"
    )


@pytest.mark.parametrize(("args", "option", "reason"), [
    (["layers", "d", "-m", "["], "--match '['", "missing ]"),
    (["layers", "d", "--match", "(?=p1)"], "--match '(?=p1)'", "invalid perl operator"),
    (["trajectory", "--vary", "batch", "--layer", "model/("], "--layer 'model/('", "missing )"),
    (["layers", "d", "-m", r"p\d+("], r"--match 'p\d+('", r"missing ): p\d+("),  # as typed, not a repr
    (["layers", "d", "-m", "\r("], r"--match '\r('", r"missing ): \r("),  # one line, the reason whole
])  # fmt: skip
def test_a_pattern_that_is_no_regular_expression_is_a_usage_error(
    store: Store, args: list[str], option: str, reason: str
) -> None:
    """DuckDB (RE2) refused the pattern halfway through the query: exit 1 with its error after the query's name. Now
    a usage error before any query, naming the option, with RE2's reason: exit 2, one line."""
    r = CliRunner().invoke(app, [*args, "--store", str(store.root)])
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"Error: {option}: not a regular expression (") and reason in line
    assert CliRunner().invoke(app, ["layers", "d", "-m", "p[12]", "--store", str(store.root)]).exit_code == 0


def test_unmatched_names_on_the_terminal(tmp_path: Path) -> None:
    """`rl layers RUN --with NCU_RUN` lists the kernels no ncu kernel matched: one without a name (a dangling
    StringIds id) ended in a TypeError traceback; a name's escape codes reached the terminal as they were."""
    nsys = [
        _k(0, "A", P1, start_ns=0, duration_ns=1000.0, device_id=0),
        _k(1, None, P1, start_ns=10, duration_ns=1000.0, device_id=0),
        _k(2, "\x1b[31mRED\x07", P1, start_ns=20, duration_ns=1000.0, device_id=0),
    ]
    ncu = [_k(0, "A", P1, flops_fp32=100.0, bytes_dram=10.0, duration_ns=5.0),
           _k(1, "\x1b]0;title\x07", P1, flops_fp32=1.0, bytes_dram=1.0, duration_ns=5.0)]  # fmt: skip
    tiny_run(tmp_path, "c" * 16, ncu, [], source_format="ncu-rep")
    tiny_run(tmp_path, "d" * 16, nsys, [], source_format="nsys-sqlite")
    r = CliRunner().invoke(app, ["layers", "d", "--with", "c", "--store", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "not profiled by ncu: (no name) (1 launches)" in r.stdout
    assert "not profiled by ncu: \\x1b[31mRED\\x07 (1 launches)" in r.stdout
    assert "matched no nsys launch: \\x1b]0;title\\x07" in r.stdout
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
