"""CUDA graphs: the kernels an execution trace replays from a graph, matched to the ops of the trace that captured it.

A kernel replayed from a CUDA (or HIP) graph has no CPU op and no shapes in the execution trace: Kineto files all the
kernels of one replay under the ``cudaGraphLaunch``/``hipGraphLaunch`` call (its correlation id), and names no graph
or graph node (checked on vLLM's FULL and PIECEWISE traces in TraceLens' tests). The capture trace
(``torch.profiler`` around the graph capture) has the ops with their shapes, and each captured launch call between
``cudaStreamBeginCapture`` and ``cudaStreamEndCapture`` on one thread (one capture = one graph), but no kernel ran
then. So a replay is matched to a capture by the kernel names it runs (ROCm names the kernel of each launch call;
CUDA's runtime events do not), and then kernel by kernel:

- the replay's capture: the capture at the same position among those of identical kernel names (a run replays
  its pieces in capture order), else the one of most names in common (``difflib`` ratio; ties: nearest position);
  without kernel names in the capture, the nearest capture of as many launches;
- each kernel: ``matched`` where the longest common subsequence of names pairs it with a launch, ``reordered``
  where a launch of the same name is left elsewhere in the capture, ``by_order`` (no names: the same position),
  else ``unmatched`` (no op, no FLOPs, counted in ``coverage.graph_ops_unmatched``).

A matched launch's op is the innermost captured op open on its thread when it was called, and its work that of the
op carrying that op's chain (``ops.carrier_op_id``). One replayed op row is added to the execution run's ``ops`` per
(graph launch, carrying op), with the captured op's shapes and modelled work and the replayed kernels' GPU time.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BEGIN, END = "StreamBeginCapture", "StreamEndCapture"
GRAPH_LAUNCH = "GraphLaunch"


@dataclass(frozen=True)
class Matched:
    """One replayed kernel's match: the capture (index), the launch in it (None: unmatched) and how."""

    capture: int | None
    node: int | None
    how: str  # matched | reordered | by_order | unmatched


