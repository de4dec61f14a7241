"""NVTX range names: what a layer is called, from the raw NVTX text (the raw text is always kept beside it).

Rules (mirrored in ``ingest/nsys/macros.sql``: range_name; one test checks both against each other on the fixtures):
- PyTorch ``--pytorch=autograd-nvtx`` / ``emit_nvtx``: ``aten::mm, op_id = 123``, ``aten::_convolution, seq = 0``,
  ``..., sizes = [[..]]`` -> the op name before the first ``, <key> = ``.
- PyProf / DLProf markers (Python dict text): ``{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': ...}`` ->
  ``torch.nn.functional.conv2d``; ``{'traceMarker': [...], 'funcStack': '/<module>/.../uniform_'}`` -> the last
  frame of funcStack (``uniform_``).
- Anything else: the text itself (names may contain ``/``: ``nvtx_stack`` keeps them whole).
"""

from __future__ import annotations

import re

_PYTORCH_KEYS = (", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = ")
_PYPROF_OP = re.compile(r"^\{'mod': '([^']*)', 'op': '([^']*)'")
_PYPROF_STACK = re.compile(r"'funcStack': '[^']*/([^'/]*)'")


def range_name(text: str | None) -> str | None:
    """The grouping name of an NVTX range text (see the module docstring)."""
    if text is None:
        return None
    if " = " in text:
        cut = [i for i in (text.find(k) for k in _PYTORCH_KEYS) if i >= 0]
        if cut:
            return text[: min(cut)]
    if text.startswith("{'"):
        if m := _PYPROF_OP.match(text):
            return f"{m.group(1)}.{m.group(2)}"
        if m := _PYPROF_STACK.search(text):
            return m.group(1)
    return text
