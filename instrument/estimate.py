"""Analytic per-layer estimates of a ``torch.nn.Module``: FLOPs, compulsory bytes, DeLTA-style traffic (modelled).

The model runs once on the ``meta`` device (``torch.func.functional_call`` with meta copies of its parameters and
buffers: no weights are read, nothing is computed, the model itself is never touched), under a
``TorchDispatchMode`` that sees every ATen operator and inside :class:`rooflake.instrument.annotate` itself, whose
ranges go to a recorder instead of NVTX: each op's ``module_path`` is the innermost range open when it runs, so
it is the name an annotated profile of the same model gives the range (:func:`rooflake.instrument.module_paths`,
the one naming function), and an op of a module's backward falls where annotate's backward range puts it. Per op:

- FLOPs: PyTorch's own formulas (``torch.utils.flop_counter``'s registry: mm, addmm, bmm, convolution and its
  backward, scaled-dot-product attention, ...), else ours (the tables of :mod:`rooflake.instrument.shapes`, by
  which a trace's recorded ops are judged too: :data:`ELEMENTWISE_FLOPS`: element-wise arithmetic 1 FLOP
  per output element, normalisations, softmax; :data:`PER_INPUT_FLOPS`: reductions, softmax backward, the
  embedding's weight gradient), else NULL with the reason. Views (:data:`VIEW_OPS` and every op whose schema
  declares an alias: no arithmetic), data movement (:data:`ZERO_FLOP_OPS`) and ops with no floating-point operand
  are 0 FLOPs. Each row says which rule (``flops_source``: ``torch.utils.flop_counter``, ``rooflake:view``,
  ``rooflake:data-movement``, ``rooflake:integer``, ``rooflake:<rule> x<FLOPs per element>``, ``none: …``).
- Compulsory bytes: every tensor input (weights included) and output once at its dtype; 0 for views.
- Traffic (convolutions, matmuls/linears, attention): :mod:`rooflake.instrument.traffic`.

Requires torch (``pip install 'rooflake[torch]'``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rooflake.instrument.annotate import BACKWARD, FORWARD, annotate
from rooflake.instrument.shapes import (
    ELEMENTWISE_FLOPS,
    PER_INPUT_FLOPS,
    TORCH_SOURCE,
    VIEW_OPS,
    ZERO_FLOP_OPS,
)
from rooflake.instrument.traffic import (
    ConvShape,
    GpuSpec,
    Traffic,
    attention_traffic,
    conv_traffic,
    gemm_shape,
)
from rooflake.schema import ESTIMATES, UsageError


class _Ranges(threading.local):
    """An :class:`rooflake.instrument.annotate` emitter that keeps the names of the open ranges (per thread, as NVTX
    push/pop ranges nest) instead of emitting them."""

    def __init__(self) -> None:
        self.stack: list[str] = []

    def push(self, name: str) -> None:
        self.stack.append(name)

    def pop(self) -> None:
        self.stack.pop()

    def innermost(self) -> str:
        """The module path of the innermost open range: ``''`` (the model itself) under ``forward``/``backward``
        or outside every range."""
        top = self.stack[-1] if self.stack else ""
        return "" if top in (FORWARD, BACKWARD) else top


@dataclass
class _Recorder:
    """Rows of the estimates table, filled op by op."""

    ranges: _Ranges
    gpu: GpuSpec | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    inside_attention: bool = False
    in_backward: bool = False

    def attention(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """``func`` (``F.scaled_dot_product_attention``) called, recorded as one fused op (:meth:`add_attention`);
        the ATen ops of its decomposition, and any attention call nested in it, are not recorded. Where the query,
        key or value needs a gradient, the call is one autograd node (:func:`_fused_attention`) whose backward is
        one fused op too (:meth:`add_attention_backward`), not the decomposition's backward."""
        if self.inside_attention:
            return func(*args, **kwargs)
        import torch

        given = dict(zip(("query", "key", "value"), args, strict=False)) | kwargs
        qkv = [given["query"], given["key"], given["value"]]
        rest = {n: v for n, v in kwargs.items() if n not in ("query", "key", "value")}

        def call(q: Any, k: Any, v: Any) -> Any:
            self.inside_attention = True
            try:
                return func(q, k, v, *args[3:], **rest)
            finally:
                self.inside_attention = False

        if torch.is_grad_enabled() and any(t.requires_grad for t in qkv):
            out = _fused_attention(torch, self).apply(*qkv, call)
        else:
            out = call(*qkv)
        self.add_attention(args, kwargs, out)
        return out

    def add_attention_backward(self, q: Any, k: Any, v: Any, out: Any, grad: Any, grads: list) -> None:
        """One row for the backward of a fused attention call: torch's ``sdpa_backward_flop_count`` (the
        FlashAttention backward, which recomputes the scores Q·Kᵀ: five batched GEMMs, 2.5× the forward's FLOPs;
        cuDNN's fused backward on an H100 counts exactly that, tests/test_gpu_h100.py). Its compulsory bytes: Q, K,
        V, the output and its gradient read, the three gradients written; no traffic model (bytes per level NULL)."""

        from torch.utils.flop_counter import sdpa_backward_flop_count

        b, heads, as4 = _per_head(q)
        flops = float(sdpa_backward_flop_count(as4(grad), as4(q), as4(k), as4(v)))
        row = self._row(
            "aten.scaled_dot_product_attention_backward",
            [q, k, v, out, grad],
            grads,
            flops,
            TORCH_SOURCE,
            False,
            None,
        )
        self.rows.append(row)

    def add_attention(self, args: tuple, kwargs: dict, out: Any) -> None:
        """One row for ``F.scaled_dot_product_attention`` as a fused (FlashAttention-style) op, whatever ATen
        decomposition the meta device ran (its math path: bmm, softmax, bmm)."""

        from torch.utils.flop_counter import sdpa_flop_count

        # query, key, value by position or by name; shapes (..., L, E), (..., S, E), (..., S, Ev): any batch dims
        # (3-D inputs, or a key/value with fewer heads under enable_gqa), counted per query head
        given = dict(zip(("query", "key", "value"), args, strict=False)) | kwargs
        q, k, v = given["query"], given["key"], given["value"]
        b, heads, as4 = _per_head(q)
        flops = float(sdpa_flop_count(as4(q), as4(k), as4(v)))
        n_q, d = q.shape[-2:]
        traffic = attention_traffic(b, heads, n_q, k.shape[-2], d, int(q.element_size()), self.gpu)
        self.rows.append(
            self._row(
                "aten.scaled_dot_product_attention", [q, k, v], [out], flops, TORCH_SOURCE, False, traffic
            )
        )

    def add(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        import torch
        from torch.utils._pytree import tree_flatten
        from torch.utils.flop_counter import flop_registry

        if self.inside_attention:
            return
        packet = func.overloadpacket
        name = packet.__name__
        ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        outs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        view = _is_view(func) or name in VIEW_OPS
        flops, source = _flops(packet, name, args, kwargs, out, ins, outs, view, flop_registry)
        traffic = _traffic(name, args, ins, outs, self.gpu)
        self.rows.append(self._row(f"aten.{name}", ins, outs, flops, source, view, traffic))

    def _row(
        self,
        op: str,
        ins: list,
        outs: list,
        flops: float | None,
        source: str,
        view: bool,
        traffic: Traffic | None,
    ) -> dict[str, Any]:
        floating = [t for t in ins if t.is_floating_point()] or ins
        compulsory = 0 if view else sum(_nbytes(t) for t in _unique(ins + outs))
        return {
            "op_id": len(self.rows),
            "module_path": self.ranges.innermost(),
            "phase": "backward" if self.in_backward else "forward",
            "op": op,
            "dtype": str(floating[0].dtype).removeprefix("torch.") if floating else None,
            "input_shapes": [_shape(t) for t in ins],
            "output_shapes": [_shape(t) for t in outs],
            "flops": flops,
            "flops_source": source,
            "bytes_compulsory": compulsory,
            "bytes_l1": None if traffic is None else float(traffic.l1),
            "bytes_l2": None if traffic is None else float(traffic.l2),
            # (never below the op's compulsory bytes: the traffic models leave out a bias)
            "bytes_dram": None
            if traffic is None or traffic.dram is None
            else float(max(traffic.dram, compulsory)),
            "traffic_model": None if traffic is None else traffic.model,
            "assumptions": None if traffic is None else traffic.assumptions,
        }


def _per_head(q: Any) -> tuple[int, int, Any]:
    """(batch, query heads, as4) of an attention call's query of shape (..., L, E): any batch dims (3-D inputs
    are one head), and ``as4(t)`` giving a query, key, value or gradient the 4-D (B, H, rows, cols) shape torch's
    flop counter formulas take."""
    import math

    *batch, _, _ = q.shape
    heads = batch[-1] if batch else 1
    b = math.prod(batch[:-1])
    return b, heads, lambda t: (b, heads, t.shape[-2], t.shape[-1])


def _fused_attention(torch: Any, rec: _Recorder) -> Any:
    """An autograd Function around one attention call on meta tensors: forward runs ``call(q, k, v)`` (the ATen
    decomposition, unrecorded), backward records one fused op and returns empty gradients of the inputs' shapes
    (meta tensors: nothing is computed either way). A mask that needs a gradient gets none."""

    class FusedAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, q: Any, k: Any, v: Any, call: Any) -> Any:
            out = call(q, k, v)
            ctx.save_for_backward(q, k, v, out)
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            q, k, v, out = ctx.saved_tensors
            rec.inside_attention = True  # the gradients' allocations are not ops of the model
            try:
                grads = [
                    torch.empty_like(t) if need else None
                    for t, need in zip((q, k, v), ctx.needs_input_grad[:3], strict=True)
                ]
            finally:
                rec.inside_attention = False
            rec.add_attention_backward(q, k, v, out, grad, [g for g in grads if g is not None])
            return (*grads, None)

    return FusedAttention


