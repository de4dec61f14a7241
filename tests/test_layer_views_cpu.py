"""Layer views of a real CPU run, through the CLI: `rl layers RUN` on a run without GPU kernels (times from its NVTX
ranges, query range_times) and `rl roofline RUN --by layer --with ESTIMATE_RUN` (time measured by nsys, FLOPs and
compulsory bytes modelled by `rl estimate`, roofs measured by `rl ceilings measure`).

One run is recorded the way a user types it (tests/test_cpu_e2e.py records the full sweep): a small CNN
(tests/torch_models.py) trained 3 steps on 1 thread under `rooflake.instrument.annotate`, `rl profile --nsys`, with
the machine's ceilings measured at 1 thread and the model estimated at the same shapes. Every layer row is checked
against the queries and tables it comes from: times equal range_times, FLOPs the estimates' sums, AI = FLOPs /
bytes; no layer above its roof (skipped, saying so, when the load average shows other processes on the cores).
Skipped, saying why, without `nsys`, torch or nvtx. About 20 s on 2 idle cores.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.store import Store

pytest.importorskip("torch")
pytest.importorskip("nvtx")
pytestmark = pytest.mark.skipif(
    shutil.which("nsys") is None,
    reason="NVIDIA Nsight Systems `nsys` is not on PATH (bash ../shared/tools/install-nsight.sh)",
)
TESTS = Path(__file__).resolve().parent
STEPS = 3
BATCH = 8
MODULES = ("conv1", "bn1", "relu", "pool", "conv2", "fc")

TRAIN = """
import sys

import torch

from rooflake.instrument import annotate

