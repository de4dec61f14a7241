"""The ``ops`` table of a trace: every recorded operator with its modelled work and its measured time.

Built after a reader has read a torch.profiler trace (``cpu_op`` events with ``record_shapes``' ``Input Dims``,
``Input type``, ``Input Strides``, ``Concrete Inputs``; see :mod:`rooflake.ingest.torch_trace`) or an Nsight
Systems export whose NVTX texts carry shapes (:mod:`rooflake.ingest.op_texts`), from its ``ranges``,
``kernels`` and ``memops`` tables:

- **Work** (modelled): :func:`rooflake.instrument.shapes.op_work`, the rules ``rl estimate`` uses too. **Each op
  counted once**: ops nest (``aten::linear`` → ``aten::t``, ``aten::addmm``; ``aten::conv2d`` → … →
  ``aten::cudnn_convolution``); the outermost op of a chain whose rule gives a number carries the chain's FLOPs and
  bytes, every op nested in it has NULL FLOPs with ``flops_source`` ``counted in <op> (op <id>)``, and an op with no
  rule whose nested ops carry says ``counted in its nested ops: …``. So ``sum(flops)`` over a run is its modelled
  work.
- **Time** (measured): the kernels, memcpys and memsets launched on the op's thread while it was open (its nested
  ops' launches included), by the launch call's CPU time (``kernels.launch_start_ns``/``launch_thread``; query
  ``ops_gpu_time.sql``), summed; and the op's own CPU duration. GPU work launched under no op stays in ``kernels``
  with its NVTX attribution.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from rooflake.ingest.gc_paused import gc_paused
from rooflake.instrument.shapes import VIEW_SOURCE, GpuSpec, OpWork, ShapeError, op_work, parse_args
from rooflake.schema import OPS

OP_CATS = {"cpu_op", "operator"}
MODULE_CAT = "python_function"


@dataclass(slots=True)
class _Node:
    row: dict[str, Any]  # the range's row until the op's values are taken (then empty)
    range_id: int
    parent_id: int | None
    name: str
    args: dict[str, Any]
    is_op: bool
    stack: list[str]
    modules: tuple[str, ...]  # (shared with the parent's where the range adds no module scope)
    carrier: int | None = None  # the range carrying this subtree's work from above (or itself)
    nested: list[str] = field(default_factory=list)  # carrying ops nested in an op with no rule


_SHAPE_KEYS = ("Input Dims", "Input type", "Concrete Inputs", "Input Strides")


class _Args(msgspec.Struct):
    """The fields of a range's ``args`` JSON the ops need (the rest is skipped by the decoder, unread)."""

    cat: Any = None
    dims: Any = msgspec.field(default=None, name="Input Dims")
    types: Any = msgspec.field(default=None, name="Input type")
    concrete: Any = msgspec.field(default=None, name="Concrete Inputs")
    strides: Any = msgspec.field(default=None, name="Input Strides")


_DECODE = msgspec.json.Decoder(_Args).decode
_NONE = _Args()
_NO_ARGS: dict[str, Any] = {}  # a node's args once its row is made (nothing reads them after)


