"""DeLTA-style memory traffic model of GEMM-shaped layers (modelled numbers, not measurements).

Lym, Lee, O'Connor, Chatterjee, Erez, "DeLTA: GPU Performance Model for Deep Learning Applications with In-depth
Memory System Traffic Analysis", ISPASS 2019. DeLTA models a convolution as the implicit GEMM cuDNN runs (M = N·P·Q
output pixels, N_gemm = K filters, K_gemm = C·R·S), tiled into CTAs of blkM × blkN that walk K_gemm in steps of blkK,
and derives the traffic at each level from the tiles the CTAs load:

- **L1** (requests the SMs make): every CTA loads its A panel (blkM × K_gemm, gathered by im2col) and its B panel
  (K_gemm × blkN); the im2col gather of an NHWC input reads C·dtype contiguous bytes per (r, s) tap, so a tap that
  covers less than a 32-byte sector wastes the rest: factor g = ceil(C·b / 32)·32 / (C·b) ≥ 1 (1 for a GEMM).
- **L2** (L1 misses): the same panels, but overlapping filter windows of the CTA's output pixels hit in L1: the A
  panel's unique input footprint is smaller than blkM·R·S by the halo reuse h (≥ 1) of the CTA's strip of output
  pixels (strip width min(blkM, Q), height ceil(blkM / Q)).
- **DRAM** (L2 misses): a matrix whose whole footprint fits in half the L2 is read from DRAM once; otherwise each
  wave of resident CTAs (SMs × CTAs per SM, rasterized along M) reads its own unique panels again. Never below the
  compulsory traffic (every input, weight and output once).
- Output C (M × N_gemm) is written once at every level.

Attention (FlashAttention forward, Dao et al. 2022): per (batch, head) and per block of blkQ query rows, Q is read
once, K and V are streamed whole (2·N·D) and O written once: L1 = L2 = B·H·(2·N·D + (N / blkQ)·2·N·D)·b; DRAM is
the compulsory B·H·4·N·D·b when the K and V of the heads in flight fit in half the L2, else the L2 figure.

What we assumed where the paper's exact reuse formulas were not available (also in docs/model.md): square-ish
default tiles per dtype (`DEFAULT_TILES`), one CTA per SM, 32-byte sectors, half the L2 usable for reuse, M-major
rasterization. Every number here is labelled modelled (`traffic_model` column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SECTOR_BYTES = 32
# default CTA tiles (blkM, blkN, blkK) by element size in bytes: CUTLASS's default SIMT tile for FP32
# (128x128x8) and Tensor-Core tile for 16-bit types (128x128x32); FP8 128x128x64
DEFAULT_TILES: dict[int, tuple[int, int, int]] = {
    8: (64, 64, 8),
    4: (128, 128, 8),
    2: (128, 128, 32),
    1: (128, 128, 64),
}
ATTENTION_BLOCK_Q = 64  # FlashAttention-2's query block for head dim 64


@dataclass(frozen=True)
class GpuSpec:
    """What the DRAM model needs of a GPU: SM count and L2 size (bytes), from the datasheet catalog or given."""

    name: str
    sm_count: int
    l2_bytes: int
    ctas_per_sm: int = 1


@dataclass(frozen=True)
class Traffic:
    """Modelled bytes per memory level; ``dram`` is None without a GPU (its L2 size decides the misses)."""

    l1: int
    l2: int
    dram: int | None
    compulsory: int
    model: str
    assumptions: str


@dataclass(frozen=True)
class ConvShape:
    """An NCHW convolution: batch n, channels c → k, input h × w, filter r × s, stride, padding and dilation
    along h (``stride``, ``pad``, ``dilation``) and along w (``stride_w``, ``pad_w``, ``dilation_w``; None: as along
    h), groups. A GEMM is the 1×1 case with h = w = 1 (``gemm_shape``)."""

    n: int
    c: int
    k: int
    h: int
    w: int
    r: int = 1
    s: int = 1
    stride: int = 1
    pad: int = 0
    groups: int = 1
    stride_w: int | None = None
    pad_w: int | None = None
    dilation: int = 1
    dilation_w: int | None = None

    @property
    def r_span(self) -> int:
        """Input rows one filter window spans (dilated)."""
        return self.dilation * (self.r - 1) + 1

    @property
    def s_span(self) -> int:
        """Input columns one filter window spans (dilated)."""
        return (self.dilation if self.dilation_w is None else self.dilation_w) * (self.s - 1) + 1

    @property
    def sw(self) -> int:
        """The stride along w."""
        return self.stride if self.stride_w is None else self.stride_w

    @property
    def p(self) -> int:
        return (self.h + 2 * self.pad - self.r_span) // self.stride + 1

    @property
    def q(self) -> int:
        return (self.w + 2 * (self.pad if self.pad_w is None else self.pad_w) - self.s_span) // self.sw + 1


def gemm_shape(m: int, n: int, k: int, batch: int = 1) -> ConvShape:
    """C[m × n] = A[m × k] · B[k × n] as the 1×1 convolution DeLTA's model already covers; ``batch`` independent
    such products (``bmm``: an A and a B per batch) as its groups."""
    return ConvShape(n=m, c=k * batch, k=n * batch, h=1, w=1, groups=batch)


def _tile(elem_bytes: int, tile: tuple[int, int, int] | None) -> tuple[int, int, int]:
    return tile or DEFAULT_TILES.get(elem_bytes, DEFAULT_TILES[4])


def _halo_reuse(shape: ConvShape, blk_m: int) -> float:
    """Input elements of the im2col panel per unique input element, for one CTA's strip of output pixels."""
    if shape.r * shape.s == 1:
        return 1.0
    width = min(blk_m, shape.q)
    height = math.ceil(blk_m / shape.q) if shape.q else 1
    height = min(height, shape.p)
    unique = ((height - 1) * shape.stride + shape.r_span) * ((width - 1) * shape.sw + shape.s_span)
    return max(1.0, (height * width * shape.r * shape.s) / unique)


