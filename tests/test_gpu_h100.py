"""Real reports and measured ceilings of an NVIDIA H100, made by rooflake itself on a lent GPU (tests/data/gpu:
README.md says how). What no other fixture gives: Hopper's Tensor-Core kernels (HGMMA through cuBLAS and cuDNN's
fused attention, TF32 convolutions on HMMA and HGMMA) profiled with Nsight Compute 2025.3 under NVTX ranges of
``rooflake.instrument.annotate``, and ``rl ceilings measure --device cuda`` on the same GPU.

- Every stored metric equals NVIDIA's own CSV export of each report, made on the same machine.
- The Tensor-Core operations ncu counted equal the FLOPs ``rl estimate`` models for the same layers, exactly.
- The measured ceilings stand beside the report's roofs of the same name, and the datasheet's Tensor-Core peaks
  hold at the H100's Tensor-Core clock (per clock they equal the report's: ``TENSOR_BOOST_CLOCK``).
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import lzma
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_file
from rooflake.store import Store

from _support import ROOT, assert_store_equals_ncu_csv

GPU = ROOT / "tests" / "data" / "gpu"
REPORTS = ("block_fwd", "cnn_fwd", "block_train")
DOC = json.loads((GPU / "ceilings_cuda.json").read_text())


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store with the three reports (decompressed into a temporary folder); returns (store, {report: run_id})."""
    tmp = tmp_path_factory.mktemp("h100")
    store, runs = tmp / "store", {}
    for name in REPORTS:
        rep = tmp / f"{name}.ncu-rep"
        rep.write_bytes(lzma.decompress((GPU / f"{name}.ncu-rep.xz").read_bytes()))
        runs[name] = ingest_file(rep, store, {}).run_id
    return store, runs


def _kernels(store: Path, run: str) -> list[dict]:
    con = queries.connect(Store(store))
    cur = con.execute(
        "SELECT kernel_id, short_name, nvtx_path, flops_fp32, flops_tensor FROM kernels WHERE run_id = ? "
        "ORDER BY kernel_id",
        [run],
    )
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


@pytest.mark.parametrize("name", REPORTS)
def test_store_equals_ncu_2025_csv_export(h100: tuple[Path, dict[str, str]], name: str) -> None:
    store, runs = h100
    with gzip.open(GPU / f"{name}.raw.csv.gz", "rt", newline="") as f:
        rows = list(csv.reader(f))
    assert_store_equals_ncu_csv(queries.connect(Store(store)), runs[name], rows)


def test_kernels_sit_in_the_annotated_layers(h100: tuple[Path, dict[str, str]]) -> None:
    store, runs = h100
    block = [k["nvtx_path"] for k in _kernels(store, runs["block_fwd"])]
    assert block == [
        "block:forward/ln1",
        "block:forward/attn/attn.qkv",
        "block:forward/attn",  # F.scaled_dot_product_attention, called in Attention.forward
        "block:forward/attn/attn.proj",
    ]
    cnn = [k["nvtx_path"].removeprefix("cnn:forward/") for k in _kernels(store, runs["cnn_fwd"])]
    assert cnn == ["conv1", "bn1", "pool", "conv2", "bn2", "pool", "conv3", "pool", "fc"]


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"h100_{name}", GPU / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _modelled(
    name: str, shape: tuple[int, ...], dtype: str | None, *, training: bool = False, ops: tuple[str, ...] = ()
) -> dict[str, float]:
    """FLOPs per module path as ``rl estimate`` models them (meta tensors, no GPU): of the forward, or with
    ``training`` of the backward; ``ops`` keeps only those ATen ops."""
    torch = pytest.importorskip("torch", reason="the model side needs torch: pip install 'rooflake[torch]'")
    from rooflake.instrument.estimate import estimate_rows

    rows = estimate_rows(
        _module(name).model(),
        torch.empty(*shape),
        dtype=getattr(torch, dtype) if dtype else None,
        training=training,
    )
    out: dict[str, float] = {}
    for r in rows:
        if r["phase"] == ("backward" if training else "forward") and (not ops or r["op"] in ops):
            out[r["module_path"]] = out.get(r["module_path"], 0.0) + (r["flops"] or 0.0)
    return out


def test_tensor_core_ops_equal_the_modelled_flops(h100: tuple[Path, dict[str, str]]) -> None:
    """HGMMA GEMMs (cuBLAS nvjet), cuDNN's fused flash attention and TF32 convolutions on HMMA and HGMMA: the
    Tensor-Core ops ncu counted (sm__ops_path_tensor_*) are exactly 2·M·N·K, 4·B·H·T²·D and 2·N·K·C·R·S·P·Q, the
    FLOPs torch's flop counter gives ``rl estimate``; no other FLOPs of those layers run on Tensor Cores."""
    store, runs = h100
    block = _modelled("block", (8, 512, 512), "bfloat16")
    got = {k["nvtx_path"].rsplit("/", 1)[-1]: k["flops_tensor"] for k in _kernels(store, runs["block_fwd"])}
    assert got["attn.qkv"] == block["attn.qkv"] == 2 * 4096 * 512 * 1536
    assert got["attn.proj"] == block["attn.proj"] == 2 * 4096 * 512 * 512
    assert got["attn"] == block["attn"] == 4 * 8 * 8 * 512**2 * 64
    assert got["ln1"] == 0
    cnn = _modelled("cnn", (64, 3, 64, 64), None)
    kernels = {k["nvtx_path"].removeprefix("cnn:forward/"): k for k in _kernels(store, runs["cnn_fwd"])}
    for conv in ("conv2", "conv3"):  # cuDNN's TF32 implicit GEMMs (torch.backends.cudnn.allow_tf32)
        assert kernels[conv]["flops_tensor"] == cnn[conv] == 2 * 64 * 128 * 64 * 9 * 32 * 32
    for layer in ("conv1", "fc"):  # FFMA kernels: the modelled FLOPs and a little epilogue work, no tensor op
        k = kernels[layer]
        assert k["flops_tensor"] == 0 and cnn[layer] <= k["flops_fp32"] <= 1.25 * cnn[layer], (layer, k, cnn)


