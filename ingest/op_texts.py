"""The shapes PyTorch writes into NVTX range texts, for the ``ops`` table of an Nsight Systems trace.

Three forms (the raw text is ``ranges.text``):

- ``torch.autograd.profiler.emit_nvtx(record_shapes=True)`` and ``nsys --pytorch=autograd-shapes-nvtx``:
  ``aten::addmm, seq = 12, op_id = 40, sizes = [[64], [32, 128], [128, 64], [], []], input_op_ids = [...]``
  (PyTorch's ``getNvtxStr``: the op, its sequence number and op id where known, then the dims of each input, no
  dtypes: the FLOPs of GEMMs, convolutions and attention follow, the bytes do not).
- PyProf / DLProf dicts: ``{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': [{'name': '', 'type':
  'tensor', 'shape': (32, 3, 32, 32), 'dtype': 'float32'}, {'name': 'stride', 'type': 'int', 'value': 1}, ...]}``
  (dims and dtypes of the tensors, values of the scalars).
- A text without shapes (``aten::mm, op_id = 123``): an op whose FLOPs are NULL, "no shapes recorded".

A text that merely looks like one of these (a dict without ``op``, sizes that are not lists of integers) is not
an op's shapes: the op, if it is one, gets NULL FLOPs with the reason; nothing here raises.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from rooflake.ingest.ops import Recorded, with_ops
from rooflake.schema.duck import DuckTable

_SIZES = re.compile(r",\s*sizes\s*=\s*(\[.*?\])(?:,\s*input_op_ids\s*=.*)?\s*$", re.S)
# PyProf's dtype names -> Kineto's "Input type" names (the rules read those)
_KINETO_TYPES = {
    "float32": "float", "float": "float", "float64": "double", "double": "double", "float16": "c10::Half",
    "half": "c10::Half", "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
    "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
}  # fmt: skip
UNKNOWN_DTYPE = "Tensor"  # a tensor whose dtype the text does not say (emit_nvtx's sizes)
_MAX_TEXT = 1 << 16  # longer texts are not parsed as shapes
#: a DuckDB filter keeping the NVTX texts that may carry shapes (has_shapes decides), so that an export without
#: any is not read into Python
CANDIDATE_FILTER = (
    "(starts_with(text, 'aten::') AND contains(text, ', sizes = ')) "
    "OR (starts_with(text, '{') AND contains(text, '''op'''))"
)


def _dict(text: str) -> dict[str, Any] | None:
    if not (text.startswith("{") and "'op'" in text) or len(text) > _MAX_TEXT:
        return None
    try:
        d = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return d if isinstance(d, dict) and isinstance(d.get("op"), str) else None


def is_op(row: dict[str, Any], args: dict[str, Any]) -> bool:
    """An NVTX range is a PyTorch op when its name is an ATen op (``aten::…``) or its text a PyProf dict."""
    name, text = str(row.get("name") or ""), str(row.get("text") or "")
    return name.startswith("aten::") or _dict(text) is not None


def has_shapes(texts: list[str | None]) -> bool:
    """Whether any of the NVTX ``texts`` carries shapes in one of the module docstring's forms."""
    return any(t and ((t.startswith("aten::") and ", sizes = " in t) or _dict(t) is not None) for t in texts)


def recorded(node: Any) -> Recorded | None:
    """The shapes an op's NVTX text carries (:class:`rooflake.ingest.ops.Recorded`: dims, Kineto-style types,
    scalar values; ``op``: the ATen name its rule has), or None when it carries none."""
    text = str(node.row.get("text") or "")
    d = _dict(text)
    if d is not None:
        return _pyprof(d)
    m = _SIZES.search(text) if len(text) <= _MAX_TEXT else None
    if m is None:
        return None
    try:
        dims = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return Recorded(m.group(1), None)
    if not isinstance(dims, list):
        return Recorded(m.group(1), None)
    types = [UNKNOWN_DTYPE if isinstance(x, list) and x else "" for x in dims]
    return Recorded(dims, types, ["" for _ in dims])


def _pyprof(d: dict[str, Any]) -> Recorded | None:
    """A PyProf/DLProf dict's args as Kineto-style lists, its op as the ATen name (``conv2d`` -> ``aten::conv2d``);
    None when its ``args`` is not a list (no shapes)."""
    if not isinstance(d.get("args"), list):
        return None
    dims: list[Any] = []
    types: list[Any] = []
    concrete: list[Any] = []
    for a in d["args"]:
        if not isinstance(a, dict):
            dims.append(None)
            types.append(None)
            concrete.append("")
            continue
        if a.get("type") == "tensor":
            shape = a.get("shape")
            dims.append(list(shape) if isinstance(shape, (tuple, list)) else shape)
            types.append(_KINETO_TYPES.get(str(a.get("dtype")), str(a.get("dtype"))))
            concrete.append("")
        else:
            dims.append([])
            types.append("Scalar")
            concrete.append(repr(a.get("value")) if "value" in a else "")
    return Recorded(dims, types, concrete, op=f"aten::{d['op']}")


def with_nsys_ops(out: dict[str, Any], run_id: str) -> dict[str, Any]:
    """An nsys export's tables with the ``ops`` table where some NVTX text carries PyTorch shapes; as they are
    otherwise. The texts that may carry them are found in DuckDB first (:data:`CANDIDATE_FILTER`), so that an
    export of millions of ranges without any is not read into Python."""
    ranges = out.get("ranges")
    if ranges is None:
        return out
    if isinstance(ranges, DuckTable):
        rel = ranges.con.sql(ranges.select).project("text").filter(CANDIDATE_FILTER)
        texts = [t for (t,) in rel.fetchall()]
    else:
        texts = ranges.column("text").to_pylist()
    if not has_shapes(texts):
        return out
    return with_ops(out, run_id, is_op=is_op, recorded=recorded)
