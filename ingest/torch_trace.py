"""Reader of PyTorch profiler traces: the Chrome-trace JSON that ``torch.profiler`` (Kineto) exports.

``prof.export_chrome_trace("t.json")`` and ``tensorboard_trace_handler`` write one JSON object (``.json``, or
``.json.gz`` gzip-compressed) whose ``traceEvents`` list holds complete events (``"ph": "X"``) by category:

- ``kernel`` (older Kineto: ``Kernel``): a GPU kernel: ``ts``/``dur`` (µs with ns decimals), ``args``: ``device``,
  ``context``, ``stream``, ``correlation``, ``External id``, ``grid``, ``block``, ``registers per thread``, ``shared
  memory`` (static + dynamic bytes per block), ``blocks per SM``, ``warps per SM``, ``est. achieved occupancy %``
  -> one ``kernels`` row each; the numeric launch figures also as ``metrics`` rows, named verbatim.
- ``gpu_memcpy`` / ``gpu_memset``: GPU copies and sets (``args.bytes``) -> ``memops``.
- ``cuda_runtime`` / ``cuda_driver`` (HIP runtime calls too): the CPU-side launch; ``args.correlation`` equals the
  GPU op's (the ``ac2g`` flow events carry the same id and are used where a GPU op lacks the argument).
- ``cpu_op`` (aten operators; with ``record_shapes`` their ``Input Dims``, ``Input type``, ``Input Strides``,
  ``Concrete Inputs``), ``user_annotation`` (``record_function`` scopes, ``ProfilerStep#N``) and the module scopes
  of ``with_modules``/``with_stack`` (``python_function`` events named ``nn.Module: <Class>_<n>``) -> ``ranges``,
  as NVTX-like push/pop ranges of domain ``torch`` nested per thread by time. Other ``python_function`` events
  (every Python frame of ``with_stack``) and the GPU copies of annotations (``gpu_user_annotation``) are left out.

A GPU op's NVTX stack is the stack of ranges open on the launching thread when its runtime call began (the
launch found by correlation id; ``attribution = 'push_pop'``, or ``'no_range_open'``); without a launch row, the
CPU op whose ``External id`` the GPU op carries, with that op's own enclosing ranges (``'external_id'``); else
``'no_launch_row'``.

Times: Kineto writes ``ts`` in µs relative to ``baseTimeNanoseconds`` (older traces: µs since the epoch, no
base); ``start_ns = baseTimeNanoseconds + ts x 1000``, parsed as decimals so that ns are exact. A trace holds no
hardware counters: FLOP and byte columns are NULL with that reason in ``provenance``.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooflake.ingest.flags import flag_summary
from rooflake.ingest.gc_paused import gc_paused
from rooflake.ingest.messages import shown
from rooflake.ingest.ranks import trace_rank
from rooflake.schema import COVERAGE, KERNELS, MEMOPS, METRICS, RANGES, InputError

FORMAT = "torch-trace"
DOMAIN = "torch"
MODULE_PREFIX = "nn.Module: "
NO_COUNTERS = (
    "NULL: a torch.profiler trace records durations, not hardware counters (profile with ncu for them)"
)
_NO_COUNTERS_SHORT = "NULL: no counters in a torch.profiler trace"
SNIFF_BYTES = 1 << 20  # decompressed bytes searched for the "traceEvents" key
_GZIP_MAGIC = b"\x1f\x8b"
_TRACE_KEY = re.compile(rb'^(?:\xef\xbb\xbf)?\s*[{\[].*?"traceEvents"\s*:', re.S)

# Kineto categories (lower-cased; older traces wrote Kernel, Memcpy, Memset, Runtime, Operator)
_KERNEL = {"kernel"}
_MEMCPY = {"gpu_memcpy", "memcpy"}
_MEMSET = {"gpu_memset", "memset"}
_LAUNCH = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
_RANGE = {"cpu_op", "operator", "user_annotation"}
_PYTHON = "python_function"
# kernel args kept as metrics rows: name -> unit
_KERNEL_METRICS = {
    "registers per thread": "register/thread",
    "shared memory": "byte",
    "blocks per SM": "block/SM",
    "warps per SM": "warp/SM",
    "est. achieved occupancy %": "%",
}
# CUPTI_ACTIVITY_MEMCPY_KIND of the direction in Kineto's copy names ("Memcpy HtoD (Pageable -> Device)")
_COPY_KINDS = {
    "HtoD": 1,
    "DtoH": 2,
    "HtoA": 3,
    "AtoH": 4,
    "AtoA": 5,
    "AtoD": 6,
    "DtoA": 7,
    "DtoD": 8,
    "HtoH": 9,
}
_COPY_KINDS["PtoP"] = 10
_NULL = msgspec.Raw(b"null")
# the columns of the GPU-op tables, in the order their values are made
_COMMON = ("start_ns", "end_ns", "duration_ns", "device_id", "context_id", "stream_id")
_LINK = (
    "correlation_id", "process_id", "launch_thread", "launch_start_ns", "launch_api", "attribution", "nvtx_stack",
    "nvtx_domain", "nvtx_path",
)  # fmt: skip
_KERNEL_COLS = (
    "kernel_id", *_COMMON, "name", "short_name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
    "grid_size", "block_size", "registers_per_thread", "gpu_name", "compute_capability", "provenance", "flags", *_LINK,
)  # fmt: skip
_MEMOP_COLS = ("op_id", *_COMMON, "kind", "copy_kind", "bytes", "flags", *_LINK)
_METRIC_COLS = ("kernel_id", "metric_name", "unit", "kind", "value_double", "value_string", "value_uint64")


def sniff(path: str | Path) -> str | None:
    """What a file's first :data:`SNIFF_BYTES` (decompressed when gzip) say: ``'torch-trace'`` for a JSON object
    with a ``traceEvents`` key, ``'json'`` for other JSON-looking text (an ERT ``roofline.json`` among them),
    ``'gzip-cut'`` for gzip data that ends inside its compressed stream before any of that shows (a ``.json.gz``
    cut short: the file was read whole), None otherwise. Reads at most that much; never raises (unreadable bytes
    give None)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(SNIFF_BYTES)
        if raw.startswith(_GZIP_MAGIC):
            gz = zlib.decompressobj(wbits=31)
            text = gz.decompress(raw, SNIFF_BYTES)
            if not (gz.eof or gz.unconsumed_tail or _TRACE_KEY.match(text)) and len(raw) < SNIFF_BYTES:
                return "gzip-cut"
            raw = text
    except (OSError, zlib.error):
        return None
    if _TRACE_KEY.match(raw):
        return FORMAT
    return "json" if raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[") else None


def short_name(name: str) -> str:
    """Function base name of a demangled kernel name, as ncu's ``NameBase_FUNCTION`` gives it:
    ``void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`` -> ``vectorized_elementwise_kernel``;
    names that are not C++ signatures (``triton_poi_fused_0``, ``ampere_sgemm_128x64_tn``) are returned as given."""
    s = name.strip()
    if s.endswith(" const"):
        s = s[: -len(" const")]
    if s.endswith(")"):
        s = s[: _opening(s, len(s) - 1, "(", ")")]
    if s.endswith(">"):
        s = s[: _opening(s, len(s) - 1, "<", ">")]
    s = s.rstrip()
    base = s.rsplit("::", 1)[-1] if "::" in s else s
    base = base.rsplit(" ", 1)[-1]
    return base or name


def _opening(s: str, close_at: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket that opens the one at ``close_at`` (0 when unbalanced)."""
    depth = 0
    for i in range(close_at, -1, -1):
        if s[i] == close_ch:
            depth += 1
        elif s[i] == open_ch:
            depth -= 1
            if depth == 0:
                return i
    return 0


class _Event(msgspec.Struct, gc=False):
    """The fields of one trace event that the reader looks at (defaults as a missing key reads today); ``args``
    stays undecoded JSON until the event is kept. Every value is typed ``Any``: a trace's oddities (a string
    ``ts``, a null ``name``) are handled as before, not refused by the decoder."""

    ph: Any = None
    cat: Any = ""
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: msgspec.Raw = _NULL


# top-level keys of a Kineto trace kept beside its events (the rest are not read)
_META_KEYS = (
    "schemaVersion", "baseTimeNanoseconds", "deviceProperties", "distributedInfo", "host_name",
    "cuda_runtime_version", "cuda_driver_version", "cupti_version", "hip_runtime_version", "roctracer_version",
    "displayTimeUnit", "traceName", "trace_id", "record_shapes", "with_stack", "with_modules", "with_flops",
    "profile_memory",
)  # fmt: skip
_Trace: Any = msgspec.defstruct(
    "_Trace",
    [("traceEvents", list[msgspec.Raw]), *((k, Any, msgspec.UNSET) for k in _META_KEYS)],
    gc=False,
)
_TRACE = msgspec.json.Decoder(_Trace, float_hook=Decimal)  # events as raw JSON, the other keys as json.loads
_EVENT = msgspec.json.Decoder(_Event)  # numbers as int / float: exact ns below _EXACT_US (see _ns)
_EVENT_EXACT = msgspec.json.Decoder(_Event, float_hook=Decimal)  # for the events with larger float times
_ARGS = msgspec.json.Decoder(
    float_hook=Decimal
)  # an event's args, numbers as json.loads(parse_float=Decimal)
# |µs| below 2**42 (~51 days): a float holding a 3-decimal value, times 1000, rounds to its exact ns
_EXACT_US = float(2**42)
_RAWS = msgspec.json.Decoder(list[msgspec.Raw])
_BLOCK = 1 << 16  # ranges whose args texts are made at once


def _read_bytes(path: Path) -> bytes | bytearray:
    """The file's bytes, gunzipped when it starts with the gzip magic (streamed into one growing buffer)."""
    with open(path, "rb") as f:
        if f.read(2) != _GZIP_MAGIC:
            f.seek(0)
            return f.read()
    buf = bytearray()
    with gzip.open(path, "rb") as g:
        while chunk := g.read(1 << 24):
            buf += chunk
    return buf


def _load(path: Path) -> tuple[dict[str, Any], _Events]:
    """The trace's top-level keys (numbers with a fraction as :class:`Decimal`) and its events by role.

    The events are decoded one by one from the raw JSON (msgspec): only the fields the reader uses become Python
    objects, and only for the events it keeps. JSON that msgspec refuses (NaN, numbers past a double, a non-UTF-8
    encoding, an event that is not an object, invalid or truncated text) is read again by the standard library as
    before, so that its verdict and message stay those of ``json.loads``.

    Raises :class:`InputError` for unreadable, truncated or non-JSON bytes and for JSON that is not a trace."""
    try:
        data = _read_bytes(path)
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise InputError(
            f"{shown(path)}: truncated or corrupt gzip data ({e}); re-export the torch.profiler trace"
        ) from e
    except OSError as e:
        raise InputError(f"{shown(path)}: cannot read ({e.strerror or e})") from e
    try:
        trace = _TRACE.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _load_slow(path, data)
    meta = {k: v for k in _META_KEYS if (v := getattr(trace, k)) is not msgspec.UNSET}
    raws, trace.traceEvents = trace.traceEvents, []
    del data  # the file's bytes now live as long as the raw events, dropped as they are read
    try:
        return meta, _events(meta, _decoded(raws))
    except (
        msgspec.DecodeError,
        msgspec.ValidationError,
    ):  # (an event msgspec refuses: the file is read again)
        return _load_slow(path, _read_bytes(path))


def _load_slow(path: Path, data: bytes | bytearray) -> tuple[dict[str, Any], _Events]:
    """:func:`_load` by the standard library."""
    doc = _load_stdlib(path, data)
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    return meta, _events(meta, _from_dicts(doc["traceEvents"]))


def _load_stdlib(path: Path, data: bytes | bytearray) -> dict[str, Any]:
    """``json.loads`` of the whole trace, with the reader's messages for what it refuses."""
    try:
        doc = json.loads(data, parse_float=Decimal)
    except UnicodeDecodeError as e:
        raise InputError(
            f"{shown(path)}: not UTF-8 JSON text ({e.reason}): not a torch.profiler trace"
        ) from e
    except json.JSONDecodeError as e:
        raise InputError(
            f"{shown(path)}: invalid JSON at line {e.lineno} column {e.colno} ({e.msg}): the torch.profiler trace is "
            "truncated or damaged (a profiler killed while writing leaves it so); re-export it"
        ) from e
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise InputError(
            f'{shown(path)}: JSON but not a torch.profiler trace (no top-level "traceEvents" list); export one with '
            "prof.export_chrome_trace(...) or torch.profiler.tensorboard_trace_handler"
        )
    return doc


def _decoded(raws: list[Any]) -> Iterator[_Event]:
    """The events, decoded one at a time; an event whose ``ts`` or ``dur`` is a float too large for exact ns
    (µs since the epoch with decimals) is decoded again with those numbers as :class:`Decimal`."""
    decode, exact, lim = _EVENT.decode, _EVENT_EXACT.decode, _EXACT_US
    for i in range(0, len(raws), _BLOCK):  # (the list is emptied as it is read: the events' bytes can go)
        block = raws[i : i + _BLOCK]
        raws[i : i + _BLOCK] = [None] * len(block)
        for raw in block:
            ev = decode(raw)
            ts, dur = ev.ts, ev.dur
            if (type(ts) is float and not -lim < ts < lim) or (type(dur) is float and not -lim < dur < lim):
                ev = exact(raw)
            yield ev


def _from_dicts(items: list[Any]) -> Iterator[_Event]:
    """The events of a trace read by ``json.loads``, as :class:`_Event` (``args`` the decoded value)."""
    for ev in items:
        if isinstance(ev, dict):
            fields = {k: ev[k] for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id") if k in ev}
            yield _Event(**fields, args=ev.get("args"))  # type: ignore[arg-type]  # (decoded: see _args)


def _ns(value: Any) -> int | None:
    """µs (int, float or Decimal) -> int ns, exact for Kineto's 3 decimals (a float only reaches here below
    :data:`_EXACT_US`, where ``round(v * 1000)`` is the exact ns); None for a missing or non-numeric value."""
    if type(value) is float:
        return round(value * 1000) if math.isfinite(value) else None
    if type(value) is int:
        return value * 1000
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    try:
        return int((Decimal(value) * 1000).to_integral_value())
    except (InvalidOperation, ValueError):
        return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _json(value: Any) -> str:
    """JSON text of an event's args (decimals back to JSON numbers)."""
    return json.dumps(
        value, default=lambda d: float(d) if isinstance(d, Decimal) else str(d), ensure_ascii=False
    )


def _args(value: Any) -> dict[str, Any]:
    """An event's args as a dict (undecoded JSON decoded, numbers with a fraction as Decimal); {} for none."""
    if isinstance(value, msgspec.Raw):
        value = _ARGS.decode(value)
    return value if isinstance(value, dict) else {}


def _args_text(cat: Any, args: Any) -> str:
    """The ``ranges.args`` JSON text: the event's args object with its Kineto ``cat`` first. From raw JSON it is
    the source's own text made compact (same keys, order and values); else :func:`_json` of the dict."""
    if isinstance(args, msgspec.Raw):
        body = msgspec.json.format(args, indent=-1)
        if body[:1] == b"{" and b'"cat"' not in body:
            head = b'{"cat":' + (msgspec.json.encode(cat) if type(cat) is str else _json(cat).encode())
            return (head + b"}" if body == b"{}" else head + b"," + body[1:]).decode()
    return _json({"cat": cat, **_args(args)})


def _head(cat: str) -> str:
    """``{"cat":<cat>``: the start of a ``ranges.args`` text made from raw JSON (see :func:`_args_text`)."""
    return '{"cat":' + msgspec.json.encode(cat).decode()


def _args_texts(cats: list[Any], args: list[Any]) -> pa.Array:
    """:func:`_args_text` of a block of ranges, as one Arrow string array. Raw args (the usual case) are made compact
    in one call (encoded as one JSON array, formatted, and split at the lengths of its elements) and get their
    ``cat`` put first by Arrow kernels; those that are not objects or hold a ``cat`` key, and args already decoded
    (a trace read by ``json.loads``), are done one by one."""
    n = len(args)
    if not (n and all(type(a) is msgspec.Raw for a in args) and all(type(c) is str for c in cats)):
        return pa.array([_args_text(c, a) for c, a in zip(cats, args, strict=True)], pa.string())
    source = msgspec.json.encode(args)
    joined = msgspec.json.format(source, indent=-1)  # [a0,a1,...] compact
    # (the same length: nothing was compacted, each element is its raw text)
    lens = np.fromiter(map(len, args if len(joined) == len(source) else _RAWS.decode(joined)), np.int64, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens + 1, out=offsets[1:])
    # element i: its separator ("[" or ",") and its compact args text
    elems = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(joined)])
    heads: dict[str, bytes] = {}
    head = pa.array([heads.get(c) or heads.setdefault(c, _head(c).encode()) for c in cats], pa.large_binary())
    none, comma = pa.scalar(b"", pa.large_binary()), pa.scalar(b",", pa.large_binary())
    rest = pc.binary_slice(elems, 2, int(lens.max()) + 1)  # after "{"
    out = pc.binary_join_element_wise(head, pc.if_else(pa.array(lens == 2), none, comma), rest, none)
    ok = np.frombuffer(joined, np.uint8)[offsets[:-1] + 1] == ord("{")
    if b'"cat"' in joined:
        ok &= ~pc.match_substring(elems, '"cat"').to_numpy(zero_copy_only=False)
    if not ok.all():
        slow = [None if k else _args_text(c, a) for k, c, a in zip(ok.tolist(), cats, args, strict=True)]
        out = pc.if_else(pa.array(ok), out, pa.array(slow, pa.large_string()).cast(pa.large_binary()))
    return out.cast(pa.string())


