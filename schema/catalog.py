"""Metric catalog: which Nsight Compute metrics give FLOPs, bytes, time and peaks, as data.

Sources
- NERSC method (Yang, Kurth, Williams: "Hierarchical Roofline analysis for GPUs", CCPE 2020; the GENE/NERSC
  roofline-on-nvidia-gpus scripts): time ``sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second``,
  FLOPs ``add + mul + 2 fma`` over ``sm(sp)__sass_thread_inst_executed_op_*_pred_on.sum``, bytes
  ``l1tex__t_bytes.sum``, ``lts__t_bytes.sum``, ``dram__bytes.sum``.
- Nsight Compute's own sections ``SpeedOfLight_RooflineChart`` and
  ``SpeedOfLight_Hierarchical{Double,Single,Half,Tensor}RooflineChart`` (their ``body_metrics()``): achieved
  ``X.sum.per_cycle_elapsed x smsp__cycles_elapsed.avg.per_second``; peak ``X.sum.peak_sustained x
  <unit>__cycles_elapsed.avg.per_second``; L2 = ``lts__lts2xbar_cycles_active x 32`` (CC >= 9.0) or
  ``l1tex__m_xbar2l1tex_read_bytes`` (older); L1 = ``l1tex__lsu_writeback_active_mem_lgds x 128`` (CC >= 9.0),
  ``..._mem_lg x 128`` (CC 7.5-8.9), ``l1tex__lsu_writeback_active x 128`` (CC <= 7.2); Tensor Cores
  ``sm__ops_path_tensor_src_*`` op counts (2023.2+) or ``sm__inst_executed_pipe_tensor x 512`` (older sections).

Each quantity has an ordered list of candidate *families*; the first family whose count the report supports is
used, and the family also gives the matching ceiling. Within a family a count comes from the ``.sum`` counter if
present, else from the rate: ``.sum.per_cycle_elapsed x <unit>__cycles_elapsed.avg.per_second x duration`` (FLOPs)
or ``.sum.per_second x duration`` (bytes), so that count / duration equals the rate ncu's chart draws.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# FLOP factors per instruction: FMA = 2 FLOPs. FP16 'ncu' counts half2 lanes (x2 add/mul, x4 fma), 'nersc' does not.
FLOP_OPS: dict[str, dict[str, dict[str, int]]] = {
    "flops_fp64": {"ncu": {"dadd": 1, "dmul": 1, "dfma": 2}, "nersc": {"dadd": 1, "dmul": 1, "dfma": 2}},
    "flops_fp32": {"ncu": {"fadd": 1, "fmul": 1, "ffma": 2}, "nersc": {"fadd": 1, "fmul": 1, "ffma": 2}},
    "flops_fp16": {"ncu": {"hadd": 2, "hmul": 2, "hfma": 4}, "nersc": {"hadd": 1, "hmul": 1, "hfma": 2}},
}
FP16_CONVENTIONS = ("ncu", "nersc")
INST_BASE = "sass_thread_inst_executed_op_{op}_pred_on"
# the ceiling of a FLOP quantity: the peak of its FMA instruction times its FLOP factor
FLOP_CEILINGS = {
    "flops_fp64": ("FP64", "dfma"),
    "flops_fp32": ("FP32", "ffma"),
    "flops_fp16": ("FP16", "hfma"),
}


@dataclass(frozen=True)
class ByteFamily:
    """One way to count the bytes of a memory level.

    ``base`` is the metric without rollup; count = ``base.sum x factor`` or ``base.sum.per_second x factor x T``;
    peak = ``base.sum.peak_sustained x factor x clock`` where clock = ``<clock_unit>__cycles_elapsed.avg.per_second``.
    ``min_cc``/``max_cc`` restrict the family to the compute capabilities ncu uses it on (None = any).
    """

    base: str
    factor: float
    clock_unit: str
    min_cc: float | None = None
    max_cc: float | None = None
    method: str = "ncu-section"
    # exact counters that sum to ``base.sum`` (tried after it, before the rate)
    split: tuple[str, ...] = ()
    # regex over the body metric names of the report's SpeedOfLight_*RooflineChart sections: when it matches,
    # the report's own section uses this family, which then goes first whatever the compute capability
    section_re: str | None = None

    def applies(self, cc: float | None) -> bool:
        if cc is None:
            return self.min_cc is None and self.max_cc is None
        return (self.min_cc is None or cc >= self.min_cc) and (self.max_cc is None or cc <= self.max_cc)


BYTE_FAMILIES: dict[str, list[ByteFamily]] = {
    "bytes_dram": [
        ByteFamily("dram__bytes", 1, "dram", split=("dram__bytes_read.sum", "dram__bytes_write.sum"))
    ],
    "bytes_l2": [
        ByteFamily("lts__lts2xbar_cycles_active", 32, "lts", min_cc=9.0, section_re=r"lts__lts2xbar"),
        ByteFamily(
            "l1tex__m_xbar2l1tex_read_bytes",
            1,
            "lts",
            max_cc=8.99,
            section_re=r"^l1tex__m_xbar2l1tex_read_bytes\.",
        ),
        ByteFamily("lts__t_bytes", 1, "lts", method="nersc"),
        # 32-byte sectors: what --set full keeps on Hopper
        ByteFamily("lts__t_sectors", 32, "lts", method="nersc"),
    ],
    "bytes_l1": [
        ByteFamily(
            "l1tex__lsu_writeback_active_mem_lgds", 128, "l1tex", min_cc=9.0, section_re=r"_mem_lgds\."
        ),
        ByteFamily(
            "l1tex__lsu_writeback_active_mem_lg",
            128,
            "l1tex",
            min_cc=7.5,
            max_cc=8.99,
            section_re=r"_mem_lg\.",
        ),
        ByteFamily(
            "l1tex__lsu_writeback_active",
            128,
            "l1tex",
            max_cc=7.29,
            section_re=r"lsu_writeback_(bytes|active)\.sum",
        ),
        ByteFamily("l1tex__t_bytes", 1, "l1tex", method="nersc"),
    ],
}
LEVEL_CEILINGS = {"bytes_dram": "DRAM", "bytes_l2": "L2", "bytes_l1": "L1"}

# --- Tensor Cores (docs/architecture.md section 5, "Tensor roofs") -----------------------------------------------
# ncu's SpeedOfLight_HierarchicalTensorRooflineChart pairs every op-count metric X with its own peak:
# achieved = X.sum.per_cycle_elapsed x sm__cycles_elapsed.avg.per_second, peak = X.sum.peak_sustained x the same
# clock. The names of X, per architecture (the section's blocks, ncu 2025.x; tests/data/ncu_tensor_section_2025.txt):
#   CC 7.5 (Turing)        sm__ops_path_tensor_src_{fp16_bf16_tf32_dst_fp32, fp16_dst_fp16, int1, int4, int8}
#   CC 8.0-8.9 (Ampere/Ada) src_<type>[_dst_<type>]_sparsity_{off,on}, src_fp64, src_int1 (fp8 on 8.9)
#   CC 9.0 (Hopper)        aggregates src_{fp16, bf16_dst_fp32, tf32_dst_fp32, int8, int1} whose peak is the 2:4
#                          sparse one, split by op_{hgmma,hmma,igmma,imma,bgmma,bmma}_src_*[_sparsity_*]; src_fp64,
#                          src_fp8_sparsity_{off,on} unsplit
#   CC 10.x-12.x (Blackwell) op_{hmma,imma,utchmma,utcimma,utcomma,utcqmma}_src_* (src_fp4_fp6_fp8_*, ...) and
#                          the aggregates src_* they split
#   CC 7.0 (Volta; and every architecture in sections before 2023.2) sm__inst_executed_pipe_tensor x 512, whose
#                          factor holds on Volta only
# One name = one path (optional op, source types, optional destination type, optional sparsity). A path covers
# another when the other's ops are a part of its own (same source types; its op, destination and sparsity either
# unset or equal): an aggregate src_* covers the op_* paths that split it, src_<t> covers src_<t>_sparsity_on.
TENSOR_PATH_RE = (
    r"^sm__ops_path_tensor_(?:op_(?P<op>[a-z0-9]+)_)?src_(?P<src>[a-z0-9]+(?:_(?!dst_|sparsity_)[a-z0-9]+)*)"
    r"(?:_dst_(?P<dst>[a-z0-9]+))?(?:_sparsity_(?P<sparsity>on|off))?$"
)
TENSOR_PATH_PREFIX = "sm__ops_path_tensor_"
TENSOR_PIPE_BASE = "inst_executed_pipe_tensor"
TENSOR_PIPE_FACTOR = (
    512  # ops per tensor-pipe instruction in ncu's pre-2023.2 Tensor roofline section (Volta)
)
TENSOR_PIPE_ROOF = "TENSOR FP16"  # Volta's Tensor Cores take FP16 sources only
TENSOR_PIPE_CC = (7.0, 7.5)  # [min, max) compute capability where the x512 factor holds
# provenance key (kernels.provenance) naming the kernel's tensor roof in `ceilings`, or 'NULL: <reason>'
TENSOR_ROOF_KEY = "tensor_roof"
TENSOR_HINT = (
    "profile with ncu >= 2023.2 and `--section SpeedOfLight_HierarchicalTensorRooflineChart` (in `--set roofline` "
    "and `--set full`) for the sm__ops_path_tensor_* op counts and their peaks"
)


@dataclass(frozen=True)
class TensorPath:
    """One Tensor-Core op-count metric of ncu: ``base`` (no rollup), its optional ``op`` (hgmma, hmma, utcqmma, ...),
    source types ``src`` (``fp16``, ``fp4_fp6_fp8``), optional destination ``dst`` and ``sparsity`` (on|off)."""

    base: str
    op: str | None
    src: str
    dst: str | None
    sparsity: str | None

    @classmethod
    def parse(cls, base: str) -> TensorPath | None:
        """The path of a metric base name (``sm__ops_path_tensor_...``), None for any other name."""
        m = re.match(TENSOR_PATH_RE, base)
        return None if m is None else cls(base, m["op"], m["src"], m["dst"], m["sparsity"])

    def covers(self, other: TensorPath) -> bool:
        """``other``'s ops are a strict part of this path's (an aggregate and a path that splits it)."""
        return (
            self != other
            and self.src == other.src
            and self.op in (None, other.op)
            and self.dst in (None, other.dst)
            and self.sparsity in (None, other.sparsity)
        )

    @property
    def roof(self) -> str:
        """The roof's name, saying the source type: ``TENSOR FP16→FP32``, ``TENSOR FP16 HGMMA``,
        ``TENSOR FP16→FP32 SPARSE`` (the 2:4-sparse peak), ``TENSOR FP4/FP6/FP8→FP16 UTCQMMA``."""
        name = "TENSOR " + "/".join(self.src.upper().split("_"))
        name += f"→{self.dst.upper()}" if self.dst else ""
        name += f" {self.op.upper()}" if self.op else ""
        return name + (" SPARSE" if self.sparsity == "on" else "")


DURATION_METRIC = "gpu__time_duration.sum"
NERSC_TIME = ("sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second")

ROOFLINE_SECTION_RE = r"^SpeedOfLight_(Hierarchical\w+)?RooflineChart$"

QUANTITIES = (
    "flops_fp64",
    "flops_fp32",
    "flops_fp16",
    "flops_tensor",
    "bytes_l1",
    "bytes_l2",
    "bytes_dram",
)

# What to tell a user whose report lacks the counters of a roofline.
COLLECT_HINT = (
    "profile with `ncu --set roofline` (or `--section SpeedOfLight_RooflineChart` plus the "
    "SpeedOfLight_Hierarchical*RooflineChart sections, or `--set full`)"
)
