"""The compute roof of an estimate roofline (`rl roofline NSYS_RUN --by layer --with ESTIMATE_RUN`) is the roof of
the estimates' precision: a bfloat16/float16 model on a GPU with Tensor Cores is judged against the dense Tensor-Core
roof of that source type (the datasheet's TENSOR BF16 on an H100), a float32 model against FP32, and where the roofs
lack that precision's ceiling the attainable is NULL with the reason, never the FP32 roof (golden, on tiny tables
built in code: the same nsys run and estimates as tests/test_layer_views_gpu_estimates.py, at another dtype/GPU).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_layer_views_gpu_estimates import (
    EST,
    KERNEL_NS,
    MODEL,
    NSYS,
    _ranges,
    _table,
    roofline_with_estimates,
)

from rooflake.schema import ESTIMATES, KERNELS, RANGES, RUNS
from rooflake.schema import datasheets as ds
from rooflake.store import Store

H100 = ("NVIDIA H100 80GB HBM3", "9.0", "H100 SXM5")
RTX4060TI = ("NVIDIA GeForce RTX 4060 Ti", "8.9", "RTX 4060 Ti")


def _run(run_id: str, fmt: str, gpu: tuple[str, str, str]) -> pa.Table:
    from datetime import datetime, timezone

    nsys = fmt.startswith("nsys")
    return _table(
        RUNS,
        [{"run_id": run_id, "source_path": f"/tiny/{run_id}", "source_format": fmt, "host": "gpu-box"}],
        gpu_name=gpu[0] if nsys else None,
        compute_capability=gpu[1] if nsys else None,
        ingested_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        labels=[],
        schema_version="1",
    )


def _publish(root: Path, dtype: str, gpu: tuple[str, str, str]) -> str:
    kernels = [
        {"kernel_id": i, "name": f"k_{m}", "short_name": f"k_{m}", "device_id": 0, "duration_ns": ns,
         "nvtx_domain": "m", "nvtx_stack": [phase, m], "nvtx_path": f"m:{phase}/{m}"}
        for i, ((phase, m), ns) in enumerate((k, ns) for k, all_ns in KERNEL_NS.items() for ns in all_ns)
    ]  # fmt: skip
    ranges = _table(RANGES, [{**r, "domain": "m"} for r in _ranges()], run_id=NSYS, kind="push_pop", thread=1,
                    flags=[])  # fmt: skip
    store = Store(root)
    store.publish(
        NSYS,
        {"runs": _run(NSYS, "nsys-sqlite", gpu), "ranges": ranges,
         "kernels": _table(KERNELS, kernels, run_id=NSYS, provenance=[], flags=[])},
    )  # fmt: skip
    est = [
        {
            "op_id": i,
            "phase": p,
            "module_path": m,
            "op": op,
            "flops": f,
            "bytes_compulsory": b,
            "dtype": dtype,
        }
        for i, ((p, m, op), (f, b)) in enumerate(MODEL.items())
    ]
    store.publish(
        EST, {"runs": _run(EST, "torch-model", gpu), "estimates": _table(ESTIMATES, est, run_id=EST)}
    )
    return str(root)


def _peaks(gpu: str) -> dict[str, float]:
    return {r["ceiling"]: r["value"] for r in ds.ceilings().to_pylist() if r["gpu"] == gpu}


_cli = roofline_with_estimates


def _layers(store: str) -> dict[str, dict[str, Any]]:
    from rooflake.views.roofline import estimate_roofline

    v = estimate_roofline(Store(store), NSYS, EST, depth=2, level="dram")
    return {r["name"]: r for r in v.points.to_pylist()}


def test_bf16_model_on_tensor_cores_takes_the_tensor_bf16_roof(tmp_path: Path) -> None:
    store = _publish(tmp_path, "bfloat16", H100)
    out = _cli(store)
    assert out.exit_code == 0, out.output
    assert "compute roof TENSOR BF16 (bfloat16, modelled dtype)" in out.output
    peak = _peaks(H100[2])
    assert peak["TENSOR BF16"] == 989.5e12 and peak["FP32"] == 67e12
    for phase, m in KERNEL_NS:
        r = _layers(store)[f"m:{phase}/{m}"]
        flops = sum(f or 0.0 for (p, mm, _), (f, _) in MODEL.items() if (p, mm) == (phase, m))
        nbytes = sum(b for (p, mm, _), (_, b) in MODEL.items() if (p, mm) == (phase, m))
        assert (r["precision"], r["dtype"], r["peak_ceiling"]) == ("tensor", "bfloat16", "TENSOR BF16")
        assert r["peak_flops_per_s"] == peak["TENSOR BF16"] and r["peak_reason"] is None
        assert r["attainable_flops_per_s"] == min(peak["TENSOR BF16"], flops / nbytes * peak["DRAM"])
        assert r["ridge_dram"] == peak["TENSOR BF16"] / peak["DRAM"]
    # fc's AI (100 FLOP/byte) is past the FP32 ridge (20) but short of the tensor ridge (295.4): DRAM-bound now
    assert _layers(store)["m:forward/fc"]["bound"] == "DRAM"


def test_bf16_time_roofline_compute_term_uses_the_tensor_roof(tmp_path: Path) -> None:
    from rooflake.views.time_roofline import estimate_time_roofline

    store = _publish(tmp_path, "bfloat16", H100)
    v = estimate_time_roofline(Store(store), NSYS, EST, depth=2, launch_overhead_ns=100)
    peak = _peaks(H100[2])
    rows = {r["name"]: r for r in v.points.to_pylist()}
    fc = rows["m:forward/fc"]
    assert fc["precision"] == "tensor" and fc["peak_flops_per_s"] == peak["TENSOR BF16"]
    assert fc["compute_time_ns"] == 1.0e8 / peak["TENSOR BF16"] * 1e9
    assert fc["t_min_ns"] == fc["dram_time_ns"] == 1_000_000 / peak["DRAM"] * 1e9 and fc["bound"] == "DRAM"


def test_fp16_model_without_its_roof_has_no_attainable_and_says_why(tmp_path: Path) -> None:
    """The RTX 4060 Ti's datasheet rows give FP32 and DRAM only: an fp16 model's roof (Tensor Cores, CC 8.9) is
    missing, so peak, attainable, fraction and bound are NULL with the reason, not the FP32 roof's numbers."""
    store = _publish(tmp_path, "float16", RTX4060TI)
    assert "FP32" in _peaks(RTX4060TI[2]) and not any(c.startswith("TENSOR") for c in _peaks(RTX4060TI[2]))
    out = _cli(store)
    assert out.exit_code == 0, out.output
    reason = (
        "NULL: no TENSOR FP16→FP32 or TENSOR FP16 or measured FP16 ceiling among the roofs (the float16 roof on "
        "Tensor Cores; another precision's roof is not used)"
    )
    assert f"3 layers without attainable: {reason}" in " ".join(out.output.split())
    for r in _layers(store).values():
        assert (r["precision"], r["dtype"], r["peak_ceiling"], r["peak_reason"]) == (
            "tensor", "float16", None, reason,
        )  # fmt: skip
        assert r["peak_flops_per_s"] is None and r["attainable_flops_per_s"] is None
        assert r["fraction_of_roof"] is None and r["bound"] is None
        assert r["bw_dram"] == _peaks(RTX4060TI[2])["DRAM"] and r["flops"] is not None


