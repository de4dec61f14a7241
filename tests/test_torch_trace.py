"""torch.profiler (Kineto) Chrome traces: detection by content, kernels, memops, ranges with shapes, layer
attribution, on real traces from peer projects (tests/data/torch/README.md) and on a trace made here by a CPU
``torch.profiler`` run of a small ``torch.nn`` model; bad input gives one error naming the file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.ingest import detect_format, read
from rooflake.ingest import torch_trace as tt
from rooflake.pipeline import ingest_file
from rooflake.schema import InputError, UnsupportedFormatError

DATA = Path(__file__).parent / "data" / "torch"
H100 = (
    DATA / "h100_bert-small_inference.json.gz"
)  # TraceLens test trace: BERT-small bf16 inference on an H100
A100 = DATA / "a100_alexnet_2023.json.gz"  # HTA test trace: older form, integer epoch µs, memcpy + memset
MI250 = DATA / "mi250_minitoy_train_rocm6.2.json.gz"  # HTA test trace: ROCm, backward on the autograd thread
ERT_DIR = Path(os.environ.get("RL_FIXTURES", Path(__file__).parents[2] / "shared" / "fixtures")) / "ert"


@pytest.fixture(scope="module")
def h100() -> dict[str, Any]:
    return tt.read(H100, run_id="h100")


def _ranges(out: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {r["range_id"]: r for r in out["ranges"].to_pylist()}


# ---------------------------------------------------------------- detection


def test_traces_are_detected_by_content_not_suffix(tmp_path: Path) -> None:
    for p in (H100, A100, MI250):
        assert detect_format(p) == "torch-trace"
    plain = tmp_path / "trace.dat"  # decompressed, with a suffix that says nothing
    plain.write_bytes(gzip.decompress(H100.read_bytes()))
    assert detect_format(plain) == "torch-trace"


def test_an_ert_roofline_json_is_not_a_trace(tmp_path: Path) -> None:
    ert = tmp_path / "roofline.json"  # the shape of ERT's output (empirical gflops/gbytes sections)
    ert.write_text(json.dumps({"empirical": {"gbytes": {"data": [["DRAM", 160.66]]}}, "spec": {}}))
    assert tt.sniff(ert) == "json"
    assert detect_format(ert) != "torch-trace"
    real = sorted(ERT_DIR.glob("*.json")) if ERT_DIR.is_dir() else []
    for p in real:  # the real ERT files of ../shared/fixtures, where present
        assert tt.sniff(p) == "json", p
        assert detect_format(p) != "torch-trace", p


# ---------------------------------------------------------------- a real H100 trace


def test_h100_kernels(h100: dict[str, Any]) -> None:
    k = h100["kernels"].to_pylist()
    assert len(k) == 60 and h100["run"]["n_kernels"] == 60
    first = k[0]  # indexSelectLargeIndex of the word embedding: ts 1419247333430.849 µs, dur 3.136 µs
    assert first["short_name"] == "indexSelectLargeIndex"
    assert first["name"].startswith(
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16"
    )
    assert first["start_ns"] == 1_751_410_836_000_000_000 + 1_419_247_333_430_849  # baseTimeNanoseconds + ts
    assert first["duration_ns"] == 3136.0 and first["end_ns"] - first["start_ns"] == 3136
    assert (first["device_id"], first["context_id"], first["stream_id"]) == (0, 1, 7)
    assert (first["grid_x"], first["grid_y"], first["grid_z"], first["grid_size"]) == (564, 1, 1, 564)
    assert (first["block_x"], first["block_y"], first["block_z"], first["block_size"]) == (128, 1, 1, 128)
    assert first["registers_per_thread"] == 32 and first["correlation_id"] == 8218
    assert (first["launch_api"], first["launch_thread"]) == ("cudaLaunchKernel", 19392)
    assert (first["gpu_name"], first["compute_capability"]) == ("NVIDIA H100 80GB HBM3", "9.0")
    assert sum(r["duration_ns"] for r in k) == 307_197.0
    assert sum(r["short_name"] == "Kernel2" for r in k) == 22  # cutlass_80_wmma bf16 GEMMs
    assert all(r["start_ns"] <= s["start_ns"] for r, s in zip(k, k[1:], strict=False))  # GPU start order


def test_h100_no_counters_means_null_with_reason(h100: dict[str, Any]) -> None:
    k = h100["kernels"]
    for col in (
        "flops_fp64",
        "flops_fp32",
        "flops_fp16",
        "flops_tensor",
        "bytes_l1",
        "bytes_l2",
        "bytes_dram",
    ):
        assert k.column(col).null_count == k.num_rows, col
    assert k.column("provenance").to_pylist()[0] == [("*", "NULL: no counters in a torch.profiler trace")]
    assert json.loads(h100["run"]["derivation"]) == {"all": [tt.NO_COUNTERS]}


def test_h100_launch_figures_are_metrics(h100: dict[str, Any]) -> None:
    m = [r for r in h100["metrics"].to_pylist() if r["kernel_id"] == 0]
    got = {r["metric_name"]: (r["unit"], r["value_double"]) for r in m}
    assert got == {
        "registers per thread": ("register/thread", 32.0),
        "shared memory": ("byte", 0.0),
        "blocks per SM": ("block/SM", 4.272727),
        "warps per SM": ("warp/SM", 17.09091),
        "est. achieved occupancy %": ("%", 27.0),
    }
    assert h100["run"]["n_metrics"] == h100["metrics"].num_rows == 5 * 60


def test_h100_memcpy(h100: dict[str, Any]) -> None:
    (m,) = h100["memops"].to_pylist()  # Memcpy DtoH (Device -> Pinned), 1 byte, 2.24 µs
    assert (m["kind"], m["copy_kind"], m["bytes"], m["duration_ns"]) == ("memcpy", 2, 1, 2240)
    assert m["nvtx_stack"][-1] == "aten::_local_scalar_dense"


def test_h100_ranges_nest_modules_and_ops(h100: dict[str, Any]) -> None:
    ranges = _ranges(h100)
    cats = [json.loads(r["args"])["cat"] for r in ranges.values()]
    assert (cats.count("cpu_op"), cats.count("python_function"), cats.count("user_annotation")) == (
        479,
        84,
        1,
    )
    (lin,) = [r for r in ranges.values() if r["name"] == "Linear_0"]
    assert lin["text"] == "nn.Module: Linear_0" and lin["domain"] == "torch" and lin["kind"] == "push_pop"
    assert ranges[lin["parent_id"]]["name"] == "BertSdpaSelfAttention_0" and lin["depth"] == 7
    assert lin["end_ns"] - lin["start_ns"] == 75_641
    for r in ranges.values():  # every range lies inside its parent, one deeper
        if r["parent_id"] is not None:
            p = ranges[r["parent_id"]]
            assert (
                p["start_ns"] <= r["start_ns"] and r["end_ns"] <= p["end_ns"] and r["depth"] == p["depth"] + 1
            )
            assert (p["thread"], p["process_id"]) == (r["thread"], r["process_id"])


def test_h100_shapes_are_kept(h100: dict[str, Any]) -> None:
    ranges = _ranges(h100)
    (lin,) = [r for r in ranges.values() if r["name"] == "Linear_0"]
    (linear,) = [r for r in ranges.values() if r["parent_id"] == lin["range_id"]]
    addmm = next(
        r for r in ranges.values() if r["parent_id"] == linear["range_id"] and r["name"] == "aten::addmm"
    )
    args = json.loads(addmm["args"])
    assert args["Input Dims"] == [[512], [141, 512], [512, 512], [], []]  # bias, input, weight^T
    assert args["Input type"] == ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"]
    assert args["Input Strides"][1] == [512, 1]


def test_h100_kernels_carry_the_module_path(h100: dict[str, Any]) -> None:
    k = h100["kernels"].to_pylist()
    assert {r["attribution"] for r in k} == {"push_pop"}
    (gemm,) = [r for r in k if r["nvtx_stack"] and "Linear_0" in r["nvtx_stack"]]
    assert gemm["nvtx_stack"] == [
        "ProfilerStep#6", "BertLMHeadModel_0", "BertModel_0", "BertEncoder_0", "BertLayer_0", "BertAttention_0",
        "BertSdpaSelfAttention_0", "Linear_0", "aten::linear", "aten::addmm",
    ]  # fmt: skip
    assert gemm["nvtx_path"] == "torch:" + "/".join(gemm["nvtx_stack"]) and gemm["nvtx_domain"] == "torch"
    assert (gemm["short_name"], gemm["duration_ns"]) == ("Kernel2", 5824.0)
    under = [r["nvtx_stack"][3] for r in k if len(r["nvtx_stack"]) > 3]
    assert under.count("BertEncoder_0") == 48  # 4 BertLayers x 12 kernels


def test_launch_link_and_external_id_agree(h100: dict[str, Any]) -> None:
    """Two independent links from a kernel to its CPU op: the runtime call's place on its thread (by correlation
    id) and the External id the kernel carries. On the real trace they name the same op for every kernel."""
    doc = json.loads(gzip.decompress(H100.read_bytes()))
    ext_of = {
        e["args"]["correlation"]: e["args"]["External id"]
        for e in doc["traceEvents"]
        if e.get("cat") == "kernel"
    }
    op_of = {
        json.loads(r["args"])["External id"]: r["text"]
        for r in h100["ranges"].to_pylist()
        if json.loads(r["args"])["cat"] == "cpu_op"
    }
    k = h100["kernels"].to_pylist()
    assert all(r["nvtx_stack"][-1] == op_of[ext_of[r["correlation_id"]]] for r in k)


def test_h100_layers_through_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    res = ingest_file(H100, store)
    assert (res.status, res.kernels, res.ranges, res.gpu_name) == (
        "ingested",
        60,
        564,
        "NVIDIA H100 80GB HBM3",
    )
    r = CliRunner().invoke(app, ["layers", "--store", str(store), "--depth", "3", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {x["layer"]: x for x in json.loads(r.stdout)}
    top = rows["torch:ProfilerStep#6/BertLMHeadModel_0/BertModel_0"]
    head = rows["torch:ProfilerStep#6/BertLMHeadModel_0/BertOnlyMLMHead_0"]
    assert (top["launches"], top["memops"], head["launches"]) == (56, 1, 4)
    assert head["gpu_time_ns"] == 52_096
    assert top["gpu_time_ns"] + head["gpu_time_ns"] == 307_197 + 2_240
    q = "select source_format, producer, n_kernels from runs"
    r = CliRunner().invoke(app, ["sql", q, "--store", str(store), "--format", "json"])
    (run,) = json.loads(r.stdout)
    assert run["source_format"] == "torch-trace" and run["n_kernels"] == 60
    assert run["producer"].startswith("torch.profiler (Kineto trace schemaVersion 1), CUDA runtime 12040")


# ---------------------------------------------------------------- older and AMD traces


def test_a100_older_trace_with_memops() -> None:
    out = tt.read(A100, run_id="a100")
    assert out["kernels"].num_rows == 79 and out["run"]["gpu_name"] == "NVIDIA A100-PG509-200"
    m = out["memops"].to_pylist()
    assert [x["kind"] for x in m].count("memcpy") == 16 and [x["kind"] for x in m].count("memset") == 3
    first = m[
        0
    ]  # Memcpy HtoD (Pageable -> Device): ts 1695835572943613 µs since the epoch, 12 µs, 92928 bytes
    assert (first["copy_kind"], first["bytes"], first["start_ns"], first["duration_ns"]) == (
        1,
        92_928,
        1_695_835_572_943_613_000,
        12_000,
    )
    assert first["nvtx_stack"] == ["[param|cuda]", "aten::to", "aten::_to_copy", "aten::copy_"]
    cov = {(c["op_kind"], c["attribution"]): c["ops"] for c in out["coverage"].to_pylist()}
    assert cov == {("kernel", "push_pop"): 79, ("memcpy", "push_pop"): 16, ("memset", "push_pop"): 3}


def test_mi250_backward_kernels_sit_under_autograd_ranges() -> None:
    out = tt.read(MI250, run_id="mi250")
    k = out["kernels"].to_pylist()
    assert len(k) == 14 and out["run"]["gpu_name"] == "AMD Radeon Graphics"
    threads = {r["launch_thread"] for r in k}
    assert threads == {597913, 598009}  # main thread (forward, optimizer) and the autograd thread (backward)
    back = [r for r in k if r["launch_thread"] == 598009]
    assert len(back) == 7
    assert all(r["nvtx_stack"][0].startswith("autograd::engine::evaluate_function: ") for r in back)
    mm = next(r for r in back if r["nvtx_stack"][-1] == "aten::mm")
    assert mm["nvtx_stack"][:2] == ["autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0"]
    assert mm["duration_ns"] == 12_640.0


# ---------------------------------------------------------------- a trace made here, on the CPU


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(2, 8)
    with (
        profile(
            activities=[ProfilerActivity.CPU], record_shapes=True, with_modules=True, with_stack=True
        ) as prof,
        record_function("forward"),
    ):
        model(x)
    path = tmp_path_factory.mktemp("torch") / "cpu_trace.json"
    prof.export_chrome_trace(str(path))
    return path


def test_cpu_trace_modules_ops_and_shapes(cpu_trace: Path) -> None:
    assert detect_format(cpu_trace) == "torch-trace"
    out = read(cpu_trace, run_id="cpu")
    assert out["kernels"].num_rows == 0 and out["memops"].num_rows == 0 and out["run"]["gpu_name"] is None
    ranges = _ranges(out)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for r in ranges.values():
        by_name.setdefault(r["name"], []).append(r)

    def chain(r: dict[str, Any]) -> list[str]:
        names = [r["name"]]
        while r["parent_id"] is not None:
            r = ranges[r["parent_id"]]
            names.append(r["name"])
        return names[::-1]

    (seq,) = by_name["Sequential_0"]
    assert chain(seq) == ["forward", "Sequential_0"]
    assert [chain(r)[-2:] for r in by_name["aten::linear"]] == [
        ["Linear_0", "aten::linear"],
        ["Linear_1", "aten::linear"],
    ]
    first, second = sorted(by_name["aten::addmm"], key=lambda r: r["start_ns"])
    assert chain(first)[:4] == ["forward", "Sequential_0", "Linear_0", "aten::linear"]
    a1, a2 = json.loads(first["args"]), json.loads(second["args"])
    assert a1["Input Dims"] == [[16], [2, 8], [8, 16], [], []]  # addmm(bias, x, W^T)
    assert a2["Input Dims"] == [[4], [2, 16], [16, 4], [], []]
    assert a1["Input type"] == ["float", "float", "float", "Scalar", "Scalar"] and a1["cat"] == "cpu_op"
    (relu,) = by_name["ReLU_0"]
    assert [chain(r)[-2:] for r in by_name["aten::relu"]] == [["ReLU_0", "aten::relu"]] and relu["depth"] == 2


def test_cpu_trace_ingests(cpu_trace: Path, tmp_path: Path) -> None:
    res = ingest_file(cpu_trace, tmp_path / "store")
    assert res.status == "ingested" and res.kernels == 0 and res.ranges and res.ranges >= 20
    q = "select count(*) n from ranges where json_extract_string(args, '$.cat') = 'cpu_op'"
    r = CliRunner().invoke(app, ["sql", q, "--store", str(tmp_path / "store"), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["n"] == 22


# ---------------------------------------------------------------- bad input


def _one_error(path: Path, tmp_path: Path, *needles: str) -> None:
    store = tmp_path / "store"
    r = CliRunner().invoke(app, ["ingest", str(path), "--store", str(store)])
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in r.stderr, r.stderr
    for n in (str(path), *needles):
        assert n in lines[0], (n, lines[0])
    assert not list(store.glob("runs/*/*.parquet"))


def test_truncated_json_trace(tmp_path: Path) -> None:
    text = gzip.decompress(H100.read_bytes())
    p = tmp_path / "cut.json"
    p.write_bytes(text[: len(text) // 2])
    with pytest.raises(InputError, match=r"cut\.json: invalid JSON .*truncated"):
        tt.read(p, run_id="x")
    _one_error(p, tmp_path, "truncated")


def test_truncated_gzip_trace(tmp_path: Path) -> None:
    p = tmp_path / "cut.json.gz"
    p.write_bytes(H100.read_bytes()[:30_000])
    with pytest.raises(InputError, match=r"cut\.json\.gz: truncated or corrupt gzip"):
        tt.read(p, run_id="x")
    _one_error(p, tmp_path, "truncated")


def test_a_negative_duration_is_flagged(tmp_path: Path) -> None:
    """A GPU op with a negative ``dur`` is stored as it is and flagged ``reversed_time`` with a warning, as the
    Nsight Systems reader flags an end before the start (it landed without a word before)."""
    p = tmp_path / "neg.json"
    events = [
        {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 100.5, "dur": -50, "args": {"device": 0}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 200, "dur": 3,
         "args": {"device": 0, "bytes": 8}},
    ]  # fmt: skip
    p.write_text(json.dumps({"traceEvents": events}))
    out = tt.read(p, run_id="x")
    assert out["kernels"].select(["duration_ns", "flags"]).to_pylist() == [
        {"duration_ns": -50000.0, "flags": ["reversed_time"]}
    ]
    assert out["memops"].column("flags").to_pylist() == [[]]
    assert out["run"]["flag_counts"] == {"kernels": {"reversed_time": 1}}
    assert out["run"]["warnings"] == ["1 kernel: end before start (flag reversed_time)"]
    res = ingest_file(p, tmp_path / "store")
    assert res.warnings == ["1 kernel: end before start (flag reversed_time)"]


def test_gpu_ops_without_times_are_kept_and_flagged(tmp_path: Path) -> None:
    """A kernel whose ``ts`` is missing or not a number was dropped without a word ("0 kernels"); it is kept with
    ``start_ns`` NULL and flagged ``null_start`` (last in kernel order), one without ``dur`` ``null_end``, one
    before the trace's 0 ``negative_time``: the Nsight Systems reader's flags, with the ingest's warnings."""
    p = tmp_path / "times.json"
    events = [
        {"ph": "X", "cat": "kernel", "name": "no_ts", "pid": 0, "tid": 7, "ts": "abc", "dur": 5, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "no_dur", "pid": 0, "tid": 7, "ts": 10, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7, "ts": -2, "dur": 1, "args": {}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "dur": 1, "args": {"bytes": 8}},
    ]  # fmt: skip
    p.write_text(json.dumps({"traceEvents": events}))
    out = tt.read(p, run_id="x")
    assert out["kernels"].select(["name", "start_ns", "end_ns", "duration_ns", "flags"]).to_pylist() == [
        {
            "name": "early",
            "start_ns": -2000,
            "end_ns": -1000,
            "duration_ns": 1000.0,
            "flags": ["negative_time"],
        },
        {"name": "no_dur", "start_ns": 10000, "end_ns": None, "duration_ns": None, "flags": ["null_end"]},
        {"name": "no_ts", "start_ns": None, "end_ns": None, "duration_ns": 5000.0, "flags": ["null_start"]},
    ]
    assert out["memops"].column("flags").to_pylist() == [["null_start"]]
    assert out["run"]["warnings"] == [
        "1 kernel: no start time (flag null_start)",
        "1 kernel: no end time (duration unknown) (flag null_end)",
        "1 kernel: negative timestamp (flag negative_time)",
        "1 memcpy/memset: no start time (flag null_start)",
    ]


