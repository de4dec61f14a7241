"""FLOPs and bytes of one ATen operator from the shapes a trace recorded: the one rule set of rooflake.

``rl estimate`` (:mod:`rooflake.instrument.estimate`) sees each op of a model on meta tensors; a torch.profiler
trace recorded with ``record_shapes`` (or an Nsight Systems trace whose NVTX texts carry the shapes) holds, per op,
its name and the dims and dtype of every input. Both are judged by the rules here:

- **torch's own formulas** where torch has one (``torch.utils.flop_counter``: mm, addmm, bmm, baddbmm,
  convolution and its backward, the scaled-dot-product attention kernels): with torch installed, the recorded op
  is replayed on meta tensors of the recorded dims, strides and dtypes under :class:`FlopCounterMode`
  (:func:`replayed`), which also counts the composites that decompose into them (``aten::linear``,
  ``aten::matmul``, ``aten::conv2d``, ``aten::scaled_dot_product_attention``). Without torch, the built-in
  formulas (:data:`MATMUL_OPS`, :data:`CONV_OPS`, :data:`ATTENTION_OPS`) give the same numbers (checked against
  torch in tests/test_op_work.py): 2·M·N·K per GEMM (a bias add is not counted, as torch counts it; TraceLens adds M·N),
  2·N·K·P·Q·(C/groups)·R·S per convolution, 2·B·H·L·S·(E + Ev) per attention forward (= 4·B·H·N²·D) and 2.5×
  that backward (FlashAttention recomputes the scores).
- **ours** where torch has none: :data:`ELEMENTWISE_FLOPS` (FLOPs per output element: arithmetic and activations 1,
  normalisations 4, softmax 5), :data:`PER_INPUT_FLOPS` (per element of the first input: reductions), views
  (:data:`VIEW_OPS`: 0 FLOPs, 0 bytes), data movement (:data:`ZERO_FLOP_OPS`: 0 FLOPs), integer-only operands (0).
- else **none**: FLOPs NULL with the reason, never 0.

Compulsory bytes: every tensor input once at its dtype plus the output once (its shape from the formula: a trace
records inputs only); 0 for views; NULL where the output's shape is not known. The DeLTA-style traffic per level
(:mod:`rooflake.instrument.traffic`) for GEMMs, convolutions and attention forward. Every number here is
modelled from shapes, none measured. Importing this module imports neither torch nor pyarrow.
"""

from __future__ import annotations

import ast
import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rooflake.instrument.traffic import (
    ConvShape,
    GpuSpec,
    Traffic,
    attention_traffic,
    conv_traffic,
    gemm_shape,
)

TORCH_SOURCE = "torch.utils.flop_counter"
REPLAY_SOURCE = "torch.utils.flop_counter (replayed on meta tensors)"
BUILTIN = "rooflake:builtin"
VIEW_SOURCE = "rooflake:view"

