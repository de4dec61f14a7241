"""Per-op work from a trace's recorded shapes (the ``ops`` table, ``op_roofline``, ``op_summary``): each FLOP rule on
tiny literal traces against hand-computed counts, the same numbers with and without torch's replay, no double
counting through nested ATen chains, GPU time under each op, the bad inputs, and a CPU trace recorded here."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.ingest import read
from rooflake.instrument.shapes import op_work, parse_args, torch_available
from rooflake.pipeline import ingest_file
from rooflake.queries import connect, fetch
from rooflake.store import Store

from _support import tiny_run

BF16 = "c10::BFloat16"
H100_TRACE = Path(__file__).parent / "data" / "torch" / "h100_bert-small_inference.json.gz"


def _op(
    name: str, ts: float, dur: float, dims: list, types: list, concrete: list | None = None, tid: int = 1
):
    args: dict[str, Any] = {"Input Dims": dims, "Input type": types}
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _launch(
    ts: float, corr: int, kernel_ts: float, kernel_dur: float, name: str = "gemm_kernel"
) -> list[dict]:
    return [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 1,
         "args": {"correlation": corr}},
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": kernel_ts, "dur": kernel_dur,
         "args": {"correlation": corr, "device": 0, "stream": 7, "grid": [1, 1, 1], "block": [128, 1, 1]}},
    ]  # fmt: skip


def _trace(tmp_path: Path, events: list[dict], name: str = "t.json", gpu: bool = True) -> Path:
    doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": events, "baseTimeNanoseconds": 0}
    if gpu:
        doc["deviceProperties"] = [
            {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}
        ]
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _work(name: str, dims: list, types: list, concrete: list | None = None) -> tuple[Any, Any]:
    args = parse_args(dims, types, concrete)
    return op_work(name, args, replay=True), op_work(name, args, replay=False)


# ---------------------------------------------------------------- the rules, hand-computed


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete", "flops"),
    [
        # conv 2·N·K·P·Q·C·R·S: N=2, C=3, 32x32 in, K=8, 3x3, stride 1, pad 1 -> P=Q=32
        ("aten::conv2d", [[2, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], []],
         ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
         ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"], 2 * 2 * 8 * 32 * 32 * 3 * 3 * 3),
        # stride 2, pad 0, groups 2 (C=4 -> C/g = 2): P = Q = (9 - 3) // 2 + 1 = 4
        ("aten::convolution", [[1, 4, 9, 9], [6, 2, 3, 3], [], [], [], [], [], [], []],
         ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
         ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "2"], 2 * 1 * 6 * 4 * 4 * 2 * 3 * 3),
        # linear 2·B·in·out (the bias add is not counted, as torch counts it)
        ("aten::linear", [[16, 64], [32, 64], [32]], ["float"] * 3, ["", "", ""], 2 * 16 * 64 * 32),
        ("aten::addmm", [[32], [16, 64], [64, 32], [], []], ["float"] * 3 + ["Scalar"] * 2,
         ["", "", "", "1", "1"], 2 * 16 * 64 * 32),
        ("aten::bmm", [[4, 8, 16], [4, 16, 2]], [BF16, BF16], None, 2 * 4 * 8 * 16 * 2),
        # attention 4·B·H·N²·D: B=2, H=4, N=128, D=64
        ("aten::scaled_dot_product_attention", [[2, 4, 128, 64]] * 3 + [[], [], [], [], []],
         [BF16] * 3 + ["", "Scalar", "Scalar", "", "Scalar"], ["", "", "", "", "0.", "False", "", "False"],
         4 * 2 * 4 * 128 * 128 * 64),
        # norms: 4 FLOPs per element; element-wise: 1 per output element (broadcast)
        ("aten::native_layer_norm", [[8, 128], [], [128], [128], []], [BF16, "ScalarList", BF16, BF16, "Scalar"],
         ["", "[128]", "", "", "1e-05"], 4 * 8 * 128),
        ("aten::add", [[8, 128], [128], []], ["float", "float", "Scalar"], ["", "", "1"], 8 * 128),
        ("aten::gelu", [[8, 128], []], [BF16, ""], ["", "none"], 8 * 128),
        ("aten::sum", [[8, 128], [], [], []], ["float", "ScalarList", "Scalar", ""], ["", "[1]", "False", ""],
         8 * 128),
    ],
)  # fmt: skip
def test_flop_rules_match_hand_counts(name: str, dims: list, types: list, concrete: list, flops: int) -> None:
    replayed, builtin = _work(name, dims, types, concrete)
    assert builtin.flops == flops, builtin
    assert replayed.flops == flops, replayed  # torch's formulas (replayed) and the built-in ones agree
    if torch_available() and name in ("aten::conv2d", "aten::linear", "aten::addmm", "aten::bmm"):
        assert replayed.flops_source.startswith("torch.utils.flop_counter")
        assert builtin.flops_source.startswith("rooflake:builtin")


def test_compulsory_bytes_count_inputs_and_output_once() -> None:
    w, _ = _work("aten::addmm", [[32], [16, 64], [64, 32], [], []], ["float"] * 3 + ["Scalar"] * 2)
    assert w.bytes == (32 + 16 * 64 + 64 * 32 + 16 * 32) * 4  # bias, A, B, C (TraceLens' "data moved" too)
    assert w.traffic_model == "delta-gemm" and w.bytes_l2 is not None
    view, _ = _work("aten::view", [[16, 64], []], ["float", "ScalarList"], ["", "[1024]"])
    assert (view.flops, view.bytes, view.flops_source) == (0.0, 0, "rooflake:view")


@pytest.mark.parametrize(
    ("name", "dims", "types", "reason"),
    [
        ("aten::mystery", [[4, 4]], ["float"], "none: no FLOP formula for aten::mystery"),
        ("vllm::unified_attention", [[4, 4]], ["float"], "not an ATen operator"),
        ("aten::mm", [[4, 5], [6, 7]], ["float", "float"], "do not fit"),  # inner dims differ
        ("aten::add", [[4], [4]], ["c10::Quux", "c10::Quux"], "unknown input types"),
    ],
)
def test_ops_without_a_rule_get_null_with_the_reason(name: str, dims: list, types: list, reason: str) -> None:
    for w in _work(name, dims, types):
        assert w.flops is None and reason in w.flops_source, w


# ---------------------------------------------------------------- a trace: chains counted once, GPU time


def _chain_trace(tmp_path: Path) -> Path:
    lin = [[16, 64], [32, 64], [32]]
    events = [
        # aten::linear -> aten::t, aten::addmm (one kernel, 5 µs)
        _op("aten::linear", 10, 30, lin, [BF16] * 3, ["", "", ""]),
        _op("aten::t", 11, 2, [[32, 64]], [BF16]),
        _op("aten::addmm", 14, 20, [[32], [16, 64], [64, 32], [], []], [BF16] * 3 + ["Scalar"] * 2,
            ["", "", "", "1", "1"]),
        *_launch(15, 1, 100, 5.0),
        # aten::layer_norm (no rule of its own) -> aten::native_layer_norm (one kernel, 2 µs)
        _op("aten::layer_norm", 50, 20, [[16, 32], [], [32], [32], [], []],
            [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"], ["", "[32]", "", "", "1e-05", "True"]),
        _op("aten::native_layer_norm", 52, 15, [[16, 32], [], [32], [32], []],
            [BF16, "ScalarList", BF16, BF16, "Scalar"], ["", "[32]", "", "", "1e-05"]),
        *_launch(53, 2, 110, 2.0, "layer_norm_kernel"),
        # an op recorded without shapes, and one with malformed dims
        {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 80, "dur": 5, "args": {}},
        _op("aten::mul", 90, 5, [["x", 2]], ["float"]),
    ]  # fmt: skip
    return _trace(tmp_path, events)


def test_a_chain_carries_its_flops_once_with_the_time_of_its_kernels(tmp_path: Path) -> None:
    out = read(_chain_trace(tmp_path), run_id="r")
    ops = {r["op_name"]: r for r in out["ops"].to_pylist()}
    lin, t, addmm = ops["aten::linear"], ops["aten::t"], ops["aten::addmm"]
    assert lin["flops"] == 2 * 16 * 64 * 32 and lin["carrier_op_id"] == lin["op_id"]
    assert t["flops"] is None and addmm["flops"] is None
    assert addmm["flops_source"] == f"counted in aten::linear (op {lin['op_id']})"
    assert addmm["carrier_op_id"] == lin["op_id"]
    assert (lin["kernels"], lin["gpu_time_ns"], lin["cpu_time_ns"]) == (1, 5000, 30000)
    assert (addmm["kernels"], t["kernels"], t["gpu_time_ns"]) == (1, 0, None)
    ln, nln = ops["aten::layer_norm"], ops["aten::native_layer_norm"]
    assert nln["flops"] == 4 * 16 * 32 and ln["flops"] is None
    assert ln["flops_source"] == "counted in its nested ops: aten::native_layer_norm"
    assert ln["gpu_time_ns"] == nln["gpu_time_ns"] == 2000
    # sum(flops) over the run is its modelled work: each op once
    assert sum(r["flops"] or 0 for r in ops.values()) == 2 * 16 * 64 * 32 + 4 * 16 * 32
    assert ops["aten::relu"]["flops_source"].startswith("none: no shapes recorded")
    assert "malformed" in ops["aten::mul"]["flops_source"]
    assert ops["aten::linear"]["input_dims"] == "[[16, 64], [32, 64], [32]]"  # as the trace writes them
    assert any("ops without shapes" in w for w in out["run"]["warnings"])


def test_op_roofline_and_summary_judge_bf16_gemms_on_the_tensor_roof(tmp_path: Path) -> None:
    store = tmp_path / "store"
    res = ingest_file(_chain_trace(tmp_path), store)
    assert any("1 of 7 ops without shapes" in w for w in res.warnings or [])
    con = connect(Store(store))
    rows = {r["op_name"]: r for r in fetch(con, "op_roofline", {"run_id": res.run_id}).to_pylist()}
    lin = rows["aten::linear"]
    assert lin["datasheet_gpu"] == "H100 SXM5" and lin["peak_ceiling"] == "TENSOR BF16"
    assert lin["peak_flops_per_s"] == 989.5e12 and lin["bw_dram"] == 3.35e12
    assert lin["time_ns"] == 5000 and lin["flops_per_s"] == pytest.approx(2 * 16 * 64 * 32 / 5e-6)
    assert lin["ai"] == pytest.approx(lin["flops"] / lin["bytes"])
    assert lin["attainable_flops_per_s"] == pytest.approx(min(989.5e12, lin["ai"] * 3.35e12))
    assert lin["bound"] == "DRAM" and lin["time_bound"] == "launch"  # a tiny GEMM: t_o = 1 µs dominates T_min
    assert rows["aten::native_layer_norm"]["peak_ceiling"] == "FP32"  # element-wise half ops compute in float
    summary = fetch(con, "op_summary", {"run_id": res.run_id}).to_pylist()
    names = [r["op_name"] for r in summary]
    assert "aten::addmm" not in names and names[0] == "aten::linear"  # counted in linear: not twice
    assert summary[0]["calls"] == 1 and summary[0]["time_ns_total"] == 5000


def test_op_roofline_is_a_table_macro_of_rl_sql(tmp_path: Path) -> None:
    store = tmp_path / "store"
    res = ingest_file(_chain_trace(tmp_path), store)
    sql = f"select op_name, peak_ceiling from op_roofline('{res.run_id}') where flops > 1000 order by op_id"
    r = CliRunner().invoke(app, ["sql", "--store", str(store), "-f", "csv", sql])
    assert r.exit_code == 0, r.output
    assert "aten::linear,TENSOR BF16" in r.output.replace('"', "")


# ---------------------------------------------------------------- real traces


def test_real_h100_trace_matches_tracelens_conventions(tmp_path: Path) -> None:
    """TraceLens' BERT-small H100 trace: every addmm of its Linear layers carries 2·M·N·K and TraceLens' data moved
    (A, B, bias, C once), and the run's FLOPs are the sum of its chains' carriers only."""
    out = read(H100_TRACE, run_id="h")
    ops = out["ops"].to_pylist()
    carriers = [r for r in ops if r["carrier_op_id"] == r["op_id"]]
    counted = [r for r in ops if r["flops_source"].startswith("counted in")]
    assert carriers and counted
    assert all(r["flops"] is None for r in counted)
    linears = [r for r in carriers if r["op_name"] == "aten::linear"]
    assert linears
    for r in linears:
        x, w, *_ = json.loads(r["input_dims"])
        m, k, n = x[0] * (x[1] if len(x) == 3 else 1), x[-1], w[0]
        assert r["flops"] == 2 * m * n * k
        assert r["bytes"] == (m * k + k * n + n + m * n) * 2  # bf16
        assert r["kernels"] >= 1 and r["gpu_time_ns"] > 0


def _without_device(tmp_path: Path) -> Path:
    """TraceLens' H100 trace without its ``deviceProperties`` (as a trimmed or CPU-side export leaves it)."""
    doc = json.loads(gzip.decompress(H100_TRACE.read_bytes()))
    assert doc.pop("deviceProperties")
    path = tmp_path / "no_device.json"
    path.write_text(json.dumps(doc))
    return path


