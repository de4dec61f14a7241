"""rl compare: per-layer and per-kernel comparison of two runs, and the --fail-if-slower gate (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.store import Store
from rooflake.views.compare import compare

from _support import tiny_run

A, B = "<default domain>:A", "<default domain>:B"


def _k(kid: int, name: str, path: str, dur: float) -> dict:
    return {"kernel_id": kid, "name": name, "short_name": name, "nvtx_path": path, "nvtx_domain": "<default domain>",
            "nvtx_stack": [path.split(":")[1]], "duration_ns": dur, "device_id": 0}  # fmt: skip


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    tiny_run(tmp_path, "a" * 16, [_k(0, "X", A, 100.0), _k(1, "Y", B, 200.0)], [])
    tiny_run(tmp_path, "b" * 16, [_k(0, "X", A, 150.0), _k(1, "Z", B, 190.0)], [])
    return tmp_path


def test_compare_tables(store: Path) -> None:
    res = compare(Store(store), "a", "b")
    layers = {r["layer"]: r for r in res.layers.to_pylist()}
    assert layers[A]["time_change"] == pytest.approx(0.5) and layers[A]["status"] == "both"
    assert layers[B]["time_change"] == pytest.approx(-0.05)
    kernels = {(r["name"], r["status"]) for r in res.kernels.to_pylist()}
    assert kernels == {("X", "both"), ("Y", "removed"), ("Z", "new")}
    assert res.time_change == pytest.approx(340 / 300 - 1)
    assert (res.base_time_ns, res.new_time_ns) == (300.0, 340.0) and not res.failed
    gated = compare(Store(store), "a", "b", fail_if_slower=20)
    assert (
        gated.failed
        and gated.slower_layers == [A]
        and gated.verdict.endswith(f"FAIL: more than 20 % slower ({A})")
    )


@pytest.mark.parametrize("pct,code", [(10, 3), (20, 3), (60, 0)])
def test_fail_if_slower(store: Path, pct: int, code: int) -> None:
    # total +13.3 %, layer A +50 %: any limit under 50 % fails
    r = CliRunner().invoke(app, ["compare", "a", "b", "--store", str(store), "--fail-if-slower", str(pct)])
    assert r.exit_code == code, r.stdout + r.stderr
    assert ("FAIL" in r.stdout) == (code == 3)


def test_formats(store: Path) -> None:
    r = CliRunner().invoke(app, ["compare", "a", "b", "--store", str(store), "-f", "markdown"])
    assert r.exit_code == 0 and "| layer | status |" in r.stdout and "+13.3%" in r.stdout
    r = CliRunner().invoke(app, ["compare", "a", "b", "--store", str(store), "-f", "json"])
    out = json.loads(r.stdout)
    assert out["failed"] is False and {k["name"] for k in out["kernels"]} == {"X", "Y", "Z"}


def test_layer_bound_is_the_bound_of_most_time(tmp_path: Path) -> None:
    ceil = [
        {"kernel_id": k, "ceiling": c, "value": v}
        for k in (0, 1)
        for c, v in (("DRAM", 1e12), ("FP32", 1e13))
    ]
    # layer A: a DRAM-bound kernel (AI 1) for 300 ns and a compute-bound one (AI 100) for 100 ns
    kernels = [
        {**_k(0, "stream", A, 300.0), "flops_fp32": 1e3, "bytes_dram": 1e3},
        {**_k(1, "gemm", A, 100.0), "flops_fp32": 1e5, "bytes_dram": 1e3},
    ]
    tiny_run(tmp_path, "c" * 16, kernels, ceil)
    tiny_run(tmp_path, "d" * 16, kernels, ceil)
    (row,) = compare(Store(tmp_path), "c", "d").layers.to_pylist()
    assert (row["base_bound"], row["new_bound"]) == ("DRAM", "DRAM")
    assert row["base_ai_dram"] == pytest.approx((1e3 + 1e5) / 2e3)


def test_a_run_without_gpu_time_is_one_error_line(store: Path) -> None:
    """An estimate, ERT or CPU nsys run has no GPU kernels: its total was printed as 0.000 ms and every kernel of
    the other run as new, exit 0."""
    tiny_run(store, "e" * 16, [], [], source_format="torch-model")
    for pair in (["e", "a"], ["a", "e"]):
        res = CliRunner().invoke(app, ["compare", *pair, "--store", str(store)])
        assert res.exit_code == 1 and res.stdout == "", res.output
        assert res.stderr == (
            f"Error: run {'e' * 16} has no GPU kernels or memory operations: a comparison compares GPU time (an "
            "nsys export without CUDA trace, an ERT or estimate run has none)\n"
        )