# ours, where torch has no formula: op name -> FLOPs per output element
ELEMENTWISE_FLOPS: dict[str, float] = {
    **dict.fromkeys(
        ["add", "sub", "mul", "div", "relu", "threshold", "neg", "rsub", "clamp", "hardtanh", "leaky_relu"],
        1.0,
    ),
    **dict.fromkeys(
        ["add_", "sub_", "mul_", "div_", "relu_", "clamp_", "hardtanh_", "addcmul", "addcdiv"], 1.0
    ),
    # transcendental activations: counted as one FLOP each, as fvcore and the flop_counter docs do for element-wise
    **dict.fromkeys(
        ["sigmoid", "sigmoid_", "tanh", "tanh_", "gelu", "silu", "silu_", "exp", "sqrt", "rsqrt", "pow"], 1.0
    ),
    # normalisations: (x - mean) * rstd * gamma + beta, plus the statistics: about 4 FLOPs per element forward
    **dict.fromkeys(
        ["native_batch_norm", "_native_batch_norm_legit", "native_layer_norm", "native_group_norm"], 4.0
    ),
    # softmax: max, subtract, exp, sum, divide: 5 FLOPs per element
    **dict.fromkeys(["_softmax", "_log_softmax", "_safe_softmax"], 5.0),
    **dict.fromkeys(["avg_pool2d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d"], 1.0),
}
# ours, per element of the first input: op name -> (FLOPs per element, rule name)
PER_INPUT_FLOPS: dict[str, tuple[float, str]] = {
    # reductions: one add per input element
    **dict.fromkeys(["sum", "mean", "var_mean", "std_mean", "norm"], (1.0, "reduction x1")),
    # the embedding's weight gradient: each row of the output gradient added into its weight row
    "embedding_dense_backward": (1.0, "scatter-add x1"),
    # softmax backward from the output y and its gradient g: y·g, the row sum, g − sum, y·(…): 4 per element;
    # log-softmax: exp(y), ·sum(g), the row sum, g − …: 4 per element
    "_softmax_backward_data": (4.0, "softmax backward x4"),
    "_log_softmax_backward_data": (4.0, "softmax backward x4"),
}
# views: the output aliases the input, no arithmetic and no bytes moved. Ops whose schema declares the alias are
# found by rl estimate from the schema; these return views (or, for the unsafe_* ones, tensors sharing the input's
# storage) without declaring it. aten.unsafe_split is what nn.LSTM splits its gates with.
VIEW_OPS = {
    "detach", "alias", "view", "_unsafe_view", "t", "expand", "transpose", "permute", "unbind", "split",
    "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "chunk", "unsafe_chunk", "narrow", "select",
    "slice", "squeeze", "unsqueeze", "reshape", "flatten", "unflatten", "view_as", "expand_as", "as_strided",
    "lift_fresh", "transpose_", "t_", "squeeze_", "unsqueeze_", "as_strided_", "detach_",  # in place: strides only
    "numpy_T", "_reshape_alias", "resolve_conj", "resolve_neg",
}  # fmt: skip
ZERO_FLOP_OPS = {
    "max_pool2d_with_indices",  # comparisons, not FLOPs
    "max_pool2d_with_indices_backward",  # a scatter of the gradient
    "copy_",
    "_to_copy",
    "clone",
    "cat",
    "stack",
    "zeros",
    "ones",
    "empty",
    "empty_strided",
    "fill_",
    "zero_",
    "ones_like",
    "zeros_like",
    "empty_like",
    "new_zeros",
    "new_empty",
    "new_empty_strided",
    "embedding",
    "index_select",
    "gather",
    "constant_pad_nd",
    "upsample_nearest1d",  # a gather: each output element is a copy of one input element
    "upsample_nearest2d",
    "upsample_nearest3d",
    "select_backward",  # a zero tensor with the gradient copied into one index
    "slice_backward",  # a zero tensor with the gradient copied into a slice
}
# dropout: the identity in eval mode (train=False), which is how inference traces record it
_DROPOUT = {"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"}
# ops that create a tensor from nothing: no input is read, the output is not known from the inputs
_CREATION = {"zeros", "ones", "empty", "empty_strided", "new_zeros", "new_empty", "new_empty_strided"}
MATMUL_OPS = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm"}
CONV_OPS = {
    "convolution", "_convolution", "cudnn_convolution", "conv1d", "conv2d", "conv3d", "convolution_overrideable",
    "_slow_conv2d_forward", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "mkldnn_convolution", "miopen_convolution",
}  # fmt: skip
ATTENTION_OPS = {
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "_flash_attention_forward", "_efficient_attention_forward",
}  # fmt: skip
ATTENTION_BACKWARD_OPS = {
    "_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward", "_flash_attention_backward", "_efficient_attention_backward",
}  # fmt: skip
# the attention kernels whose q/k/v are (batch, seq, heads, dim) rather than (batch, heads, seq, dim)
_SEQ_FIRST = {"_flash_attention_forward", "_efficient_attention_forward", "_flash_attention_backward",
              "_efficient_attention_backward"}  # fmt: skip
REPLAYED = MATMUL_OPS | CONV_OPS | ATTENTION_OPS | ATTENTION_BACKWARD_OPS | {"convolution_backward"}