def test_rl_ingest_gpu_names_the_gpu_of_a_trace_that_names_none(tmp_path: Path) -> None:
    """``rl ingest --gpu``: a trace without device properties has no GPU, so no modelled DRAM traffic and no
    datasheet roofs; with --gpu it takes the catalog GPU (said in one line) and both follow. A trace that names its
    GPU keeps it. A --gpu the catalog does not know, or that names several GPUs, exits 2 with the store as it was."""
    trace = _without_device(tmp_path)

    def ingest(store: Path, *extra: str, path: Path = trace) -> Any:
        r = CliRunner().invoke(app, ["ingest", str(path), "--store", str(store), *extra])
        return r

    def run_and_ops(store: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        con = connect(Store(store))
        run = con.sql("SELECT gpu_name, compute_capability, run_id FROM runs").fetchall()[0]
        ops = fetch(con, "op_roofline", {"run_id": run[2]}).to_pylist()
        return {"gpu_name": run[0], "cc": run[1]}, ops

    r = ingest(tmp_path / "plain")
    assert r.exit_code == 0, r.output
    run, ops = run_and_ops(tmp_path / "plain")
    assert run["gpu_name"] is None and all(o["bytes_dram_modelled"] is None for o in ops)
    assert all(o["peak_flops_per_s"] is None for o in ops if o["flops"])

    r = ingest(tmp_path / "given", "--gpu", "NVIDIA H100 80GB HBM3")
    assert r.exit_code == 0, r.output
    assert "GPU from --gpu: H100 SXM5 (the file names none)" in r.output
    run, ops = run_and_ops(tmp_path / "given")
    assert run == {"gpu_name": "H100 SXM5", "cc": "9.0"}
    gemms = [o for o in ops if o["op_name"] == "aten::linear"]
    assert gemms and all(o["bytes_dram_modelled"] > 0 and o["peak_flops_per_s"] > 0 for o in gemms)

    r = ingest(tmp_path / "own", "--gpu", "B200", path=H100_TRACE)
    assert r.exit_code == 0, r.output
    assert "--gpu B200 not used: the file names its GPU (NVIDIA H100 80GB HBM3), which is kept" in r.output
    assert run_and_ops(tmp_path / "own")[0]["gpu_name"] == "NVIDIA H100 80GB HBM3"

    r = ingest(tmp_path / "merged", "--gpu", "B200", "--merge")
    assert r.exit_code == 2 and "--merge joins Nsight Compute files" in r.output, r.output
    for bad, said in (
        ("nonsense", "matches 0 GPUs of the datasheet catalog (known: "),
        ("A100", "matches 4 GPUs"),
    ):
        r = ingest(tmp_path / "bad", "--gpu", bad)
        assert r.exit_code == 2 and f"Error: --gpu '{bad}' {said}" in r.output, r.output
        assert not (tmp_path / "bad" / "runs").exists()


def test_a_cpu_trace_recorded_here(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
    x = torch.randn(16, 64)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(x)
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    gz = tmp_path / "cpu.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    store = tmp_path / "store"
    res = ingest_file(gz, store)
    rows = fetch(connect(Store(store)), "op_roofline", {"run_id": res.run_id}).to_pylist()
    linears = [r for r in rows if r["op_name"] == "aten::linear"]
    assert [r["flops"] for r in linears] == [2 * 16 * 64 * 32, 2 * 16 * 32 * 8]
    assert all(r["time_ns"] == r["cpu_time_ns"] > 0 for r in linears)  # no GPU kernels: the CPU time
    assert sum(r["flops"] or 0 for r in rows) == 2 * 16 * 64 * 32 + 16 * 32 + 2 * 16 * 32 * 8
    assert all(r["peak_flops_per_s"] is None and "measured on its host" in r["peak_reason"] for r in linears)


# ---------------------------------------------------------------- the commands on a trace run


@pytest.fixture(scope="module")
def trace_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("trace")
    res = ingest_file(H100_TRACE, root / "store")
    return root / "store", res.run_id


def _rl(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_rl_roofline_by_op_and_layer_on_a_trace(trace_store: tuple[Path, str], tmp_path: Path) -> None:
    store, run = trace_store
    r = _rl("roofline", run, "--by", "op", "-o", str(tmp_path / "ops.html"), "--store", str(store))
    assert r.exit_code == 0, r.output
    assert "recorded ops (work modelled from their shapes)" in r.output
    assert (
        "FLOPs and bytes modelled from the recorded shapes" in r.output
        and "ceilings datasheet (H100 SXM5)" in r.output
    )
    assert (tmp_path / "ops.html").stat().st_size > 0
    r = _rl("roofline", run, "--by", "layer", "-d", "2", "-o", str(tmp_path / "l.png"), "--store", str(store))
    assert r.exit_code == 0, r.output
    assert "layers at depth 2" in r.output and (tmp_path / "l.png").stat().st_size > 0
    r = _rl("roofline", run, "--time", "--by", "op", "-o", str(tmp_path / "t.png"), "--store", str(store))
    assert r.exit_code == 0, r.output
    assert "bounds:" in r.output and "t_o = " in r.output


def test_rl_roofline_by_kernel_on_a_trace_says_the_ops_have_flops(
    trace_store: tuple[Path, str], tmp_path: Path
) -> None:
    store, run = trace_store
    r = _rl("roofline", run, "-o", str(tmp_path / "k.html"), "--store", str(store))
    assert r.exit_code == 1
    assert r.output.startswith("Error: ") and "draw them with --by op or --by layer" in r.output
    r = _rl(
        "roofline", run, "--by", "op", "--level", "l2", "-o", str(tmp_path / "x.html"), "--store", str(store)
    )
    assert r.exit_code == 1 and "use --level dram" in r.output


def test_rl_layers_of_a_trace_show_modelled_flops(trace_store: tuple[Path, str]) -> None:
    store, run = trace_store
    r = _rl("layers", run, "-d", "2", "-f", "csv", "--store", str(store))
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))
    con = connect(Store(store))
    total = fetch(con, "op_layers", {"run_id": run, "depth": 2}).to_pylist()
    assert (
        sum(float(x["flops_modelled"] or 0) for x in rows) == sum(t["flops_modelled"] or 0 for t in total) > 0
    )
    assert all(x["flops"] == "" for x in rows)  # no counters: the measured columns stay NULL
    r = _rl("layers", run, "-d", "2", "--store", str(store))
    assert "modelled from the recorded ops' shapes" in r.output


def test_rl_layers_of_a_trace_with_an_ncu_run_cross_check_counted_and_modelled_flops(tmp_path: Path) -> None:
    """`rl layers TRACE --with NCU` (and `rl layers NCU --with TRACE`): per layer, ncu's counted FLOPs beside the
    FLOPs modelled from the trace's shapes, their ratio and the gap's likely cause (macro flops_gap)."""
    events = _chain_trace(tmp_path)
    doc = json.loads(events.read_text())
    doc["traceEvents"] += [
        _op("aten::mm", 120, 20, [[8, 16], [16, 4]], ["float", "float"]),
        *_launch(121, 3, 200, 3.0, "mm_kernel"),
        *_launch(125, 4, 205, 1.0, "splitk_reduce"),  # ncu never profiled it: the layer is counted in part
    ]
    events.write_text(json.dumps(doc))
    store = tmp_path / "store"
    trace = ingest_file(events, store).run_id
    ncu = [
        {"kernel_id": 0, "name": "gemm_kernel", "flops_tensor": 2.0 * 16 * 64 * 32, "duration_ns": 9.0},
        {"kernel_id": 1, "name": "layer_norm_kernel", "flops_fp32": 2 * 4.0 * 16 * 32, "duration_ns": 9.0},
        {"kernel_id": 2, "name": "mm_kernel", "flops_fp32": 2.0 * 8 * 16 * 4, "duration_ns": 9.0},
    ]
    tiny_run(store, "c" * 16, [k | {"short_name": k["name"]} for k in ncu], [], source_format="ncu-rep")
    r = _rl("layers", trace, "--with", "c", "-f", "json", "--store", str(store))
    assert r.exit_code == 0, r.output
    rows = {x["layer"]: x for x in json.loads(r.stdout)}
    lin, norm, mm = rows["torch:aten::linear"], rows["torch:aten::layer_norm"], rows["torch:aten::mm"]
    assert (lin["flops"], lin["flops_modelled"], lin["flops_ratio"], lin["gaps"]) == (65536, 65536, 1.0, [])
    assert (norm["flops"], norm["flops_modelled"], norm["flops_ratio"]) == (4096, 2048, 2.0)
    gap = _rl("sql", "SELECT flops_gap(2.0) AS gap", "-f", "json", "--store", str(store))
    assert gap.exit_code == 0 and norm["gaps"] == [json.loads(gap.stdout)[0]["gap"]]
    assert norm["gaps"][0].startswith("FLOPs: executed > algorithmic")
    assert mm["flops_ratio"] is None and mm["flops_modelled"] == 2 * 8 * 16 * 4
    assert mm["gaps"] == ["FLOPs: counters cover only part of the launches (no ratio)"]
    swapped = _rl("layers", "c", "--with", trace, "-f", "json", "--store", str(store))
    assert swapped.exit_code == 0 and swapped.stdout == r.stdout
    r = _rl("layers", trace, "--with", "c", "--store", str(store))
    assert (
        "ratio = ncu-counted FLOPs / FLOPs modelled from the recorded shapes (each op once), on 2 of 3"
        in r.stdout
    )
    assert "1 of them off by more than 10 %" in r.stdout


# ---------------------------------------------------------------- nsys: shapes in NVTX texts


def _range(rid: int, text: str, start: int, end: int, parent: int | None = None) -> dict[str, Any]:
    name = text.split(",")[0] if not text.startswith("{") else "torch.nn.functional.x"
    return {"range_id": rid, "name": name, "text": text, "start_ns": start, "end_ns": end, "thread": 5,
            "parent_id": parent, "args": None}  # fmt: skip


def test_nsys_shape_texts_of_all_three_forms() -> None:
    from rooflake.ingest import op_texts, ops

    rows = [
        # emit_nvtx(record_shapes=True): seq, sizes (no dtypes: FLOPs yes, bytes unknown)
        _range(1, "aten::addmm, seq = 3, sizes = [[32], [16, 64], [64, 32], [], []]", 0, 100),
        # nsys --pytorch=autograd-shapes-nvtx: op_id, sizes, input_op_ids
        _range(
            2,
            "aten::bmm, op_id = 9, sizes = [[4, 8, 16], [4, 16, 2]], input_op_ids = [(7, 0), (8, 0)]",
            200,
            300,
        ),
        # a PyProf / DLProf dict, dtypes included
        _range(
            3,
            "{'mod': 'torch.nn.functional', 'op': 'linear', 'args': [{'name': '', 'type': 'tensor', 'shape': "
            "(16, 64), 'dtype': 'float16'}, {'name': '', 'type': 'tensor', 'shape': (32, 64), 'dtype': 'float16'}]}",
            400,
            500,
        ),  # fmt: skip
        _range(4, "aten::linear, seq = 4", 410, 490, parent=3),
        # texts that merely look like shapes
        _range(5, "aten::mm, op_id = 10, sizes = [[4, 'x'], [3]]", 600, 700),
        _range(6, "{'op': 'conv2d', 'args': 'not a list'}", 800, 900),
        _range(7, "aten::relu, op_id = 11", 1000, 1100),
    ]
    got, counts = ops.op_rows(rows, is_op=op_texts.is_op, recorded=op_texts.recorded)
    by = {r["range_id"]: r for r in got}
    assert by[1]["flops"] == 2 * 16 * 64 * 32 and by[1]["bytes"] is None  # no dtype: bytes unknown
    assert by[2]["flops"] == 2 * 4 * 8 * 16 * 2
    assert by[3]["flops"] == 2 * 16 * 64 * 32 and by[3]["bytes"] == (16 * 64 + 32 * 64 + 16 * 32) * 2
    assert by[3]["dtype"] == "float16" and by[4]["flops_source"].startswith("counted in torch.nn.functional")
    assert by[5]["flops"] is None and "malformed" in by[5]["flops_source"]
    assert by[6]["flops"] is None and by[7]["flops_source"].startswith("none: no shapes recorded")
    assert (
        counts["without_shapes"] == 2
    )  # relu, and the dict whose args are not a list holds no dims... or is it?
    assert sum(r["flops"] or 0 for r in got) == 2 * 16 * 64 * 32 * 2 + 2 * 4 * 8 * 16 * 2


def test_a_real_dlprof_nsys_export_gets_conv_flops(tmp_path: Path) -> None:
    from _support import FIXTURES

    path = FIXTURES / "nsys" / "MohanadOdema__DLProf__nsys_profile.sqlite"
    if not path.exists():
        pytest.skip(f"fixture {path} not found")
    out = read(path, run_id="d")
    convs = [r for r in out["ops"].to_pylist() if r["op_name"] == "torch.nn.functional.conv2d"]
    # conv1: N=1, C=3, 32x32, K=6, 3x3, stride 1, pad 0 -> 30x30; conv2: C=6, 30x30, K=16, 5x5 -> 26x26
    assert [r["flops"] for r in convs] == [2 * 1 * 6 * 30 * 30 * 3 * 3 * 3, 2 * 1 * 16 * 26 * 26 * 6 * 5 * 5]
    assert all(r["kernels"] > 0 and r["gpu_time_ns"] > 0 for r in convs)
    linear = next(r for r in out["ops"].to_pylist() if r["op_name"] == "torch.nn.functional.linear")
    assert linear["flops"] is None and "do not fit" in linear["flops_source"]  # the recorded 10816 vs 400


# ---------------------------------------------------------------- bad input: never a traceback, never a guess


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(["aten::addmm", "aten::conv2d", "aten::scaled_dot_product_attention", "aten::add",
                          "aten::linear", "aten::_flash_attention_forward", "aten::native_layer_norm", "x::y"]),
    dims=_JSONISH, types=_JSONISH, concrete=_JSONISH,
)  # fmt: skip
def test_any_recorded_args_give_a_number_or_null_with_a_reason(
    name: str, dims: Any, types: Any, concrete: Any
) -> None:
    from rooflake.instrument.shapes import ShapeError

    try:
        args = parse_args(dims, types, concrete)
    except ShapeError:
        return
    for replay in (False, True):
        w = op_work(name, args, replay=replay)
        assert (w.flops is None) == w.flops_source.startswith("none:"), w
        assert w.flops is None or w.flops >= 0