@dataclass(slots=True)
class _Ranges:
    """The kept ranges as columns; sorted by (start, -end) by :meth:`done`, their index there is their id."""

    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    pid: list[Any] = field(default_factory=list)
    tid: list[Any] = field(default_factory=list)
    cat: list[Any] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)  # raw args not yet made texts
    texts: list[pa.Array] = field(default_factory=list)  # the ranges.args texts, by blocks
    parent: list[int | None] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    args_text: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))

    def add(self, ev: _Event, start: int, text: str, name: str) -> None:
        self.start.append(start)
        self.end.append(start + (_ns(ev.dur) or 0))
        self.name.append(name)
        self.text.append(text)
        self.pid.append(ev.pid)
        self.tid.append(ev.tid)
        self.cat.append(ev.cat)
        self.args.append(ev.args)
        if len(self.args) == _BLOCK:
            self._texts()

    def _texts(self) -> None:
        """The args texts of the ranges added since the last block (their raw args, views of the file, dropped)."""
        self.texts.append(_args_texts(self.cat[len(self.cat) - len(self.args) :], self.args))
        self.args = []

    def done(self) -> None:
        """All ranges added: args texts made, columns sorted by (start, -end)."""
        self._texts()
        texts = pa.concat_arrays(self.texts) if len(self.texts) != 1 else self.texts[0]
        self.texts = []
        n = len(self.start)
        try:
            order = np.lexsort((-np.array(self.end, np.int64), np.array(self.start, np.int64))).tolist()
        except OverflowError:  # (times past int64 ns)
            order = sorted(range(n), key=lambda i: (self.start[i], -self.end[i]))
        if order != list(range(n)):
            for col in ("start", "end", "name", "text", "pid", "tid", "cat"):
                values = getattr(self, col)
                setattr(self, col, [values[i] for i in order])
            texts = texts.take(pa.array(order, pa.int64()))
        self.args_text = texts
        self.parent, self.depth = [None] * n, [0] * n


