"""What-if (issue 12): scaled ceilings, T_min recomputed, measured inefficiency kept; golden tests on tiny tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.queries import parameters
from rooflake.schema import UsageError
from rooflake.store import Store
from rooflake.views.whatif import parse_scales, whatif

from _support import tiny_run

# DRAM 1 TB/s, L2 4 TB/s, L1 16 TB/s, FP32 10 TFLOP/s; t_o = 2 us
CEIL = {"DRAM": 1e12, "L2": 4e12, "L1": 16e12, "FP32": 10e12}
T_O = 2000.0
RUN = "b" * 16


def _k(kid: int, name: str, t: float, fp32: float, q: tuple[float, float, float], layer: str) -> dict:
    return {"kernel_id": kid, "name": name, "short_name": name, "duration_ns": t, "flops_fp32": fp32,
            "bytes_l1": q[0], "bytes_l2": q[1], "bytes_dram": q[2], "device_id": 0,
            "nvtx_domain": "m", "nvtx_stack": [layer]}  # fmt: skip


KERNELS = [
    # compute-bound: F/P = 1e6 ns (L1 62,500, L2 25,000, DRAM 10,000); T = 2e6 -> s = 2
    _k(0, "gemm", 2e6, 1e10, (1e9, 1e8, 1e7), "conv"),
    # DRAM-bound: DRAM 4e6 ns (F/P 10,000, L1 250,000, L2 1e6); T = 5e6 -> s = 1.25
    _k(1, "stream", 5e6, 1e8, (4e9, 4e9, 4e9), "norm"),
    # launch-bound: every term < t_o = 2000 ns; T = 2500 -> s = 1.25
    _k(2, "tiny", 2500.0, 1e3, (2e3, 1e3, 1e3), "relu"),
]


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    ceilings = [{"kernel_id": k, "ceiling": c, "value": v} for k in range(3) for c, v in CEIL.items()]
    tiny_run(tmp_path, RUN, [dict(k) for k in KERNELS], ceilings)
    return Store(tmp_path)


def _by_name(w, which: str = "kernels") -> dict:  # type: ignore[no-untyped-def]
    return {r["name"]: r for r in getattr(w, which).to_pylist()}


def test_unscaled_prediction_is_the_measurement(store: Store) -> None:
    w = whatif(store, RUN, parse_scales([]), launch_overhead_ns=T_O)
    for r in w.kernels.to_pylist():
        assert r["predicted_ns"] == pytest.approx(r["duration_ns"]) and r["speedup"] == pytest.approx(1.0)
    assert w.total["predicted_ns"] == pytest.approx(2e6 + 5e6 + 2500)


def test_scaling_dram_helps_only_the_dram_bound_kernel(store: Store) -> None:
    k = _by_name(whatif(store, RUN, parse_scales(["dram=2"]), launch_overhead_ns=T_O))
    assert k["gemm"]["predicted_ns"] == pytest.approx(2e6)  # still F/P = 1e6 ns, s = 2
    # DRAM term 2e6 ns; L2 (1e6) and L1 now lower; s = 1.25 kept -> 2.5e6 ns
    assert k["stream"]["predicted_ns"] == pytest.approx(2.5e6) and k["stream"]["bound_scaled"] == "DRAM"
    assert k["tiny"]["predicted_ns"] == pytest.approx(2500.0)
    # DRAM x 8: the L2 term (1e6 ns) takes over the stream kernel
    k8 = _by_name(whatif(store, RUN, parse_scales(["dram=8"]), launch_overhead_ns=T_O))
    assert k8["stream"]["bound_scaled"] == "L2" and k8["stream"]["predicted_ns"] == pytest.approx(1.25e6)


def test_scaling_compute_helps_only_the_compute_bound_kernel(store: Store) -> None:
    k = _by_name(whatif(store, RUN, parse_scales(["compute=4"]), launch_overhead_ns=T_O))
    # F/P 250,000 ns; L1 62,500; s = 2 -> 500,000 ns
    assert k["gemm"]["predicted_ns"] == pytest.approx(5e5) and k["gemm"]["bound_scaled"] == "FP32"
    assert k["stream"]["predicted_ns"] == pytest.approx(5e6)


def test_nothing_but_launch_overhead_helps_the_launch_bound_kernel(store: Store) -> None:
    for s in (["compute=100", "dram=100", "l2=100", "l1=100"], ["tensor=3"]):
        assert _by_name(whatif(store, RUN, parse_scales(s), launch_overhead_ns=T_O))["tiny"][
            "predicted_ns"
        ] == (pytest.approx(2500.0))
    k = _by_name(whatif(store, RUN, parse_scales(["launch=2"]), launch_overhead_ns=T_O))
    assert (
        k["tiny"]["predicted_ns"] == pytest.approx(1250.0) and k["tiny"]["bound_scaled"] == "launch_overhead"
    )


def test_layers_and_amdahl(store: Store) -> None:
    w = whatif(store, RUN, parse_scales(["dram=4"]), launch_overhead_ns=T_O)
    layers = _by_name(w, "layers")
    assert set(layers) == {"m:conv", "m:norm", "m:relu"}
    # DRAM term 1e6 ns ties with L2's 1e6 ns: the norm layer gains 4x, and no more from more DRAM
    assert layers["m:norm"]["speedup"] == pytest.approx(4.0)
    assert w.total["predicted_ns"] == pytest.approx(2e6 + 1.25e6 + 2500)
    # the compute-bound conv layer now holds the largest share: the next bottleneck (Amdahl over layers)
    top = w.layers.to_pylist()[0]
    assert top["name"] == "m:conv" and top["share_of_predicted"] == pytest.approx(2e6 / (3.25e6 + 2500))


def test_parse_scales_refuses_bad_input() -> None:
    assert parse_scales(["compute=2"])["tensor"] == 2.0 and parse_scales([])["dram"] == 1.0
    for bad in (["hbm=2"], ["dram=0"], ["dram=x"], ["dram=2", "dram=3"], ["compute=2", "fp32=3"], ["dram"]):
        with pytest.raises(UsageError):
            parse_scales(bad)


def test_query_is_a_table_macro_with_defaults() -> None:
    assert parameters("whatif")[:2] == ["run_id", "launch_overhead_ns"]


def test_rl_whatif(store: Store) -> None:
    args = ["whatif", RUN[:6], "--scale", "dram=2", "--launch-overhead", "2000", "--store", str(store.root)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "7.003 ms measured → 4.503 ms predicted (×1.56; modelled" in res.output
    bad = CliRunner().invoke(app, ["whatif", RUN[:6], "--scale", "hbm=2", "--store", str(store.root)])
    assert bad.exit_code == 2 and bad.output.startswith("Error: --scale 'hbm=2'")  # a bad argument
    for scale, why in (
        (["dram=0"], "must be a number > 0"),
        (["compute=2", "--scale", "fp32=3"], "scaled twice"),
    ):
        bad = CliRunner().invoke(app, ["whatif", RUN[:6], "--scale", *scale, "--store", str(store.root)])
        assert bad.exit_code == 2 and bad.output.startswith("Error: --scale") and why in bad.output, (
            bad.output
        )
    bad = CliRunner().invoke(
        app, ["whatif", RUN[:6], "-s", "dram=2", "--launch-overhead", "-5", "--store", str(store.root)]
    )
    assert bad.exit_code == 2 and bad.output.startswith("Error: --launch-overhead"), bad.output


def test_a_run_without_kernels_or_counters(tmp_path: Path) -> None:
    """A run with no kernel (an nsys export without CUDA trace, an ERT or estimate run) ended in an Arrow traceback
    (take of an empty list); it is one Error line. A run whose kernels have no counters predicts its measured time,
    and the headline says nothing was modelled (it said "modelled")."""
    tiny_run(tmp_path, "c" * 16, [], [])
    bare = [{"kernel_id": 0, "name": "k", "short_name": "k", "duration_ns": 5e6, "device_id": 0}]
    tiny_run(tmp_path, "d" * 16, bare, [])
    res = CliRunner().invoke(app, ["whatif", "c", "-s", "dram=2", "--store", str(tmp_path)])
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr == f"Error: run {'c' * 16} has no GPU kernels: a what-if scales kernel times (an nsys export " \
        "without CUDA trace, an ERT or estimate run has none)\n"  # fmt: skip
    res = CliRunner().invoke(app, ["whatif", "d", "-s", "dram=2", "--store", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (
        "5.000 ms measured → 5.000 ms predicted (×1.00; nothing modelled: no kernel has the counters"
        in res.stdout
    )


def test_a_compute_term_without_its_roof_or_counter_is_not_modelled(tmp_path: Path) -> None:
    """A pipe with FLOPs but no roof (an A10G under the datasheet, which gives no FP32 peak), or a kernel whose
    counted pipes did 0 FLOPs while the Tensor-Core counts are missing (an int8 GEMM), had its compute term taken as
    0 from another pipe: bound DRAM or launch_overhead, a speed-up "modelled" from memory alone. The compute term is
    unknown there, the kernel keeps its measured time, and unknown_terms says why. A failed replay's NaN duration
    made every layer and run total NaN; it is left out of the sums and counted (untimed)."""
    kernels = [
        {**_k(0, "roofless", 2e6, 1e10, (1e9, 1e8, 1e7), "a"), "flops_fp64": 0.0},  # FP32 work, FP64 roof only
        {**_k(1, "int_gemm", 3e6, 0.0, (1e3, 1e3, 1e3), "a"), "flops_fp64": 0.0},  # fp16 and tensor counts NULL
        _k(2, "stream", 5e6, 1e8, (4e9, 4e9, 4e9), "b"),  # as KERNELS: DRAM-bound, modelled
        {**_k(3, "replay", float("nan"), 1e8, (4e9, 4e9, 4e9), "b")},  # a failed replay
        {**_k(4, "counted", 4e6, 0.0, (4e9, 4e9, 4e9), "b"), "flops_fp64": 0.0, "flops_fp16": 0.0,
         "flops_tensor": 0.0},  # every counter there and 0: a zero-FLOP kernel, DRAM-bound
    ]  # fmt: skip
    ceil = {"DRAM": 1e12, "L2": 4e12, "L1": 16e12, "FP64": 1e12}
    roofs = [{"kernel_id": k, "ceiling": c, "value": v} for k in range(5) for c, v in ceil.items()]
    roofs += [{"kernel_id": k, "ceiling": "FP32", "value": 10e12} for k in (1, 2, 3, 4)]
    tiny_run(tmp_path, RUN, kernels, roofs)
    w = whatif(Store(tmp_path), RUN, parse_scales(["dram=2"]), launch_overhead_ns=T_O)
    k = _by_name(w)
    for name in ("roofless", "int_gemm"):
        assert k[name]["modelled"] is False and "compute" in k[name]["unknown_terms"], k[name]
        assert k[name]["predicted_ns"] == k[name]["duration_ns"] and k[name]["t_min_scaled_ns"] is None
    assert k["stream"]["modelled"] and k["stream"]["predicted_ns"] == pytest.approx(2.5e6)
    assert k["counted"]["modelled"] and k["counted"]["unknown_terms"] == []
    assert k["counted"]["predicted_ns"] == pytest.approx(2e6)
    assert k["replay"]["untimed"] == 1 and k["stream"]["untimed"] == 0
    assert w.total["duration_ns"] == 2e6 + 3e6 + 5e6 + 4e6 and w.total["untimed"] == 1
    assert w.total["predicted_ns"] == pytest.approx(2e6 + 3e6 + 2.5e6 + 2e6)
    assert w.total["unknown_terms"] == ["compute"]
    res = CliRunner().invoke(app, ["whatif", RUN[:6], "-s", "dram=2", "--launch-overhead", "2000",
                                   "--store", str(tmp_path)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "14.000 ms measured → 9.500 ms predicted (×1.47; modelled: 2 of 5 kernels" in res.stdout
    assert "1 launch(es) without a duration left out (NaN: a failed replay)" in res.stdout