def test_backward_kernels_sit_in_the_backward_ranges_with_the_modelled_flops(
    h100: tuple[Path, dict[str, str]],
) -> None:
    """A whole training step of the block: the backward's GEMMs, launched from the autograd engine's thread, fall
    in ``annotate``'s backward range of their module, and each Linear's two (input and weight gradient) carry
    exactly the modelled 2 × 2·M·N·K. cuDNN's fused attention backward recomputes S = Q·Kᵀ: 2.5× the forward, as
    the estimate's fused backward op counts it (the math path's backward, which it modelled before, is 2×)."""
    store, runs = h100
    kernels = _kernels(store, runs["block_train"])
    assert [k["nvtx_path"].split("/", 1)[0] for k in kernels] == ["block:forward"] * 5 + [
        "block:backward"
    ] * 9
    backward: dict[str, float] = {}
    for k in kernels[5:]:
        layer = k["nvtx_path"].rsplit("/", 1)[-1]
        backward[layer] = backward.get(layer, 0.0) + k["flops_tensor"]
    forward = _modelled("block", (8, 512, 512), "bfloat16")
    gemms = ("aten.mm", "aten.bmm", "aten.scaled_dot_product_attention_backward")
    modelled = _modelled("block", (8, 512, 512), "bfloat16", training=True, ops=gemms)
    for layer in ("fc2", "fc1", "attn.proj", "attn.qkv"):
        assert backward[layer] == modelled[layer] == 2 * forward[layer], layer
    assert backward["attn"] == modelled["attn"] == 2.5 * forward["attn"]


def test_hopper_tensor_kernels_get_the_roof_of_their_path(h100: tuple[Path, dict[str, str]]) -> None:
    """Each Tensor-Core kernel is judged against the dense peak of the instruction path it ran on: HGMMA for the
    Hopper kernels, HMMA (half of it for TF32 on an H100) for cuDNN's sm80 convolution."""
    store, runs = h100
    con = queries.connect(Store(store))
    got = dict(
        con.execute(
            "SELECT nvtx_path, peak_ceiling FROM kernel_roofline WHERE is_dominant AND precision = 'tensor' "
            "AND run_id IN (?, ?)",
            [runs["block_fwd"], runs["cnn_fwd"]],
        ).fetchall()
    )
    assert got == {
        "block:forward/attn/attn.qkv": "TENSOR BF16→FP32 HGMMA",
        "block:forward/attn": "TENSOR BF16→FP32 HGMMA",
        "block:forward/attn/attn.proj": "TENSOR BF16→FP32 HGMMA",
        "cnn:forward/conv2": "TENSOR TF32→FP32 HMMA",
        "cnn:forward/conv3": "TENSOR TF32→FP32 HGMMA",
    }


def test_measured_ceilings_pair_with_the_report_and_the_datasheet(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`rl ceilings measure --device cuda` (its measurement replaced by the document the H100 run wrote) labels
    the run with its GPU, so `rl ceilings RUN` of that GPU's report shows the measured roofs beside the report's
    and the datasheet's roofs of the same name; per clock, the report's peaks equal the datasheet's."""
    from rooflake.instrument import ceilings as ceil

    own = tmp_path / "store"
    rep = tmp_path / "block_fwd.ncu-rep"
    rep.write_bytes(lzma.decompress((GPU / "block_fwd.ncu-rep.xz").read_bytes()))
    run = ingest_file(rep, own, {}).run_id
    monkeypatch.setattr(ceil, "measure", lambda device, threads, argv=None: DOC)
    r = CliRunner().invoke(
        app, ["ceilings", "measure", "--device", "cuda", "-o", str(tmp_path / "c.json"), "--store", str(own)]
    )
    assert r.exit_code == 0, r.output
    assert "TENSOR BF16 " in r.stdout and "\nBF16 " not in r.stdout
    r = CliRunner().invoke(app, ["ceilings", run, "-f", "csv", "--store", str(own)])
    assert r.exit_code == 0, r.output
    table = {row["ceiling"]: row for row in csv.DictReader(r.stdout.splitlines())}
    measured = {c["ceiling"]: c["value"] for c in DOC["ceilings"]}
    for name in (
        "TENSOR BF16",
        "TENSOR FP16",
        "TENSOR TF32",
        "TENSOR FP8",
        "TENSOR FP64",
        "FP32",
        "DRAM",
        "L2",
    ):
        row = table[name]
        assert float(row["measured"]) == measured[name]
        # under the datasheet's peaks; near the report's, whose clock (the profiled one) is not the measurement's
        assert 0.5 < float(row["measured_over_report"]) < 1.05, row
        assert name == "L2" or float(row["measured_over_datasheet"]) < 1, row
    assert measured["L2"] > measured["DRAM"]
    for name in (
        "TENSOR BF16",
        "TENSOR FP16",
        "TENSOR TF32",
        "TENSOR FP8",
        "TENSOR INT8",
        "TENSOR FP64",
        "FP32",
    ):
        assert abs(float(table[name]["report_per_clock_over_datasheet"]) - 1) < 2e-3, table[name]