# Kineto's "Input type" of a tensor argument -> (torch dtype name, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "float": ("float32", 4),
    "double": ("float64", 8),
    "c10::Half": ("float16", 2),
    "c10::BFloat16": ("bfloat16", 2),
    "c10::Float8_e4m3fn": ("float8_e4m3fn", 1),
    "c10::Float8_e5m2": ("float8_e5m2", 1),
    "c10::Float8_e4m3fnuz": ("float8_e4m3fnuz", 1),
    "c10::Float8_e5m2fnuz": ("float8_e5m2fnuz", 1),
    "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
    "long int": ("int64", 8),
    "long": ("int64", 8),
    "int": ("int32", 4),
    "short int": ("int16", 2),
    "short": ("int16", 2),
    "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "bool": ("bool", 1),
}
_FLOATING = {"float32", "float64", "float16", "bfloat16", "complex64", "complex128"}
#: the "Input type" of a tensor whose dtype the trace does not record (emit_nvtx's ``sizes = [...]`` texts): its
#: dims count for FLOPs, its bytes are unknown
UNKNOWN_DTYPE = "Tensor"


@dataclass(frozen=True)
class Arg:
    """One recorded argument: ``dims`` (a tensor's shape; for a TensorList the shapes of its tensors), ``type``
    (Kineto's "Input type": ``float``, ``c10::BFloat16``, ``Scalar``, ``ScalarList``, ``TensorList``, ``""``),
    ``concrete`` (the value of a scalar argument as text, "Concrete Inputs"; ``""`` for a tensor), ``strides``."""

    dims: tuple[Any, ...]
    type: str
    concrete: str = ""
    strides: tuple[Any, ...] | None = None

    @property
    def dtype(self) -> str | None:
        return DTYPES[self.type][0] if self.type in DTYPES else None

    @property
    def is_tensor(self) -> bool:
        return self.type in DTYPES or self.type == UNKNOWN_DTYPE

    @property
    def numel(self) -> int:
        return math.prod(int(d) for d in self.dims)

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPES[self.type][1]

    def value(self) -> Any:
        """The scalar's value (``[1, 1]``, ``1``, ``False``, ``0.5``; other text as it is), None for no text."""
        try:
            return ast.literal_eval(self.concrete)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return self.concrete or None  # a string argument (padding='same', a reduction name)


@dataclass(frozen=True)
class OpWork:
    """The modelled work of one op: ``flops`` (FLOP; None: see ``flops_source``), ``flops_source`` (whose rule:
    :data:`REPLAY_SOURCE`, ``rooflake:builtin <formula>``, ``rooflake:<rule> x<n>``, ``rooflake:view``, ``none:
    <why>``), ``bytes`` (compulsory bytes, byte; None where the output is unknown), ``bytes_l2`` and ``bytes_dram``
    (DeLTA-style traffic, byte; None without a traffic model, DRAM also without a GPU), ``traffic_model``
    (``delta-gemm`` | ``delta-conv`` | ``flash-attention`` | None), ``dtype`` (of the first floating-point input)."""

    flops: float | None
    flops_source: str
    bytes: int | None = None
    bytes_l2: float | None = None
    bytes_dram: float | None = None
    traffic_model: str | None = None
    dtype: str | None = None


class ShapeError(ValueError):
    """The recorded shapes do not fit the op's formula (wrong rank, a missing argument)."""


def parse_args(dims: Any, types: Any, concrete: Any = None, strides: Any = None) -> tuple[Arg, ...]:
    """The recorded arguments of an op from the trace's ``Input Dims``, ``Input type``, ``Concrete Inputs`` and
    ``Input Strides`` (lists, or their JSON text). Raises :class:`ShapeError` for lists that are not lists of
    dims, or of another length than the types."""
    dims, types = _listed(dims), _listed(types)
    concrete, strides = _listed(concrete), _listed(strides)
    concrete = concrete if isinstance(concrete, list) else []  # (scalar values and strides are optional)
    strides = strides if isinstance(strides, list) else []
    if not isinstance(dims, list) or not isinstance(types, list) or len(dims) != len(types):
        raise ShapeError("Input Dims and Input type are not lists of the same length")
    out = []
    for i, (d, t) in enumerate(zip(dims, types, strict=True)):
        if not isinstance(d, list) or not isinstance(t, str):
            raise ShapeError(f"argument {i}: dims {d!r} / type {t!r} malformed")
        if (t in DTYPES or t == UNKNOWN_DTYPE) and not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in d
        ):
            raise ShapeError(f"argument {i}: tensor dims {d!r} are not non-negative integers")
        c = concrete[i] if i < len(concrete) and isinstance(concrete[i], str) else ""
        s = strides[i] if i < len(strides) and isinstance(strides[i], list) else None
        out.append(Arg(tuple(d), t, c, tuple(s) if s is not None else None))
    return tuple(out)