@dataclass(slots=True)
class _Launch:
    """A runtime/driver call (the CPU side of a GPU op): raw pid/tid, start in ns, API name."""

    pid: Any
    tid: Any
    start: int
    name: str


@dataclass(slots=True)
class _Gpu:
    kind: str  # kernel | memcpy | memset
    ev: _Event  # (its args moved to ``args``)
    args: dict[str, Any]


@dataclass
class _Events:
    """The events of a trace that the reader uses, by role, with times in ns."""

    base_ns: int
    ranges: _Ranges = field(default_factory=_Ranges)
    launches: dict[int, _Launch] = field(default_factory=dict)  # correlation -> runtime call
    gpu: list[_Gpu] = field(default_factory=list)
    flows: dict[tuple[Any, Any, Any], Any] = field(default_factory=dict)  # ac2g 'f' (pid, tid, ts) -> id
    probes: dict[int, tuple[int, ...]] = field(default_factory=dict)  # correlation -> open range indices


def _role(cat: Any) -> str:
    """What the reader does with a complete event of Kineto category ``cat`` ('' for nothing)."""
    c = str(cat).lower()
    if c in _KERNEL:
        return "kernel"
    if c in _MEMCPY:
        return "memcpy"
    if c in _MEMSET:
        return "memset"
    for role, cats in (("launch", _LAUNCH), ("range", _RANGE)):
        if c in cats:
            return role
    return {_PYTHON: "python", "ac2g": "flow"}.get(c, "")


