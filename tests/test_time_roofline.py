"""Time-based roofline (Wang et al., arXiv 2009.04598): the time_roofline and launch_overhead queries on tiny tables
built in code (expected values by hand), the view's choice of t_o, the chart specs, and `rl roofline --time` end to
end on a real report."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.render.time_roofline import (
    complexity_plane_chart,
    time_roofline_chart,
    time_vs_complexity_chart,
)
from rooflake.schema import RooflineDataError, UsageError
from rooflake.schema.duck import fetch_arrow
from rooflake.store import Store
from rooflake.views.time_roofline import (
    DEFAULT_LAUNCH_OVERHEAD_NS,
    LaunchOverhead,
    launch_overhead,
    time_roofline,
    time_rows,
)

from _support import NCU, tiny_run

# one machine: DRAM 1 TB/s, L2 4 TB/s, L1 16 TB/s, FP32 10 TFLOP/s, FP64 5 TFLOP/s; t_o = 2 us
CEIL = {"DRAM": 1e12, "L2": 4e12, "L1": 16e12, "FP32": 10e12, "FP64": 5e12}
T_O = 2000.0
RUN = "a" * 16


def _ceilings(kernel_ids: list[int]) -> list[dict]:
    return [{"kernel_id": k, "ceiling": c, "value": v} for k in kernel_ids for c, v in CEIL.items()]


def _k(kid: int, name: str, t: float, fp32: float | None, q: tuple[Any, Any, Any], **kw: Any) -> dict:
    return {"kernel_id": kid, "name": name, "short_name": name, "duration_ns": t, "flops_fp32": fp32,
            "bytes_l1": q[0], "bytes_l2": q[1], "bytes_dram": q[2], "device_id": 0, **kw}  # fmt: skip


KERNELS = [
    # compute-bound: F/P = 1e10 / 1e13 s = 1e6 ns; L1 62,500 ns, L2 25,000 ns, DRAM 10,000 ns; T = 2e6 -> s = 2
    _k(0, "gemm", 2e6, 1e10, (1e9, 1e8, 1e7)),
    # DRAM-bound: F/P 10,000 ns; L1 250,000; L2 1e6; DRAM 4e6 ns; T = 5e6 -> s = 1.25
    _k(1, "stream", 5e6, 1e8, (4e9, 4e9, 4e9)),
    # launch-bound: F/P 0.1 ns, DRAM 1 ns, L1 0.125 ns, L2 0.25 ns < t_o = 2000 ns; T = 2500 -> s = 1.25
    _k(2, "tiny", 2500.0, 1e3, (2e3, 1e3, 1e3)),
    # FP32 is the larger count (dominant) but FP64 binds: 1.5e9 / 1e13 = 150,000 ns < 1e9 / 5e12 = 200,000 ns
    _k(3, "mixed", 4e5, 1.5e9, (None, None, 1e7), flops_fp64=1e9),
    # no counters (an nsys kernel): every term unknown -> NULL T_min, s and bound
    _k(4, "nocounters", 1e4, None, (None, None, None)),
    # failed replay: T_min known, s unknown
    _k(5, "nan", float("nan"), 1e10, (None, None, 1e7)),
    # faster than its bound: a physics violation, flagged
    _k(6, "impossible", 5e5, 1e10, (None, None, 1e7)),
]


def _rows(store_root: Path, run_id: str = RUN, t_o: float = T_O, source: str = "option") -> pl.DataFrame:
    df = pl.from_arrow(time_rows(Store(store_root), run_id, LaunchOverhead(t_o, source)))
    assert isinstance(df, pl.DataFrame)
    return df


@pytest.fixture()
def rows(tmp_path: Path) -> pl.DataFrame:
    tiny_run(tmp_path, RUN, [dict(k) for k in KERNELS], _ceilings(list(range(len(KERNELS)))))
    return _rows(tmp_path)


def _kernel(rows: pl.DataFrame, kid: int) -> dict:
    return rows.filter((pl.col("grain") == "kernel") & (pl.col("kernel_id") == kid)).row(0, named=True)


# --------------------------------------------------------------------------------------------------- query


def test_query_is_parameterized_not_a_view() -> None:
    assert queries.parameters("time_roofline") == ["run_id", "launch_overhead_ns", "launch_overhead_source"]
    assert "time_roofline" not in queries.views() and "launch_overhead" in queries.views()


def test_compute_bound(rows: pl.DataFrame) -> None:
    r = _kernel(rows, 0)
    assert r["compute_time_ns"] == pytest.approx(1e6) and r["dram_time_ns"] == pytest.approx(1e4)
    assert r["l1_time_ns"] == pytest.approx(62500) and r["l2_time_ns"] == pytest.approx(25000)
    assert r["t_min_ns"] == pytest.approx(1e6) and r["inefficiency"] == pytest.approx(2.0)
    assert r["bound"] == "FP32" and r["precision"] == "fp32" and r["peak_flops_per_s"] == 10e12
    assert r["bw_dram"] == 1e12 and r["unknown_terms"] == [] and not r["below_bound"]
    assert r["launch_overhead_ns"] == T_O and r["launch_overhead_source"] == "option"
    assert r["overhead_floor_ns"] == T_O and r["n_kernels"] == 1 and r["n_counted"] == 1


def test_dram_bound(rows: pl.DataFrame) -> None:
    r = _kernel(rows, 1)
    assert r["dram_time_ns"] == pytest.approx(4e6) and r["l2_time_ns"] == pytest.approx(1e6)
    assert r["t_min_ns"] == pytest.approx(4e6) and r["inefficiency"] == pytest.approx(1.25)
    assert r["bound"] == "DRAM"


def test_launch_bound(rows: pl.DataFrame) -> None:
    r = _kernel(rows, 2)
    assert r["compute_time_ns"] == pytest.approx(0.1) and r["dram_time_ns"] == pytest.approx(1.0)
    assert r["t_min_ns"] == T_O and r["inefficiency"] == pytest.approx(1.25)
    assert r["bound"] == "launch_overhead"


def test_compute_term_is_the_slowest_pipe(rows: pl.DataFrame) -> None:
    r = _kernel(rows, 3)
    assert r["precision"] == "fp64" and r["flops"] == 1e9 and r["peak_flops_per_s"] == 5e12
    assert (
        r["t_min_ns"] == pytest.approx(2e5) and r["bound"] == "FP64" and r["inefficiency"] == pytest.approx(2)
    )
    assert r["unknown_terms"] == ["L1", "L2"]


def test_unknown_terms_nan_duration_and_below_bound(rows: pl.DataFrame) -> None:
    r = _kernel(rows, 4)
    assert r["t_min_ns"] is None and r["inefficiency"] is None and r["bound"] is None
    assert r["unknown_terms"] == ["compute", "L1", "L2", "DRAM"] and r["n_counted"] == 0
    n = _kernel(rows, 5)
    assert n["t_min_ns"] == pytest.approx(1e6) and n["inefficiency"] is None and not n["below_bound"]
    assert math.isnan(n["duration_ns"]) and n["n_counted"] == 0
    b = _kernel(rows, 6)
    assert b["inefficiency"] == pytest.approx(0.5) and b["below_bound"]


def test_run_layer_without_nvtx(rows: pl.DataFrame) -> None:
    (r,) = rows.filter(pl.col("grain") == "layer").to_dicts()
    assert r["name"] == "(no NVTX range)" and r["depth"] == 1 and r["kernel_id"] is None
    assert (
        r["n_kernels"] == 7 and r["n_counted"] == 5
    )  # no counters and NaN duration are left out of the sums
    assert r["overhead_floor_ns"] == 7 * T_O
    assert r["t_min_ns"] == pytest.approx(1e6 + 4e6 + T_O + 2e5 + 1e6)
    assert r["duration_ns"] == pytest.approx(2e6 + 5e6 + 2500 + 4e5 + 5e5)
    assert r["kernel_time_ns"] == pytest.approx(2e6 + 5e6 + 2500 + 4e5 + 1e4 + 5e5)
    assert r["bound"] == "DRAM" and r["bound_share"] == pytest.approx(4e6 / r["t_min_ns"])
    assert r["precision"] == "mixed" and r["unknown_terms"] == ["L1", "L2"]


def test_two_layer_model(tmp_path: Path) -> None:
    stack = {"nvtx_domain": "d"}
    kernels = [
        # layer1: a compute-bound GEMM (T_min 1e6) and a launch-bound kernel (T_min = t_o)
        _k(0, "gemm", 2e6, 1e10, (1e9, 1e8, 1e7), nvtx_stack=["model", "layer1"], **stack),
        _k(1, "tiny", 2500.0, 1e3, (2e3, 1e3, 1e3), nvtx_stack=["model", "layer1"], **stack),
        # layer2: three launch-bound kernels: sum T_min = 3 t_o = the n t_o floor
        *[_k(i, "tiny", 3000.0, 1e3, (2e3, 1e3, 1e3), nvtx_stack=["model", "layer2"], **stack) for i in (2, 3, 4)],
    ]  # fmt: skip
    tiny_run(tmp_path, RUN, kernels, _ceilings([0, 1, 2, 3, 4]))
    layers = {
        (r["depth"], r["name"]): r for r in _rows(tmp_path).filter(pl.col("grain") == "layer").to_dicts()
    }
    assert set(layers) == {(1, "d:model"), (2, "d:model/layer1"), (2, "d:model/layer2")}
    l1 = layers[(2, "d:model/layer1")]
    assert l1["n_kernels"] == 2 and l1["overhead_floor_ns"] == 2 * T_O
    assert l1["t_min_ns"] == pytest.approx(1e6 + T_O) and l1["duration_ns"] == pytest.approx(2e6 + 2500)
    assert l1["inefficiency"] == pytest.approx((2e6 + 2500) / (1e6 + T_O))
    assert l1["bound"] == "FP32" and l1["bound_share"] == pytest.approx(1e6 / (1e6 + T_O))
    assert l1["flops"] == pytest.approx(1e10 + 1e3) and l1["compute_time_ns"] == pytest.approx(1e6 + 0.1)
    l2 = layers[(2, "d:model/layer2")]
    assert l2["n_kernels"] == 3 and l2["t_min_ns"] == l2["overhead_floor_ns"] == 3 * T_O
    assert l2["inefficiency"] == pytest.approx(1.5) and l2["bound"] == "launch_overhead"
    assert l2["bound_share"] == 1.0
    top = layers[(1, "d:model")]
    assert top["n_kernels"] == 5 and top["overhead_floor_ns"] == 5 * T_O
    assert top["t_min_ns"] == pytest.approx(l1["t_min_ns"] + l2["t_min_ns"]) and top["bound"] == "FP32"


# --------------------------------------------------------------------------------------------------- t_o


def _trace(start: int, gaps: list[int], dur: int = 1000, stream: int = 1, **kw: Any) -> list[dict]:
    """Back-to-back kernels: each launched (CPU) 500 ns after the previous one started, so before it ended."""
    out, t = [], start
    for i, g in enumerate([0, *gaps]):
        t += g
        out.append({"start_ns": t, "end_ns": t + dur, "launch_start_ns": t - 3000 if i == 0 else t - g - dur + 500,
                    "device_id": 0, "stream_id": stream, "duration_ns": float(dur), **kw})  # fmt: skip
        t += dur
    return out


def _nsys_run(root: Path, run_id: str, ops: list[dict], gpu: str | None = None) -> None:
    kernels = [{"kernel_id": i, "name": f"k{i}", **o} for i, o in enumerate(ops)]
    tiny_run(root, run_id, kernels, [], source_format="nsys-sqlite")
    if gpu is not None:  # tiny_run leaves gpu_name NULL: rewrite the runs row with one
        import pyarrow.parquet as pq

        path = Store(root).partition("runs", run_id) / "part-0.parquet"
        t = pq.read_table(path)
        t = t.set_column(t.schema.get_field_index("gpu_name"), "gpu_name", [[gpu]])
        pq.write_table(t, path)


def test_launch_overhead_from_back_to_back_tiny_kernels(tmp_path: Path) -> None:
    ops = _trace(0, [800, 700, 900])  # stream 1: three fed pairs, gaps 800, 700, 900
    # stream 2, interleaved in time with stream 1 (pairs are formed per device and stream): gap 600
    ops += _trace(1500, [600], stream=2)
    ops += [
        # launched after the previous kernel ended: the GPU starved, the gap is CPU time: not a pair
        {"start_ns": 20000, "end_ns": 21000, "launch_start_ns": 19000, "device_id": 0, "stream_id": 1},
        # not tiny (10 us): neither pair it is in counts
        {"start_ns": 21600, "end_ns": 31600, "launch_start_ns": 20000, "device_id": 0, "stream_id": 1},
        {"start_ns": 32000, "end_ns": 33000, "launch_start_ns": 21000, "device_id": 0, "stream_id": 1},
        # no launch time: cannot tell it was fed
        {"start_ns": 33600, "end_ns": 34600, "launch_start_ns": None, "device_id": 0, "stream_id": 1},
        # a CUDA graph node: graph launches amortise the overhead
        {"start_ns": 35200, "end_ns": 36200, "launch_start_ns": 33000, "device_id": 0, "stream_id": 1, "graph_id": 1},
    ]  # fmt: skip
    _nsys_run(tmp_path, "b" * 16, ops)
    late = [  # the second kernel was launched after the first ended: no pair
        {"start_ns": 0, "end_ns": 1000, "launch_start_ns": -100, "device_id": 0, "stream_id": 1},
        {"start_ns": 9000, "end_ns": 10000, "launch_start_ns": 8000, "device_id": 0, "stream_id": 1},
    ]
    _nsys_run(tmp_path, "c" * 16, late)
    _nsys_run(tmp_path, "c" * 15 + "d", [{"start_ns": 0, "end_ns": 10000, "launch_start_ns": 0}])
    tiny_run(tmp_path, RUN, [dict(k) for k in KERNELS[:1]], _ceilings([0]))  # ncu: no timeline, no row
    con = queries.connect(Store(tmp_path))
    got = {r["run_id"]: r for r in fetch_arrow(con, "SELECT * FROM launch_overhead").to_pylist()}
    assert set(got) == {"b" * 16, "c" * 16, "c" * 15 + "d"}
    r = got["b" * 16]
    assert r["n_pairs"] == 4 and r["n_kernels"] == len(ops)
    assert r["launch_overhead_ns"] == 750.0  # median of 600, 700, 800, 900
    assert (r["gap_p25_ns"], r["gap_p75_ns"]) == (675.0, 825.0)
    assert r["launch_period_ns"] == 1750.0 and r["tiny_duration_ns"] == 1000.0
    assert "median GPU idle gap" in r["method"] and "4 back-to-back pairs" in r["method"]
    c = got["c" * 16]
    assert c["launch_overhead_ns"] is None and c["n_pairs"] == 0 and c["method"].startswith("no back-to-back")


def test_launch_overhead_choice(tmp_path: Path) -> None:
    store = Store(tmp_path)
    _nsys_run(tmp_path, "b" * 16, _trace(0, [1200] * 8), gpu="GPU X")  # 8 pairs, t_o 1.2 us
    _nsys_run(tmp_path, "e" * 16, _trace(0, [900] * 3), gpu="GPU X")  # 3 pairs: too few to trust
    tiny_run(tmp_path, RUN, [dict(k) for k in KERNELS[:1]], _ceilings([0]))  # ncu run, GPU unknown
    assert launch_overhead(store, RUN, 3000.0) == LaunchOverhead(3000.0, "option")
    assert launch_overhead(store, "b" * 16) == LaunchOverhead(1200.0, f"derived from nsys run {'b' * 16}")
    assert launch_overhead(store, "e" * 16) == LaunchOverhead(
        1200.0, f"derived from nsys run {'b' * 16} (same GPU: GPU X)"
    )
    assert launch_overhead(store, RUN) == LaunchOverhead(DEFAULT_LAUNCH_OVERHEAD_NS, "default")
    with pytest.raises(UsageError, match="> 0"):
        launch_overhead(store, RUN, 0.0)


# --------------------------------------------------------------------------------------------------- charts


@pytest.fixture()
def ceilings() -> pl.DataFrame:
    return pl.DataFrame(
        [{"run_id": RUN, "ceiling": c, "kind": "bandwidth" if c in ("DRAM", "L2", "L1") else "compute", "value": v,
          "source": "test"} for c, v in CEIL.items()]
    )  # fmt: skip


def _layers(spec: dict) -> dict[str, dict]:
    """Every named layer of a spec (at any depth), by name."""
    out: dict[str, dict] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "name" in node and "mark" in node:  # Altair suffixes names inside concatenations: _0, _1
                out[re.sub(r"_\d+$", "", node["name"])] = node
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return out


def test_time_vs_complexity_spec(rows: pl.DataFrame, ceilings: pl.DataFrame) -> None:
    kernels = rows.filter(pl.col("grain") == "kernel")
    spec = time_vs_complexity_chart(kernels, ceilings, level="dram").to_dict()
    ds = spec["datasets"]
    # one point per kernel with F > 0, T and T_min (not 4: no counters, 5: NaN duration)
    assert sorted(p["kernel_id"] for p in ds["rl_tc_flops_points"]) == [0, 1, 2, 3, 6]
    assert sorted(p["kernel_id"] for p in ds["rl_tc_bytes_points"]) == [0, 1, 2, 3, 6]
    p0 = next(p for p in ds["rl_tc_flops_points"] if p["kernel_id"] == 0)
    assert (
        p0["time_s"] == pytest.approx(2e-3) and p0["t_min_s"] == pytest.approx(1e-3) and p0["bound"] == "FP32"
    )
    flops_lines = {r["label"] for r in ds["rl_tc_flops_lines"]}
    assert {"T = F/P, FP32 10 TFLOP/s", "T = F/P, FP64 5 TFLOP/s", "t_o = 2 µs (option)"} <= flops_lines
    assert {r["label"] for r in ds["rl_tc_bytes_lines"]} == {"T = Q/W, DRAM 1 TB/s", "t_o = 2 µs (option)"}
    # bound lines: T = F / P (in s) at both ends; the floor is flat at t_o
    for r in ds["rl_tc_flops_lines"]:
        if r["label"].startswith("T = F/P, FP32"):
            assert r["y"] == pytest.approx(r["x"] / 10e12)
        if r["label"].startswith("t_o"):
            assert r["y"] == pytest.approx(2e-6)
    layers = _layers(spec)
    assert layers["tc_flops_measured"]["mark"]["filled"] is True
    assert layers["tc_flops_ideal"]["mark"]["filled"] is False
    assert (
        layers["tc_flops_gap"]["mark"]["type"] == "rule"
        and layers["tc_bytes_lines"]["mark"]["type"] == "line"
    )
    shapes = layers["tc_flops_measured"]["encoding"]["shape"]["scale"]
    assert dict(zip(shapes["domain"], shapes["range"], strict=True))["launch_overhead"] == "diamond"
    flagged = {p["kernel_id"] for p in ds["rl_tc_flops_points"] if p["flagged"]}
    assert flagged == {6}  # below its bound: red outline, never dropped


def test_complexity_plane_spec(rows: pl.DataFrame, ceilings: pl.DataFrame) -> None:
    kernels = rows.filter(pl.col("grain") == "kernel")
    spec = complexity_plane_chart(kernels, ceilings, level="dram").to_dict()
    ds = spec["datasets"]
    pts = {p["kernel_id"]: p for p in ds["rl_cp_points"]}
    assert sorted(pts) == [0, 1, 2, 3, 6]
    # measured (Q, F) filled; hollow at (Q, F) x s along the kernel's iso-AI line
    assert (pts[0]["bytes"], pts[0]["flops"]) == (1e7, 1e10)
    assert pts[0]["bytes_at_t"] == pytest.approx(2e7) and pts[0]["flops_at_t"] == pytest.approx(2e10)
    # overhead box per compute ceiling: Q < W t_o = 1e12 x 2e-6, F < P t_o
    boxes = sorted((b["x2"], b["y2"]) for b in ds["rl_cp_boxes"])
    assert boxes == [pytest.approx((2e6, 1e7)), pytest.approx((2e6, 2e7))]
    labels = {r["label"] for r in ds["rl_cp_lines"]}
    assert {"ridge FP32/DRAM 10 FLOP/B", "ridge FP64/DRAM 5 FLOP/B", "AI 1", "AI 10"} <= labels
    for r in ds["rl_cp_lines"]:
        if r["label"] == "AI 10":
            assert r["y"] == pytest.approx(10 * r["x"])
    layers = _layers(spec)
    assert layers["cp_overhead_box"]["mark"]["type"] == "rect"
    assert layers["cp_measured"]["mark"]["filled"] is True and layers["cp_ideal"]["mark"]["filled"] is False
    launch = [p for p in ds["rl_cp_points"] if p["bound"] == "launch_overhead"]
    assert [p["kernel_id"] for p in launch] == [2]


def test_combined_chart_and_layers(tmp_path: Path, rows: pl.DataFrame, ceilings: pl.DataFrame) -> None:
    layer_rows = rows.filter(pl.col("grain") == "layer")
    spec = time_roofline_chart(layer_rows, ceilings).to_dict()
    assert len(spec["vconcat"]) == 2 and len(spec["vconcat"][0]["hconcat"]) == 2
    assert len(spec["datasets"]["rl_tc_flops_points"]) == 1
    assert spec["datasets"]["rl_tc_flops_points"][0]["floor_s"] == pytest.approx(7 * 2e-6)
    assert "tc_flops_floors" in _layers(spec)  # layers get a tick at their n t_o floor
    json.dumps(spec, allow_nan=False)  # JSON: no NaN left


def test_nothing_drawable(rows: pl.DataFrame, ceilings: pl.DataFrame) -> None:
    no_counters = rows.filter(pl.col("kernel_id") == 4)
    with pytest.raises(RooflineDataError, match="T_min"):
        time_vs_complexity_chart(no_counters, ceilings)
    with pytest.raises(ValueError, match="level"):
        time_vs_complexity_chart(rows, ceilings, level="hbm")


# --------------------------------------------------------------------------------------------------- the view, rl


def test_view_without_counters_raises(tmp_path: Path) -> None:
    _nsys_run(tmp_path, "b" * 16, _trace(0, [1000] * 6))
    with pytest.raises(RooflineDataError, match="no kernel has FLOPs, bytes and a duration"):
        time_roofline(Store(tmp_path), "b")


def test_view_layers_and_bad_arguments(tmp_path: Path) -> None:
    stack = {"nvtx_domain": "d", "nvtx_stack": ["model", "layer1"]}
    tiny_run(tmp_path, RUN, [_k(0, "gemm", 2e6, 1e10, (1e9, 1e8, 1e7), **stack)], _ceilings([0]))
    v = time_roofline(Store(tmp_path), None, grain="layer", depth=2, launch_overhead_ns=T_O)
    assert v.points.column("name").to_pylist() == ["d:model/layer1"] and v.launch_overhead.source == "option"
    assert v.rows.num_rows == 3 and v.ceilings.num_rows == len(CEIL)  # 1 kernel + layers at depths 1 and 2
    with pytest.raises(RooflineDataError, match="the deepest layers are at depth 2"):
        time_roofline(Store(tmp_path), None, grain="layer", depth=3)
    with pytest.raises(UsageError, match="level"):
        time_roofline(Store(tmp_path), None, level="all")


def test_rl_roofline_time_on_a_real_report(tmp_path: Path) -> None:
    from rooflake.pipeline import ingest_file

    store = tmp_path / "store"
    run_id = ingest_file(NCU / "AveryClapp__ESMM-Research__profile_output.ncu-rep", store).run_id
    out = tmp_path / "time.svg"
    r = CliRunner().invoke(app, ["roofline", "--time", "--store", str(store), "--out", str(out)])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out} (run {run_id}, 4 kernels, t_o = 1 µs (default)")
    assert "FP32 4" in r.stdout
    svg = out.read_text()
    assert svg.startswith("<svg") and "Complexity plane" in svg and "warptiling" in svg
    html = tmp_path / "layers.html"
    args = [
        "roofline",
        run_id[:6],
        "--time",
        "--by",
        "layer",
        "--launch-overhead",
        "4000",
        "--out",
        str(html),
    ]
    r = CliRunner().invoke(app, [*args, "--store", str(store)])
    assert "1 layers at depth 1" in r.stdout and "t_o = 4 µs (option)" in r.stdout
    assert html.read_text().count("rl_cp_points") >= 1
