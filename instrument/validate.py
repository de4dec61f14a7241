"""Predicted vs measured: the analytic FLOPs and the DeLTA-style traffic model (:mod:`rooflake.instrument.traffic`)
beside a profiled kernel's counters, for the real Nsight Compute fixtures whose problem shape can be derived.

A kernel's shape comes from its own report: the CTA tile in the kernel name (``two_blocktiling<128, 128, 8, …>``,
``GemmShape<128, 96, 64>``), the grid (``grid_x·blkM = M``), and the FLOP counter (``FLOPs = 2·M·N·K`` gives K);
where no FLOP counter exists, a sibling kernel of the same problem (:data:`FIXTURE_KERNELS` says which, per kernel).
The GPU's SM count and L2 size come from the datasheet catalog where it has both, else from the report's own
``device__attribute_multiprocessor_count`` and ``device__attribute_l2_cache_size`` (:func:`device_gpu`).

Quantities (:data:`QUANTITIES`), each predicted the way the measured counter counts:

- ``flops``: 2·M·N·K for a GEMM, 4·B·H·N²·D for attention (PyTorch's ``torch.utils.flop_counter`` rules);
  measured: ``kernels.flops_fp32`` (FMA = 2) or ``kernels.flops_tensor`` (``sm__ops_path_tensor_*``).
- ``l1_read``: the model's L1 bytes less the output write; measured ``kernels.bytes_l1``
  (128 × ``l1tex__lsu_writeback_active_mem_lg``: data the L1 returns to the SM for global loads).
- ``l2_read``: the model's L2 bytes less the output write; measured ``kernels.bytes_l2``
  (``l1tex__m_xbar2l1tex_read_bytes`` or 32 × ``lts__lts2xbar_cycles_active``: L2 → L1 reads).
- ``dram_read``: the model's DRAM bytes less the output write; measured ``dram__bytes_read.sum``.
- ``dram``: the model's DRAM bytes (reads and the output write); measured ``kernels.bytes_dram`` (read + write),
  used only where the report has no ``dram__bytes_read.sum``.

Ratios are measured ÷ predicted; docs/model.md publishes the table and explains every ratio outside [0.5, 2].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from rooflake.instrument.model_spec import gpu_spec
from rooflake.instrument.traffic import GpuSpec, attention_traffic, conv_traffic, gemm_shape
from rooflake.schema import UsageError

QUANTITIES = ("flops", "l1_read", "l2_read", "dram_read", "dram")


@dataclass(frozen=True)
class FixtureKernel:
    """One fixture kernel whose shape is derivable. ``dims`` is (M, N, K) for ``op='gemm'`` and (B, H, N, D) for
    ``op='attention'``; ``tile`` the CTA tile (blkM, blkN, blkK) read from the kernel name or launch;
    ``flops_column`` the kernels column holding its measured FLOPs (None: no counter counts them, as for integer
    MMAs); ``derivation`` how the shape was found."""

    report: str
    kernel_ids: tuple[int, ...]
    kernel: str
    op: str
    dims: tuple[int, ...]
    elem_bytes: int
    tile: tuple[int, int, int] | None
    flops_column: str | None
    derivation: str


_ESMM = "AveryClapp__ESMM-Research__profile_output.ncu-rep"
_ESMM_HOW = (
    "grid {g}x{g} CTAs of the {t}x{t} tile in the name: M = N = 1024; flops_fp32 = 2^31 = 2·M·N·K: K = 1024"
)
_FA_HOW = (
    "B=1, H=8, N=4096, D=64 (the fixture README); grid 64 x 8 = query blocks of 64 rows x heads; "
    "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum = 4·B·H·N²·D"
)
_FA = "Bias92__flashattn-cuda__docs__profiling__"
FIXTURE_KERNELS: tuple[FixtureKernel, ...] = (
    FixtureKernel(_ESMM, (0,), "one_blocktiling<64,64,8,8>", "gemm", (1024, 1024, 1024), 4, (64, 64, 8),
                  "flops_fp32", _ESMM_HOW.format(g=16, t=64)),
    FixtureKernel(_ESMM, (1,), "two_blocktiling<128,128,8,8,8>", "gemm", (1024, 1024, 1024), 4, (128, 128, 8),
                  "flops_fp32", _ESMM_HOW.format(g=8, t=128)),
    FixtureKernel(_ESMM, (2,), "vectorized_blocktiling<128,128,8,8,8>", "gemm", (1024, 1024, 1024), 4,
                  (128, 128, 8), "flops_fp32", _ESMM_HOW.format(g=8, t=128)),
    FixtureKernel(_ESMM, (3,), "warptiling<128,128,16,…>", "gemm", (1024, 1024, 1024), 4, (128, 128, 16),
                  "flops_fp32", _ESMM_HOW.format(g=8, t=128)),
    FixtureKernel("LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep", (0, 1), "naive_gemm", "gemm",
                  (1024, 1024, 1024), 4, (32, 32, 1), "flops_fp32",
                  "grid 32x32 CTAs of 32x32 threads, one output each: M = N = 1024; flops_fp32 = 2·M·N·K + 3·M·N "
                  "(the epilogue alpha·acc + beta·C): K = 1024; tile = the CTA's 32x32 outputs"),
    FixtureKernel("panjd123__cutlass__report-s4.ncu-rep", (0,), "cutlass Gemm GemmShape<128,96,64> int8", "gemm",
                  (384, 384, 384), 1, (128, 96, 64), None,
                  "the reference kernel of the same NVTX range: grid 24x24 CTAs of 16x16 threads: M = N = 384; its "
                  "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum = 3,543,552 = 4,608 warps x (2·K + 1): K = 384; "
                  "CUTLASS grid 3x4 of 128x96 agrees"),
    *(
        FixtureKernel(f"{_FA}{sub}.ncu-rep", (0,), name, "attention", (1, 8, 4096, 64), 2, None, "flops_tensor",
                      _FA_HOW)
        for sub, name in (
            ("ncu_sections__fa3_before_n4096_full", "fa3_fwd_kernel<64> (before)"),
            ("ncu_sections__db_full_after_n4096_full", "fa3db_full_fwd_kernel<64,1,1> (after)"),
            ("ncu__fa3_before_n4096", "fa3_fwd_kernel<64> (before, SOL only)"),
            ("ncu__db_full_after_n4096", "fa3db_full_fwd_kernel<64,1,1> (after, SOL only)"),
        )
    ),
)  # fmt: skip


def device_gpu(metrics: pa.Table, kernel_id: int, name: str) -> GpuSpec | None:
    """The traffic model's GPU from a report's own device attributes (``device__attribute_multiprocessor_count``,
    ``device__attribute_l2_cache_size``) of one kernel in a ``metrics`` table; None when either is missing."""
    values = _metric_values(metrics, kernel_id)
    sms, l2 = (
        values.get("device__attribute_multiprocessor_count"),
        values.get("device__attribute_l2_cache_size"),
    )
    if sms is None or l2 is None:
        return None
    return GpuSpec(name, int(sms), int(l2))


def fixture_gpu(kernels: pa.Table, metrics: pa.Table, kernel_id: int) -> tuple[GpuSpec, str]:
    """(GPU, source) for one kernel of an ingested report: the datasheet catalog's SM count and L2 size where it
    has both for the report's ``gpu_name``, else the report's own device attributes (:func:`device_gpu`).
    Raises :class:`UsageError` when neither has them."""
    (name,) = {r["gpu_name"] for r in kernels.to_pylist() if r["kernel_id"] == kernel_id}
    try:
        return gpu_spec(name)[0], "datasheet catalog"
    except UsageError:
        found = device_gpu(metrics, kernel_id, name)
        if found is None:
            raise UsageError(
                f"{name}: no SM count and L2 size in the datasheet catalog or the report"
            ) from None
        return found, "report device attributes"


def fixture_rows(fk: FixtureKernel, kernels: pa.Table, metrics: pa.Table) -> list[dict]:
    """Predicted vs measured for every launch of a fixture kernel: :func:`compare`'s rows plus ``report``,
    ``kernel``, ``kernel_id``, ``gpu`` (name, SMs, L2 bytes) and ``gpu_source``."""
    rows = []
    for kid in fk.kernel_ids:
        gpu, source = fixture_gpu(kernels, metrics, kid)
        head = {"report": fk.report, "kernel": fk.kernel, "kernel_id": kid, "gpu": gpu, "gpu_source": source}
        rows += [{**head, **r} for r in compare(predict(fk, gpu), measured(kernels, metrics, fk, kid))]
    return rows


def predict(fk: FixtureKernel, gpu: GpuSpec) -> dict[str, int]:
    """Predicted FLOPs and bytes per quantity of :data:`QUANTITIES` (FLOPs; bytes) for a fixture kernel's shape."""
    if fk.op == "attention":
        return predict_attention(*fk.dims, elem_bytes=fk.elem_bytes, gpu=gpu)
    m, n, k = fk.dims
    return predict_gemm(m, n, k, elem_bytes=fk.elem_bytes, gpu=gpu, tile=fk.tile)