def _events(meta: dict[str, Any], events: Iterable[_Event]) -> _Events:
    """Sort the trace's events by role (see the module docstring); events are dropped as soon as they are read."""
    out = _Events(base_ns=_int(meta.get("baseTimeNanoseconds")) or 0)
    roles: dict[str, str] = {}
    ranges, base, lim = out.ranges, out.base_ns, _EXACT_US
    for ev in events:
        ph, cat = ev.ph, ev.cat
        if ph != "X" and ph != "f":
            continue
        role = roles.get(cat) if type(cat) is str else None
        if role is None:
            role = _role(cat)
            if type(cat) is str:
                roles[cat] = role
        if ph == "f":
            if role == "flow" and ev.id is not None:
                out.flows[(ev.pid, ev.tid, ev.ts)] = ev.id
            continue
        if role == "python":
            text = str(ev.name)
            if not text.startswith(MODULE_PREFIX):
                continue
        elif role in ("kernel", "memcpy", "memset"):
            # (a GPU op is kept without a start: flagged null_start, as the Nsight Systems reader keeps one)
            out.gpu.append(_Gpu(role, ev, _args(ev.args)))
            ev.args = _NULL
            continue
        elif role != "range" and role != "launch":
            continue
        ts = ev.ts
        if (t := round(ts * 1000) if type(ts) is float and -lim < ts < lim else _ns(ts)) is None:
            continue
        if role == "launch":
            corr = _int(_args(ev.args).get("correlation"))
            if corr is not None and corr not in out.launches:
                out.launches[corr] = _Launch(ev.pid, ev.tid, base + t, str(ev.name))
        elif role == "range":
            text = str(ev.name)
            ranges.add(ev, base + t, text, text)
        else:
            ranges.add(ev, base + t, text, text[len(MODULE_PREFIX) :])
    ranges.done()
    return out