def _listed(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


def op_work(name: str, args: Sequence[Arg], *, gpu: GpuSpec | None = None, replay: bool = True) -> OpWork:
    """The work of op ``name`` (``aten::addmm`` or ``addmm``) on recorded ``args`` (:func:`parse_args`), by the
    rules of the module docstring. ``replay``: use torch's formulas through a meta-tensor replay where torch is
    installed (else, and where the replay fails, the built-in formulas, which give the same numbers). ``gpu``: the
    GPU whose SM count and L2 size the DRAM traffic model needs. Never raises for odd shapes: FLOPs are then None
    with the reason."""
    op = name.removeprefix("aten::")
    if not name.startswith("aten::") and "::" in name:
        return OpWork(None, f"none: {name} is not an ATen operator (no shape rule)")
    tensors = [a for a in args if a.is_tensor]
    unknown = [
        a.type for a in args if a.dims and not a.is_tensor and a.type not in ("TensorList", "ScalarList")
    ]
    dtype = next((a.dtype for a in tensors if a.dtype in _FLOATING), tensors[0].dtype if tensors else None)
    if unknown and not tensors:
        return OpWork(None, f"none: unknown input types {sorted(set(unknown))} of {name}", dtype=dtype)
    try:
        work = _work(op, args, tensors, gpu, replay)
    except (ShapeError, IndexError, TypeError, ValueError, ZeroDivisionError) as e:
        return OpWork(None, f"none: the recorded shapes do not fit {name}'s formula ({e})", dtype=dtype)
    return OpWork(**{**work.__dict__, "dtype": work.dtype or dtype})


def _work(op: str, args: Sequence[Arg], tensors: list[Arg], gpu: GpuSpec | None, replay: bool) -> OpWork:
    if op in REPLAYED:
        flops, out, source = _formula(op, args, replay)
        if flops is not None:
            b = _compulsory(tensors, out)
            return _with_traffic(op, args, tensors, OpWork(flops, source, b), gpu)
    if op in VIEW_OPS or (op in _DROPOUT and _eval_mode(args)):
        return OpWork(0.0, VIEW_SOURCE, 0)
    if op in REPLAYED:
        return OpWork(
            None,
            f"none: torch's formula for aten::{op} needs torch (pip install 'rooflake[torch]') "
            "and arguments the meta device can run",
        )
    if op in ZERO_FLOP_OPS:
        return OpWork(0.0, "rooflake:data-movement", None if op in _CREATION else _moved(op, tensors, args))
    if not tensors:
        return OpWork(None, f"none: no tensor input recorded for aten::{op} (record_shapes off?)")
    if op in PER_INPUT_FLOPS:
        each, rule = PER_INPUT_FLOPS[op]
        return OpWork(each * tensors[0].numel, f"rooflake:{rule}", None)
    if all(t.dtype is not None for t in tensors) and not any(t.dtype in _FLOATING for t in tensors):
        return OpWork(0.0, "rooflake:integer", None)
    if op in ELEMENTWISE_FLOPS:
        per = ELEMENTWISE_FLOPS[op]
        out = _broadcast([t.dims for t in tensors])
        return OpWork(per * math.prod(out), f"rooflake:elementwise x{per:g}", _compulsory(tensors, out))
    if op.endswith("_backward"):
        out = _broadcast([t.dims for t in tensors])
        per_b = ELEMENTWISE_FLOPS.get(op.removesuffix("_backward"))
        if per_b is None:
            per_b = ELEMENTWISE_FLOPS.get("native_" + op.removesuffix("_backward"))
        if per_b is not None:
            return OpWork(2 * per_b * math.prod(out), f"rooflake:elementwise backward x{2 * per_b:g}")
    return OpWork(None, f"none: no FLOP formula for aten::{op}")


def _eval_mode(args: Sequence[Arg]) -> bool:
    """A dropout's ``train`` argument (its last) is False."""
    return bool(args) and args[-1].concrete == "False"


# c10::ScalarType codes (the "Concrete Inputs" of a cast's dtype argument) -> bytes per element
_SCALAR_TYPE_BYTES = {
    0: 1,
    1: 1,
    2: 2,
    3: 4,
    4: 8,
    5: 2,
    6: 4,
    7: 8,
    8: 4,
    9: 8,
    10: 16,
    11: 1,
    15: 2,
    23: 1,
    24: 1,
}


def _moved(op: str, tensors: list[Arg], args: Sequence[Arg] = ()) -> int | None:
    """Bytes of a copy or cast: its input read and its output written, the output at the cast's target dtype
    (``_to_copy``'s dtype argument, a c10::ScalarType code) where it names one, else at the input's."""
    if not tensors or any(t.type not in DTYPES for t in tensors[:2]):
        return None
    if op == "copy_":
        return sum(t.nbytes for t in tensors[:2])
    if op == "clone":
        return 2 * tensors[0].nbytes
    if op == "_to_copy":
        code = args[1].value() if len(args) > 1 and not args[1].is_tensor else None
        size = _SCALAR_TYPE_BYTES.get(code) if isinstance(code, int) else None
        return tensors[0].nbytes + tensors[0].numel * (size or DTYPES[tensors[0].type][1])
    return None


def _compulsory(tensors: list[Arg], out: tuple[int, ...] | None) -> int | None:
    """Every tensor input once plus the output once, at the first tensor's element size."""
    if out is None or not tensors or any(t.type not in DTYPES for t in tensors):
        return None  # (a dtype the trace does not say: the bytes are unknown)
    return sum(t.nbytes for t in tensors) + math.prod(out) * DTYPES[tensors[0].type][1]


def _broadcast(shapes: list[tuple[Any, ...]]) -> tuple[int, ...]:
    """numpy's broadcast of the shapes; :class:`ShapeError` where they do not broadcast."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        sizes = {int(s[len(s) - rank + i]) for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(sizes) > 1:
            raise ShapeError(f"shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _formula(op: str, args: Sequence[Arg], replay: bool) -> tuple[float | None, tuple[int, ...] | None, str]:
    """(FLOPs, output shape, source) of a GEMM, convolution or attention op: torch's replay, else built-in."""
    if replay:
        got = replayed(op, args)
        if got is not None:
            return got[0], got[1], REPLAY_SOURCE
    if op in MATMUL_OPS:
        return (*_matmul(op, args), f"{BUILTIN} 2*M*N*K")
    if op in CONV_OPS:
        return (*_conv(op, args), f"{BUILTIN} 2*N*K*P*Q*C*R*S/groups")
    if op in ATTENTION_OPS:
        return (*_attention(op, args), f"{BUILTIN} 4*B*H*L*S*D")
    if op in ATTENTION_BACKWARD_OPS:
        return _attention(op, args)[0], None, f"{BUILTIN} 2*B*H*L*S*(3E+2Ev)"
    return None, None, "none"


def _tensors(args: Sequence[Arg]) -> list[tuple[int, ...]]:
    return [tuple(int(d) for d in a.dims) for a in args if a.is_tensor]


def _matmul(op: str, args: Sequence[Arg]) -> tuple[float, tuple[int, ...]]:
    """2·M·N·K per product (torch's mm/addmm/bmm/baddbmm formulas; linear and matmul as they decompose)."""
    t = _tensors(args)
    if op in ("addmm", "baddbmm"):
        t = t[1:3]
    if op == "linear":
        x, w = t[0], t[1]
        if len(w) != 2 or x[-1] != w[1]:
            raise ShapeError(f"input features {x[-1]} and weight {list(w)} do not fit")
        return 2.0 * math.prod(x[:-1]) * x[-1] * w[0], (*x[:-1], w[0])
    a, b = t[0], t[1]
    if len(a) == 1 and len(b) == 1:  # a dot product (matmul of two vectors): torch counts it as no FLOPs
        raise ShapeError("a vector-vector matmul has no GEMM formula")
    a2 = a if len(a) > 1 else (1, *a)
    b2 = b if len(b) > 1 else (*b, 1)
    if a2[-1] != b2[-2]:
        raise ShapeError(f"inner dims {a2[-1]} and {b2[-2]} differ")
    batch = _broadcast([a2[:-2], b2[:-2]]) if len(a2) > 2 or len(b2) > 2 else ()
    m, k, n = a2[-2], a2[-1], b2[-1]
    out = (*batch, *([m] if len(a) > 1 else []), *([n] if len(b) > 1 else []))
    return 2.0 * math.prod(batch) * m * n * k, out


# positions of a convolution's arguments (as the trace records them, None included): stride, padding, dilation,
# groups, transposed (None: by the op's name), output_padding
_CONV_ARGS: dict[str, tuple[int, int, int, int, int | None, int | None]] = {
    **dict.fromkeys(["conv1d", "conv2d", "conv3d"], (3, 4, 5, 6, None, None)),
    **dict.fromkeys(["convolution", "_convolution", "convolution_overrideable"], (3, 4, 5, 8, 6, 7)),
    **dict.fromkeys(["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"], (3, 4, 7, 6, None, 5)),
    "cudnn_convolution": (3, 2, 4, 5, None, None),
    "mkldnn_convolution": (4, 3, 5, 6, None, None),
    "miopen_convolution": (4, 3, 5, 6, None, None),
    "_slow_conv2d_forward": (4, 5, -1, -1, None, None),
}


@dataclass(frozen=True)
class _ConvParams:
    stride: list[int]
    padding: list[int]
    dilation: list[int]
    groups: int
    transposed: bool
    output_padding: list[int]


def _conv_params(op: str, args: Sequence[Arg], spatial: int) -> _ConvParams:
    """The stride, padding, dilation, groups and transposition of a recorded convolution (defaults where the trace
    holds no value: stride 1, padding 0, dilation 1, groups 1). Raises :class:`ShapeError` for a value that is not
    a number or a list of numbers (``padding='same'``)."""
    i_stride, i_pad, i_dil, i_groups, i_trans, i_outpad = _CONV_ARGS[op]

    def at(i: int | None, default: Any) -> Any:
        if i is None or i < 0 or i >= len(args) or args[i].concrete in ("", "None"):
            return default
        return args[i].value()

    def ints(v: Any, default: int) -> list[int]:
        v = [v] if isinstance(v, int) else v
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) for x in v):
            raise ShapeError(f"convolution argument {v!r} is not a list of integers")
        return [int(x) for x in v] * spatial if len(v) == 1 else [int(x) for x in v] or [default] * spatial

    groups = at(i_groups, 1)
    if not isinstance(groups, int) or groups < 1:
        raise ShapeError(f"groups {groups!r} is not a positive integer")
    return _ConvParams(
        stride=ints(at(i_stride, 1), 1), padding=ints(at(i_pad, 0), 0), dilation=ints(at(i_dil, 1), 1),
        groups=groups, transposed=op.startswith("conv_transpose") or at(i_trans, False) is True,
        output_padding=ints(at(i_outpad, 0), 0),
    )  # fmt: skip


