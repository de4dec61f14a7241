"""Schemas of every table in the store, declared as data.

Each column (:class:`Column`) has a name, a DuckDB type, a ``unit`` (base units: ns, byte, FLOP, FLOP/s, byte/s,
Hz, or empty), a ``description`` and a ``source`` (the raw metric or API call it comes from). Column names carry
their unit (``duration_ns``, ``bytes_dram``, ``flops_fp32``). The schema version is written into every Parquet
file's key-value metadata as ``rooflake.schema_version``.

:data:`COLUMNS` (table -> its columns, in order) and :data:`DESCRIPTIONS` are plain Python: the store's DuckDB
views are typed from them without importing pyarrow (``rl sql`` and ``rl runs`` start without it). The
pyarrow schemas the writers use (:data:`TABLES`, :data:`RUNS`, :data:`KERNELS`, ...; each field's metadata holds
``unit``, ``description``, ``source``) are built from the same declaration on first use
(:func:`arrow_schemas`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa

    RUNS: pa.Schema
    KERNELS: pa.Schema
    METRICS: pa.Schema
    CEILINGS: pa.Schema
    RANGES: pa.Schema
    MEMOPS: pa.Schema
    COVERAGE: pa.Schema
    ESTIMATES: pa.Schema
    OPS: pa.Schema
    SERVING_STEPS: pa.Schema
    GRAPH_KERNELS: pa.Schema
    TABLES: dict[str, pa.Schema]

SCHEMA_VERSION = "1"

# DuckDB types, spelled as rooflake.schema.duck.duck_type spells the Arrow types they map to (arrow_type)
_STR = "VARCHAR"
_I64 = "BIGINT"
_U64 = "UBIGINT"
_F64 = "DOUBLE"
_TS = "TIMESTAMPTZ"  # Arrow: timestamp[us, tz=UTC]
_LABELS = "MAP(VARCHAR, VARCHAR)"
_STRS = "VARCHAR[]"
_F64S = "DOUBLE[]"


class Column(NamedTuple):
    """One declared column: ``name``, ``type`` (DuckDB), ``unit``, ``description``, ``source``."""

    name: str
    type: str
    unit: str
    description: str
    source: str


#: table -> its declared columns, in order (what every Parquet file of the table and its DuckDB view hold)
COLUMNS: dict[str, tuple[Column, ...]] = {}
#: table -> what one row of it is
DESCRIPTIONS: dict[str, str] = {}


def _declare(table: str, cols: list[tuple[str, str, str, str, str]], doc: str) -> None:
    COLUMNS[table] = tuple(Column(*c) for c in cols)
    DESCRIPTIONS[table] = doc


_declare(
    "runs",
    [
        ("run_id", _STR, "", "first 16 hex digits of the SHA-256 of the source file", "sha256(file)"),
        ("source_path", _STR, "", "absolute path of the ingested file", "argument"),
        ("source_sha256", _STR, "", "SHA-256 of the source file", "sha256(file)"),
        ("source_bytes", _I64, "byte", "size of the source file", "stat"),
        (
            "source_format",
            _STR,
            "",
            "ncu-rep | nsys-sqlite | ncu-csv | ert-json | torch-trace",
            "magic bytes",
        ),
        ("producer", _STR, "", "producing tool and version as written in the file", "file text"),
        (
            "source_schema_version",
            _STR,
            "",
            "nsys export schema (META_DATA_EXPORT) or 'none'; NULL for ncu",
            "file",
        ),
        (
            "command_line",
            _STR,
            "",
            "profiler command line as written in the file (NULL if absent)",
            "file text",
        ),
        ("host", _STR, "", "host name of the profiled process", "ncu: IAction metric host name / CSV"),
        ("gpu_name", _STR, "", "GPU name of the first kernel", "device__attribute_display_name"),
        ("compute_capability", _STR, "", "major.minor", "device__attribute_compute_capability_*"),
        ("n_kernels", _I64, "", "number of kernel rows", "count"),
        ("n_metrics", _I64, "", "number of metric values (rows of `metrics`)", "count"),
        (
            "derivation",
            _STR,
            "",
            "JSON: quantity -> formulas (metric names) used over the run's kernels",
            "ingest",
        ),
        (
            "fp16_convention",
            _STR,
            "",
            "FP16 FLOP factors: ncu (hadd 2, hmul 2, hfma 4) or nersc (1,1,2)",
            "option",
        ),
        ("ingested_at", _TS, "", "UTC time of ingest", "clock"),
        ("labels", _LABELS, "", "user labels (--label key=value)", "argument"),
        ("rooflake_version", _STR, "", "rooflake version that wrote the run", "importlib.metadata"),
        ("schema_version", _STR, "", "schema version of the run's tables", "schema"),
        (
            "rank",
            _I64,
            "",
            "rank of the profiled process in its distributed job (--label rank=N overrides; NULL: not said)",
            "torch: distributedInfo.rank",
        ),
        (
            "world_size",
            _I64,
            "",
            "number of ranks of the job (--label world_size=N overrides; NULL: not said)",
            "torch: distributedInfo.world_size",
        ),
        (
            "job",
            _STR,
            "",
            "the distributed job the run is one rank of: the trace's folder name (--label job=NAME overrides)",
            "folder of the file",
        ),
    ],
    "One row per ingested source file.",
)

_declare(
    "kernels",
    [
        ("run_id", _STR, "", "run the kernel belongs to", "runs.run_id"),
        ("kernel_id", _I64, "", "0-based index of the kernel launch in the run (report order)", "ingest"),
        ("range_idx", _I64, "", "ncu range index", "IContext.range_by_idx"),
        ("action_idx", _I64, "", "ncu action index inside its range", "IRange.action_by_idx"),
        ("name", _STR, "", "demangled kernel name", "IAction.name(NameBase_DEMANGLED)"),
        ("short_name", _STR, "", "function base name", "IAction.name(NameBase_FUNCTION)"),
        ("mangled_name", _STR, "", "mangled symbol", "IAction.name(NameBase_MANGLED)"),
        ("grid_x", _I64, "", "grid dimension x", "launch__grid_dim_x"),
        ("grid_y", _I64, "", "grid dimension y", "launch__grid_dim_y"),
        ("grid_z", _I64, "", "grid dimension z", "launch__grid_dim_z"),
        ("block_x", _I64, "", "block dimension x", "launch__block_dim_x"),
        ("block_y", _I64, "", "block dimension y", "launch__block_dim_y"),
        ("block_z", _I64, "", "block dimension z", "launch__block_dim_z"),
        ("grid_size", _I64, "", "blocks per grid", "launch__grid_size"),
        ("block_size", _I64, "", "threads per block", "launch__block_size"),
        ("registers_per_thread", _I64, "", "registers per thread", "launch__registers_per_thread"),
        (
            "shared_mem_static_bytes",
            _I64,
            "byte",
            "static shared memory per block",
            "launch__shared_mem_per_block_static",
        ),
        (
            "shared_mem_dynamic_bytes",
            _I64,
            "byte",
            "dynamic shared memory per block",
            "launch__shared_mem_per_block_dynamic",
        ),
        ("device_id", _I64, "", "CUDA device index", "device__attribute_device_index / launch__device_id"),
        ("context_id", _I64, "", "CUDA context id", "launch__context_id"),
        ("stream_id", _I64, "", "CUDA stream id", "launch__stream_id"),
        ("gpu_name", _STR, "", "GPU name", "device__attribute_display_name"),
        ("compute_capability", _STR, "", "major.minor", "device__attribute_compute_capability_*"),
        (
            "nvtx_path",
            _STR,
            "",
            "domain:outer/inner/leaf of the open push/pop ranges; NULL without ranges",
            "IAction.nvtx_state",
        ),
        (
            "nvtx_stack",
            _STRS,
            "",
            "open push/pop range names, outermost first",
            "IAction.nvtx_state",
        ),
        ("nvtx_domain", _STR, "", "NVTX domain of nvtx_path", "IAction.nvtx_state"),
        (
            "start_ns",
            _I64,
            "ns",
            "GPU start timestamp (NULL: ncu replays kernels in isolation)",
            "nsys: start",
        ),
        ("end_ns", _I64, "ns", "GPU end timestamp (NULL for ncu)", "nsys: end"),
        ("correlation_id", _I64, "", "CUPTI correlation id (nsys)", "nsys: correlationId"),
        ("graph_id", _I64, "", "CUDA graph id of a kernel replayed from a graph (nsys)", "nsys: graphId"),
        ("graph_node_id", _I64, "", "CUDA graph node id (nsys)", "nsys: graphNodeId"),
        ("process_id", _I64, "", "nsys global process id", "nsys: globalPid"),
        (
            "launch_thread",
            _I64,
            "",
            "nsys global thread id of the launching API call",
            "runtime/driver API row",
        ),
        ("launch_start_ns", _I64, "ns", "CPU time of the launching API call", "runtime/driver API row"),
        (
            "launch_api",
            _STR,
            "",
            "launching API function (cudaLaunchKernel, cudaGraphLaunch, ...)",
            "StringIds",
        ),
        (
            "attribution",
            _STR,
            "",
            "how nvtx_path was found: push_pop | start_end | other_thread | no_range_open | no_launch_row | ncu | "
            "external_id (torch trace: the CPU op named by the kernel's External id)",
            "ingest",
        ),
        (
            "nvtx_start_end",
            _STRS,
            "",
            "start/end ranges open in the process at launch time",
            "NVTX_EVENTS",
        ),
        (
            "duration_ns",
            _F64,
            "ns",
            "kernel duration (NaN kept when the report holds NaN)",
            "gpu__time_duration.sum",
        ),
        (
            "flops_fp64",
            _F64,
            "FLOP",
            "FP64 FLOPs: dadd + dmul + 2 dfma",
            "smsp__sass_thread_inst_executed_op_d*_pred_on",
        ),
        (
            "flops_fp32",
            _F64,
            "FLOP",
            "FP32 FLOPs: fadd + fmul + 2 ffma",
            "smsp__sass_thread_inst_executed_op_f*_pred_on",
        ),
        (
            "flops_fp16",
            _F64,
            "FLOP",
            "FP16 FLOPs (factors per runs.fp16_convention)",
            "smsp__sass_thread_inst_executed_op_h*_pred_on",
        ),
        (
            "flops_tensor",
            _F64,
            "FLOP",
            "Tensor Core ops",
            "sm__ops_path_tensor_src_* or sm__inst_executed_pipe_tensor x512",
        ),
        (
            "bytes_l1",
            _F64,
            "byte",
            "L1 bytes (LSU writeback x128, or l1tex__t_bytes)",
            "l1tex__lsu_writeback_active_mem_lg(ds)",
        ),
        ("bytes_l2", _F64, "byte", "L2 bytes (lts2xbar x32, xbar2l1tex reads, or lts__t_bytes)", "lts__*"),
        ("bytes_dram", _F64, "byte", "DRAM/HBM bytes", "dram__bytes.sum"),
        (
            "provenance",
            _LABELS,
            "",
            "quantity -> formula used, or 'NULL: <reason>'; 'tensor_roof' -> the kernel's tensor roof (a ceiling name)",
            "ingest",
        ),
        (
            "flags",
            _STRS,
            "",
            "physics/data flags: nan_duration, nan_metrics, zero_peak, ...; nsys rows: null_start, null_end, "
            "reversed_time (end < start), negative_time, duplicate_correlation_id, duplicate_launch_call",
            "ingest",
        ),
        (
            "invalid_utf8_hex",
            _LABELS,
            "",
            "text columns whose source bytes are not valid UTF-8 -> those raw bytes in hex (the column itself holds "
            "them decoded, each invalid sequence replaced by U+FFFD); NULL when every text was valid",
            "nsys: StringIds.value / CUPTI_ACTIVITY_KIND_KERNEL names",
        ),
    ],
    "One row per profiled kernel launch (ncu action).",
)

_declare(
    "metrics",
    [
        ("run_id", _STR, "", "run", "runs.run_id"),
        ("kernel_id", _I64, "", "kernel", "kernels.kernel_id"),
        ("metric_name", _STR, "", "ncu metric name, verbatim", "IMetric.name"),
        ("unit", _STR, "", "unit as the report gives it (ns, byte, byte/s, inst/cycle, ...)", "IMetric.unit"),
        ("kind", _STR, "", "value kind: double, float, uint32, uint64, string, any, unknown", "IMetric.kind"),
        (
            "value_double",
            _F64,
            "",
            "numeric value (NULL for string metrics and unknown kinds)",
            "IMetric.value",
        ),
        ("value_string", _STR, "", "string value (NULL for numeric metrics)", "IMetric.value"),
        ("value_uint64", _U64, "", "exact integer value for uint32/uint64 kinds", "IMetric.value"),
        (
            "instance_values",
            _F64S,
            "",
            "per-instance numeric values of instanced metrics",
            "IMetric.value(i)",
        ),
        (
            "instance_strings",
            _STRS,
            "",
            "per-instance string values of instanced metrics",
            "IMetric.value(i)",
        ),
        (
            "instance_ids",
            _STRS,
            "",
            "correlation ids of the instances as text (PCs in decimal, opcode names), where present",
            "IMetric.correlation_ids",
        ),
    ],
    "Every metric of every kernel, long format, lossless.",
)

_declare(
    "ceilings",
    [
        ("run_id", _STR, "", "run the ceiling was derived from", "runs.run_id"),
        (
            "kernel_id",
            _I64,
            "",
            "kernel whose clocks give this value (ncu reports per launch)",
            "kernels.kernel_id",
        ),
        ("machine_key", _STR, "", "gpu name | cc | sm clock (MHz)", "ingest"),
        (
            "ceiling",
            _STR,
            "",
            "DRAM, L2, L1, FP64, FP32, FP16, TENSOR <SRC>[→<DST>][ <OP>][ SPARSE] (e.g. TENSOR FP16→FP32)",
            "catalog",
        ),
        ("kind", _STR, "", "bandwidth | compute", "catalog"),
        (
            "value",
            _F64,
            "byte/s or FLOP/s",
            "peak: X.peak_sustained x factor x unit clock",
            "peak_sustained x cycles_elapsed.avg.per_second",
        ),
        ("unit", _STR, "", "byte/s or FLOP/s", "catalog"),
        ("clock_hz", _F64, "Hz", "the unit clock the peak holds at", "<unit>__cycles_elapsed.avg.per_second"),
        ("formula", _STR, "", "metric names used", "catalog"),
        ("source", _STR, "", "ncu-report | ert | ert-spec | datasheet | measured", "ingest"),
        (
            "source_name",
            _STR,
            "",
            "the ceiling's name in its source, verbatim (ERT level or FLOP label: 'MCDRAM', 'FP64 GFLOPs'); "
            "NULL where `formula` names it (ncu)",
            "ERT roofline.json data[i][0]",
        ),
        (
            "measured_at",
            _TS,
            "",
            "UTC time the source measured the value (ERT TIMESTAMP_DATA); NULL where unknown",
            "ERT metadata",
        ),
        (
            "details",
            _STR,
            "",
            "JSON: the source's metadata (ERT: version, host, FLOPs per element, threads, GPU blocks/threads)",
            "source file",
        ),
    ],
    "Machine ceilings (roofs): peak bandwidth per memory level and peak FLOP/s per pipe.",
)

_declare(
    "ranges",
    [
        ("run_id", _STR, "", "run", "runs.run_id"),
        ("range_id", _I64, "", "id in the run: the event's row id in the export", "NVTX_EVENTS.rowid"),
        ("domain", _STR, "", "NVTX domain name ('<default domain>' for the default one)", "NvtxDomainCreate"),
        (
            "name",
            _STR,
            "",
            "range name used in nvtx_path: the text, PyTorch op suffixes (', op_id = ...') cut",
            "text",
        ),
        ("text", _STR, "", "raw NVTX text", "NVTX_EVENTS.text / StringIds"),
        ("kind", _STR, "", "push_pop | start_end | mark", "NVTX_EVENTS.eventType"),
        ("start_ns", _I64, "ns", "start (marks: their time)", "NVTX_EVENTS.start"),
        ("end_ns", _I64, "ns", "end (marks: = start; NULL if never closed)", "NVTX_EVENTS.end"),
        ("thread", _I64, "", "nsys global thread id that opened the range", "NVTX_EVENTS.globalTid"),
        ("process_id", _I64, "", "nsys global process id", "globalTid & ~0xFFFFFF"),
        (
            "end_thread",
            _I64,
            "",
            "thread that ended a start/end range (NULL: same thread)",
            "NVTX_EVENTS.endGlobalTid",
        ),
        (
            "depth",
            _I64,
            "",
            "push/pop nesting depth on its thread and domain, 0 = outermost (NULL for others)",
            "ingest",
        ),
        ("parent_id", _I64, "", "range_id of the enclosing push/pop range (NULL at depth 0)", "ingest"),
        (
            "args",
            _STR,
            "",
            "JSON of the source event's arguments: torch.profiler ops' Input Dims, Input type, Input Strides, "
            "Concrete Inputs (record_shapes), flops (with_flops), plus its Kineto cat; NULL for nsys",
            "torch trace: traceEvents[].args",
        ),
        (
            "flags",
            _STRS,
            "",
            "suspicious source rows: null_start, reversed_time (end < start), negative_time; a push/pop range "
            "with null_start or reversed_time is left out of the nesting (depth NULL); [] when none",
            "ingest",
        ),
        (
            "invalid_utf8_hex",
            _LABELS,
            "",
            "text columns whose source bytes are not valid UTF-8 -> those raw bytes in hex (the column itself holds "
            "them decoded, each invalid sequence replaced by U+FFFD); NULL when every text was valid",
            "NVTX_EVENTS.text / StringIds.value",
        ),
    ],
    "NVTX ranges and marks (Nsight Systems; torch.profiler CPU ops, record_function and module scopes).",
)

_declare(
    "memops",
    [
        ("run_id", _STR, "", "run", "runs.run_id"),
        ("op_id", _I64, "", "0-based id in the run, in start order", "ingest"),
        ("kind", _STR, "", "memcpy | memset", "CUPTI_ACTIVITY_KIND_MEMCPY/MEMSET"),
        ("copy_kind", _I64, "", "CUPTI memcpy kind (1 HtoD, 2 DtoH, 8 DtoD, ...)", "copyKind"),
        ("bytes", _I64, "byte", "bytes copied or set", "bytes"),
        ("start_ns", _I64, "ns", "GPU start", "start"),
        ("end_ns", _I64, "ns", "GPU end", "end"),
        ("duration_ns", _I64, "ns", "end - start", "ingest"),
        ("device_id", _I64, "", "device", "deviceId"),
        ("context_id", _I64, "", "context", "contextId"),
        ("stream_id", _I64, "", "stream", "streamId"),
        ("correlation_id", _I64, "", "CUPTI correlation id", "correlationId"),
        ("process_id", _I64, "", "nsys global process id", "globalPid"),
        ("launch_thread", _I64, "", "thread of the API call", "runtime/driver API row"),
        ("launch_start_ns", _I64, "ns", "CPU time of the API call", "runtime/driver API row"),
        ("nvtx_path", _STR, "", "as kernels.nvtx_path", "ingest"),
        ("nvtx_stack", _STRS, "", "as kernels.nvtx_stack", "ingest"),
        ("nvtx_domain", _STR, "", "as kernels.nvtx_domain", "ingest"),
        ("attribution", _STR, "", "as kernels.attribution", "ingest"),
        (
            "flags",
            _STRS,
            "",
            "suspicious source rows: null_start, null_end, reversed_time (end < start), negative_time, "
            "duplicate_correlation_id, duplicate_launch_call (as kernels.flags); [] when none",
            "ingest",
        ),
    ],
    "GPU memory copies and sets (Nsight Systems): they count in GPU time shares.",
)

_declare(
    "coverage",
    [
        ("run_id", _STR, "", "run", "runs.run_id"),
        ("device_id", _I64, "", "device (shares are per device)", "deviceId"),
        ("op_kind", _STR, "", "kernel | memcpy | memset", "ingest"),
        (
            "attribution",
            _STR,
            "",
            "push_pop | start_end | other_thread | no_range_open | no_launch_row",
            "ingest",
        ),
        ("ops", _I64, "", "GPU operations with this attribution", "count"),
        ("gpu_time_ns", _I64, "ns", "their GPU time", "sum(end - start)"),
        (
            "graph_ops",
            _I64,
            "",
            "of them, replayed from CUDA graphs (attributed through the graph launch)",
            "graphNodeId",
        ),
        (
            "graph_ops_matched",
            _I64,
            "",
            "of the graph_ops, kernels matched to a kernel launch of the capture trace, hence to its captured op "
            "(NULL: no capture trace given)",
            "rl ingest --capture",
        ),
        (
            "graph_ops_unmatched",
            _I64,
            "",
            "of the graph_ops, kernels matched to no captured launch: no op, no FLOPs (NULL: no capture trace given)",
            "rl ingest --capture",
        ),
    ],
    "NVTX attribution coverage of each run: which GPU work lies under a range, and why the rest does not.",
)

_declare(
    "estimates",
    [
        ("run_id", _STR, "", "run (source_format 'torch-model')", "runs.run_id"),
        ("op_id", _I64, "", "0-based order of the op in the traced step", "estimate"),
        (
            "module_path",
            _STR,
            "",
            "innermost module running the op, as named_modules() names it ('' = the model itself); "
            "the NVTX range name rooflake.instrument.annotate pushes",
            "torch.utils.module_tracker",
        ),
        ("phase", _STR, "", "forward | backward", "torch autograd"),
        ("op", _STR, "", "ATen operator (aten.convolution, aten.addmm, ...)", "torch dispatch"),
        (
            "dtype",
            _STR,
            "",
            "dtype of the op's first floating-point input (float32, bfloat16, ...)",
            "tensor",
        ),
        ("input_shapes", _STRS, "", "shape of each tensor input, e.g. '1x3x224x224'", "tensor"),
        ("output_shapes", _STRS, "", "shape of each tensor output", "tensor"),
        (
            "flops",
            _F64,
            "FLOP",
            "analytic FLOPs of the op (modelled; NULL where no formula is known, see flops_source)",
            "flops_source",
        ),
        (
            "flops_source",
            _STR,
            "",
            "torch.utils.flop_counter (PyTorch's own formula) | rooflake:<rule> (ours) | "
            "none: <why> (no formula: flops NULL)",
            "estimate",
        ),
        (
            "bytes_compulsory",
            _I64,
            "byte",
            "every tensor input (weights included) and output of the op once, at its dtype; 0 for views",
            "shapes x element size",
        ),
        (
            "bytes_l1",
            _F64,
            "byte",
            "modelled L1 traffic (DeLTA-style; NULL: no traffic model for the op)",
            "traffic_model",
        ),
        ("bytes_l2", _F64, "byte", "modelled L2 traffic (NULL: no traffic model)", "traffic_model"),
        (
            "bytes_dram",
            _F64,
            "byte",
            "modelled DRAM traffic (NULL: no traffic model, or no GPU given: L2 size unknown)",
            "traffic_model",
        ),
        ("traffic_model", _STR, "", "delta-conv | delta-gemm | flash-attention | NULL", "estimate"),
        ("assumptions", _STR, "", "tile, CTAs, reuse factors and GPU the traffic model assumed", "estimate"),
    ],
    "Analytic per-op estimates of a model (modelled, not measured): FLOPs, compulsory bytes, DeLTA-style traffic.",
)


_declare(
    "ops",
    [
        (
            "run_id",
            _STR,
            "",
            "run (a torch.profiler trace, or an nsys run whose NVTX texts carry shapes)",
            "runs.run_id",
        ),
        ("op_id", _I64, "", "0-based order of the op in the run (by start time)", "ingest"),
        ("range_id", _I64, "", "the op's row of `ranges`", "ranges.range_id"),
        (
            "op_name",
            _STR,
            "",
            "operator as recorded (aten::addmm, aten::conv2d, ...)",
            "cpu_op name / NVTX text",
        ),
        (
            "module_path",
            _STR,
            "",
            "the nn.Module scopes enclosing the op, outermost first, joined by '/' (torch: with_modules' "
            "'nn.Module: <Class>_<n>' scopes; nsys: the innermost enclosing range that is not an op); NULL: none",
            "ranges",
        ),
        (
            "nvtx_stack",
            _STRS,
            "",
            "names of the ranges enclosing the op and its own, outermost first",
            "ranges",
        ),
        (
            "input_dims",
            _STR,
            "",
            "the input dims as the trace writes them (JSON text; nsys: the sizes text)",
            "Input Dims",
        ),
        ("input_types", _STR, "", "the input types as the trace writes them (JSON text)", "Input type"),
        (
            "concrete_inputs",
            _STR,
            "",
            "the scalar inputs as the trace writes them (JSON text)",
            "Concrete Inputs",
        ),
        (
            "dtype",
            _STR,
            "",
            "dtype of the op's first floating-point input (float32, bfloat16, ...)",
            "Input type",
        ),
        (
            "flops",
            _F64,
            "FLOP",
            "modelled FLOPs from the recorded shapes; NULL where no rule applies or the op's chain counts them in "
            "another op (see flops_source): sum(flops) over a run is its modelled work, each op counted once",
            "flops_source",
        ),
        (
            "flops_source",
            _STR,
            "",
            "whose rule: torch.utils.flop_counter (replayed on meta tensors) | rooflake:builtin <formula> | "
            "rooflake:<rule> | counted in <op> (op <id>) | counted in its nested ops | none: <why>",
            "rooflake.instrument.shapes",
        ),
        (
            "bytes",
            _I64,
            "byte",
            "modelled compulsory bytes: every tensor input and the output once (NULL with flops, or where the "
            "output's shape is not known)",
            "shapes x element size",
        ),
        (
            "bytes_l2_modelled",
            _F64,
            "byte",
            "modelled L2 traffic (DeLTA-style; NULL: no traffic model)",
            "traffic_model",
        ),
        (
            "bytes_dram_modelled",
            _F64,
            "byte",
            "modelled DRAM traffic (NULL: no traffic model, or the GPU's L2 size unknown)",
            "traffic_model",
        ),
        (
            "traffic_model",
            _STR,
            "",
            "delta-gemm | delta-conv | flash-attention | NULL",
            "rooflake.instrument.traffic",
        ),
        (
            "carrier_op_id",
            _I64,
            "",
            "the op of the chain that carries this op's work (itself when it does; NULL: no op of its chain does)",
            "ingest",
        ),
        (
            "kernels",
            _I64,
            "",
            "GPU kernels launched while the op was open on its thread (nested ops too)",
            "kernels",
        ),
        (
            "gpu_ops",
            _I64,
            "",
            "kernels, memcpys and memsets launched while the op was open",
            "kernels, memops",
        ),
        (
            "gpu_time_ns",
            _I64,
            "ns",
            "sum of the durations of those kernels, memcpys and memsets (measured; NULL: none launched)",
            "kernels.duration_ns, memops.duration_ns",
        ),
        ("cpu_time_ns", _I64, "ns", "the op's own CPU duration, nested ops included (measured)", "ranges"),
        ("start_ns", _I64, "ns", "the op's CPU start", "ranges.start_ns"),
        ("thread", _I64, "", "thread the op ran on", "ranges.thread"),
        (
            "graph_launch",
            _I64,
            "",
            "an op replayed from a CUDA graph: the correlation id of the graph launch whose kernels ran it (its "
            "work and shapes those of the op captured in the capture trace, start_ns/thread the launch call's); "
            "NULL: an op recorded in this trace",
            "rl ingest --capture",
        ),
        (
            "captured_op_id",
            _I64,
            "",
            "a replayed op: the op_id of the captured op in the capture trace (NULL: a recorded op)",
            "rl ingest --capture",
        ),
    ],
    "Recorded operators of a trace with their modelled work from the recorded shapes (FLOPs, bytes) and their "
    "measured time (kernels launched, CPU time).",
)

_declare(
    "serving_steps",
    [
        ("run_id", _STR, "", "run", "runs.run_id"),
        ("step_id", _I64, "", "0-based order of the step in the run (by start time)", "ingest"),
        ("range_id", _I64, "", "the step's row of `ranges`", "ranges.range_id"),
        ("name", _STR, "", "the step range's name, as the server wrote it", "ranges.name"),
        (
            "format",
            _STR,
            "",
            "vllm | vllm-roofline | sglang | sglang-roofline | atom | atom-roofline | unknown (counts NULL)",
            "rooflake.ingest.steps",
        ),
        ("phase", _STR, "", "prefill | decode | mixed (NULL: the name does not say, or no request)", "name"),
        ("prefill_requests", _I64, "", "context (prefill) requests in the step", "name"),
        ("prefill_tokens", _I64, "token", "their query tokens (sum of N_Q)", "name"),
        ("decode_requests", _I64, "", "generation (decode) requests in the step", "name"),
        (
            "decode_tokens",
            _I64,
            "token",
            "their query tokens (sum of N_Q; > requests with speculative decoding)",
            "name",
        ),
        ("context_tokens", _I64, "token", "KV tokens attended to, all requests (sum of N_KV)", "name"),
        ("sum_q_sq", _I64, "token^2", "sum of N_Q^2 over the requests (attention's causal part)", "name"),
        ("sum_q_kv", _I64, "token^2", "sum of N_Q * N_KV over the requests (attention's work)", "name"),
        ("start_ns", _I64, "ns", "the step range's start", "ranges.start_ns"),
        ("end_ns", _I64, "ns", "the step range's end", "ranges.end_ns"),
        ("thread", _I64, "", "thread the step ran on", "ranges.thread"),
    ],
    "LLM serving engine steps (vLLM, SGLang, ATOM step ranges) with the batch makeup their names carry.",
)

_declare(
    "graph_kernels",
    [
        ("run_id", _STR, "", "run (the execution trace)", "runs.run_id"),
        ("kernel_id", _I64, "", "the replayed kernel", "kernels.kernel_id"),
        (
            "graph_launch",
            _I64,
            "",
            "correlation id of the graph launch that replayed it",
            "kernels.correlation_id",
        ),
        ("graph_node", _I64, "", "0-based order of the kernel in its replay (GPU start order)", "ingest"),
        (
            "captured_graph",
            _I64,
            "",
            "0-based capture of the capture trace the replay was matched to",
            "ingest",
        ),
        (
            "captured_node",
            _I64,
            "",
            "0-based order of the matched launch in that capture (NULL: unmatched)",
            "ingest",
        ),
        (
            "captured_op_id",
            _I64,
            "",
            "op_id (capture trace) of the op carrying the matched launch's work",
            "ingest",
        ),
        (
            "op_id",
            _I64,
            "",
            "the replayed op of this run's `ops` (NULL: unmatched, or launched under no op)",
            "ops.op_id",
        ),
        (
            "match",
            _STR,
            "",
            "matched (same kernel, same place in the order) | reordered (same kernel, another place) | by_order "
            "(the capture names no kernels: same place in a capture of as many launches) | unmatched",
            "ingest",
        ),
        ("capture_source", _STR, "", "file name of the capture trace", "rl ingest --capture"),
    ],
    "Kernels replayed from CUDA graphs, each matched to the launch and op of the trace that captured the graph.",
)


#: the module attributes that are pyarrow schemas (built on first use), and the table each is
_ARROW_NAMES = {name.upper(): name for name in COLUMNS}


@functools.cache
def arrow_schemas() -> dict[str, pa.Schema]:
    """``{table: pyarrow.Schema}`` of every table, from :data:`COLUMNS` (types by
    :func:`rooflake.schema.duck.arrow_type`; field metadata ``unit``, ``description``, ``source``; schema metadata
    ``description`` and ``rooflake.schema_version``). Built once; imports pyarrow."""
    import pyarrow as pa

    from rooflake.schema.duck import arrow_type

    out = {}
    for table, cols in COLUMNS.items():
        fields = [
            pa.field(
                c.name,
                arrow_type(c.type),
                metadata={"unit": c.unit, "description": c.description, "source": c.source},
            )
            for c in cols
        ]
        meta = {"description": DESCRIPTIONS[table], "rooflake.schema_version": SCHEMA_VERSION}
        out[table] = pa.schema(fields, metadata=meta)
    return out


def __getattr__(name: str) -> Any:
    """``TABLES`` and the per-table schemas (``RUNS``, ``KERNELS``, ...): pyarrow schemas, built on first use."""
    if name == "TABLES":
        return arrow_schemas()
    if name in _ARROW_NAMES:
        return arrow_schemas()[_ARROW_NAMES[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