def _nest(evs: _Events) -> None:
    """Parent and depth of every range, per thread (push/pop nesting by time), and the stack of ranges open on the
    launching thread at each runtime call that a GPU op refers to (``evs.probes``)."""
    wanted = {c for g in evs.gpu if (c := _correlation(g, evs)) is not None}
    rs = evs.ranges
    starts, ends, parent, depth = rs.start, rs.end, rs.parent, rs.depth
    items: dict[tuple[Any, Any], list[tuple[int, int, int, int]]] = {}
    for i, key in enumerate(zip(rs.pid, rs.tid, strict=True)):  # (start, 0 = range, -end, index)
        items.setdefault(key, []).append((starts[i], 0, -ends[i], i))
    for corr in wanted & evs.launches.keys():
        launch = evs.launches[corr]
        items.setdefault((launch.pid, launch.tid), []).append((launch.start, 1, 0, corr))
    for seq in items.values():
        seq.sort()
        stack: list[int] = []
        for start, kind, _, ref in seq:
            while stack and ends[stack[-1]] <= start:
                stack.pop()
            if kind == 1:
                evs.probes[ref] = tuple(stack)
                continue
            parent[ref], depth[ref] = (stack[-1] if stack else None), len(stack)
            stack.append(ref)


def _correlation(g: _Gpu, evs: _Events) -> int | None:
    """A GPU op's CUPTI/roctracer correlation id: its ``correlation`` arg, else its ``ac2g`` flow's id."""
    corr = _int(g.args.get("correlation"))
    if corr is None:
        corr = _int(evs.flows.get((g.ev.pid, g.ev.tid, g.ev.ts)))
    return corr


def _external_id(args: dict[str, Any]) -> int | None:
    return _int(args.get("External id", args.get("external id")))


def _by_external_id(evs: _Events) -> dict[int, int]:
    """External id -> the first range (not a ``user_annotation``) that carries it."""
    by_ext: dict[int, int] = {}
    for i, (cat, text) in enumerate(zip(evs.ranges.cat, evs.ranges.args_text.to_pylist(), strict=True)):
        if cat == "user_annotation":
            continue
        try:
            args = _ARGS.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError):
            args = json.loads(text)  # (_json's Infinity and NaN)
        if (ext := _external_id(args)) is not None:
            by_ext.setdefault(ext, i)
    return by_ext


def _stack(evs: _Events, idx: int) -> tuple[int, ...]:
    """Range ``idx`` and its enclosing ranges, outermost first."""
    out = []
    cur: int | None = idx
    while cur is not None:
        out.append(cur)
        cur = evs.ranges.parent[cur]
    return tuple(reversed(out))