def test_fp32_model_keeps_the_fp32_roof(tmp_path: Path) -> None:
    store = _publish(tmp_path, "float32", RTX4060TI)
    peak = _peaks(RTX4060TI[2])
    for r in _layers(store).values():
        assert (r["precision"], r["peak_ceiling"], r["peak_flops_per_s"]) == ("fp32", "FP32", peak["FP32"])
        assert r["peak_reason"] is None and r["attainable_flops_per_s"] is not None


def test_fp64_model_takes_the_fp64_tensor_roof_where_there_is_one(tmp_path: Path) -> None:
    """A float64 model on an H100 is judged against FP64 Tensor Cores (67 TFLOP/s on the datasheet, where cuBLAS
    runs DGEMM), not the 34 TFLOP/s FP64 pipe that would flag its GEMMs above the roof (found in review); on the
    RTX 4060 Ti, whose datasheet rows have neither, the reason names both."""
    store = _publish(tmp_path / "h100", "float64", H100)
    peak = _peaks(H100[2])
    assert peak["TENSOR FP64"] == 67e12 and peak["FP64"] == 34e12
    for r in _layers(store).values():
        assert (r["precision"], r["peak_ceiling"], r["peak_flops_per_s"]) == ("fp64", "TENSOR FP64", 67e12)
    other = _publish(tmp_path / "ada", "float64", RTX4060TI)
    for r in _layers(other).values():
        assert r["peak_flops_per_s"] is None and "no TENSOR FP64 or FP64 ceiling" in r["peak_reason"]