def test_a_hostile_trace_is_ingested_with_its_times_and_one_line_per_kind(tmp_path: Path) -> None:
    events = [
        _op("[red]aten::mm[/red]", 0, 5, [[2, 2], [2, 2]], ["float", "float"]),
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"Input Dims": "garbage", "Input type": {"a": 1}}},
        _op("aten::mm", 20, 5, [[2, 2], [2, 2]], ["c10::Mystery", "c10::Mystery"]),
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 30, "dur": 5, "args": {}},
        _op("jax::dot_general", 40, 5, [[2, 2]], ["float"]),
    ]  # fmt: skip
    store = tmp_path / "store"
    r = CliRunner().invoke(app, ["ingest", str(_trace(tmp_path, events)), "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert "1 of 5 ops without shapes" in r.output and "4 ops without a FLOP rule" in r.output
    assert "Traceback" not in r.output
    run = Store(store).resolve(None)
    rows = fetch(connect(Store(store)), "op_roofline", {"run_id": run}).to_pylist()
    assert [x["flops"] for x in rows] == [None] * 5 and all(x["cpu_time_ns"] == 5000 for x in rows)
    assert rows[0]["op_name"] == "[red]aten::mm[/red]"  # data, stored as it is
    r = CliRunner().invoke(
        app, ["sql", "--store", str(store), f"select op_name from ops where run_id = '{run}'"]
    )
    assert r.exit_code == 0 and "[red]aten::mm[/red]" in r.output  # shown as text, never as markup


def test_a_cpu_trace_is_judged_against_its_hosts_measured_ceilings(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Linear(64, 32).eval()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(torch.randn(16, 64))
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    store = tmp_path / "store"
    res = ingest_file(path, store)
    host = connect(Store(store)).execute(f"select host from runs where run_id = '{res.run_id}'").fetchone()[0]
    if host is None:
        pytest.skip("this torch writes no host name into its traces")
    key = f"{host} | test cpu | 1 threads"
    measured = {"rooflake_measured_ceilings": 1, "measured_at": "2026-12-01T00:00:00+00:00", "device": "cpu",
                "host": host, "cpu": "test cpu", "gpu": None, "command_line": "test", "ceilings": [
                    {"ceiling": c, "kind": k, "value": v, "unit": u, "machine_key": key, "method": "test",
                     "source_name": c, "details": {"threads": 1}}
                    for c, k, v, u in [("FP32", "compute", 4e10, "FLOP/s"), ("DRAM", "bandwidth", 1e10, "byte/s")]]}  # fmt: skip
    (tmp_path / "m.json").write_text(json.dumps(measured))
    ingest_file(tmp_path / "m.json", store)
    rows = fetch(connect(Store(store)), "op_roofline", {"run_id": res.run_id}).to_pylist()
    lin = next(r for r in rows if r["op_name"] == "aten::linear")
    assert (lin["roofs_from"], lin["peak_ceiling"], lin["peak_flops_per_s"], lin["bw_dram"]) == (
        "measured",
        "FP32",
        4e10,
        1e10,
    )
    assert lin["attainable_flops_per_s"] == pytest.approx(min(4e10, lin["ai"] * 1e10))


_LAUNCH = st.tuples(
    st.sampled_from([1, 2, None]),  # launch thread
    st.integers(0, 60),  # launch start (ties on purpose)
    st.one_of(st.none(), st.integers(0, 5000).map(lambda ps: ps / 1000)),  # duration, ns with 3 decimals
)
_OP = st.tuples(
    st.sampled_from([1, 2, None]),
    st.one_of(st.none(), st.integers(0, 60)),
    st.one_of(st.none(), st.integers(-5, 40)),  # cpu time: none, zero or negative too
)


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(_OP, max_size=12),
    kernels=st.lists(_LAUNCH, max_size=15),
    memops=st.lists(_LAUNCH, max_size=5),
)
def test_gpu_time_per_op_is_the_exact_sum_of_its_launches(ops: list, kernels: list, memops: list) -> None:
    """ops_gpu_time.sql (running totals and two ASOF joins) against the definition: the kernels and memops whose
    launch ran on the op's thread while it was open (start <= launch < start + cpu time), their durations summed
    exactly and rounded half up; NULL time where none was launched or none has a duration."""
    from decimal import ROUND_HALF_UP, Decimal

    import pyarrow as pa

    from rooflake.ingest import ops as ops_mod
    from rooflake.ingest import sqlscript

    op_rows = pa.table({
        "op_id": list(range(len(ops))), "thread": [o[0] for o in ops], "start_ns": [o[1] for o in ops],
        "cpu_time_ns": [o[2] for o in ops],
    }, schema=pa.schema([("op_id", pa.int64()), ("thread", pa.int64()), ("start_ns", pa.int64()),
                         ("cpu_time_ns", pa.int64())]))  # fmt: skip

    def launches(rows: list) -> pa.Table:
        return pa.table({"launch_thread": pa.array([r[0] for r in rows], pa.int64()),
                         "launch_start_ns": pa.array([r[1] for r in rows], pa.int64()),
                         "duration_ns": pa.array([r[2] for r in rows], pa.float64())})  # fmt: skip

    got = ops_mod._gpu_times(sqlscript, op_rows, launches(kernels), launches(memops)).to_pylist()
    for (thread, start, cpu), row in zip(ops, got, strict=True):
        under = [
            (is_kernel, d)
            for is_kernel, rows in ((1, kernels), (0, memops))
            for t, at, d in rows
            if thread is not None
            and t == thread
            and start is not None
            and cpu is not None
            and start <= at < start + cpu
        ]
        timed = [Decimal(str(d)) for _, d in under if d is not None]
        exact = int(sum(timed).quantize(Decimal(1), rounding=ROUND_HALF_UP)) if timed else None
        assert (row["kernels"], row["gpu_ops"], row["gpu_time_ns"]) == (
            sum(k for k, _ in under),
            len(under),
            exact,
        )


_RANGE = st.tuples(
    st.one_of(st.none(), st.integers(0, 6)),  # start (ties and NULLs on purpose)
    st.one_of(st.none(), st.integers(0, 9)),  # end
    st.booleans(),  # an op (cpu_op) or a module scope
)


@settings(max_examples=200, deadline=None)
@given(ranges=st.lists(_RANGE, max_size=14))
def test_the_ops_table_orders_ranges_as_the_rows_do(ranges: list) -> None:
    """op_table sorts the ranges in Arrow and makes their rows a block at a time; op_rows sorts Python rows:
    the same order (start, NULL last; end descending, NULL as 0; stable), so the same op ids and chains."""
    import pyarrow as pa

    rows = [
        {
            "range_id": i,
            "name": f"aten::mm{i}" if op else f"M{i}",
            "text": None,
            "start_ns": s,
            "end_ns": e,
            "thread": 1,
            "parent_id": i - 1 if i % 3 else None,
            "args": json.dumps(
                {
                    "cat": "cpu_op" if op else "python_function",
                    "Input Dims": [[2, 3], [3, 4]],
                    "Input type": ["float", "float"],
                }
            ),
        }  # fmt: skip
        for i, (s, e, op) in enumerate(ranges)
    ]
    table = pa.Table.from_pylist([dict(r) for r in rows], schema=pa.schema([
        ("range_id", pa.int64()), ("name", pa.string()), ("text", pa.string()), ("start_ns", pa.int64()),
        ("end_ns", pa.int64()), ("thread", pa.int64()), ("parent_id", pa.int64()), ("args", pa.string()),
    ]))  # fmt: skip
    from rooflake.ingest import ops

    got, _ = ops.op_table({"ranges": table, "kernels": None, "memops": None}, "r")
    want, _ = ops.op_rows(rows)
    keep = ["op_id", "range_id", "flops", "flops_source", "carrier_op_id", "module_path", "nvtx_stack"]
    assert got.select(keep).to_pylist() == [{k: r[k] for k in keep} for r in want]