def _is_view(func: Any) -> bool:
    """True when the op returns an alias of an input without writing it (view, t, expand, detach, ...)."""
    rets = func._schema.returns
    return bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


def _flops(
    packet: Any,
    name: str,
    args: tuple,
    kwargs: dict,
    out: Any,
    ins: list,
    outs: list,
    view: bool,
    registry: dict,
) -> tuple[float | None, str]:
    """(FLOPs, ``flops_source``) of one op: torch's formula, else ours (views and data movement 0, per input or
    output element rules), else (None, the reason)."""
    if packet in registry:
        return float(registry[packet](*args, **kwargs, out_val=out)), TORCH_SOURCE
    if view:
        return 0.0, "rooflake:view"
    if name in ZERO_FLOP_OPS:
        return 0.0, "rooflake:data-movement"
    if name in PER_INPUT_FLOPS and args and hasattr(args[0], "numel"):
        each, rule = PER_INPUT_FLOPS[name]
        return each * args[0].numel(), f"rooflake:{rule}"
    # no floating-point operand: index arithmetic (arange, masks, counters) is no FLOP
    if outs and not any(t.is_floating_point() or t.is_complex() for t in [*ins, *outs]):
        return 0.0, "rooflake:integer"
    if name in ELEMENTWISE_FLOPS and outs:
        return ELEMENTWISE_FLOPS[name] * outs[0].numel(), f"rooflake:elementwise x{ELEMENTWISE_FLOPS[name]:g}"
    if name.endswith("_backward") and outs:
        base = name.removesuffix("_backward")
        per = ELEMENTWISE_FLOPS.get(base, ELEMENTWISE_FLOPS.get(f"native_{base}"))
        if per is not None:
            return 2 * per * outs[0].numel(), f"rooflake:elementwise backward x{2 * per:g}"
    return None, f"none: no FLOP formula for aten.{name}"


