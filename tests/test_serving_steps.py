"""LLM serving steps (table ``serving_steps``, query ``steps``, ``rl roofline --by step``): each step-name grammar
(vLLM, vLLM's roofline annotations, SGLang, ATOM) on tiny literal names, nesting, unknown formats kept with their
time, and a step's work and GPU time on a tiny literal trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.ingest.steps import Step, parse_step, step_rows
from rooflake.pipeline import ingest_file
from rooflake.queries import connect, fetch
from rooflake.store import Store

BF16 = "c10::BFloat16"


@pytest.mark.parametrize(
    ("name", "step"),
    [
        (
            "execute_context_1(888_788544)_generation_0(0)",
            Step("vllm", "prefill", 1, 888, 0, 0, None, 788544),
        ),
        ("execute_context_0(0)_generation_64(64)", Step("vllm", "decode", 0, 0, 64, 64)),
        ("execute_context_2(6144)_generation_3(3)", Step("vllm", "mixed", 2, 6144, 3, 3)),
        (
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
            Step("vllm-roofline", "decode", 0, 0, 32, 32, 55086, 32, 55086),
        ),
        (
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
            Step("vllm-roofline", "mixed", 2, 6144, 3, 3, 7144 + 6144, 20971520 + 3, 23019520 + 6144),
        ),
        ("step[EXTEND bs=15 toks=15360]", Step("sglang", "prefill", 15, 15360, 0, 0)),
        ("step[DECODE bs=32]", Step("sglang", "decode", 0, 0, 32, 32)),
        ("step[MIXED bs=2]", Step("sglang", "mixed")),
        (
            "step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]",
            Step("sglang-roofline", "decode", 0, 0, 64, 128, 131072, 256, 262144),
        ),
        (
            "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]",
            Step("sglang-roofline", "mixed", 1, 5, 1, 1, 20, 26, 52),
        ),
        ("prefill[bs=2 tok=14721 ctx=[7803, 6918]]", Step("atom", "prefill", 2, 14721, 0, 0)),
        (
            "decode[bs=117/128 tok=117 d=117]",
            Step("atom", "decode", 0, 0, 117, 117),
        ),  # the real batch, not 128
        (
            "decode[bs=128 tok=384 p=2 d=126 sqsq=132612 sqsk=1114112 sk=258048 tbo=1]",
            Step("atom-roofline", "mixed", 2, None, 126, None, 258048, 132612, 1114112),
        ),
        ("execute_diffusion_1_1024x1024", Step("unknown")),
        ("step[WARMUP]", Step("unknown")),
    ],
)
def test_each_step_name_grammar(name: str, step: Step) -> None:
    assert parse_step(name) == step


@pytest.mark.parametrize("name", ["ProfilerStep#3", "aten::mm", "execute_model", "decode_kernel", ""])
def test_names_that_are_no_step(name: str) -> None:
    assert parse_step(name) is None


def _r(rid: int, name: str, start: int, end: int, thread: int = 1) -> dict[str, Any]:
    return {"range_id": rid, "name": name, "start_ns": start, "end_ns": end, "thread": thread}


def test_nested_steps_keep_the_outer_time_and_the_most_detail_and_unknown_ones_are_named() -> None:
    rows, lines = step_rows([
        _r(0, "step[DECODE bs=32]", 110, 190),  # SGLang's own span inside its roofline annotation
        _r(1, "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk99sqsq32sqsk99)", 100, 200),
        _r(2, "step[EXTEND bs=2 toks=10]", 300, 400),
        _r(3, "step[SOMETHING new=1]", 500, 600),
        _r(4, "step[DECODE bs=4]", 510, 520, thread=2),  # another thread: a step of its own
    ])  # fmt: skip
    assert [(r["range_id"], r["format"], r["start_ns"]) for r in rows] == [
        (1, "vllm-roofline", 100), (2, "sglang", 300), (3, "unknown", 500), (4, "sglang", 510),
    ]  # fmt: skip
    assert [r["step_id"] for r in rows] == [0, 1, 2, 3]
    assert rows[2]["prefill_requests"] is None and rows[2]["end_ns"] == 600  # its time kept, its counts NULL
    assert lines == [
        "1 of 4 serving steps of an unknown format ('step[SOMETHING new=1]'): kept with their time, their batch "
        "counts NULL"
    ]


def _ann(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {}}  # fmt: skip


def _linear(ts: float, m: int, corr: int, kernel_ts: float, kernel_dur: float) -> list[dict[str, Any]]:
    dims = [[m, 64], [32, 64], [32]]
    return [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": ts, "dur": 10,
         "args": {"Input Dims": dims, "Input type": [BF16] * 3, "Concrete Inputs": ["", "", ""]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 1, "dur": 1,
         "args": {"correlation": corr}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": kernel_ts, "dur": kernel_dur,
         "args": {"correlation": corr, "device": 0, "stream": 7}},
    ]  # fmt: skip


def steps_trace(tmp_path: Path) -> Path:
    """Three vLLM steps on an H100: a prefill of 16 tokens, a decode of 2, and one of an unknown format."""
    events = [
        _ann("execute_context_1(16_256)_generation_0(0)", 0, 100), *_linear(10, 16, 1, 200, 4.0),
        _ann("execute_context_0(0)_generation_2(2)", 1000, 100), *_linear(1010, 2, 2, 1200, 2.0),
        _ann("step[SOMETHING new=1]", 2000, 50),
    ]  # fmt: skip
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 0, "traceEvents": events,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}]}  # fmt: skip
    p = tmp_path / "serve.json"
    p.write_text(json.dumps(doc))
    return p


def test_steps_macro_sums_the_work_of_the_ops_under_each_step(tmp_path: Path) -> None:
    res = ingest_file(steps_trace(tmp_path), tmp_path / "store")
    assert any("serving steps of an unknown format" in w for w in res.warnings or [])
    rows = fetch(connect(Store(tmp_path / "store")), "steps", {"run_id": res.run_id}).to_pylist()
    pre, dec, unk = rows
    assert (pre["phase"], pre["prefill_requests"], pre["prefill_tokens"], pre["sum_q_sq"]) == (
        "prefill",
        1,
        16,
        256,
    )
    assert pre["flops"] == 2 * 16 * 64 * 32 and pre["bytes"] == 2 * (16 * 64 + 32 * 64 + 32 + 16 * 32)
    assert (pre["kernels"], pre["gpu_time_ns"], pre["duration_ns"]) == (1, 4000, 100_000)
    assert pre["flops_per_s"] == pytest.approx(2 * 16 * 64 * 32 / 4e-6)
    assert pre["peak_ceiling"] == "TENSOR BF16" and pre["bw_dram"] == 3.35e12 and pre["bound"] == "DRAM"
    assert pre["t_min_ns"] == 1000 and pre["time_bound"] == "launch"  # a tiny GEMM: one launch overhead
    assert (dec["phase"], dec["decode_requests"], dec["flops"], dec["gpu_time_ns"]) == (
        "decode",
        2,
        2 * 2 * 64 * 32,
        2000,
    )
    assert dec["ai"] < pre["ai"]  # decode: less work per byte of weights
    assert unk["format"] == "unknown" and unk["phase"] is None and unk["duration_ns"] == 50_000
    assert unk["flops"] is None and unk["kernels"] == 0 and unk["gpu_time_ns"] is None  # NULL, not 0


def test_rl_roofline_by_step_and_time_by_step(tmp_path: Path) -> None:
    res = ingest_file(steps_trace(tmp_path), tmp_path / "store")
    store = str(tmp_path / "store")
    args = ["roofline", res.run_id, "--by", "step", "-o", str(tmp_path / "s.html"), "--store", store]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "serving steps (work modelled from their ops' shapes)" in r.output
    assert "step 0 prefill 1 req 16 tok" in r.output and "step 1 decode 2 req" in r.output
    assert (tmp_path / "s.html").stat().st_size > 0
    r = CliRunner().invoke(
        app,
        ["roofline", res.run_id, "--time", "--by", "step", "-o", str(tmp_path / "t.png"), "--store", store],
    )
    assert r.exit_code == 0, r.output
    assert "2 serving steps" in r.output and "bounds: launch_overhead 2" in r.output


def test_rl_roofline_by_step_without_steps_is_one_error_line(tmp_path: Path) -> None:
    p = steps_trace(tmp_path)
    doc = json.loads(p.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e["cat"] != "user_annotation"]
    p.write_text(json.dumps(doc))
    res = ingest_file(p, tmp_path / "store")
    r = CliRunner().invoke(
        app,
        [
            "roofline",
            res.run_id,
            "--by",
            "step",
            "-o",
            str(tmp_path / "s.html"),
            "--store",
            str(tmp_path / "store"),
        ],
    )
    assert r.exit_code == 1 and r.output.startswith("Error: ") and "no serving step" in r.output