def _args(text: Any) -> dict[str, Any]:
    """The range's ``cat`` and shape fields (``Input Dims``, ...) from its ``args`` JSON; {} for text that is not
    a JSON object."""
    if not isinstance(text, str):
        return {}
    try:
        a = _DECODE(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        try:
            loaded = json.loads(text)
        except ValueError:
            return {}
        return loaded if isinstance(loaded, dict) else {}
    out = {"cat": a.cat} if a.cat is not None else {}
    for key, v in zip(_SHAPE_KEYS, (a.dims, a.types, a.concrete, a.strides), strict=True):
        if v is not None:
            out[key] = v
    return out


def _nodes(
    ranges: Iterable[dict[str, Any]], is_op: Any, by_id: dict[int, _Node], *, ordered: bool = False
) -> Iterator[_Node]:
    """The ranges in nesting order (parents first: by start, then longest first; ``ordered``: ``ranges`` come so),
    each with its stack of names and module scopes, made one at a time and entered in ``by_id`` (range_id -> node,
    the caller's: :func:`op_columns` looks parents up there and takes each node's row and args away once its
    values are taken)."""
    if not ordered:
        ranges = sorted(
            ranges, key=lambda r: (r["start_ns"] is None, r["start_ns"] or 0, -(r["end_ns"] or 0))
        )
    for r in ranges:
        # (the parsed fields are kept until the op's values are taken, the args text goes now)
        args = _args(r.pop("args", None))
        parent_id = r.get("parent_id")
        parent = by_id.get(parent_id) if parent_id is not None else None
        modules = parent.modules if parent else ()
        if args.get("cat") == MODULE_CAT:
            modules = (*modules, r["name"])
        stack = [*(parent.stack if parent else []), r["name"]]
        node = _Node(r, r["range_id"], parent_id, r["name"], args, bool(is_op(r, args)), stack, modules)
        by_id[node.range_id] = node
        yield node


def torch_op(row: dict[str, Any], args: dict[str, Any]) -> bool:
    """A torch.profiler range is an op when Kineto filed it as ``cpu_op`` (older traces: ``Operator``)."""
    return str(args.get("cat", "")).lower() in OP_CATS


@dataclass(frozen=True)
class Recorded:
    """What the trace recorded of an op: its arguments' dims, types, scalar values and strides (lists, as the
    trace writes them), and ``op``, the ATen name whose rule applies where the range is named otherwise (a
    PyProf dict's ``torch.nn.functional.conv2d`` -> ``aten::conv2d``)."""

    dims: Any
    types: Any
    concrete: Any = None
    strides: Any = None
    op: str | None = None  # the ATen name whose rule applies, where the range is named otherwise


def torch_recorded(node_args: dict[str, Any]) -> Recorded | None:
    """The shapes record_shapes wrote into a cpu_op's args (None without ``Input Dims``)."""
    if "Input Dims" not in node_args:
        return None
    return Recorded(
        node_args.get("Input Dims"),
        node_args.get("Input type"),
        node_args.get("Concrete Inputs"),
        node_args.get("Input Strides"),
    )


def op_rows(ranges: Iterable[dict[str, Any]], **kw: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The ``ops`` rows of :func:`op_columns` as dicts (column name -> value), one per op, and its counts."""
    cols, counts = op_columns(ranges, **kw)
    names = list(cols)
    return [dict(zip(names, values, strict=True)) for values in zip(*cols.values(), strict=True)], counts


#: the columns of :func:`op_columns`, in the order of :data:`rooflake.schema.OPS`
_ROW_COLUMNS = (
    "op_id", "range_id", "op_name", "module_path", "nvtx_stack", "input_dims", "input_types", "concrete_inputs",
    "dtype", "flops", "flops_source", "bytes", "bytes_l2_modelled", "bytes_dram_modelled", "traffic_model",
    "carrier_op_id", "cpu_time_ns", "start_ns", "thread",
)  # fmt: skip


def op_columns(
    ranges: Iterable[dict[str, Any]],
    *,
    is_op: Any = torch_op,
    recorded: Any = None,
    gpu: GpuSpec | None = None,
    replay: bool = True,
    ordered: bool = False,
) -> tuple[dict[str, list[Any]], dict[str, int]]:
    """The ``ops`` columns (without run_id and the GPU-time columns: :data:`_ROW_COLUMNS`, a list of values each,
    one per op) of ``ranges`` (rows of the ``ranges`` table: range_id, name, text, start_ns, end_ns, thread,
    parent_id, args), and counts for the ingest summary (``ops``, ``without_shapes``, ``without_rule``).
    ``is_op(row, args)`` says which ranges are ops; ``recorded(node)`` gives an op's :class:`Recorded` shapes
    (default: torch.profiler's); ``ordered``: ``ranges`` come parents first (see :func:`_nodes`). One pass over the
    ranges: a range's row and parsed args are dropped once its values are taken (the columns, not a dict per op,
    hold what stays)."""
    recorded = recorded or (lambda n: torch_recorded(n.args))
    by_range: dict[int, _Node] = {}
    op_ids: dict[int, int] = {}
    cols: dict[str, list[Any]] = {c: [] for c in _ROW_COLUMNS}
    op_nodes: list[_Node] = []
    for n in _nodes(ranges, is_op, by_range, ordered=ordered):
        parent = by_range.get(n.parent_id) if n.parent_id is not None else None
        n.carrier = parent.carrier if parent else None
        if not n.is_op:
            n.row = n.args = _NO_ARGS
            continue
        op_ids[n.range_id] = len(op_nodes)
        op_nodes.append(n)
        rec = recorded(n)
        work, counted = _judge(n, rec, by_range, op_ids, gpu, replay)
        # (a view carries nothing: where it copies after all, a reshape of a strided tensor, its nested clone does)
        if work.flops is not None and not counted and work.flops_source != VIEW_SOURCE:
            n.carrier = n.range_id
            _tell_ancestors(n, by_range, op_ids)
        for c, v in zip(_ROW_COLUMNS, _values(n, rec, work, op_ids), strict=True):
            cols[c].append(v)
        n.row = n.args = _NO_ARGS
    return cols, _finish(cols, op_nodes)


def _finish(cols: dict[str, list[Any]], op_nodes: list[_Node]) -> dict[str, int]:
    """Name the nested carrying ops in the ops that carry nothing themselves (``flops_source``); the counts."""
    counts: Counter[str] = Counter()
    flops, sources, dims = cols["flops"], cols["flops_source"], cols["input_dims"]
    for i, n in enumerate(op_nodes):
        if flops[i] is None and not sources[i].startswith("counted in") and n.nested:
            sources[i] = "counted in its nested ops: " + ", ".join(sorted(set(n.nested)))
        counts["ops"] += 1
        counted = sources[i].startswith("counted in")
        counts["without_shapes"] += dims[i] is None and not counted
        counts["without_rule"] += sources[i].startswith("none:") and dims[i] is not None
    return dict(counts)


def _judge(
    n: _Node, rec: Recorded | None, by_range: dict[int, _Node], op_ids: dict[int, int], gpu: Any, replay: bool
) -> tuple[OpWork, bool]:
    """(the op's work, whether an enclosing op carries it)."""
    if n.carrier is not None:
        carrier = by_range[n.carrier]
        return OpWork(None, f"counted in {carrier.name} (op {op_ids[n.carrier]})"), True
    if rec is None:
        return OpWork(None, "none: no shapes recorded (profile with record_shapes=True)"), False
    return _work_of(rec.op or n.name, rec, gpu, replay), False


_WORK: dict[
    tuple[Any, ...], OpWork
] = {}  # (op, recorded shapes as JSON, GPU, replay) -> its work: ops repeat


def _work_of(name: str, rec: Recorded, gpu: Any, replay: bool) -> OpWork:
    """:func:`rooflake.instrument.shapes.op_work` of a recorded op, once per distinct (op, shapes)."""
    try:
        key: tuple[Any, ...] = (
            name,
            msgspec.json.encode([rec.dims, rec.types, rec.concrete, rec.strides]),
            gpu,
            replay,
        )
    except (TypeError, msgspec.EncodeError):
        key = ()
    if key and key in _WORK:
        return _WORK[key]
    try:
        work = op_work(
            name, parse_args(rec.dims, rec.types, rec.concrete, rec.strides), gpu=gpu, replay=replay
        )
    except ShapeError as e:
        work = OpWork(None, f"none: malformed Input Dims / Input type ({e})")
    if key and len(_WORK) < 1 << 16:
        _WORK[key] = work
    return work


def _tell_ancestors(n: _Node, by_range: dict[int, _Node], op_ids: dict[int, int]) -> None:
    """Name the carrying op ``n`` in the enclosing ops that carry nothing themselves (wrappers without a rule)."""
    cur = by_range.get(n.parent_id) if n.parent_id is not None else None
    while cur is not None and cur.carrier is None:
        if cur.is_op:
            cur.nested.append(n.name)
        cur = by_range.get(cur.parent_id) if cur.parent_id is not None else None


_TEXTS: dict[
    bytes, str
] = {}  # a recorded value's compact JSON -> its text as the trace writes it (ops repeat)


def _text(v: Any) -> str | None:
    """A recorded value as JSON text, as Kineto writes it (``[[16, 64], [32]]``)."""
    if v is None or isinstance(v, str):
        return v
    try:
        key = msgspec.json.encode(v)
    except (TypeError, msgspec.EncodeError):
        return json.dumps(v, ensure_ascii=False, default=str)
    text = _TEXTS.get(key)
    if text is None:
        text = json.dumps(v, ensure_ascii=False)
        if len(_TEXTS) < 1 << 16:
            _TEXTS[key] = text
    return text


def _values(n: _Node, rec: Recorded | None, w: OpWork, op_ids: dict[int, int]) -> tuple[Any, ...]:
    """An op's values, in the order of :data:`_ROW_COLUMNS` (graph_launch and captured_op_id are NULL here)."""
    r = n.row
    start, end = r.get("start_ns"), r.get("end_ns")
    return (
        op_ids[n.range_id],
        n.range_id,
        n.name,
        "/".join(n.modules) or None,
        n.stack,
        _text(rec.dims) if rec else None,
        _text(rec.types) if rec else None,
        _text(rec.concrete) if rec else None,
        w.dtype,
        w.flops,
        w.flops_source,
        w.bytes,
        w.bytes_l2,
        w.bytes_dram,
        w.traffic_model,
        op_ids[n.carrier] if n.carrier is not None else None,
        end - start if start is not None and end is not None else None,
        start,
        r.get("thread"),
    )


def summary(counts: dict[str, int]) -> list[str]:
    """The ingest summary's lines about the ops (``N ops without shapes``, ``M ops without a FLOP rule``)."""
    out = []
    if counts.get("without_shapes"):
        out.append(
            f"{counts['without_shapes']} of {counts['ops']} ops without shapes: their FLOPs are NULL "
            "(profile with record_shapes=True)"
        )
    if counts.get("without_rule"):
        out.append(
            f"{counts['without_rule']} ops without a FLOP rule: their FLOPs are NULL with the reason (ops.flops_source)"
        )
    return out


def op_table(tables: dict[str, Any], run_id: str, **kw: Any) -> tuple[Any, list[str]]:
    """The ``ops`` table (pa.Table, :data:`rooflake.schema.OPS`) of a reader's ``tables`` (``ranges``,
    ``kernels``, ``memops``: pa.Tables or DuckTables) and the ingest summary's lines; ``kw`` as :func:`op_rows`."""
    import pyarrow as pa

    from rooflake.ingest import sqlscript
    from rooflake.schema.duck import DuckTable

    arrow = {k: v.to_arrow() if isinstance(v, DuckTable) else v for k, v in tables.items() if v is not None}
    cols = ["range_id", "name", "text", "start_ns", "end_ns", "thread", "parent_id", "args"]
    ranges = arrow["ranges"]
    values, counts = op_columns(
        _in_order(ranges.select([c for c in cols if c in ranges.column_names])), ordered=True, **kw
    )
    if not values["op_id"]:
        return pa.Table.from_pylist([], schema=OPS), []
    schema = _without_gpu(OPS)
    n = len(values["op_id"])
    # (each list goes as its column is made; the CUDA-graph columns stay NULL: rooflake.ingest.graphs fills them)
    columns = {f.name: pa.array(values.pop(f.name), f.type) if f.name in values else pa.nulls(n, f.type)
               for f in schema if f.name != "run_id"}  # fmt: skip
    ops = pa.table(columns)
    del values, columns  # (gone before the GPU times are joined)
    ops = ops.append_column(
        schema.field("run_id"), pa.array([run_id] * ops.num_rows, schema.field("run_id").type)
    )
    times = _gpu_times(sqlscript, ops, arrow.get("kernels"), arrow.get("memops"))
    del ops
    return times.select(OPS.names).cast(OPS), summary(counts)


def _in_order(ranges: Any) -> Iterator[dict[str, Any]]:
    """The rows of ``ranges`` (pa.Table) parents first, as :func:`_nodes` orders them (start, NULL last; then end
    descending, NULL as 0; a stable sort), made a block at a time (not a dict per range at once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    start = ranges.column("start_ns")
    keys = pa.table({
        "no_start": pc.is_null(start),  # (False first: the ranges without a start come last, as NULLs)
        "start": start,
        "end": pc.coalesce(ranges.column("end_ns"), pa.scalar(0, ranges.schema.field("end_ns").type)),
    })  # fmt: skip
    order = pc.sort_indices(
        keys, sort_keys=[("no_start", "ascending"), ("start", "ascending"), ("end", "descending")]
    )
    for i in range(0, len(order), _ROWS_AT_ONCE):
        yield from ranges.take(order[i : i + _ROWS_AT_ONCE]).to_pylist()


_ROWS_AT_ONCE = 1 << 16


def _without_gpu(schema: Any) -> Any:
    import pyarrow as pa

    return pa.schema([f for f in schema if f.name not in ("kernels", "gpu_ops", "gpu_time_ns")])


def _gpu_times(sqlscript: Any, ops: Any, kernels: Any, memops: Any) -> Any:
    """``ops`` (op rows numbered 0..n-1 in row order) with kernels, gpu_ops and gpu_time_ns appended (step
    ``ops_gpu_time.sql``: one row per op, in op_id order)."""
    import pyarrow as pa

    from rooflake.schema.duck import duck_connect

    empty = pa.table({"launch_thread": pa.array([], pa.int64()), "launch_start_ns": pa.array([], pa.int64()),
                      "duration_ns": pa.array([], pa.float64())})  # fmt: skip

    def launches(t: Any) -> Any:
        if t is None or "launch_thread" not in t.column_names:
            return empty
        return t.select(["launch_thread", "launch_start_ns", "duration_ns"]).cast(empty.schema)

    con = duck_connect()
    try:  # (only the columns the SQL reads go through DuckDB: the op rows' texts and stacks stay where they are)
        con.register("op_rows", ops.select(["op_id", "thread", "start_ns", "cpu_time_ns"]))
        con.register("kernel_launches", launches(kernels))
        con.register("memop_launches", launches(memops))
        per_op = sqlscript.arrow(con, "ops_gpu_time.sql")
    finally:
        con.close()
    if not per_op.column("op_id").equals(ops.column("op_id")):  # (op_rows numbers the ops in row order)
        raise RuntimeError("ops_gpu_time.sql: its rows are not the ops' rows in op_id order")
    for name in ("kernels", "gpu_ops", "gpu_time_ns"):
        ops = ops.append_column(name, per_op.column(name))
    return ops


#: the GPU a caller names for runs whose file names none (``rl ingest --gpu``): a datasheet catalog key, set around
#: one file's read by :func:`given_gpu_for`
_GIVEN_GPU: contextvars.ContextVar[str | None] = contextvars.ContextVar("rooflake_given_gpu", default=None)


@contextlib.contextmanager
def given_gpu_for(gpu: str | None) -> Iterator[None]:
    """Within the block, runs read whose file names no GPU take ``gpu`` (a datasheet catalog key, e.g. ``H100
    SXM5``; None: none given) as their ``gpu_name`` (:func:`apply_given_gpu`)."""
    token = _GIVEN_GPU.set(gpu)
    try:
        yield
    finally:
        _GIVEN_GPU.reset(token)


def apply_given_gpu(run: dict[str, Any]) -> None:
    """The ``rl ingest --gpu`` rule, on a reader's ``run`` row (:func:`with_ops` applies it, and the ingest for a
    reader without recorded ops): a file that names no
    GPU (a torch.profiler trace without ``deviceProperties``, a trimmed nsys export) takes the given catalog GPU as
    its ``gpu_name`` (and the catalog's compute capability where the file has none), said in one warning line; a
    file that names its own GPU keeps it (what the file holds is stored), and a line says so when the two
    differ."""
    from rooflake.schema import datasheets as ds

    given = _GIVEN_GPU.get()
    if given is None:
        return
    own = run.get("gpu_name")
    if own:
        if ds.match(own) != given:
            run["warnings"] = [
                *run.get("warnings", []),
                f"--gpu {given} not used: the file names its GPU ({own}), which is kept",
            ]
        return
    run["gpu_name"] = given
    if not run.get("compute_capability"):
        run["compute_capability"] = next(
            (g["compute_capability"] for g in ds.gpus() if g["gpu"] == given), None
        )
    run["warnings"] = [*run.get("warnings", []), f"GPU from --gpu: {given} (the file names none)"]


def with_ops(out: dict[str, Any], run_id: str, **kw: Any) -> dict[str, Any]:
    """A reader's tables with the ``ops`` table of the recorded operators (:func:`op_table`), their work modelled
    from the recorded shapes on the run's GPU (the datasheet catalog's SM count and L2 size, for the DRAM traffic
    model), and the ingest summary's lines about them added to ``run["warnings"]``. ``kw``: which ranges are ops
    and what they recorded (:func:`op_rows`; default: torch.profiler's). Also the serving steps among the ranges
    (table ``serving_steps``, :func:`rooflake.ingest.steps.step_table`) and, unless ``replay_note`` is False (a
    capture trace is matched next), a line saying that kernels replayed from CUDA graphs have no op."""
    from rooflake.ingest import graphs, steps
    from rooflake.instrument.shapes import catalog_gpu
    from rooflake.schema.duck import DuckTable

    note = kw.pop("replay_note", True)
    run = out["run"]
    apply_given_gpu(run)
    gpu = catalog_gpu(run.get("gpu_name"), run.get("compute_capability"))
    # (a node, a dict and lists per recorded op, no cycles: the collector's passes cost 2/3 of the post-pass)
    with gc_paused():
        table, lines = op_table(out, run_id, gpu=gpu, **kw)
    ranges, kernels = out["ranges"], out.get("kernels")
    step_table, step_lines = steps.step_table(
        ranges.to_arrow() if isinstance(ranges, DuckTable) else ranges, run_id
    )
    run["n_ops"] = table.num_rows
    noted = (
        note and kernels is not None and not isinstance(kernels, DuckTable)
    )  # (nsys: graph ids of its own)
    lines += step_lines + (graphs.replay_note(kernels) if noted else [])
    run["warnings"] = [*run.get("warnings", []), *lines]
    return {**out, "ops": table, "serving_steps": step_table}