def _attribute(evs: _Events, g: _Gpu, by_ext: Callable[[], dict[int, int]]) -> tuple[Any, ...]:
    """Launch columns and NVTX stack of one GPU op (the :data:`_LINK` columns; see the module docstring for the
    rules); ``by_ext`` gives the External id index, built the first time an op without a launch row needs it."""
    corr = _correlation(g, evs)
    launch = evs.launches.get(corr) if corr is not None else None
    stack: tuple[int, ...] | None = None
    pid = tid = start = api = None
    if launch is not None:
        stack = evs.probes.get(corr, ())  # type: ignore[arg-type]
        pid, tid, start, api = _int(launch.pid), _int(launch.tid), launch.start, launch.name
        attribution = "push_pop" if stack else "no_range_open"
    else:
        ext = _external_id(g.args)
        if ext is not None and ext in (index := by_ext()):
            stack = _stack(evs, index[ext])
            attribution = "external_id"
        else:
            attribution = "no_launch_row"
    if not stack:
        return corr, pid, tid, start, api, attribution, None, None, None
    names = [evs.ranges.name[i] for i in stack]
    return corr, pid, tid, start, api, attribution, names, DOMAIN, f"{DOMAIN}:{'/'.join(names)}"


def _gpu_common(evs: _Events, g: _Gpu) -> tuple[Any, ...]:
    """Columns every GPU op shares (:data:`_COMMON`): times (ns) and device/context/stream ids."""
    args = g.args
    ts = _ns(g.ev.ts)
    start = evs.base_ns + ts if ts is not None else None
    dur = _ns(g.ev.dur)
    return (
        start,
        start + dur if start is not None and dur is not None else None,
        dur,
        _int(args.get("device", g.ev.pid)),
        _int(args.get("context")),
        _int(args.get("stream", g.ev.tid)),
    )


def _dims(args: dict[str, Any], key: str) -> list[int | None]:
    v = args.get(key)
    if isinstance(v, list) and len(v) == 3:
        return [_int(x) for x in v]
    return [None, None, None]


def _product(dims: list[int | None]) -> int | None:
    if any(d is None for d in dims):
        return None
    out = 1
    for d in dims:
        out *= d  # type: ignore[operator]
    return out


@functools.lru_cache(maxsize=1 << 16)
def _short_name(name: str) -> str:
    return short_name(name)


def _kernel_values(evs: _Events, g: _Gpu, devices: dict[int, dict[str, Any]]) -> tuple[Any, ...]:
    """A kernel's columns after ``kernel_id`` and before the :data:`_LINK` ones (see :data:`_KERNEL_COLS`)."""
    args = g.args
    name = str(g.ev.name)
    grid, block = _dims(args, "grid"), _dims(args, "block")
    start, end, dur, device, context, stream = _gpu_common(evs, g)
    dev = devices.get(device) if device is not None else None
    return (
        start, end, float(dur) if dur is not None else None, device, context, stream,
        name, _short_name(name), *grid, *block, _product(grid), _product(block),
        _int(args.get("registers per thread")), dev.get("name") if dev else None, _cc(dev),
        [("*", _NO_COUNTERS_SHORT)], _time_flags(start, end, dur),
    )  # fmt: skip


def _time_flags(start: int | None, end: int | None, dur: int | None) -> list[str]:
    """A GPU op's flags about its times, in the order and with the meaning of the Nsight Systems reader's
    (:data:`rooflake.ingest.flags.FLAGS`): ``null_start`` (no numeric ``ts``), ``null_end`` (no numeric ``dur``),
    ``reversed_time`` (a negative ``dur``, stored as it is), ``negative_time`` (a start or end before 0 ns)."""
    checks = {
        "null_start": start is None,
        "null_end": dur is None,
        "reversed_time": dur is not None and dur < 0,
        "negative_time": (start is not None and start < 0) or (end is not None and end < 0),
    }
    return [flag for flag, hit in checks.items() if hit]


def _cc(dev: dict[str, Any] | None) -> str | None:
    if not dev or _int(dev.get("computeMajor")) is None or _int(dev.get("computeMinor")) is None:
        return None
    return f"{_int(dev['computeMajor'])}.{_int(dev['computeMinor'])}"


def _memop_values(evs: _Events, g: _Gpu) -> tuple[Any, ...]:
    """A memop's columns after ``op_id`` and before the :data:`_LINK` ones (see :data:`_MEMOP_COLS`)."""
    direction = re.search(r"\b([HDAP]to[HDAP])\b", str(g.ev.name))
    common = _gpu_common(evs, g)
    copy_kind = _COPY_KINDS.get(direction.group(1)) if g.kind == "memcpy" and direction else None
    return (*common, g.kind, copy_kind, _int(g.args.get("bytes")), _time_flags(*common[:3]))


def _metric_rows(kernel_id: int, args: dict[str, Any]) -> Iterable[tuple[Any, ...]]:
    """The kernel's numeric launch figures as ``metrics`` rows (names verbatim from the trace; :data:`_METRIC_COLS`)."""
    for name, unit in _KERNEL_METRICS.items():
        if name not in args:
            continue
        v = args[name]
        if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
            yield (
                kernel_id,
                name,
                unit,
                "string",
                None,
                str(v),
                None,
            )  # Kineto writes "inf" for an infinite blocks/SM
        elif isinstance(v, int) and v >= 0:
            yield kernel_id, name, unit, "uint64", float(v), None, v
        else:
            yield kernel_id, name, unit, "double", float(v), None, None


