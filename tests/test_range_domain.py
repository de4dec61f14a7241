"""`rl layers --domain D` keeps the layers of one NVTX domain, as `range_roofline`'s `$domain` does: on an nsys GPU
run holding two annotated models (domains m and x), beside an estimate run (estimate_vs_measured in domain m, which
the run alone cannot pick: two models), and on a run without GPU kernels timed by its ranges (golden, tiny tables
built in code by tests/test_layer_views_gpu_estimates.py and tests/test_profile_range_queries.py)."""

from __future__ import annotations

import json
from pathlib import Path

from test_layer_views_gpu_estimates import EST, NSYS, _publish
from test_profile_range_queries import store as cpu_store  # noqa: F401 - the tiny CPU store fixture
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.store import Store


def _layers(store: str, run: str, *extra: str) -> dict[str, dict]:
    out = CliRunner().invoke(app, ["layers", run, "-d", "2", "-f", "json", "--store", store, *extra])
    assert out.exit_code == 0, out.output
    return {r["layer"]: r for r in json.loads(out.stdout)}


def test_gpu_layers_of_one_domain(tmp_path: Path) -> None:
    store = _publish(tmp_path, other=True)
    every = _layers(store, NSYS)
    assert {"m:forward/fc", "x:forward/lstm"} <= set(every)
    x = _layers(store, NSYS, "--domain", "x")
    assert x == {"x:forward/lstm": every["x:forward/lstm"]} and x["x:forward/lstm"]["kernel_time_ns"] == 9000
    assert set(_layers(store, NSYS, "--domain", "m")) == {k for k in every if k.startswith("m:")}
    assert _layers(store, NSYS, "--domain", "nope") == {}


def test_estimates_compared_in_the_domain_asked(tmp_path: Path) -> None:
    store = _publish(tmp_path, other=True)
    # two annotated models: without --domain the comparison falls back to estimate_vs_measured's 'rooflake'
    assert all(not k.startswith("m:") for k in _layers(store, NSYS, "--with", EST))
    m = _layers(store, NSYS, "--with", EST, "--domain", "m")
    assert set(m) == {"m:forward/fc", "m:forward/relu", "m:backward/fc"}
    fc = m["m:forward/fc"]
    assert (fc["kernels"], fc["ops"], fc["duration_ns"], fc["flops_analytic"]) == (2, 1, 4000.0, 1.0e8)


def test_range_timed_layers_of_one_domain(cpu_store: Store) -> None:  # noqa: F811
    root = str(cpu_store.root)
    every = _layers(root, "r1")
    assert set(every) == {"m:forward/conv", "m:forward/block"}
    assert _layers(root, "r1", "--domain", "m") == every and _layers(root, "r1", "--domain", "x") == {}
    versus = _layers(root, "r1", "--with", "e1", "--domain", "m")
    assert versus["m:forward/conv"]["flops_modelled"] == 1000.0
    assert _layers(root, "r1", "--with", "e1", "--domain", "x") == {}