@pytest.mark.parametrize(
    ("gpu", "precision", "reason"),
    [
        (("NVIDIA GeForce GTX 1660 SUPER", "7.5", ""), "fp16", "no FP16 ceiling among the roofs"),
        (("NVIDIA H100 80GB HBM3", None, ""), "tensor", "compute capability is unknown"),
    ],
)
def test_tensor_cores_follow_the_gpu(
    tmp_path: Path, gpu: tuple[str, str, str], precision: str, reason: str
) -> None:
    """A GTX 16xx (Turing TU116/TU117) has no Tensor Cores: an fp16 model takes the FP16 pipe's roof; a run whose
    compute capability is unknown cannot say whether the tensor roof applies."""
    from rooflake.queries import connect, fetch

    store = _publish(tmp_path, "float16", gpu)
    roofs = pa.table({"ceiling": ["FP32", "DRAM"], "kind": ["compute", "bandwidth"], "value": [5e12, 3e11],
                      "source": ["datasheet", "datasheet"]})  # fmt: skip
    params = {"run_id": NSYS, "estimates_run_id": EST, "depth": 2, "level": "dram", "timed_by": "kernels"}
    rows = fetch(connect(Store(store)), "estimate_layer_roofline", params, tables={"layer_roofs": roofs})
    for r in rows.to_pylist():
        assert r["precision"] == precision and r["peak_flops_per_s"] is None and reason in r["peak_reason"]


def test_ceilings_option_threads_into_the_estimate_view(tmp_path: Path) -> None:
    """`--ceilings SOURCE` with an estimate run: the GPU's ceilings of that source (was refused); a source without
    ceilings for the GPU is one Error line, `all` (overlays) is refused."""
    store = _publish(tmp_path, "bfloat16", H100)
    out = _cli(store, "--ceilings", "datasheet")
    assert out.exit_code == 0, out.output
    assert "roofs: datasheet (NVIDIA H100 80GB HBM3)" in out.output
    assert "compute roof TENSOR BF16 (bfloat16, modelled dtype)" in out.output
    measured = _cli(store, "--ceilings", "measured")
    assert measured.exit_code == 1 and "no measured ceilings for its GPU" in measured.output
    assert _cli(store, "--ceilings", "all").exit_code == 1


def test_a_cpu_run_takes_only_its_hosts_measured_roofs(tmp_path: Path) -> None:
    from test_profile_range_queries import store as tiny_cpu

    from rooflake.schema import UsageError
    from rooflake.views.roofline import estimate_roofline

    cpu = tiny_cpu.__wrapped__(tmp_path)  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="a CPU's roofs are the ceilings measured on its host"):
        estimate_roofline(cpu, "r1", "e1", depth=2, ceilings="datasheet")


def test_ceilings_option_threads_into_the_time_based_estimate_view(tmp_path: Path) -> None:
    """`rl roofline --time --by layer --with ESTIMATE_RUN --ceilings SOURCE` (was refused): the compute term of the
    bf16 layers is F / the datasheet's TENSOR BF16, and the line names the roofs."""
    from rooflake.views.time_roofline import estimate_time_roofline

    store = _publish(tmp_path, "bfloat16", H100)
    out = _cli(store, "--time", "--launch-overhead", "100", "--ceilings", "datasheet")
    assert out.exit_code == 0, out.output
    assert (
        "roofs: datasheet (NVIDIA H100 80GB HBM3)" in out.output and "compute roof TENSOR BF16" in out.output
    )
    v = estimate_time_roofline(Store(store), NSYS, EST, depth=2, launch_overhead_ns=100, ceilings="datasheet")
    fc = {r["name"]: r for r in v.points.to_pylist()}["m:forward/fc"]
    assert fc["compute_time_ns"] == 1.0e8 / _peaks(H100[2])["TENSOR BF16"] * 1e9
    assert _cli(store, "--time", "--ceilings", "measured").exit_code == 1
