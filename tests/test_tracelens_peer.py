"""rooflake's per-op work against TraceLens' perf reports, on literal shapes: the rows where the two agree, the
conventions where they differ on purpose, and two rows where rooflake was wrong until they were found here.

Every expected number is a cell of a perf report that TraceLens (github.com/AMD-AGI/TraceLens) ships beside its
H100 test traces, ``tests/traces/h100/<trace>_perf_report_csvs/<sheet>.csv`` (columns ``GFLOPS_first`` and
``Data Moved (MB)_first``; TraceLens' MB is 2**20 bytes); the row is named in each comment by trace, sheet, op and
``Input Dims_first``. bench/compare_tracelens.py compares every row."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rooflake.ingest.ops import op_rows
from rooflake.instrument.shapes import op_work, parse_args

BF16 = "c10::BFloat16"
MIB = 2**20


def _work(name: str, dims: list, types: list, concrete: list | None = None) -> Any:
    return op_work(name, parse_args(dims, types, concrete), replay=False)


def test_gemm_equal_but_for_tracelens_bias() -> None:
    # gaunernst_bert-small-uncased GEMM.csv, aten::addmm ((512,), (141, 512), (512, 512), (), ()):
    # GFLOPS_first 0.0739968 = 2·M·N·K + M·N (TraceLens counts the bias add), Data Moved 0.7763671875 MB
    w = _work("aten::addmm", [[512], [141, 512], [512, 512], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"])
    m, n, k = 141, 512, 512
    assert w.flops == 2 * m * n * k
    assert w.flops + m * n == pytest.approx(0.0739968e9, rel=1e-12)
    assert w.bytes == 0.7763671875 * MIB


def test_sdpa_equal() -> None:
    # gaunernst_bert-small-uncased SDPA_fwd.csv, aten::_scaled_dot_product_flash_attention [[1, 8, 141, 64] x3],
    # not causal: GFLOPS_first 0.040716288, Data Moved 0.55078125 MB
    q = [1, 8, 141, 64]
    w = _work(
        "aten::_scaled_dot_product_flash_attention",
        [q, q, q, [], [], [], []],
        [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", "Scalar"],
        ["", "", "", "0.", "False", "False", "0.125"],
    )
    assert w.flops == pytest.approx(0.040716288e9, rel=1e-12)
    assert w.bytes == 0.55078125 * MIB


def test_sdpa_causal_tracelens_halves() -> None:
    # Qwen_Qwen1.5-0.5B-Chat SDPA_fwd.csv, aten::_scaled_dot_product_flash_attention [[16, 16, 559, 64] x3],
    # is_causal True: GFLOPS_first 10.239377408 (the full 4·B·H·N²·D halved), Data Moved 69.875 MB.
    # rooflake counts the full product, as torch.utils.flop_counter does.
    q = [16, 16, 559, 64]
    w = _work(
        "aten::_scaled_dot_product_flash_attention",
        [q, q, q, [], [], [], []],
        [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", "Scalar"],
        ["", "", "", "0.", "True", "False", "0.125"],
    )
    assert w.flops / 2 == pytest.approx(10.239377408e9, rel=1e-12)
    assert w.bytes == 69.875 * MIB


def test_conv_flops_equal_bytes_with_bias() -> None:
    # facebook_timesformer-base-finetuned-k400 CONV_fwd.csv, aten::convolution
    # [[128, 3, 224, 224], [768, 3, 16, 16], [768], ...], stride 16: GFLOPS_first 29.595009024, Data Moved
    # 74.625 MB. TraceLens' aten_conv reads a bias only where Input Dims has 3 entries (aten::convolution has 9),
    # so its bytes leave out the bias tensor (768 x 2 bytes) that rooflake counts.
    w = _work(
        "aten::convolution",
        [[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []],
        [BF16, BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"],
    )
    assert w.flops == pytest.approx(29.595009024e9, rel=1e-12)
    assert w.bytes == 74.625 * MIB + 768 * 2


def test_layer_norm_convention() -> None:
    # gaunernst_bert-small-uncased Normalization.csv, aten::layer_norm [[1, 141, 512], [], [512], [512], [], []]:
    # GFLOPS_first 0.000364032 = 5·E + 6·C (TraceLens always models training statistics), Data Moved 0.28125 MB
    # = activations in and out + 6 tensors of C. rooflake: 4 FLOPs per element, x, weight, bias and the output.
    e, c = 141 * 512, 512
    w = _work("aten::native_layer_norm", [[1, 141, 512], [512], [512], [512], []], [BF16, "ScalarList", BF16, BF16, "Scalar"])  # fmt: skip
    assert 5 * e + 6 * c == 364032
    assert w.flops == 4 * e
    assert w.bytes == 0.28125 * MIB - 4 * c * 2


def test_to_copy_bytes_at_the_target_dtype() -> None:
    # Qwen_Qwen1.5-0.5B-Chat UnaryElementwise.csv, aten::copy_ [[1, 559, 64], [1, 559, 64], []] of types
    # (BFloat16, float): Data Moved 0.2047119140625 MB = 35776 x (4 + 2): float read, bfloat16 written. It is the
    # copy_ inside aten::_to_copy(float [1, 559, 64], dtype=15 (torch.bfloat16)): its output at the target dtype
    # (rooflake counted it at the input's, 2 x 35776 x 4 = 286208, until this test).
    w = _work(
        "aten::_to_copy",
        [[1, 559, 64], [], [], [], [], [], []],
        ["float", "Scalar", "", "", "", "Scalar", ""],
        ["", "15", "", "", "", "False", ""],
    )
    assert w.bytes == 0.2047119140625 * MIB


def _range(
    rid: int, parent: int | None, name: str, dims: list, types: list, concrete: list
) -> dict[str, Any]:
    args = {"cat": "cpu_op", "Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
    return {"range_id": rid, "name": name, "text": name, "start_ns": 10 * rid, "end_ns": 1000 - rid,
            "thread": 1, "parent_id": parent, "args": json.dumps(args)}  # fmt: skip


def test_reshape_that_copies_keeps_the_copy_bytes() -> None:
    # facebook_timesformer-base-finetuned-k400 UnaryElementwise.csv, aten::copy_
    # [[1, 196, 128, 768], [1, 196, 128, 768], []] (BFloat16, BFloat16), the copy_ of a reshape of a
    # non-contiguous tensor (aten::reshape -> aten::clone -> aten::copy_; 51.7 µs of kernel time on the H100):
    # Data Moved 73.5 MB. A view (0 FLOPs, 0 bytes) carries no chain, so the clone and its copy_ carry their own
    # bytes (they were "counted in aten::reshape" as 0 until this test).
    x = [1, 196, 128, 768]
    rows, _ = op_rows(
        [
            _range(1, None, "aten::reshape", [x, []], [BF16, "ScalarList"], ["", "[25088, 768]"]),
            _range(2, 1, "aten::clone", [x, []], [BF16, ""], ["", ""]),
            _range(3, 2, "aten::copy_", [x, x, []], [BF16, BF16, "Scalar"], ["", "", "False"]),
        ],
        replay=False,
    )
    chain = sum(r["bytes"] or 0 for r in rows if not r["flops_source"].startswith("counted in"))
    assert chain == 73.5 * MIB