def predict_gemm(
    m: int, n: int, k: int, *, elem_bytes: int, gpu: GpuSpec, tile: tuple[int, int, int] | None = None
) -> dict[str, int]:
    """C[M×N] = A[M×K]·B[K×N]: FLOPs 2·M·N·K, and the DeLTA-style L1/L2/DRAM bytes of
    :func:`rooflake.instrument.traffic.conv_traffic` (1×1 case) split into reads and the output write M·N·b."""
    t = conv_traffic(gemm_shape(m, n, k), elem_bytes, gpu, tile)
    out = m * n * elem_bytes
    return _rows(2 * m * n * k, t.l1, t.l2, t.dram, out)


def predict_attention(b: int, h: int, n: int, d: int, *, elem_bytes: int, gpu: GpuSpec) -> dict[str, int]:
    """FlashAttention forward: FLOPs 4·B·H·N²·D, bytes of :func:`rooflake.instrument.traffic.attention_traffic`
    split into reads and the output write B·H·N·D·b."""
    t = attention_traffic(b, h, n, n, d, elem_bytes, gpu)
    return _rows(4 * b * h * n * n * d, t.l1, t.l2, t.dram, b * h * n * d * elem_bytes)


def _rows(flops: int, l1: int, l2: int, dram: int | None, out: int) -> dict[str, int]:
    if dram is None:  # a GpuSpec is always given here, so the model has a DRAM figure
        raise UsageError("the DRAM model needs a GPU: give its SM count and L2 size (GpuSpec)")
    return {"flops": flops, "l1_read": l1 - out, "l2_read": l2 - out, "dram_read": dram - out, "dram": dram}