def conv_traffic(
    shape: ConvShape, elem_bytes: int, gpu: GpuSpec | None = None, tile: tuple[int, int, int] | None = None
) -> Traffic:
    """DeLTA-style L1/L2/DRAM bytes of a convolution (or GEMM) run as an implicit GEMM (see the module docstring).

    Per group g of ``groups``: M = N·P·Q, N_gemm = K/g, K_gemm = C/g·R·S. Returns bytes (modelled)."""
    g = shape.groups
    m, n_gemm, k_gemm = shape.n * shape.p * shape.q, shape.k // g, (shape.c // g) * shape.r * shape.s
    blk_m, blk_n, _blk_k = _tile(elem_bytes, tile)
    grid_m, grid_n = math.ceil(m / blk_m), math.ceil(n_gemm / blk_n)
    ctas = grid_m * grid_n * g
    # a panel holds no more rows (columns) than the matrix: a GEMV's A is one row, not a 128-row tile
    a_panel = min(blk_m, m) * k_gemm * elem_bytes
    b_panel = min(blk_n, n_gemm) * k_gemm * elem_bytes
    c_bytes = m * n_gemm * g * elem_bytes
    tap_bytes = (shape.c // g) * elem_bytes
    gather = 1.0 if shape.r * shape.s == 1 else math.ceil(tap_bytes / SECTOR_BYTES) * SECTOR_BYTES / tap_bytes
    halo = _halo_reuse(shape, blk_m)
    l1 = ctas * (a_panel * gather + b_panel) + c_bytes
    l2 = ctas * (a_panel / halo + b_panel) + c_bytes
    a_total = shape.n * shape.c * shape.h * shape.w * elem_bytes
    b_total = shape.k * (shape.c // g) * shape.r * shape.s * elem_bytes
    compulsory = a_total + b_total + c_bytes
    dram = (
        None
        if gpu is None
        else _dram(gpu, ctas, (grid_m, grid_n * g), a_panel / halo, b_panel, a_total, b_total, c_bytes)
    )
    kind = "conv" if shape.r * shape.s > 1 or shape.h * shape.w > 1 else "gemm"
    return Traffic(
        l1=round(l1),
        l2=round(l2),
        dram=None if dram is None else max(compulsory, round(dram)),
        compulsory=compulsory,
        model=f"delta-{kind}",
        assumptions=(
            f"tile {blk_m}x{blk_n}x{_blk_k}, {ctas} CTAs, im2col sector factor {gather:.3g}, halo reuse {halo:.3g}"
            + ("" if gpu is None else f", {gpu.sm_count} SMs x {gpu.ctas_per_sm} CTA, L2 {gpu.l2_bytes} B")
        ),
    )


def _dram(
    gpu: GpuSpec,
    ctas: int,
    grid: tuple[int, int],
    a_panel: float,
    b_panel: float,
    a_total: int,
    b_total: int,
    c_bytes: int,
) -> float:
    """L2 misses: a matrix fitting in half the L2 is read once; otherwise each wave re-reads its unique panels.
    ``grid``: the CTAs along M, and along N (all groups')."""
    grid_m, grid_n = grid
    resident = max(1, gpu.sm_count * gpu.ctas_per_sm)
    waves = math.ceil(ctas / resident)
    half_l2 = gpu.l2_bytes / 2
    # M-major rasterization: a wave spans `resident` consecutive CTAs down the M dimension (no more than exist)
    a_per_wave = min(resident, grid_m) * a_panel
    b_per_wave = min(math.ceil(min(resident, ctas) / grid_m), grid_n) * b_panel
    a = a_total if a_total <= half_l2 else waves * a_per_wave
    b = b_total if b_total <= half_l2 else waves * b_per_wave
    return a + b + c_bytes


def attention_traffic(
    batch: int,
    heads: int,
    seq_q: int,
    seq_kv: int,
    head_dim: int,
    elem_bytes: int,
    gpu: GpuSpec | None = None,
) -> Traffic:
    """FlashAttention-style forward traffic (see the module docstring): Q read once, K/V streamed per query block."""
    blocks = math.ceil(seq_q / ATTENTION_BLOCK_Q)
    per_head_kv = 2 * seq_kv * head_dim * elem_bytes
    q_o = 2 * seq_q * head_dim * elem_bytes
    l2 = batch * heads * (q_o + blocks * per_head_kv)
    compulsory = batch * heads * (q_o + per_head_kv)
    dram: int | None = None
    if gpu is not None:
        in_flight = min(batch * heads, max(1, gpu.sm_count * gpu.ctas_per_sm // blocks) or 1)
        dram = compulsory if in_flight * per_head_kv <= gpu.l2_bytes / 2 else l2
    return Traffic(
        l1=l2,
        l2=l2,
        dram=dram,
        compulsory=compulsory,
        model="flash-attention",
        assumptions=f"query block {ATTENTION_BLOCK_Q}, {blocks} blocks per head, K/V streamed per block",
    )