sys.path.insert(0, sys.argv[1])
from torch_models import SmallCNN  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
model, x = SmallCNN(), torch.randn(int(sys.argv[2]), 3, 32, 32)
model(x).sum().backward()  # warm-up outside the ranges
with annotate(model, domain="cnn"):
    for _ in range(int(sys.argv[3])):
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()
"""


def rl(*args: str, code: int = 0) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == code, (args, r.output)
    return r.output


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("cpu_layers")
    store = str(tmp / "store")
    script = tmp / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    load = [os.getloadavg()[0]]
    rl("ceilings", "measure", "--threads", "1", "-o", str(tmp / "ceilings.json"), "--store", store)
    out = rl(
        "profile", "--nsys", "--trace", "nvtx,osrt", "-l", "threads=1", "-o", str(tmp / "train"),
        "--store", store, "--", sys.executable, str(script), str(TESTS), str(BATCH), str(STEPS),
    )  # fmt: skip
    run = out.splitlines()[-1].split()[1]
    est = rl("estimate", "torch_models:SmallCNN", "-i", f"{BATCH}x3x32x32", "--training", "--store", store)
    load.append(os.getloadavg()[0])
    return {"store": store, "tmp": tmp, "run": run, "est": est.split()[1], "load": max(load)}


def _range_times(c: dict, depth: int) -> dict[str, dict]:
    rows = queries.execute(
        Store(c["store"]),
        "SELECT * FROM range_times WHERE run_id = $r AND depth = $d",
        {"r": c["run"], "d": depth},
    ).to_pylist()
    return {r["layer"]: r for r in rows}


def test_layers_of_a_cpu_run_are_its_range_times(cpu_run: dict) -> None:
    expected = _range_times(cpu_run, 2)
    assert set(expected) == {f"cnn:{p}/{m}" for p in ("forward", "backward") for m in MODULES}
    rows = json.loads(rl("layers", cpu_run["run"], "-d", "2", "-f", "json", "--store", cpu_run["store"]))
    assert {r["layer"]: r for r in rows} == {k: json.loads(json.dumps(v)) for k, v in expected.items()}
    times = [r["inclusive_ns"] for r in rows]
    assert times == sorted(times, reverse=True)  # by inclusive time
    text = rl("layers", cpu_run["run"], "-d", "2", "-m", "conv", "--store", cpu_run["store"])
    assert "has no GPU kernels: layer times are the CPU time of its NVTX ranges" in text
    assert "cnn:forward/conv1" in text and "cnn:forward/fc" not in text  # --match applies
    top = json.loads(rl("layers", cpu_run["run"], "-f", "json", "--store", cpu_run["store"]))
    assert {r["layer"]: (r["calls"], r["exclusive_ns"]) for r in top} == {
        k: (STEPS, v["exclusive_ns"]) for k, v in _range_times(cpu_run, 1).items()
    }


def _estimated(c: dict) -> dict[tuple[str, str], tuple[float, int]]:
    """(phase, module) -> (FLOPs, compulsory bytes) summed over the estimate rows of the module and those inside."""
    rows = queries.execute(
        Store(c["store"]), "SELECT phase, module_path, flops, bytes_compulsory FROM estimates WHERE run_id = $e",
        {"e": c["est"]},
    ).to_pylist()  # fmt: skip
    out = {}
    for phase in ("forward", "backward"):
        for m in MODULES:
            mine = [r for r in rows if r["phase"] == phase and (r["module_path"] + ".").startswith(m + ".")]
            assert mine, (phase, m)
            out[(phase, m)] = (sum(r["flops"] or 0.0 for r in mine), sum(r["bytes_compulsory"] for r in mine))
    return out


def test_roofline_by_layer_with_an_estimate_run(cpu_run: dict) -> None:
    from rooflake.views.roofline import roofline

    out_file = cpu_run["tmp"] / "layers.html"
    text = rl(
        "roofline", cpu_run["run"][:8], "--by", "layer", "-d", "2", "--with", cpu_run["est"][:8], "--level", "l2",
        "-o", str(out_file), "--store", cpu_run["store"],
    )  # fmt: skip
    said = f"time measured (nsys, NVTX ranges on the CPU), FLOPs and bytes modelled (rl estimate {cpu_run['est']}"
    assert said in text and "2 layers without FLOPs" in text  # the two pools
    # the table beside the chart says it too (human units, headers naming what is measured and what modelled)
    assert (
        all(h in text for h in ("┆ time ", "┆ FLOP model ", "┆ AI model ", "┆ FLOP/s ")) and "conv2" in text
    )
    page = out_file.read_text()
    assert said in page  # the chart's title says it too
    # its points are layers: the legend, the subtitle and the table below said "Kernel", "kernel(s)"
    assert "layer(s) drawn" in page and "Layers without FLOPs" in page and "kernel(s)" not in page
    png = cpu_run["tmp"] / "layers.png"
    rl("roofline", cpu_run["run"][:8], "--by", "layer", "-d", "2", "--with", cpu_run["est"][:8], "--level", "l2",
       "-o", str(png), "--store", cpu_run["store"])  # fmt: skip
    width = int.from_bytes(png.read_bytes()[16:20], "big")
    assert width < 2000, width  # the provenance on the title's line made it ~4,100 px, the plot a third of it
    v = roofline(
        Store(cpu_run["store"]), cpu_run["run"], "l2", grain="layer", depth=2, with_run=cpu_run["est"]
    )
    assert v.provenance is not None and v.provenance.startswith(said)
    times, model = _range_times(cpu_run, 2), _estimated(cpu_run)
    peak = {r["ceiling"]: r["value"] for r in v.ceilings.to_pylist()}
    rows = v.points.to_pylist()
    assert len(rows) == len(times) == 12
    for r in rows:
        phase, m = r["name"].split(":")[1].split("/")
        assert r["steps"] == STEPS and r["calls"] == times[r["name"]]["calls"]
        assert r["duration_ns"] == times[r["name"]]["inclusive_ns"] / STEPS
        flops, nbytes = model[(phase, m)]
        assert r["flops"] == pytest.approx(flops, rel=1e-12) and r["bytes_compulsory"] == nbytes
        assert r["bytes_l2"] == nbytes and r["bytes_dram"] is None and r["bytes_l1"] is None
        assert r["peak_flops_per_s"] == peak["FP32"] and r["bw_l2"] == peak["L2"]
        if m == "pool":  # max pooling: no FLOPs, listed apart
            assert r["zero_flops"] and r["ai_l2"] is None and r["attainable_flops_per_s"] is None
            continue
        assert r["ai_l2"] == pytest.approx(flops / nbytes, rel=1e-12)
        assert r["achieved_flops_per_s"] == pytest.approx(flops * 1e9 / r["duration_ns"], rel=1e-12)
        assert r["attainable_flops_per_s"] == pytest.approx(
            min(peak["FP32"], r["ai_l2"] * peak["L2"]), rel=1e-12
        )


def test_the_points_equal_range_roofline_and_none_is_above_its_roof(cpu_run: dict) -> None:
    from rooflake.views.roofline import estimate_roofline

    store = Store(cpu_run["store"])
    v = estimate_roofline(store, cpu_run["run"], cpu_run["est"], depth=2, level="l2")
    key = v.ceilings.column("machine_key")[0].as_py()
    assert key.endswith("| 1 threads")
    ref = queries.execute(
        store, "SELECT * FROM range_roofline($r, $e, $k) WHERE depth = 2", {"r": cpu_run["run"], "e": cpu_run["est"],
                                                                           "k": key},
    ).to_pylist()  # fmt: skip
    by = {r["layer"]: r for r in ref}
    for r in v.points.to_pylist():
        q = by[r["name"]]
        assert (r["duration_ns"], r["flops"], r["ai_l2"]) == (q["time_ns"], q["flops"], q["ai"])
        assert r["attainable_flops_per_s"] == q["attainable_flops_per_s"]
    cores = os.cpu_count() or 1
    if cpu_run["load"] > cores:
        pytest.skip(
            f"load average {cpu_run['load']:.1f} on {cores} cores: timings do not compare with the roofs"
        )
    for r in v.points.to_pylist():
        if not r["zero_flops"]:
            assert r["above_roof"] is False, (
                r["name"],
                r["achieved_flops_per_s"],
                r["attainable_flops_per_s"],
            )
            assert r["achieved_flops_per_s"] <= r["peak_flops_per_s"]


def test_wrong_runs_are_one_error_line(cpu_run: dict) -> None:
    store = cpu_run["store"]
    out = rl("roofline", cpu_run["est"], "--by", "layer", "--with", cpu_run["est"], "--store", store, code=1)
    assert out.startswith("Error: ") and "Nsight Systems run (rl profile --nsys)" in out
    out = rl("roofline", cpu_run["run"], "--by", "layer", "-d", "9", "--with", cpu_run["est"], "--store", store,
             code=1)  # fmt: skip
    assert out.startswith("Error: ") and "no NVTX range at depth 9" in out
    out = rl("roofline", cpu_run["run"], "--with", cpu_run["est"], "--store", store, code=2)
    assert "--with needs --by layer" in out
    # rl layers refuses the same pairs (it printed an empty table and exited 0)
    out = rl("layers", cpu_run["est"], "--with", cpu_run["est"], "--store", store, code=1)
    assert out.startswith("Error: ") and "is a torch-model run without GPU kernels" in out
    out = rl("layers", cpu_run["run"], "-d", "9", "--with", cpu_run["est"], "--store", store, code=1)
    assert out.startswith("Error: ") and "no NVTX range at depth 9" in out
    for more in ([], ["--with", cpu_run["est"]]):  # --device was ignored: every layer, as if on that device
        out = rl("layers", cpu_run["run"], "--device", "0", *more, "--store", store, code=1)
        assert out.startswith("Error: ") and "has no GPU kernels" in out and "--device does not apply" in out


def test_layers_with_an_estimate_run_keep_match(cpu_run: dict) -> None:
    def layers(*match: str) -> list[str]:
        args = ["layers", cpu_run["run"], "-d", "2", "--with", cpu_run["est"], *match]
        return [r["layer"] for r in json.loads(rl(*args, "-f", "json", "--store", cpu_run["store"]))]

    assert sorted(layers("-m", "conv1")) == ["cnn:backward/conv1", "cnn:forward/conv1"]  # --match was ignored
    assert len(layers()) == 12 and layers("-m", "no such layer") == []


def test_time_based_roofline_by_layer_with_an_estimate_run(cpu_run: dict) -> None:
    from rooflake.views.time_roofline import estimate_time_roofline

    out_file = cpu_run["tmp"] / "time.html"
    text = rl(
        "roofline", cpu_run["run"], "--time", "--by", "layer", "-d", "2", "--with", cpu_run["est"], "--level", "l2",
        "--launch-overhead", "2000", "-o", str(out_file), "--store", cpu_run["store"],
    )  # fmt: skip
    assert "12 layers at depth 2, t_o = 2 µs (option)" in text
    assert "time measured (nsys, NVTX ranges on the CPU), FLOPs and bytes modelled" in text
    assert "FLOPs and bytes modelled" in out_file.read_text()
    v = estimate_time_roofline(
        Store(cpu_run["store"]), cpu_run["run"], cpu_run["est"], depth=2, level="l2", launch_overhead_ns=2000
    )
    times = _range_times(cpu_run, 2)
    peak = {r["ceiling"]: r["value"] for r in v.ceilings.to_pylist()}
    for r in v.points.to_pylist():
        n = times[r["name"]]["calls"] / STEPS
        assert r["n_kernels"] == n and r["overhead_floor_ns"] == n * 2000
        assert r["duration_ns"] == times[r["name"]]["inclusive_ns"] / STEPS
        terms = {"FP32": r["flops"] / peak["FP32"] * 1e9, "L2": r["bytes_l2"] / peak["L2"] * 1e9}
        terms["launch_overhead"] = n * 2000
        assert r["t_min_ns"] == pytest.approx(max(terms.values()), rel=1e-12)
        assert r["bound"] == max(terms, key=lambda k: terms[k])
        assert r["inefficiency"] == pytest.approx(r["duration_ns"] / r["t_min_ns"], rel=1e-12)
    cores = os.cpu_count() or 1
    if cpu_run["load"] > cores:
        pytest.skip(
            f"load average {cpu_run['load']:.1f} on {cores} cores: timings do not compare with the roofs"
        )
    assert not any(v.points.column("below_bound").to_pylist())  # T >= T_min: no layer beats its roofs


def test_layers_of_a_cpu_run_with_an_estimate_run(cpu_run: dict) -> None:
    rows = json.loads(
        rl(
            "layers",
            cpu_run["run"],
            "-d",
            "2",
            "--with",
            cpu_run["est"],
            "-f",
            "json",
            "--store",
            cpu_run["store"],
        )
    )
    times, model = _range_times(cpu_run, 2), _estimated(cpu_run)
    assert {r["layer"] for r in rows} == set(times)
    for r in rows:
        phase, m = r["layer"].split(":")[1].split("/")
        flops, nbytes = model[(phase, m)]
        assert r["time_ns_measured"] == times[r["layer"]]["inclusive_ns"] / STEPS and r["steps"] == STEPS
        assert r["flops_modelled"] == pytest.approx(flops, rel=1e-12) and r["bytes_modelled"] == nbytes
        if flops:
            assert r["ai"] == pytest.approx(flops / nbytes, rel=1e-12)
            assert r["flops_per_s"] == pytest.approx(flops * 1e9 / r["time_ns_measured"], rel=1e-12)
        else:
            assert r["ai"] is None