def measured(
    kernels: pa.Table, metrics: pa.Table, fk: FixtureKernel, kernel_id: int
) -> dict[str, float | None]:
    """Measured counterparts of :data:`QUANTITIES` for one kernel of an ingested report (``kernels`` and
    ``metrics`` tables of :func:`rooflake.ingest.read`); None where the report lacks the counter. ``dram`` (read +
    write) is given only where ``dram__bytes_read.sum`` is missing."""
    (row,) = [r for r in kernels.to_pylist() if r["kernel_id"] == kernel_id]
    dram_read = _metric_values(metrics, kernel_id).get("dram__bytes_read.sum")
    return {
        "flops": None if fk.flops_column is None else row[fk.flops_column],
        "l1_read": row["bytes_l1"],
        "l2_read": row["bytes_l2"],
        "dram_read": dram_read,
        "dram": row["bytes_dram"] if dram_read is None else None,
    }


def _metric_values(metrics: pa.Table, kernel_id: int) -> dict[str, float]:
    ids, names, values = (metrics.column(c).to_pylist() for c in ("kernel_id", "metric_name", "value_double"))
    return {nm: v for i, nm, v in zip(ids, names, values, strict=True) if i == kernel_id and v is not None}


def compare(predicted: Mapping[str, int], measured_values: Mapping[str, float | None]) -> list[dict]:
    """Rows of (quantity, predicted, measured, ratio = measured ÷ predicted, within_2x) for every quantity of
    :data:`QUANTITIES` that has a measured value or no alternative: ``dram`` only where ``dram_read`` is missing.
    ``ratio`` and ``within_2x`` are None where the measured value is None or NaN (a counter the report lacks)."""
    rows = []
    for q in QUANTITIES:
        got = measured_values.get(q)
        if q == "dram" and got is None:
            continue
        if q == "dram_read" and got is None and measured_values.get("dram") is not None:
            continue
        value = None if got is None or math.isnan(got) else got
        ratio = None if value is None or predicted[q] == 0 else value / predicted[q]
        rows.append({
            "quantity": q,
            "predicted": predicted[q],
            "measured": value,
            "ratio": ratio,
            "within_2x": None if ratio is None else 0.5 <= ratio <= 2.0,
        })  # fmt: skip
    return rows