def test_json_that_is_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{"model": "bert", "batch": 8}')
    with pytest.raises(
        UnsupportedFormatError, match=r"config\.json: JSON, but neither a torch.profiler trace"
    ):
        detect_format(p)
    with pytest.raises(InputError, match=r"config\.json: JSON but not a torch.profiler trace"):
        tt.read(p, run_id="x")
    _one_error(p, tmp_path, "neither a torch.profiler trace")
    q = tmp_path / "events.json"  # a traceEvents key whose value is not a list
    q.write_text('{"traceEvents": {"ph": "X"}}')
    _one_error(q, tmp_path, 'no top-level "traceEvents" list')


# ---------------------------------------------------------------- kernel base names


@pytest.mark.parametrize(
    ("name", "short"),
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&,"
            " at::native::GeluType)::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, "
            "2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}"
            "::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
            "vectorized_elementwise_kernel",
        ),
        ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_"
         "wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)", "Kernel2"),
        ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false>(float*, float const*, int)",
         "softmax_warp_forward"),
        ("triton_red_fused_add_mean_mul_pow_rsqrt_0", "triton_red_fused_add_mean_mul_pow_rsqrt_0"),
        ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
    ],
)  # fmt: skip
def test_short_name(name: str, short: str) -> None:
    assert tt.short_name(name) == short


