"""rl compare: per-layer and per-kernel comparison of two runs, and the --fail-if-slower gate (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.store import Store

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
    res = queries.compare(Store(store), "a", "b")
    layers = {r["layer"]: r for r in res["layers"].to_pylist()}
    assert layers[A]["time_change"] == pytest.approx(0.5) and layers[A]["status"] == "both"
    assert layers[B]["time_change"] == pytest.approx(-0.05)
    kernels = {(r["name"], r["status"]) for r in res["kernels"].to_pylist()}
    assert kernels == {("X", "both"), ("Y", "removed"), ("Z", "new")}
    assert res["time_change"] == pytest.approx(340 / 300 - 1)


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