class _Columns:
    """A table being built: its rows as tuples of values in ``names`` order, made columns (one C-level transpose)
    when first read."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.rows: list[tuple[Any, ...]] = []
        self._cols: dict[str, Sequence[Any]] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, name: str) -> Sequence[Any]:
        if self._cols is None:
            cols = list(zip(*self.rows, strict=True)) or [()] * len(self.names)
            self._cols = dict(zip(self.names, cols, strict=True))
        return self._cols[name]

    def table(self, schema: pa.Schema, run_id: str) -> pa.Table:
        """The table of ``schema`` (its columns not among ``names`` NULL)."""
        n = len(self)
        arrays = [
            pa.array([run_id] * n, f.type)
            if f.name == "run_id"
            else pa.array(self[f.name], type=f.type)
            if f.name in self.names
            else pa.nulls(n, f.type)
            for f in schema
        ]
        return pa.Table.from_arrays(arrays, schema=schema)


def _ranges_table(evs: _Events, run_id: str) -> pa.Table:
    """The ``ranges`` table, built column by column."""
    rs = evs.ranges
    n = len(rs.start)
    cols: dict[str, Any] = {
        "run_id": [run_id] * n,
        "range_id": range(n),
        "domain": [DOMAIN] * n,
        "name": rs.name,
        "text": rs.text,
        "kind": ["push_pop"] * n,
        "start_ns": rs.start,
        "end_ns": rs.end,
        "thread": [_int(t) for t in rs.tid],
        "process_id": [_int(p) for p in rs.pid],
        "depth": rs.depth,
        "parent_id": rs.parent,
    }
    arrays = [
        rs.args_text
        if f.name == "args"
        else pa.array(cols[f.name], type=f.type)
        if f.name in cols
        else pa.nulls(n, f.type)
        for f in RANGES
    ]
    return pa.Table.from_arrays(arrays, schema=RANGES)


def _gpu_rows(evs: _Events, devices: dict[int, dict[str, Any]]) -> tuple[_Columns, _Columns, _Columns]:
    """(kernels, memops, metrics) columns, each in GPU start order."""
    index: dict[int, int] | None = None

    def by_ext() -> dict[int, int]:
        nonlocal index
        if index is None:
            index = _by_external_id(evs)
        return index

    kernels, memops, metrics = _Columns(_KERNEL_COLS), _Columns(_MEMOP_COLS), _Columns(_METRIC_COLS)

    def order(g: _Gpu) -> tuple[bool, int, int]:  # (ops without a start last)
        ts = _ns(g.ev.ts)
        return ts is None, ts or 0, _ns(g.ev.dur) or 0

    for g in sorted(evs.gpu, key=order):
        link = _attribute(evs, g, by_ext)
        if g.kind == "kernel":
            kernel_id = len(kernels)
            kernels.rows.append((kernel_id, *_kernel_values(evs, g, devices), *link))
            metrics.rows.extend(_metric_rows(kernel_id, g.args))
        else:
            memops.rows.append((len(memops), *_memop_values(evs, g), *link))
    return kernels, memops, metrics


def _table(rows: list[dict[str, Any]], schema: pa.Schema, run_id: str) -> pa.Table:
    return pa.Table.from_pylist([{**r, "run_id": run_id} for r in rows], schema=schema)


def _coverage_rows(kernels: _Columns, memops: _Columns) -> list[dict[str, Any]]:
    """GPU ops and their time per device, op kind and attribution (the ``coverage`` table); ``graph_ops``: those
    launched by ``cudaGraphLaunch``/``hipGraphLaunch``."""
    agg: dict[tuple[Any, str, str], list[int]] = {}
    for t, kinds in ((kernels, ["kernel"] * len(kernels)), (memops, memops["kind"])):
        cols = (t["device_id"], kinds, t["attribution"], t["duration_ns"], t["launch_api"])
        for device, kind, attribution, dur, api in zip(*cols, strict=True):
            a = agg.setdefault((device, kind, attribution), [0, 0, 0])
            a[0] += 1
            a[1] += int(dur or 0)
            a[2] += "GraphLaunch" in str(api or "")
    return [
        {"device_id": d, "op_kind": k, "attribution": at, "ops": n, "gpu_time_ns": t, "graph_ops": g}
        for (d, k, at), (n, t, g) in sorted(agg.items(), key=lambda kv: (kv[0][0] is None, kv[0]))
    ]


def _producer(doc: dict[str, Any]) -> str:
    """Tool and versions as the trace states them (torch writes no torch version into it)."""
    parts = [f"torch.profiler (Kineto trace schemaVersion {doc.get('schemaVersion', '?')})"]
    for key, label in (
        ("cuda_runtime_version", "CUDA runtime"),
        ("cuda_driver_version", "CUDA driver"),
        ("cupti_version", "CUPTI"),
        ("hip_runtime_version", "HIP runtime"),
        ("roctracer_version", "roctracer"),
    ):
        if key in doc:
            parts.append(f"{label} {doc[key]}")
    return ", ".join(parts)


def read(path: str | Path, *, run_id: str) -> dict[str, Any]:
    """Read a torch.profiler Chrome-trace JSON (``.json`` or ``.json.gz``) into rooflake's tables.

    Returns ``{"kernels": KERNELS, "memops": MEMOPS, "metrics": METRICS, "ranges": RANGES, "coverage": COVERAGE
    (pa.Table), "run": dict}`` (columns as in :mod:`rooflake.schema.tables`; the mapping of each Kineto field is
    in the module docstring). ``kernels``: one row per GPU kernel in GPU start order, times in ns
    (``duration_ns`` exact ns as float), FLOP/byte columns NULL (no counters; reason in ``provenance``);
    ``metrics``: the kernels' ``registers per thread``, ``shared memory`` (byte, static + dynamic), ``blocks per
    SM``, ``warps per SM``, ``est. achieved occupancy %``; ``ranges``: domain ``torch``, ``args`` the event's args
    as JSON plus its Kineto ``cat`` -- ``Input Dims``, ``Input type``, ``Input Strides``, ``Concrete Inputs``
    (record_shapes) and torch's own ``flops`` estimate (with_flops) are there. ``run``: source_format
    ``torch-trace``, producer, host, gpu_name, compute_capability, n_kernels, n_metrics, derivation, rank /
    world_size / job (``distributedInfo``, the file's folder: :func:`rooflake.ingest.ranks.trace_rank`), the ingest
    summary of suspicious GPU ops (``flag_counts``, ``warnings``: flagged as the Nsight Systems reader flags them,
    :func:`_time_flags`; a GPU op without a numeric ``ts`` is kept, ``start_ns`` NULL, flagged ``null_start``).

    Raises :class:`InputError` when the file is unreadable, truncated, not JSON, or JSON without ``traceEvents``.
    """
    with gc_paused():
        return _read(Path(path), run_id)


def _read(path: Path, run_id: str) -> dict[str, Any]:
    """:func:`read`."""
    doc, evs = _load(path)  # the top-level keys (deviceProperties, distributedInfo, ...) and the events
    _nest(evs)
    devices = {d["id"]: d for d in doc.get("deviceProperties") or [] if isinstance(d, dict) and "id" in d}
    kernels, memops, metrics = _gpu_rows(evs, devices)
    dev = devices.get(kernels["device_id"][0]) if len(kernels) else None
    return {
        "kernels": kernels.table(KERNELS, run_id),
        "memops": memops.table(MEMOPS, run_id),
        "metrics": metrics.table(METRICS, run_id),
        "ranges": _ranges_table(evs, run_id),
        "coverage": _table(_coverage_rows(kernels, memops), COVERAGE, run_id),
        "run": {
            "source_format": FORMAT,
            "producer": _producer(doc),
            "source_schema_version": str(doc["schemaVersion"]) if "schemaVersion" in doc else "none",
            "command_line": None,
            "host": doc.get("host_name"),
            "gpu_name": dev.get("name") if dev else None,
            "compute_capability": _cc(dev),
            "n_kernels": len(kernels),
            "n_metrics": len(metrics),
            "derivation": _json({"all": [NO_COUNTERS]}),
            "fp16_convention": None,
            **trace_rank(doc, path),
            **flag_summary(_flag_counts({"kernels": kernels, "memops": memops})),
        },
    }


def _flag_counts(tables: dict[str, _Columns]) -> list[tuple[str, str, int]]:
    """``(table, flag, rows)`` for every flag the rows of ``tables`` carry."""
    counts: dict[tuple[str, str], int] = {}
    for table, cols in tables.items():
        for flags in cols["flags"]:
            for f in flags or []:
                counts[table, f] = counts.get((table, f), 0) + 1
    return [(t, f, n) for (t, f), n in counts.items()]


def runtime_calls(path: str | Path) -> list[dict[str, Any]]:
    """Every CUDA/HIP runtime or driver call of a trace (the CPU side of GPU work; ``cudaStreamBeginCapture``,
    ``cudaLaunchKernel``, ``cudaGraphLaunch``, ...), in start order: ``thread``, ``start_ns`` (ns, as ``ranges``
    times), ``api`` (the call's name), ``kernel`` (the kernel a launch call names: ROCm traces name it, CUDA traces
    do not: None), ``grid``/``block`` (lists, where the call gives them), ``correlation``. For the CUDA-graph capture
    (:mod:`rooflake.ingest.graphs`), whose captured launches run no kernel. Raises :class:`InputError` as
    :func:`read`."""
    path = Path(path)
    meta, _ = _load(path)  # (its messages for a bad file; the events are read once more below)
    base = _int(meta.get("baseTimeNanoseconds")) or 0
    data = _read_bytes(path)
    try:
        events: Iterable[_Event] = _decoded(_TRACE.decode(data).traceEvents)
    except (msgspec.DecodeError, msgspec.ValidationError):
        events = _from_dicts(_load_stdlib(path, data)["traceEvents"])
    out: list[dict[str, Any]] = []
    for ev in events:
        if ev.ph != "X" or _role(ev.cat) != "launch" or (ts := _ns(ev.ts)) is None:
            continue
        a = _args(ev.args)
        kernel = a.get("kernel")
        out.append({
            "thread": _int(ev.tid), "start_ns": base + ts, "api": str(ev.name),
            "kernel": kernel if isinstance(kernel, str) else None, "grid": a.get("grid"), "block": a.get("block"),
            "correlation": _int(a.get("correlation")),
        })  # fmt: skip
    out.sort(key=lambda r: r["start_ns"])
    return out