def _conv(op: str, args: Sequence[Arg]) -> tuple[float, tuple[int, ...]]:
    """torch's conv_flop_count: 2·N·prod(weight dims)·prod(output spatial) (input spatial when transposed)."""
    t = _tensors(args)
    x, w = t[0], t[1]
    spatial = len(x) - 2
    c = _conv_params(op, args, spatial)
    ks = w[2:]
    if c.transposed:
        sp = [(x[2 + i] - 1) * c.stride[i] - 2 * c.padding[i] + c.dilation[i] * (ks[i] - 1)
              + c.output_padding[i] + 1 for i in range(spatial)]  # fmt: skip
        return 2.0 * x[0] * math.prod(w) * math.prod(x[2:]), (x[0], w[1] * c.groups, *sp)
    sp = [(x[2 + i] + 2 * c.padding[i] - c.dilation[i] * (ks[i] - 1) - 1) // c.stride[i] + 1
          for i in range(spatial)]  # fmt: skip
    if any(s <= 0 for s in sp):
        raise ShapeError(f"output size {sp} is not positive")
    return 2.0 * x[0] * math.prod(w) * math.prod(sp), (x[0], w[0], *sp)


def _attention(op: str, args: Sequence[Arg]) -> tuple[float, tuple[int, ...]]:
    """torch's sdpa_flop_count: 2·B·H·L·S·E (Q·Kᵀ) + 2·B·H·L·S·Ev (P·V), any batch dims before the last two;
    backward (sdpa_backward_flop_count): the scores recomputed and four GEMMs, 2·B·H·L·S·(3·E + 2·Ev)."""
    t = _tensors(args)
    if op in ATTENTION_BACKWARD_OPS:
        t = t[1:]  # grad_out first
    q, k, v = t[0], t[1], t[2]
    if op in _SEQ_FIRST:  # (batch, seq, heads, dim)
        q, k, v = ((s[0], s[2], s[1], s[3]) for s in (q, k, v))
    *batch, seq_q, e = q
    seq_kv, ev = k[-2], v[-1]
    bh = math.prod(batch)
    out = (batch[0], seq_q, batch[1], ev) if op in _SEQ_FIRST else (*batch, seq_q, ev)
    if op in ATTENTION_BACKWARD_OPS:  # the scores recomputed, then four GEMMs of the gradients
        return 2.0 * bh * seq_q * seq_kv * (3 * e + 2 * ev), out
    return 2.0 * bh * seq_q * seq_kv * (e + ev), out


