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
from collections.abc import Iterator
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
    row: dict[str, Any]
    args: dict[str, Any]
    is_op: bool
    stack: list[str]
    modules: list[str]
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


def _nodes(ranges: list[dict[str, Any]], is_op: Any) -> list[_Node]:
    """The ranges in nesting order (parents first), each with its stack of names and module scopes."""
    ordered = sorted(ranges, key=lambda r: (r["start_ns"] is None, r["start_ns"] or 0, -(r["end_ns"] or 0)))
    by_id: dict[int, _Node] = {}
    out = []
    for r in ordered:
        # (the parsed fields are kept, the args text goes: a third of the pass's memory)
        args = _args(r.pop("args", None))
        parent = by_id.get(r["parent_id"]) if r.get("parent_id") is not None else None
        cat = args.get("cat")
        modules = list(parent.modules) if parent else []
        if cat == MODULE_CAT:
            modules.append(r["name"])
        node = _Node(r, args, bool(is_op(r, args)), [*(parent.stack if parent else []), r["name"]], modules)
        by_id[r["range_id"]] = node
        out.append(node)
    return out


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


def op_rows(
    ranges: list[dict[str, Any]],
    *,
    is_op: Any = torch_op,
    recorded: Any = None,
    gpu: GpuSpec | None = None,
    replay: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The ``ops`` rows (without run_id and the GPU-time columns) of ``ranges`` (rows of the ``ranges`` table:
    range_id, name, text, start_ns, end_ns, thread, parent_id, args), and counts for the ingest summary
    (``ops``, ``without_shapes``, ``without_rule``). ``is_op(row, args)`` says which ranges are ops;
    ``recorded(node)`` gives an op's :class:`Recorded` shapes (default: torch.profiler's args)."""
    recorded = recorded or (lambda n: torch_recorded(n.args))
    nodes = [n for n in _nodes(ranges, is_op)]
    by_range = {n.row["range_id"]: n for n in nodes}
    op_ids = {n.row["range_id"]: i for i, n in enumerate(n for n in nodes if n.is_op)}
    rows: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for n in nodes:
        parent = by_range.get(n.row["parent_id"]) if n.row.get("parent_id") is not None else None
        n.carrier = parent.carrier if parent else None
        if not n.is_op:
            continue
        rec = recorded(n)
        work, counted = _judge(n, rec, by_range, op_ids, gpu, replay)
        # (a view carries nothing: where it copies after all, a reshape of a strided tensor, its nested clone does)
        if work.flops is not None and not counted and work.flops_source != VIEW_SOURCE:
            n.carrier = n.row["range_id"]
            _tell_ancestors(n, by_range, op_ids)
        rows.append(_row(n, rec, work, op_ids))
    for r, n in zip(rows, (n for n in nodes if n.is_op), strict=True):
        if r["flops"] is None and not r["flops_source"].startswith("counted in") and n.nested:
            r["flops_source"] = "counted in its nested ops: " + ", ".join(sorted(set(n.nested)))
        counts["ops"] += 1
        counted = r["flops_source"].startswith("counted in")
        counts["without_shapes"] += r["input_dims"] is None and not counted
        counts["without_rule"] += r["flops_source"].startswith("none:") and r["input_dims"] is not None
    return rows, dict(counts)


def _judge(
    n: _Node, rec: Recorded | None, by_range: dict[int, _Node], op_ids: dict[int, int], gpu: Any, replay: bool
) -> tuple[OpWork, bool]:
    """(the op's work, whether an enclosing op carries it)."""
    if n.carrier is not None:
        carrier = by_range[n.carrier]
        return OpWork(None, f"counted in {carrier.row['name']} (op {op_ids[n.carrier]})"), True
    if rec is None:
        return OpWork(None, "none: no shapes recorded (profile with record_shapes=True)"), False
    return _work_of(rec.op or n.row["name"], rec, gpu, replay), False


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
    cur = by_range.get(n.row["parent_id"]) if n.row.get("parent_id") is not None else None
    while cur is not None and cur.carrier is None:
        if cur.is_op:
            cur.nested.append(n.row["name"])
        cur = by_range.get(cur.row["parent_id"]) if cur.row.get("parent_id") is not None else None


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


def _row(n: _Node, rec: Recorded | None, w: OpWork, op_ids: dict[int, int]) -> dict[str, Any]:
    r = n.row
    start, end = r.get("start_ns"), r.get("end_ns")
    return {
        "op_id": op_ids[r["range_id"]],
        "range_id": r["range_id"],
        "op_name": r["name"],
        "module_path": "/".join(n.modules) or None,
        "nvtx_stack": n.stack,
        "input_dims": _text(rec.dims) if rec else None,
        "input_types": _text(rec.types) if rec else None,
        "concrete_inputs": _text(rec.concrete) if rec else None,
        "dtype": w.dtype,
        "flops": w.flops,
        "flops_source": w.flops_source,
        "bytes": w.bytes,
        "bytes_l2_modelled": w.bytes_l2,
        "bytes_dram_modelled": w.bytes_dram,
        "traffic_model": w.traffic_model,
        "carrier_op_id": op_ids[n.carrier] if n.carrier is not None else None,
        "cpu_time_ns": end - start if start is not None and end is not None else None,
        "start_ns": start,
        "thread": r.get("thread"),
    }


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
    rows, counts = op_rows(ranges.select([c for c in cols if c in ranges.column_names]).to_pylist(), **kw)
    if not rows:
        return pa.Table.from_pylist([], schema=OPS), []
    schema = _without_gpu(OPS)
    ops = pa.Table.from_pylist(rows, schema=pa.schema([f for f in schema if f.name != "run_id"]))
    del rows  # (a dict per op: gone before the GPU times are joined)
    ops = ops.append_column(
        schema.field("run_id"), pa.array([run_id] * ops.num_rows, schema.field("run_id").type)
    )
    times = _gpu_times(sqlscript, ops, arrow.get("kernels"), arrow.get("memops"))
    del ops
    return times.select(OPS.names).cast(OPS), summary(counts)


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
