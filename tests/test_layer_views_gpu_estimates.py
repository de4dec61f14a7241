"""`rl roofline NSYS_RUN --by layer --with ESTIMATE_RUN` on an Nsight Systems GPU run (golden, on tiny tables built in
code: no GPU here): the kernel time under each layer (layer_summary) per step (calls of the `forward` / `backward`
range), the estimates' FLOPs and compulsory bytes, the roofs of the run's GPU that the ceilings helper picks by
default (no report peaks in an nsys run: the datasheet's H100 SXM5), and the time-based view of the same layers.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.schema import ESTIMATES, KERNELS, RANGES, RUNS
from rooflake.schema import datasheets as ds
from rooflake.store import Store

NSYS, EST = "a1" * 8, "e2" * 8
STEPS = 2
# (phase, module) -> kernel durations (ns) of the launches under it over the 2 steps
KERNEL_NS = {
    ("forward", "fc"): [1000.0, 3000.0],
    ("forward", "relu"): [500.0, 700.0],
    ("backward", "fc"): [4000.0],
}
# (phase, module path, op) -> (FLOPs, compulsory bytes) per step
MODEL = {
    ("forward", "fc", "aten.addmm"): (1.0e8, 1_000_000),
    ("forward", "relu", "aten.relu"): (1.0e5, 800_000),
    ("backward", "fc", "aten.mm"): (1.5e8, 1_500_000),
    ("backward", "fc", "aten.sum"): (None, 4_000),  # an op without a FLOP formula
}


def _table(schema: pa.Schema, rows: list[dict[str, Any]], **defaults: Any) -> pa.Table:
    return pa.table(
        {f.name: [r.get(f.name, defaults.get(f.name)) for r in rows] for f in schema}, schema=schema
    )


def _run(run_id: str, fmt: str) -> pa.Table:
    return _table(
        RUNS,
        [{"run_id": run_id, "source_path": f"/tiny/{run_id}", "source_format": fmt, "host": "gpu-box"}],
        gpu_name="NVIDIA H100 80GB HBM3" if fmt.startswith("nsys") else None,
        compute_capability="9.0" if fmt.startswith("nsys") else None,
        ingested_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        labels=[],
        schema_version="1",
    )


def _ranges() -> list[dict[str, Any]]:
    """Two steps of push/pop ranges: forward > fc, relu; backward > fc (domain m, one thread)."""
    rows: list[dict[str, Any]] = []
    t = 0
    for _ in range(STEPS):
        for phase, modules in (("forward", ["fc", "relu"]), ("backward", ["fc"])):
            top = len(rows)
            rows.append({"range_id": top, "name": phase, "start_ns": t, "depth": 1, "parent_id": None})
            for m in modules:
                rows.append({"range_id": len(rows), "name": m, "start_ns": t + 1, "end_ns": t + 9, "depth": 2,
                             "parent_id": top})  # fmt: skip
                t += 10
            rows[top]["end_ns"] = t + 1
            t += 2
    return rows


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return _publish(tmp_path)


def _publish(tmp_path: Path, other: bool = False) -> str:
    """The nsys run (with ``other``: plus a second annotated model, domain x, forward > lstm, that the estimates do
    not hold) and the estimate run."""
    extra = [(("forward", "lstm"), 9000.0)] if other else []
    kernels = [
        {"kernel_id": i, "name": f"k_{m}", "short_name": f"k_{m}", "device_id": 0, "duration_ns": ns,
         "nvtx_domain": "m", "nvtx_stack": [phase, m], "nvtx_path": f"m:{phase}/{m}"}
        for i, ((phase, m), ns) in enumerate((k, ns) for k, all_ns in KERNEL_NS.items() for ns in all_ns)
    ] + [
        {"kernel_id": 100 + i, "name": "k_lstm", "short_name": "k_lstm", "device_id": 0, "duration_ns": ns,
         "nvtx_domain": "x", "nvtx_stack": list(k), "nvtx_path": f"x:{k[0]}/{k[1]}"}
        for i, (k, ns) in enumerate(extra)
    ]  # fmt: skip
    rows = [{**r, "domain": "m"} for r in _ranges()]
    if other:
        n = len(rows)
        rows += [{"range_id": n, "name": "forward", "start_ns": 10_000, "end_ns": 10_020, "depth": 1, "domain": "x"},
                 {"range_id": n + 1, "name": "lstm", "start_ns": 10_001, "end_ns": 10_019, "depth": 2,
                  "parent_id": n, "domain": "x"}]  # fmt: skip
    ranges = _table(RANGES, rows, run_id=NSYS, kind="push_pop", thread=1, flags=[])
    Store(tmp_path).publish(
        NSYS,
        {"runs": _run(NSYS, "nsys-sqlite"), "kernels": _table(KERNELS, kernels, run_id=NSYS, provenance=[], flags=[]),
         "ranges": ranges},
    )  # fmt: skip
    est = [
        {
            "op_id": i,
            "phase": p,
            "module_path": m,
            "op": op,
            "flops": f,
            "bytes_compulsory": b,
            "dtype": "float32",
        }
        for i, ((p, m, op), (f, b)) in enumerate(MODEL.items())
    ]
    Store(tmp_path).publish(
        EST, {"runs": _run(EST, "torch-model"), "estimates": _table(ESTIMATES, est, run_id=EST)}
    )
    return str(tmp_path)


def _peaks() -> dict[str, float]:
    return {r["ceiling"]: r["value"] for r in ds.ceilings().to_pylist() if r["gpu"] == "H100 SXM5"}


def roofline_with_estimates(store: str, *extra: str) -> Any:
    """`rl roofline NSYS --by layer -d 2 --with EST -o STORE/r.html --store STORE [extra]` (tests/test_estimate_roofs
    takes it too)."""
    args = [
        "roofline",
        NSYS,
        "--by",
        "layer",
        "-d",
        "2",
        "--with",
        EST,
        "-o",
        f"{store}/r.html",
        "--store",
        store,
    ]
    return CliRunner().invoke(app, [*args, *extra])


def test_nsys_gpu_layers_take_kernel_time_and_modelled_work(store: str) -> None:
    from rooflake.views.roofline import estimate_roofline

    out = roofline_with_estimates(store)
    assert out.exit_code == 0, out.output
    assert "time measured (nsys, GPU kernel time), FLOPs and bytes modelled (rl estimate e2e2" in out.output
    assert "ceilings datasheet (NVIDIA H100 80GB HBM3)" in out.output
    v = estimate_roofline(Store(store), NSYS, EST, depth=2, level="dram")
    peak = _peaks()
    rows = {r["name"]: r for r in v.points.to_pylist()}
    assert set(rows) == {"m:forward/fc", "m:forward/relu", "m:backward/fc"}
    for (phase, m), all_ns in KERNEL_NS.items():
        r = rows[f"m:{phase}/{m}"]
        flops = sum(f or 0.0 for (p, mm, _), (f, _) in MODEL.items() if (p, mm) == (phase, m))
        nbytes = sum(b for (p, mm, _), (_, b) in MODEL.items() if (p, mm) == (phase, m))
        assert (r["steps"], r["calls"], r["launches"]) == (STEPS, STEPS, len(all_ns))
        assert r["duration_ns"] == sum(all_ns) / STEPS
        assert r["flops"] == flops and r["bytes_dram"] == nbytes and r["bytes_l2"] is None
        assert r["ai_dram"] == flops / nbytes
        assert r["achieved_flops_per_s"] == pytest.approx(flops / (sum(all_ns) / STEPS * 1e-9), rel=1e-12)
        assert (r["peak_flops_per_s"], r["bw_dram"]) == (peak["FP32"], peak["DRAM"])
        attainable = min(peak["FP32"], flops / nbytes * peak["DRAM"])
        assert r["attainable_flops_per_s"] == pytest.approx(attainable, rel=1e-12)
        assert r["above_roof"] is (r["achieved_flops_per_s"] > 1.001 * attainable)
        assert r["time_source"] == "measured: GPU kernel time under the layer (nsys)"
    assert rows["m:backward/fc"]["flags"] == ["ops_without_flops"] and rows["m:forward/fc"]["flags"] == []
    assert rows["m:forward/fc"]["bound"] == "FP32" and rows["m:forward/relu"]["bound"] == "DRAM"


def test_nsys_gpu_layers_time_based(store: str) -> None:
    from rooflake.views.time_roofline import estimate_time_roofline

    out = CliRunner().invoke(
        app,
        ["roofline", NSYS, "--time", "--by", "layer", "-d", "2", "--with", EST, "--launch-overhead", "300",
         "-o", f"{store}/t.html", "--store", store],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "3 layers at depth 2, t_o = 300 ns (option)" in out.output
    v = estimate_time_roofline(Store(store), NSYS, EST, depth=2, launch_overhead_ns=300)
    peak = _peaks()
    for r in v.points.to_pylist():
        phase, m = r["name"][2:].split("/")
        n = len(KERNEL_NS[(phase, m)]) / STEPS
        terms = {"FP32": r["flops"] / peak["FP32"] * 1e9, "DRAM": r["bytes_dram"] / peak["DRAM"] * 1e9}
        terms["launch_overhead"] = n * 300
        assert r["n_kernels"] == n and r["t_min_ns"] == pytest.approx(max(terms.values()), rel=1e-12)
        assert r["bound"] == max(terms, key=lambda k: terms[k])
        assert r["inefficiency"] == pytest.approx(r["duration_ns"] / r["t_min_ns"], rel=1e-12)


def test_rl_layers_with_the_estimate_run_compares_in_the_runs_domain(store: str) -> None:
    import json

    out = CliRunner().invoke(app, ["layers", NSYS, "-d", "2", "--with", EST, "-f", "json", "--store", store])
    assert out.exit_code == 0, out.output
    rows = {r["layer"]: r for r in json.loads(out.stdout)}
    # the layers are in the run's domain (m), not estimate_vs_measured's default 'rooflake'
    assert set(rows) == {"m:forward/fc", "m:forward/relu", "m:backward/fc"}
    fc = rows["m:forward/fc"]
    assert (fc["kernels"], fc["ops"], fc["duration_ns"], fc["flops_analytic"]) == (2, 1, 4000.0, 1.0e8)
    assert fc["flops_measured"] is None and int(fc["bytes_compulsory"]) == 1_000_000  # nsys: no counters


def test_rl_layers_with_the_estimate_run_keeps_match_and_device(store: str) -> None:
    import json

    def rows(*args: str) -> dict[str, Any]:
        out = CliRunner().invoke(
            app, ["layers", NSYS, "-d", "2", "--with", EST, *args, "-f", "json", "--store", store]
        )
        assert out.exit_code == 0, out.output
        return {r["layer"]: r for r in json.loads(out.stdout)}

    assert set(rows("-m", "relu")) == {"m:forward/relu"}  # both were ignored
    other = rows("--device", "1")  # no kernel on device 1: nothing measured, the model's layers still there
    assert set(other) == {"m:forward/fc", "m:forward/relu", "m:backward/fc"}
    assert all(r["kernels"] == 0 and r["duration_ns"] is None for r in other.values())
    assert rows("--device", "0")["m:forward/fc"]["kernels"] == 2


def test_another_models_layers_do_not_take_the_estimates(tmp_path: Path) -> None:
    """Two annotated models in one run (domains m and x): only the one whose module paths the estimates hold."""
    from rooflake.views.roofline import estimate_roofline

    store = _publish(tmp_path, other=True)
    v = estimate_roofline(Store(store), NSYS, EST, depth=2)
    assert set(v.points.column("name").to_pylist()) == {"m:forward/fc", "m:forward/relu", "m:backward/fc"}
    one = estimate_roofline(Store(store), NSYS, EST, depth=1)
    assert one.points.column("name").to_pylist() == ["m:backward", "m:forward"]