def _with_traffic(op: str, args: Sequence[Arg], tensors: list[Arg], w: OpWork, gpu: GpuSpec | None) -> OpWork:
    """``w`` with the DeLTA-style traffic of a GEMM, convolution or attention forward (None for the rest)."""
    try:
        traffic = _traffic(op, args, gpu)
    except (ShapeError, IndexError, TypeError, ValueError, ZeroDivisionError):
        traffic = None
    if traffic is None:
        return w
    dram = None if traffic.dram is None else float(max(traffic.dram, w.bytes or 0))
    return OpWork(w.flops, w.flops_source, w.bytes, float(traffic.l2), dram, traffic.model)


def _traffic(op: str, args: Sequence[Arg], gpu: GpuSpec | None) -> Traffic | None:
    t = _tensors(args)
    elem = next((DTYPES[a.type][1] for a in args if a.type in DTYPES), None)
    if elem is None:
        return None  # no dtype recorded: no element size for the traffic model
    if op in ATTENTION_OPS:
        q, k = t[0], t[1]
        if op in _SEQ_FIRST:
            q, k = (q[0], q[2], q[1], q[3]), (k[0], k[2], k[1], k[3])
        if len(q) != 4:
            return None
        return attention_traffic(q[0], q[1], q[2], k[2], q[3], elem, gpu)
    if op in MATMUL_OPS:
        if op in ("addmm", "baddbmm"):
            t = t[1:3]
        a, b = t[0], t[1]
        if op == "linear":
            return conv_traffic(gemm_shape(math.prod(a[:-1]), b[0], a[-1]), elem, gpu)
        if len(a) == 3 and len(b) == 3:
            return conv_traffic(gemm_shape(a[1], b[2], a[2], batch=a[0]), elem, gpu)
        if len(b) == 2 and len(a) >= 2:
            return conv_traffic(gemm_shape(math.prod(a[:-1]), b[1], a[-1]), elem, gpu)
        return None
    if op in CONV_OPS and not op.startswith("conv_transpose"):
        return _conv_traffic(op, args, t, elem, gpu)
    return None