def _shape(t: Any) -> str:
    return "x".join(str(d) for d in t.shape) or "scalar"


def _nbytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def _unique(tensors: list) -> list:
    seen: set[int] = set()
    out = []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _traffic(name: str, args: tuple, ins: list, outs: list, gpu: GpuSpec | None) -> Traffic | None:
    """DeLTA-style traffic of the GEMM-shaped ops; None for the rest."""
    if not outs or not ins:
        return None
    b = int(ins[0].element_size())
    if name == "convolution" and len(ins) >= 2 and ins[0].dim() == 4:
        x, w = ins[0], ins[1]
        stride, padding, dilation, transposed, groups = args[3], args[4], args[5], args[6], args[8]
        if transposed:  # (not an implicit GEMM over these shapes: not modelled)
            return None
        shape = ConvShape(
            n=x.shape[0], c=x.shape[1], k=w.shape[0], h=x.shape[2], w=x.shape[3], r=w.shape[2], s=w.shape[3],
            stride=int(stride[0]), pad=int(padding[0]), groups=int(groups), stride_w=int(stride[-1]),
            pad_w=int(padding[-1]), dilation=int(dilation[0]), dilation_w=int(dilation[-1]),
        )  # fmt: skip
        return conv_traffic(shape, b, gpu)
    if name in ("mm", "addmm", "bmm", "baddbmm"):
        a, bm = (ins[-2], ins[-1])
        m, k, n = a.shape[-2], a.shape[-1], bm.shape[-1]
        if a.dim() == 3 and bm.dim() == 3 and bm.stride(0) != 0:  # a B per batch: independent GEMMs
            return conv_traffic(gemm_shape(m, n, k, batch=a.shape[0]), b, gpu)
        batch = a.shape[0] if a.dim() == 3 else 1  # (one B shared: a weight expanded over the batch)
        return conv_traffic(gemm_shape(batch * m, n, k), b, gpu)
    if name.startswith("_scaled_dot_product") and "backward" not in name and ins[0].dim() == 4:
        q, k = ins[0], ins[1]
        return attention_traffic(q.shape[0], q.shape[1], q.shape[2], k.shape[2], q.shape[3], b, gpu)
    return None


