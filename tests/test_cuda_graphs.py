"""CUDA graphs (``rl ingest EXEC --capture CAPTURE``): the replayed kernels of an execution trace matched to the
launches and ops of the trace that captured the graph -- matched, reordered, unmatched and by position on tiny
literal lists and traces, and vLLM's FULL-graph decode trace from TraceLens' tests (an excerpt: tests/data/torch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.ingest.graphs import Matched, captures, match
from rooflake.pipeline import ingest_file
from rooflake.pipeline.capture import ingest_captured
from rooflake.queries import connect, fetch
from rooflake.store import Store

DATA = Path(__file__).parent / "data" / "torch"
EXEC = DATA / "mi300x_vllm_decode_full_exec.json.gz"
CAPTURE = DATA / "mi300x_vllm_decode_full_capture.trimmed.json.gz"
BF16 = "c10::BFloat16"


def test_kernels_in_capture_order_are_matched() -> None:
    assert match([["a", "b", "c"]], [["a", "b", "c"]]) == [[Matched(0, 0, "matched"), Matched(0, 1, "matched"),
                                                            Matched(0, 2, "matched")]]  # fmt: skip


def test_a_kernel_the_capture_lacks_is_unmatched() -> None:
    got = match([["a", "x", "b"]], [["a", "b"]])[0]
    assert [(m.node, m.how) for m in got] == [(0, "matched"), (None, "unmatched"), (1, "matched")]


def test_kernels_replayed_in_another_order_are_reordered() -> None:
    got = match([["b", "a", "c"]], [["a", "b", "c"]])[0]
    assert sorted(m.node for m in got) == [0, 1, 2]  # each launch once
    assert [m.how for m in got].count("reordered") == 1 and [m.how for m in got].count("matched") == 2


def test_each_replay_takes_the_capture_of_its_kernels_in_capture_order() -> None:
    caps: list[list[str | None]] = [["emb"], ["gemm", "norm"], ["gemm", "norm"], ["head"]]
    got = match([["emb"], ["gemm", "norm"], ["gemm", "norm"], ["head"], ["gemm", "norm"]], caps)
    assert [g[0].capture for g in got] == [0, 1, 2, 3, 1]  # pieces replayed in capture order, then again


def test_a_replay_of_no_captured_graph_takes_the_closest_or_none() -> None:
    got = match([["gemm", "other"]], [["emb"], ["gemm", "norm"]])[0]
    assert got[0] == Matched(1, 0, "matched") and got[1] == Matched(1, None, "unmatched")
    assert match([["z"]], [["a"]]) == [[Matched(None, None, "unmatched")]]


def test_a_capture_that_names_no_kernels_is_matched_by_position() -> None:
    caps: list[list[str | None]] = [[None, None], [None, None, None]]
    got = match([["k1", "k2", "k3"], ["k1"]], caps)
    assert [(m.capture, m.node, m.how) for m in got[0]] == [
        (1, 0, "by_order"),
        (1, 1, "by_order"),
        (1, 2, "by_order"),
    ]
    assert got[1] == [Matched(None, None, "unmatched")]


def test_captures_are_the_launches_between_begin_and_end_on_one_thread() -> None:
    def call(api: str, t: int, thread: int = 1, kernel: str | None = None) -> dict[str, Any]:
        return {"api": api, "start_ns": t, "thread": thread, "kernel": kernel}

    calls = [call("cudaLaunchKernel", 0, kernel="before"), call("cudaStreamBeginCapture", 1),
             call("cudaLaunchKernel", 2, kernel="k1"), call("cudaLaunchKernel", 3, thread=2, kernel="elsewhere"),
             call("cudaMemcpyAsync", 4), call("cuLaunchKernel", 5, kernel="k2"), call("cudaStreamEndCapture", 6),
             call("cudaLaunchKernel", 7, kernel="after")]  # fmt: skip
    assert [[c["kernel"] for c in cap] for cap in captures(calls)] == [["k1", "k2"]]


# ------------------------------------------------------------------ literal traces


def _doc(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 0, "traceEvents": events,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}]}  # fmt: skip
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _ev(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1 if cat != "kernel" else 0, "tid": tid, "ts": ts,
            "dur": dur, "args": args}  # fmt: skip


def _capture(tmp_path: Path) -> Path:
    """One graph: aten::linear (16x64 @ 64x32, bf16) launching 'gemm', then aten::relu launching 'relu'."""
    dims = [[16, 64], [32, 64], [32]]
    return _doc(tmp_path, "capture.json", [
        _ev("cuda_runtime", "hipStreamBeginCapture", 5, 1, correlation=1),
        _ev("cpu_op", "aten::linear", 10, 10, **{"Input Dims": dims, "Input type": [BF16] * 3,
                                                 "Concrete Inputs": ["", "", ""]}),
        _ev("cuda_runtime", "hipLaunchKernel", 12, 1, correlation=2, kernel="gemm"),
        _ev("cpu_op", "aten::relu", 30, 5, **{"Input Dims": [[16, 32]], "Input type": [BF16]}),
        _ev("cuda_runtime", "hipLaunchKernel", 31, 1, correlation=3, kernel="relu"),
        _ev("cuda_runtime", "hipStreamEndCapture", 40, 1, correlation=4),
    ])  # fmt: skip


def _execution(tmp_path: Path, kernels: list[str]) -> Path:
    """One decode step replaying the graph once: ``kernels`` in GPU order under one hipGraphLaunch."""
    events = [_ev("user_annotation", "execute_context_0(0)_generation_16(16)", 0, 100),
              _ev("cuda_runtime", "hipGraphLaunch", 10, 5, correlation=9)]  # fmt: skip
    events += [
        _ev("kernel", k, 200 + 10 * i, 3, tid=7, correlation=9, device=0, stream=7)
        for i, k in enumerate(kernels)
    ]
    return _doc(tmp_path, "exec.json", events)


def test_replayed_kernels_get_the_captured_ops_work(tmp_path: Path) -> None:
    res = ingest_captured(
        _execution(tmp_path, ["gemm", "extra", "relu"]), _capture(tmp_path), tmp_path / "store"
    )
    assert res.status == "ingested"
    assert any("3 kernels replayed by 1 CUDA graph launches" in w and "2 in order, 0 reordered" in w
               and "1 unmatched" in w for w in res.warnings or [])  # fmt: skip
    con = connect(Store(tmp_path / "store"))
    db = con
    rows = db.execute(
        "select kernel_id, graph_node, captured_node, match, op_id from graph_kernels order by kernel_id"
    ).fetchall()
    assert [r[1:4] for r in rows] == [(0, 0, "matched"), (1, None, "unmatched"), (2, 1, "matched")]
    ops = db.execute(
        "select op_name, flops, kernels, gpu_time_ns, graph_launch, cpu_time_ns from ops where graph_launch is not null order by op_id"
    ).fetchall()
    assert ops == [
        ("aten::linear", 2 * 16 * 64 * 32, 1, 3000, 9, None),
        ("aten::relu", ops[1][1], 1, 3000, 9, None),
    ]
    cov = db.execute(
        "select graph_ops, graph_ops_matched, graph_ops_unmatched from coverage where op_kind = 'kernel'"
    ).fetchall()
    assert cov == [(3, 2, 1)]
    step = fetch(con, "steps", {"run_id": res.run_id}).to_pylist()[0]
    assert step["phase"] == "decode" and step["replayed_ops"] >= 1 and step["kernels"] == 3
    assert step["flops"] == 2 * 16 * 64 * 32 + (ops[1][1] or 0) and step["gpu_time_ns"] == 9000


def test_without_a_capture_the_replayed_kernels_are_named_in_one_line(tmp_path: Path) -> None:
    res = ingest_file(_execution(tmp_path, ["gemm", "relu"]), tmp_path / "store")
    assert any(
        "2 kernels replayed from CUDA graphs have no op" in w and "--capture" in w for w in res.warnings or []
    )


def test_a_capture_without_a_graph_capture_is_one_error_line(tmp_path: Path) -> None:
    exe, store = _execution(tmp_path, ["gemm"]), str(tmp_path / "store")
    r = CliRunner().invoke(app, ["ingest", str(exe), "--capture", str(exe), "--store", store])
    assert r.exit_code == 1 and r.output.startswith("Error: ") and "no CUDA graph capture" in r.output
    cap = _capture(tmp_path)
    r = CliRunner().invoke(app, ["ingest", str(exe), str(cap), "--capture", str(cap), "--store", store])
    assert r.exit_code == 2 and "one execution trace" in r.output


# ------------------------------------------------------------------ TraceLens' vLLM FULL-graph decode


def test_vllm_full_graph_decode_gets_its_flops_from_the_capture(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app, ["ingest", str(EXEC), "--capture", str(CAPTURE), "--store", str(tmp_path / "s")]
    )
    assert r.exit_code == 0, r.output
    assert "421 kernels replayed by 1 CUDA graph launches" in r.output and "421 in order" in r.output
    assert "0 unmatched" in r.output
    db = connect(Store(tmp_path / "s"))
    run = db.execute("select run_id from runs").fetchall()[0][0]
    (gemm,) = db.execute("select count(*) from ops where graph_launch is not null and op_name = 'aten::linear' "
                     "and input_dims = '[[32, 2880], [5120, 2880], [5120]]'").fetchall()[0]  # fmt: skip
    assert gemm == 24  # one per layer, as TraceLens' GEMM.csv counts M=32 N=5120 K=2880
    step = fetch(db, "steps", {"run_id": run}).to_pylist()[0]
    assert (step["format"], step["phase"], step["decode_requests"], step["context_tokens"]) == (
        "vllm-roofline",
        "decode",
        32,
        55086,
    )
    assert step["kernels"] == 425 and step["replayed_ops"] == 72
    # the 24 layers' GEMMs replayed from the graph plus the lm_head GEMM (32 x 201088 x 2880) run eagerly
    assert (
        step["flops"] > 2 * 32 * 201088 * 2880 and step["bound"] is None
    )  # MI300X: not in the datasheet catalog