def test_a_gzip_trace_cut_within_its_first_bytes(tmp_path: Path) -> None:
    """Cut to 40 bytes, a .json.gz decompressed to nothing that shows a trace: it was called "unknown format (first
    bytes ...)". The whole file was read and the gzip stream did not end: it is truncated gzip data."""
    p = tmp_path / "cut.json.gz"
    p.write_bytes(H100.read_bytes()[:40])
    with pytest.raises(UnsupportedFormatError, match=r"cut\.json\.gz: truncated gzip data"):
        detect_format(p)
    _one_error(p, tmp_path, "truncated gzip data")
    whole = tmp_path / "other.gz"  # whole gzip data that is no JSON: still an unknown format
    whole.write_bytes(gzip.compress(b"not json"))
    with pytest.raises(UnsupportedFormatError, match="unknown format"):
        detect_format(whole)


@pytest.mark.parametrize(
    ("text", "where"),
    [("{this is not json", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
     ('{"model": "bert",\n "batch": 8', "Expecting ',' delimiter: line 2 column 12 (char 29)"),
     ('{"a": "\x01"}', "Invalid control character at: line 1 column 8 (char 7)"),
     ("[" * 10 + " " * (65_536 - 10), "Expecting value: line 1 column 65537 (char 65536)")],
)  # fmt: skip
def test_a_small_file_that_starts_like_json_but_is_not(tmp_path: Path, text: str, where: str) -> None:
    """It was called "JSON, but neither a torch.profiler trace nor an ERT roofline.json": it is not JSON at all,
    and where it stops being JSON is said (a file of 64 KiB too: it is read whole)."""
    p = tmp_path / "broken.json"
    p.write_text(text)
    with pytest.raises(UnsupportedFormatError) as e:
        detect_format(p)
    assert str(e.value) == f"{p}: starts like JSON but is not valid JSON ({where})"
    _one_error(p, tmp_path, "not valid JSON")


@pytest.mark.parametrize(
    ("name", "data"),
    [("other.json.gz", gzip.compress(b'{"a": 1}')),  # valid JSON, compressed: not to be parsed as bytes
     ("deep.json", b"[" * 60_000),  # nested past Python's recursion limit: not checked
     ("big.json", b'{"n": ' + b"9" * 5_000 + b"}")],  # an integer past Python's 4,300 digits: valid JSON
)  # fmt: skip
def test_json_python_cannot_check_is_neither_format(tmp_path: Path, name: str, data: bytes) -> None:
    """The check of a small JSON file must not call valid JSON invalid, nor end in a traceback: these keep the
    message they had, and `rl ingest DIR` passes over them and ingests the report beside them."""
    p = tmp_path / "in" / name
    p.parent.mkdir()
    p.write_bytes(data)
    with pytest.raises(UnsupportedFormatError, match="JSON, but neither a torch.profiler trace"):
        detect_format(p)
    shutil.copy(H100, p.parent / "trace.json.gz")
    r = CliRunner().invoke(app, ["ingest", str(p.parent), "--store", str(tmp_path / "store")])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert r.stdout.startswith("ingested ") and "trace.json.gz" in r.stdout and name not in r.output