def _conv_traffic(
    op: str, args: Sequence[Arg], t: list[tuple[int, ...]], elem: int, gpu: GpuSpec | None
) -> Any:
    x, w = t[0], t[1]
    if len(x) != 4:
        return None
    c = _conv_params(op, args, 2)
    if c.transposed:
        return None  # not an implicit GEMM over these shapes
    shape = ConvShape(
        n=x[0], c=x[1], k=w[0], h=x[2], w=x[3], r=w[2], s=w[3], stride=c.stride[0], pad=c.padding[0],
        groups=c.groups, stride_w=c.stride[1], pad_w=c.padding[1], dilation=c.dilation[0],
        dilation_w=c.dilation[1],
    )  # fmt: skip
    return conv_traffic(shape, elem, gpu)


def catalog_gpu(name: str | None, compute_capability: str | None = None) -> GpuSpec | None:
    """The traffic model's view (SM count, L2 size) of the datasheet catalog's GPU matching a device name as a
    trace writes it (``NVIDIA H100 80GB HBM3``); None when no catalog GPU matches or its row lacks them."""
    from rooflake.schema import datasheets as ds

    key = ds.match(name, compute_capability) if name else None
    if key is None:
        return None
    props = {r["quantity"]: r["value"] for r in ds.numbers().to_pylist() if r["gpu"] == key}
    if "SM_COUNT" not in props or "L2_BYTES" not in props:
        return None
    return GpuSpec(key, int(props["SM_COUNT"]), int(props["L2_BYTES"]))