def captures(calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The kernel launch calls of each capture in runtime ``calls`` (:func:`rooflake.ingest.torch_trace.runtime_calls`
    rows, in start order): those on the capturing thread between a ``*StreamBeginCapture*`` call and the next
    ``*StreamEndCapture*``, launch APIs only (``*Launch*Kernel*``), in call order; captures in start order."""
    open_: dict[Any, list[dict[str, Any]]] = {}
    out: list[list[dict[str, Any]]] = []
    for c in calls:
        api, thread = c["api"], c["thread"]
        if BEGIN in api:
            open_[thread] = []
        elif END in api and thread in open_:
            out.append(open_.pop(thread))
        elif thread in open_ and "Launch" in api and "Kernel" in api:
            open_[thread].append(c)
    return out


def _pick(
    i: int, names: list[str], caps: list[list[str | None]], used: dict[tuple[str, ...], int]
) -> int | None:
    """The capture replay ``i`` (kernel ``names``) replays (see the module docstring); ``used`` counts the replays
    already given to each kernel-name sequence."""
    same = [j for j, c in enumerate(caps) if c == names]
    if same:
        k = used.get(tuple(names), 0)
        used[tuple(names)] = k + 1
        return same[k % len(same)]
    named = [j for j, c in enumerate(caps) if any(n is not None for n in c)]
    if named:
        score = {j: difflib.SequenceMatcher(None, caps[j], names, autojunk=False).ratio() for j in named}
        best = max(score.values())
        return min(
            (j for j in named if score[j] == best and best > 0), key=lambda j: abs(j - i), default=None
        )
    sized = [j for j, c in enumerate(caps) if len(c) == len(names)]
    return min(sized, key=lambda j: abs(j - i), default=None)


def match(replays: list[list[str]], caps: list[list[str | None]]) -> list[list[Matched]]:
    """Each replayed kernel of ``replays`` (per graph launch in launch order, its kernel names in GPU start order)
    matched to a launch of ``caps`` (per capture in capture order, the kernel names of its launch calls, None where
    the trace names none): one :class:`Matched` per kernel, rules in the module docstring."""
    used: dict[tuple[str, ...], int] = {}
    out = []
    for i, names in enumerate(replays):
        j = _pick(i, names, caps, used)
        out.append(
            _align(names, caps[j], j) if j is not None else [Matched(None, None, "unmatched")] * len(names)
        )
    return out


def _align(names: list[str], cap: list[str | None], j: int) -> list[Matched]:
    """Kernel by kernel: the longest common subsequence, then same-name launches left over, else unmatched."""
    if all(n is None for n in cap):
        if len(cap) == len(names):
            return [Matched(j, k, "by_order") for k in range(len(names))]
        return [Matched(j, None, "unmatched")] * len(names)
    got: list[Matched | None] = [None] * len(names)
    taken: set[int] = set()
    for a, b, size in difflib.SequenceMatcher(None, cap, names, autojunk=False).get_matching_blocks():
        for d in range(size):
            got[b + d] = Matched(j, a + d, "matched")
            taken.add(a + d)
    free: dict[str | None, list[int]] = defaultdict(list)
    for a, n in enumerate(cap):
        if a not in taken:
            free[n].append(a)
    for b, n in enumerate(names):
        if got[b] is None:
            got[b] = Matched(j, free[n].pop(0), "reordered") if free.get(n) else Matched(j, None, "unmatched")
    return [g for g in got if g is not None]


def launch_ops(launches: list[dict[str, Any]], ops: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """For each launch call (thread, start_ns) the innermost op of ``ops`` (rows of ``ops``: thread, start_ns,
    cpu_time_ns, ...) open on its thread at that time, or None."""
    by_thread: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for o in ops:
        if o["start_ns"] is not None and o["cpu_time_ns"] is not None:
            by_thread[o["thread"]].append(o)
    for seq in by_thread.values():
        seq.sort(key=lambda o: (o["start_ns"], -o["cpu_time_ns"]))
    out: list[dict[str, Any] | None] = []
    for c in launches:
        best = None
        for o in by_thread.get(c["thread"], ()):
            if o["start_ns"] > c["start_ns"]:
                break
            if c["start_ns"] < o["start_ns"] + o["cpu_time_ns"]:
                best = o  # (a later start inside is a nested op: innermost last)
        out.append(best)
    return out


def replay_groups(kernels: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The replayed kernels (``kernels`` rows launched by a ``*GraphLaunch*`` call) per graph launch (its
    correlation id), launches in launch-call order, kernels in GPU start order."""
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for k in kernels:
        if GRAPH_LAUNCH in str(k.get("launch_api") or "") and k.get("correlation_id") is not None:
            groups[k["correlation_id"]].append(k)
    for g in groups.values():
        g.sort(key=lambda k: (k["start_ns"] is None, k["start_ns"] or 0, k["kernel_id"]))
    return sorted(groups.values(), key=lambda g: (g[0].get("launch_start_ns") or 0, g[0]["correlation_id"]))


def with_capture(out: dict[str, Any], capture: str | Path, run_id: str) -> dict[str, Any]:
    """An execution trace's tables (``out``: a torch.profiler reader's, with ``ops``) with its graph-replayed
    kernels matched to the capture trace ``capture``: table ``graph_kernels`` (:data:`rooflake.schema.GRAPH_KERNELS`),
    the replayed ops added to ``ops``, ``coverage.graph_ops_matched``/``graph_ops_unmatched`` filled, and a summary
    line in ``run["warnings"]``. Raises :class:`InputError` for a capture that is not a readable torch.profiler
    trace or holds no graph capture."""
    from rooflake.ingest import ops as ops_mod
    from rooflake.ingest import torch_trace
    from rooflake.ingest.messages import shown
    from rooflake.schema import InputError

    if torch_trace.sniff(capture) != "torch-trace":
        raise InputError(
            f"{shown(capture)}: --capture takes the torch.profiler trace of the CUDA graph capture"
        )
    cap_out = ops_mod.with_ops(torch_trace.read(capture, run_id="capture"), "capture")
    caps = captures(torch_trace.runtime_calls(capture))
    if not caps:
        raise InputError(
            f"{shown(capture)}: no CUDA graph capture in it (no cudaStreamBeginCapture/EndCapture pair): profile the "
            "graph capture (vLLM: the capture phase at start-up) and give that trace"
        )
    return replayed_tables(out, run_id, caps, cap_out["ops"].to_pylist(), Path(capture).name)


_KERNEL_COLS = ("kernel_id", "name", "start_ns", "duration_ns", "device_id", "attribution", "correlation_id",
                "launch_api", "launch_start_ns", "launch_thread", "nvtx_stack")  # fmt: skip


def replayed_tables(
    out: dict[str, Any],
    run_id: str,
    caps: list[list[dict[str, Any]]],
    cap_ops: list[dict[str, Any]],
    source: str,
) -> dict[str, Any]:
    """:func:`with_capture` once the capture is read: ``caps`` (:func:`captures`), ``cap_ops`` (the capture's ``ops``
    rows), ``source`` (its file name)."""
    import pyarrow as pa

    from rooflake.schema import GRAPH_KERNELS, OPS

    groups = replay_groups(out["kernels"].select(list(_KERNEL_COLS)).to_pylist())
    matches = match([[k["name"] for k in g] for g in groups], [[c["kernel"] for c in cap] for cap in caps])
    by_op = {o["op_id"]: o for o in cap_ops}
    launch_op = [launch_ops(cap, cap_ops) for cap in caps]
    rows: list[dict[str, Any]] = []
    replayed: dict[tuple[Any, Any], dict[str, Any]] = {}
    first_id = out["ops"].num_rows
    for g, ms in zip(groups, matches, strict=True):
        for node, (k, m) in enumerate(zip(g, ms, strict=True)):
            op = launch_op[m.capture][m.node] if m.capture is not None and m.node is not None else None
            carrier = by_op.get(op["carrier_op_id"], op) if op is not None else None
            op_id = None
            if carrier is not None:
                key = (k["correlation_id"], carrier["op_id"])
                if key not in replayed:
                    replayed[key] = _replayed_op(first_id + len(replayed), carrier, k, run_id)
                _add_kernel(replayed[key], k)
                op_id = replayed[key]["op_id"]
            rows.append({"run_id": run_id, "kernel_id": k["kernel_id"], "graph_launch": k["correlation_id"],
                         "graph_node": node, "captured_graph": m.capture, "captured_node": m.node,
                         "captured_op_id": carrier["op_id"] if carrier else None, "op_id": op_id, "match": m.how,
                         "capture_source": source})  # fmt: skip
    ops = pa.concat_tables([out["ops"], pa.Table.from_pylist(list(replayed.values()), schema=OPS)])
    coverage = _coverage(out["coverage"], groups, rows)
    run = out["run"]
    run["n_ops"] = ops.num_rows
    run["warnings"] = [*run.get("warnings", []), _summary(rows, len(groups), len(replayed), source)]
    return {
        **out,
        "ops": ops,
        "coverage": coverage,
        "graph_kernels": pa.Table.from_pylist(rows, schema=GRAPH_KERNELS),
    }


def _replayed_op(op_id: int, c: dict[str, Any], k: dict[str, Any], run_id: str) -> dict[str, Any]:
    """A replayed op row of ``ops``: the captured (carrying) op ``c``'s shapes and work, the first kernel ``k``'s
    launch call for its place (thread, start, NVTX stack)."""
    keep = ("op_name", "module_path", "input_dims", "input_types", "concrete_inputs", "dtype", "flops",
            "flops_source", "bytes", "bytes_l2_modelled", "bytes_dram_modelled", "traffic_model")  # fmt: skip
    return {**{f: c.get(f) for f in keep}, "run_id": run_id, "op_id": op_id, "range_id": None,
            "nvtx_stack": [*(k.get("nvtx_stack") or []), c["op_name"]],
            "carrier_op_id": op_id if c.get("flops") is not None else None, "kernels": 0, "gpu_ops": 0,
            "gpu_time_ns": 0, "cpu_time_ns": None, "start_ns": k.get("launch_start_ns"),
            "thread": k.get("launch_thread"), "graph_launch": k["correlation_id"], "captured_op_id": c["op_id"]}  # fmt: skip


def _add_kernel(row: dict[str, Any], k: dict[str, Any]) -> None:
    row["kernels"] += 1
    row["gpu_ops"] += 1
    row["gpu_time_ns"] += round(k["duration_ns"] or 0)


def _coverage(coverage: Any, groups: list[list[dict[str, Any]]], rows: list[dict[str, Any]]) -> Any:
    """The ``coverage`` table with graph_ops_matched / graph_ops_unmatched per (device, kernel, attribution)."""
    import pyarrow as pa

    how = {r["kernel_id"]: r["match"] for r in rows}
    counts: dict[tuple[Any, Any], list[int]] = defaultdict(lambda: [0, 0])
    for g in groups:
        for k in g:
            counts[k["device_id"], k["attribution"]][how[k["kernel_id"]] == "unmatched"] += 1
    out = []
    for r in coverage.to_pylist():
        c = counts.get((r["device_id"], r["attribution"]), [0, 0]) if r["op_kind"] == "kernel" else [0, 0]
        out.append({**r, "graph_ops_matched": c[0], "graph_ops_unmatched": c[1]})
    return pa.Table.from_pylist(out, schema=coverage.schema)


def _summary(rows: list[dict[str, Any]], launches: int, ops: int, source: str) -> str:
    n: dict[str, int] = defaultdict(int)
    for r in rows:
        n[r["match"]] += 1
    unmatched = n["unmatched"]
    return (
        f"{len(rows)} kernels replayed by {launches} CUDA graph launches, matched to the capture {source}: "
        f"{n['matched']} in order, {n['reordered']} reordered, {n['by_order']} by position, {unmatched} unmatched "
        f"(no op, no FLOPs); {ops} replayed ops added to ops"
    )


def replay_note(kernels: Any) -> list[str]:
    """The ingest summary's line for a trace whose replayed kernels have no capture to match (``kernels``: the
    ``kernels`` pa.Table); [] when it replays none."""
    import pyarrow.compute as pc

    if "launch_api" not in kernels.column_names or kernels.num_rows == 0:
        return []
    replayed = pc.sum(
        pc.fill_null(pc.match_substring(kernels.column("launch_api"), GRAPH_LAUNCH), False)
    ).as_py()
    if not replayed:
        return []
    return [
        f"{replayed} kernels replayed from CUDA graphs have no op and no shapes: their FLOPs are unknown; give the "
        "trace of the graph capture with --capture CAPTURE_TRACE"
    ]