def estimate_rows(
    model: Any,
    example_inputs: Sequence[Any] | Any,
    *,
    dtype: Any = None,
    training: bool = False,
    gpu: GpuSpec | None = None,
) -> list[dict[str, Any]]:
    """Trace ``model`` on the meta device and return one dict per ATen op (the columns of ``ESTIMATES`` less
    ``run_id``). ``training``: the model in train mode and also the backward of ``sum(outputs)``; else in eval
    mode (BatchNorm on its running statistics, dropout off), each module's mode restored after. Every call of
    ``F.scaled_dot_product_attention`` (the model's own, or nn.MultiheadAttention's) is one fused op, its backward
    another (FlashAttention's). Raises :class:`UsageError` when the model cannot run on meta tensors (which op)."""
    import torch
    import torch.nn.functional as F
    from torch.func import functional_call
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    meta_in = tuple(_to_meta(t, dtype, grad=False) for t in inputs)
    state = {n: _to_meta(p, dtype, grad=training and p.requires_grad) for n, p in model.named_parameters()}
    state |= {n: _to_meta(b, None, grad=False) for n, b in model.named_buffers()}

    rec = _Recorder(_Ranges(), gpu)
    sdpa = F.scaled_dot_product_attention

    class Fused(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            return rec.attention(func, args, kwargs) if func is sdpa else func(*args, **kwargs)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            rec.add(func, args, kwargs, out)
            return out

    # the mode estimated: inference in eval mode (BatchNorm on its running statistics, no dropout), as the model is
    # run for inference; each module's own mode given back after
    modes = [(m, m.training) for m in model.modules()]
    model.train(training)
    # the mode cannot see a call made inside a function it was handed (nn.MultiheadAttention's
    # F.multi_head_attention_forward calls F.scaled_dot_product_attention): F's own name is wrapped too, meanwhile
    F.scaled_dot_product_attention = lambda *a, **k: rec.attention(sdpa, a, k)
    try:
        with annotate(model, backward=training, emitter=rec.ranges), Mode(), Fused():
            out = functional_call(model, state, meta_in)
            if training:
                _backward(out, torch, rec)
    except (RuntimeError, NotImplementedError, TypeError) as e:
        raise UsageError(
            f"the model could not run on meta tensors: {' '.join(str(e).split())[:300]}"
        ) from None
    finally:
        F.scaled_dot_product_attention = sdpa
        for m, mode in modes:
            m.training = mode
    return rec.rows


def _to_meta(t: Any, dtype: Any, *, grad: bool) -> Any:
    import torch

    if not isinstance(t, torch.Tensor):
        return t
    target = dtype if dtype is not None and t.is_floating_point() else t.dtype
    return torch.empty(t.shape, dtype=target, device="meta").requires_grad_(grad)


def _backward(out: Any, torch: Any, rec: _Recorder) -> None:
    """The backward of ``sum(outputs)``: the loss's ops are forward ops of the model itself (path ``''``), every
    op from ``.backward()`` on is a backward op."""
    from torch.utils._pytree import tree_flatten

    leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    if not leaves:
        raise UsageError("training=True but no output of the model requires grad")
    loss = sum(t.sum() for t in leaves)
    rec.in_backward = True
    loss.backward()  # type: ignore[union-attr]


def estimate(
    model: Any,
    example_inputs: Sequence[Any] | Any,
    *,
    run_id: str = "",
    dtype: Any = None,
    training: bool = False,
    gpu: GpuSpec | None = None,
) -> Any:  # pyarrow.Table
    """The ``estimates`` table of ``model`` on ``example_inputs`` (see :data:`rooflake.schema.ESTIMATES` for the
    columns and units): one row per ATen op with its module path (the names ``annotate`` pushes), phase, FLOPs
    (``flops_source`` says whose formula), compulsory bytes and, for convolutions, matmuls and attention,
    DeLTA-style modelled traffic per level (:mod:`rooflake.instrument.traffic`). Every number is modelled.

    Checks (tests/test_estimate.py): conv FLOPs = 2·N·K·P·Q·C·R·S / groups; linear 2·B·in·out; LSTM
    8·B·H·(I+H)·T; attention 4·B·H·N²·D; training = 3 × forward for conv and linear.
    Raises :class:`UsageError` if the model cannot run on meta tensors."""
    import pyarrow as pa

    rows = estimate_rows(model, example_inputs, dtype=dtype, training=training, gpu=gpu)
    for r in rows:
        r["run_id"] = run_id
    return pa.Table.from_pylist(rows, schema=ESTIMATES)


def per_module(rows: list[dict[str, Any]], depth: int | None = None) -> dict[tuple[str, str], float]:
    """Sum of FLOPs per (module path cut to ``depth`` components, phase); NULL FLOPs count as 0 here."""
    out: dict[tuple[str, str], float] = {}
    for r in rows:
        path = r["module_path"]
        if depth is not None:
            path = ".".join(path.split(".")[:depth])
        key = (path, r["phase"])
        out[key] = out.get(key, 0.0) + (r["flops"] or 0.0)
    return out


def conv_flops(n: int, k: int, p: int, q: int, c: int, r: int, s: int, groups: int = 1) -> int:
    """2·N·K·P·Q·C·R·S / groups: the textbook count (one multiply and one add per MAC)."""
    return 2 * n * k * p * q * c * r * s // groups


__all__: list[str] = ["estimate", "estimate_rows", "per_module", "conv_flops", "GpuSpec"]