@functools.lru_cache(maxsize=1)
def _torch() -> Any:
    try:
        import torch
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return None
    return torch, FlopCounterMode


def torch_available() -> bool:
    """True when torch imports (the replay of :func:`replayed` can run)."""
    return _torch() is not None


def replayed(op: str, args: Sequence[Arg]) -> tuple[float, tuple[int, ...] | None] | None:
    """(FLOPs, output shape) of ``aten::<op>`` replayed on meta tensors of the recorded dims, strides and dtypes
    under torch's ``FlopCounterMode`` (PyTorch's own formulas, composites counted as they decompose); None without
    torch, or when the op cannot be rebuilt or run from what the trace recorded (the caller falls back)."""
    return _replay_cached(op, tuple(args))


@functools.lru_cache(maxsize=65536)
def _replay_cached(op: str, args: tuple[Arg, ...]) -> tuple[float, tuple[int, ...] | None] | None:
    found = _torch()
    if found is None:
        return None
    torch, flop_counter_mode = found
    packet = getattr(torch.ops.aten, op, None)
    if packet is None:
        return None
    try:
        values = [_value(torch, a) for a in args]
    except (ValueError, TypeError, RuntimeError):
        return None
    for overload in packet.overloads():
        func = getattr(packet, overload)
        call = _bound(func._schema, values)
        if call is None:
            continue
        try:
            with flop_counter_mode(display=False) as mode:
                out = func(*call[0], **call[1])
        except Exception:  # an overload the arguments do not fit, or one the meta device cannot run
            continue
        flops = float(mode.get_total_flops())
        first = out[0] if isinstance(out, (tuple, list)) else out
        shape = tuple(int(d) for d in first.shape) if isinstance(first, torch.Tensor) else None
        return (flops, shape) if flops > 0 else None
    return None


def _bound(schema: Any, values: list[Any]) -> tuple[list[Any], dict[str, Any]] | None:
    """(positional, keyword) arguments of an overload from the trace's values, which hold every argument in
    schema order (keyword-only ones too); None when their number does not fit the schema."""
    params = schema.arguments
    if len(values) > len(params):
        return None
    positional = [v for p, v in zip(params, values, strict=False) if not p.kwarg_only]
    keywords = {p.name: v for p, v in zip(params, values, strict=False) if p.kwarg_only}
    return positional, keywords


def _value(torch: Any, a: Arg) -> Any:
    """A meta tensor of a tensor argument (its recorded strides where they fit), else the scalar's value."""
    if a.is_tensor:  # (a dtype the trace does not say: float32, which no FLOP formula depends on)
        dtype = getattr(torch, DTYPES.get(a.type, ("float32", 4))[0])
        size = [int(d) for d in a.dims]
        if a.strides is not None and len(a.strides) == len(size):
            return torch.empty_strided(size, [int(s) for s in a.strides], dtype=dtype, device="meta")
        return torch.empty(size, dtype=dtype, device="meta")
    if a.type == "" and not a.dims:
        return None
    return a.value()
