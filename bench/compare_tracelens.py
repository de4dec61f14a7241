"""Side by side with TraceLens: rooflake's per-op FLOPs, bytes and kernel time against TraceLens' perf reports.

TraceLens (github.com/AMD-AGI/TraceLens) ships H100 torch.profiler traces with the perf reports its perf model
wrote for them (``tests/traces/h100/<trace>.json.gz`` and ``<trace>_perf_report_csvs/*.csv``). This script reads
them out of a bare git copy of that repository into a temporary folder (nothing of TraceLens is written into this
tree), ingests each trace with rooflake into a temporary store, and joins, for every row of TraceLens' per-category
sheets (GEMM, SDPA_fwd, CONV_fwd, BinaryElementwise, UnaryElementwise, Normalization, Reduce_fwd), rooflake's
``op_summary`` through the ``ops`` table:

- a TraceLens row names an op and its ``Input Dims`` / ``Input type`` (its first call's); the rooflake ops of the
  same name, dims and types are its calls;
- each call is followed to the op that carries its chain's work in rooflake: itself when it carries, the op
  ``carrier_op_id`` names when its ``flops_source`` is ``counted in X (op N)`` (TraceLens' ``aten::addmm`` inside
  rooflake's ``aten::linear``), or, for an op without a rule whose nested ops carry (``counted in its nested ops``:
  ``aten::layer_norm`` over ``aten::native_layer_norm``), the outermost carrying ops nested in it (by the
  ``ranges`` nesting);
- the carrying ops' FLOPs and bytes per call come from ``op_summary`` (its group of the carrier's name, dims and
  types), the kernel time of the call is the carrying ops' ``gpu_time_ns`` (the kernels launched under them).

Each difference is classified by TraceLens' own formulas (``TraceLens/PerfModel/perf_model.py``): see
:func:`classify`. Usage::

    python bench/compare_tracelens.py [--mirror GIT_DIR] [--out FILE.md] [--select]

``--select`` prints the short table for the docs (a few rows per category and every kind of difference) instead
of every row.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import math
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIRROR = Path("/work/.mirror/AMD-AGI+TraceLens/repo")
TRACES = "tests/traces/h100"
SHEETS = [
    "GEMM",
    "SDPA_fwd",
    "CONV_fwd",
    "BinaryElementwise",
    "UnaryElementwise",
    "Normalization",
    "Reduce_fwd",
]
MIB = 1024 * 1024  # TraceLens' "Data Moved (MB)" is bytes / 2**20
EXACT = 1e-6  # |ratio - 1| below this: equal (a bias of M·N in 2·M·N·K is 1/(2K), 1.6e-4 at K = 3072)


# ---------------------------------------------------------------- TraceLens' files


def extract(mirror: Path, dst: Path) -> tuple[list[Path], list[str]]:
    """The H100 traces that come with a perf report, written under ``dst``; and the files the mirror lacks."""
    git = ["git", f"--git-dir={mirror}"]
    names = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", "HEAD", TRACES], check=True, capture_output=True, text=True
    ).stdout.split()
    missing = []
    for name in names:
        out = dst / name
        out.parent.mkdir(parents=True, exist_ok=True)
        got = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True)
        if got.returncode != 0:
            missing.append(name)
            continue
        out.write_bytes(got.stdout)
    traces = sorted(p for p in (dst / TRACES).glob("*.json.gz") if _report_dir(p).is_dir())
    return traces, missing


def _report_dir(trace: Path) -> Path:
    return trace.with_name(trace.name.removesuffix(".json.gz") + "_perf_report_csvs")


def _key(dims: Any, types: Any) -> str:
    """One spelling of (Input Dims, Input type) for both sides: JSON of lists."""

    def lists(v: Any) -> Any:
        return [lists(x) for x in v] if isinstance(v, (list, tuple)) else v

    return json.dumps([lists(dims), lists(types)])


def _strides(v: Any) -> str:
    """Input Strides in one spelling (TraceLens writes tuples, the trace lists)."""
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return ""
    return _key(v, None) if v is not None else ""


def _num(v: str) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


@dataclass
class TlRow:
    sheet: str
    name: str
    dims: str  # the trace's Input Dims as TraceLens writes them
    key: str
    strides: str
    calls: int
    gflops: float | None
    mib: float | None
    us_mean: float | None
    us_sum: float | None
    params: dict[str, str]


def tracelens_rows(report: Path) -> list[TlRow]:
    rows = []
    for sheet in SHEETS:
        f = report / f"{sheet}.csv"
        if not f.is_file():
            continue
        with f.open(newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                dims = ast.literal_eval(r["Input Dims_first"])
                types = ast.literal_eval(r["Input type_first"])
                rows.append(
                    TlRow(
                        sheet, r["name"], r["Input Dims_first"], _key(dims, types),
                        _strides(r.get("Input Strides_first")), int(float(r["name_count"])),
                        _num(r["GFLOPS_first"]), _num(r["Data Moved (MB)_first"]),
                        _num(r["Kernel Time (µs)_mean"]), _num(r["Kernel Time (µs)_sum"]),
                        {k.removeprefix("param: "): v for k, v in r.items() if k.startswith("param: ")},
                    )
                )  # fmt: skip
    return rows


# ---------------------------------------------------------------- rooflake's side


@dataclass
class Ours:
    calls: int = 0
    flops: list[float | None] = field(default_factory=list)
    bytes: list[float | None] = field(default_factory=list)
    gpu_ns: list[float] = field(default_factory=list)
    via: set[str] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)
    inner: int = (
        0  # calls inside a chain that another TraceLens row's op carries (compared by their own rule)
    )


class Run:
    """One ingested trace: its ops, their nesting, and op_summary by (op_name, input_dims, input_types)."""

    def __init__(self, store: Path, run_id: str) -> None:
        from rooflake.queries import connect, fetch
        from rooflake.store import Store

        con = connect(Store(store))
        cur = con.execute(
            "SELECT op_id, range_id, op_name, input_dims, input_types, concrete_inputs, flops, bytes, flops_source, "
            "carrier_op_id, gpu_time_ns FROM ops WHERE run_id = ?",
            [run_id],
        )
        cols = [d[0] for d in cur.description]
        self.ops = {r[0]: dict(zip(cols, r, strict=True)) for r in cur.fetchall()}
        parents, strides = {}, {}
        for range_id, parent_id, args in con.execute(
            "SELECT range_id, parent_id, args FROM ranges WHERE run_id = ?", [run_id]
        ).fetchall():
            parents[range_id] = parent_id
            try:
                strides[range_id] = _strides(json.loads(args).get("Input Strides"))
            except (TypeError, ValueError, AttributeError):
                strides[range_id] = ""
        self.strides = {i: strides.get(r["range_id"], "") for i, r in self.ops.items()}
        op_of_range = {r["range_id"]: i for i, r in self.ops.items()}
        self.children: dict[int, list[int]] = defaultdict(list)  # op -> ops nested directly (through non-ops)
        self.parent: dict[int, int] = {}
        for i, r in self.ops.items():
            p = parents.get(r["range_id"])
            while p is not None and p not in op_of_range:
                p = parents.get(p)
            if p is not None:
                self.children[op_of_range[p]].append(i)
                self.parent[i] = op_of_range[p]
        self.by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, r in self.ops.items():
            self.by_key[(r["op_name"], _key(json.loads(r["input_dims"] or "null"), json.loads(r["input_types"] or "null")))].append(i)  # fmt: skip
        self.summary = {
            (r["op_name"], r["input_dims"], r["input_types"]): r
            for r in fetch(con, "op_summary", {"run_id": run_id}).to_pylist()
        }

    def carriers(self, op_id: int) -> list[int]:
        """The ops carrying ``op_id``'s chain: its carrier, or the outermost carrying ops nested in it."""
        r = self.ops[op_id]
        if r["carrier_op_id"] is not None:
            return [r["carrier_op_id"]]
        if not (r["flops_source"] or "").startswith("counted in its nested ops"):
            return [op_id]  # no rule and nothing nested carries: the op itself, FLOPs NULL
        out, todo = [], list(self.children.get(op_id, []))
        while todo:
            c = todo.pop()
            if self.ops[c]["carrier_op_id"] == c:
                out.append(c)
            else:
                todo.extend(self.children.get(c, []))
        return sorted(out)

    def depth(self, op_id: int) -> int:
        d = 0
        while op_id in self.parent:
            op_id, d = self.parent[op_id], d + 1
        return d

    def calls(self, row: TlRow) -> list[int]:
        """The calls of ``row``: its name, dims and types; and its strides where TraceLens has rows that differ
        only there (its sheets group by strides too)."""
        calls = self.by_key.get((row.name, row.key), [])
        if (row.name, row.key) in self.split:
            calls = [c for c in calls if self.strides[c] == row.strides]
        return calls

    split: set[tuple[str, str]] = (
        set()
    )  # (name, dims and types) of TraceLens rows that differ by strides only

    def inner(self, rows: list[TlRow]) -> set[int]:
        """The calls of TraceLens rows whose rooflake chain also holds a call of another TraceLens row nearer its
        top (the bias ``aten::add_`` of an ``aten::conv2d`` beside its ``aten::convolution``, the ``aten::copy_``
        of an ``aten::matmul`` beside its ``aten::bmm``): rooflake counts that chain once, on the outer one."""
        seen = defaultdict(int)
        for row in rows:
            seen[(row.name, row.key)] += 1
        self.split = {k for k, n in seen.items() if n > 1}
        chains: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for row in rows:
            for op_id in self.calls(row):
                chains[tuple(self.carriers(op_id))].append(op_id)
        out: set[int] = set()
        for calls in chains.values():
            if len(calls) > 1:
                top = min(calls, key=lambda c: (self.depth(c), c))
                out |= set(calls) - {top}
        return out

    def own(self, op_id: int) -> tuple[float | None, float | None, str]:
        """rooflake's rule applied to the op alone (as if no op of its chain carried it)."""
        from rooflake.instrument.shapes import ShapeError, op_work, parse_args

        r = self.ops[op_id]
        try:
            w = op_work(
                r["op_name"],
                parse_args(r["input_dims"], r["input_types"], r["concrete_inputs"]),
                replay=False,
            )
        except ShapeError as e:
            return None, None, f"none: {e}"
        return w.flops, w.bytes, w.flops_source

    def match(self, row: TlRow, inner: set[int]) -> Ours:
        o = Ours()
        for op_id in self.calls(row):
            o.calls += 1
            o.gpu_ns.append(self.ops[op_id]["gpu_time_ns"] or 0)
            if op_id in inner:
                f, b, src = self.own(op_id)
                o.inner += 1
                o.via |= {self.ops[c]["op_name"] for c in self.carriers(op_id)}
                o.sources.add(src)
                o.flops.append(f)
                o.bytes.append(b)
                continue
            fs: float | None = 0.0
            bs: float | None = 0.0
            for c in self.carriers(op_id):
                r = self.ops[c]
                s = self.summary.get((r["op_name"], r["input_dims"], r["input_types"]))
                flops, nbytes = (s["flops"], s["bytes"]) if s else (r["flops"], r["bytes"])
                fs = None if fs is None or flops is None else fs + flops
                bs = None if bs is None or nbytes is None else bs + nbytes
                o.via.add(r["op_name"])
                o.sources.add((s or r)["flops_source"])
            o.flops.append(fs)
            o.bytes.append(bs)
        return o


def ingest(trace: Path, store: Path) -> tuple[str, float]:
    from rooflake.pipeline import ingest_file

    t0 = time.perf_counter()
    res = ingest_file(trace, store)
    return res.run_id, time.perf_counter() - t0


# ---------------------------------------------------------------- the comparison


def _one(values: list[float | None]) -> float | None:
    """The value every call has (None where calls differ or any is unknown)."""
    vals = set(values)
    return vals.pop() if len(vals) == 1 else None


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None:
        return None
    if theirs == 0:
        return 1.0 if ours == 0 else None
    return ours / theirs


def classify(row: TlRow, ours: float | None, our_bytes: float | None, o: Ours) -> tuple[str, str]:
    """(FLOP verdict, bytes verdict): ``equal``, or what explains the difference: a convention of TraceLens'
    ``perf_model.py`` against rooflake's (``convention: …``), a gap or bug of rooflake's (``rooflake …``), or
    ``unexplained``."""
    p = row.params
    tl = None if row.gflops is None else row.gflops * 1e9
    tl_b = None if row.mib is None else row.mib * MIB
    src = " ".join(sorted(o.sources))
    types = json.loads(row.key)[1]
    tensor_types = [t for t in types if t not in ("Scalar", "ScalarList", "TensorList", "")]
    inner = " (an op inside another's chain, its own rule)" if o.inner else ""

    def eq(a: float | None, b: float | None) -> bool:
        return a is not None and b is not None and (a == b or (b != 0 and abs(a / b - 1) < EXACT))

    if not o.calls:
        return "unmatched", "unmatched"
    fv = "equal" if eq(ours, tl) else "unexplained"
    if tl is None:
        fv = "TraceLens: no number" if ours is not None else "neither"
    elif ours is None:
        fv = "rooflake gap: no FLOP rule"
    elif fv != "equal" and tl is not None:
        if row.sheet == "GEMM" and p.get("bias") == "True":
            b = float(p.get("B") or 1)
            if eq(ours + b * float(p["M"]) * float(p["N"]), tl):
                fv = "convention: bias, TraceLens adds M·N"
        elif row.sheet == "SDPA_fwd" and p.get("causal") == "True" and eq(ours / 2, tl):
            fv = "convention: causal, TraceLens halves"
        elif row.sheet == "Normalization":
            fv = "convention: norm, TraceLens 5·E + 6·C, ours 4·E"
        elif ours == 0 and "rooflake:integer" in src:
            fv = "convention: integer op, TraceLens 1 per element, ours 0"
        elif ours == 0 and "rooflake:view" in src and row.sheet == "Reduce_fwd":
            fv = "rooflake gap: no rule, its nested views carry 0"
        elif ours == 0 and ("data-movement" in src or "rooflake:view" in src):
            fv = "convention: copy, TraceLens 1 per element, ours 0"
    bv = "equal" if eq(our_bytes, tl_b) else "unexplained"
    if tl_b is None:
        bv = "TraceLens: no number" if our_bytes is not None else "neither"
    elif our_bytes is None:
        bv = "rooflake gap: no byte rule"
    elif bv != "equal" and tl_b is not None:
        if row.sheet == "Normalization":
            bv = "convention: norm, TraceLens adds the statistics (4 or 6 tensors of C)"
        elif row.sheet == "CONV_fwd" and p.get("bias") == "False" and json.loads(row.key)[0][2]:
            bv = "TraceLens drops the bias tensor (its test len(Input Dims) == 3 fails on aten::convolution)"
        elif our_bytes == 0 and "rooflake:view" in src and row.sheet == "Reduce_fwd":
            bv = "rooflake gap: no rule, its nested views carry 0"
        elif our_bytes == 0 and "rooflake:view" in src:
            bv = "rooflake bug: a view carries a copying chain as 0 bytes"
        elif "aten::_to_copy" in o.via:
            bv = "rooflake bug: _to_copy's output bytes at the input dtype"
        elif row.sheet == "BinaryElementwise" and len(set(tensor_types[:2])) > 1:
            bv = "convention: mixed dtypes, TraceLens writes the wider, ours the first input's"
    return fv + inner, bv + inner


@dataclass
class Line:
    trace: str
    row: TlRow
    ours: Ours
    flops: float | None
    bytes: float | None
    us_mean: float | None
    verdict: tuple[str, str]

    @property
    def ratio(self) -> float | None:
        return _ratio(self.flops, None if self.row.gflops is None else self.row.gflops * 1e9)


def compare(traces: list[Path], store: Path) -> tuple[list[Line], dict[str, float]]:
    lines, times = [], {}
    for trace in traces:
        short = trace.name.split("__")[0]
        run_id, secs = ingest(trace, store)
        times[short] = secs
        run = Run(store, run_id)
        rows = tracelens_rows(_report_dir(trace))
        inner = run.inner(rows)
        for row in rows:
            o = run.match(row, inner)
            f, b = _one(o.flops), _one(o.bytes)
            us = sum(o.gpu_ns) / len(o.gpu_ns) / 1e3 if o.gpu_ns else None
            lines.append(Line(short, row, o, f, b, us, classify(row, f, b, o)))
    return lines, times


# ---------------------------------------------------------------- markdown


def _g(x: float | None, scale: float = 1.0) -> str:
    return "–" if x is None else f"{x / scale:.6g}"


def _r(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _shapes(dims: str, limit: int = 60) -> str:
    d = dims.replace(" ", "")
    d = d.replace("(),", "").replace(",()", "")
    return (d if len(d) <= limit else d[: limit - 1] + "…").replace("|", "\\|")


HEADER = (
    "| trace | sheet | op (rooflake carrier) | Input Dims | calls TL/ours | GFLOP TL | GFLOP ours | ratio | "
    "MiB TL | MiB ours | µs TL | µs ours | FLOP verdict | bytes verdict |\n"
    "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
)


def table(lines: list[Line]) -> str:
    out = [HEADER]
    for ln in lines:
        r = ln.row
        via = ", ".join(sorted(ln.ours.via - {r.name}))
        op = f"{r.name}" + (f" ({via})" if via else "")
        out.append(
            f"| {ln.trace} | {r.sheet} | {op} | {_shapes(r.dims)} | {r.calls}/{ln.ours.calls} | {_g(r.gflops)} | "
            f"{_g(ln.flops, 1e9)} | {_r(ln.ratio)} | {_g(r.mib)} | {_g(ln.bytes, MIB)} | {_g(r.us_mean)} | "
            f"{_g(ln.us_mean)} | {ln.verdict[0]} | {ln.verdict[1]} |"
        )
    return "\n".join(out)


def totals(lines: list[Line]) -> str:
    """Per sheet: rows, rows matched, FLOP-equal rows, total GFLOP / MiB / ms both sides (calls × per call); the
    totals leave out the rows inside another row's chain (TraceLens lists ``aten::layer_norm`` and its
    ``aten::native_layer_norm`` both: their sum would count the chain twice)."""
    out = [
        "| sheet | rows | matched | inside another's chain | FLOPs equal | bytes equal | GFLOP TL | GFLOP ours | ratio | "
        "MiB TL | MiB ours | ms TL | ms ours |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    by: dict[str, list[Line]] = defaultdict(list)
    for ln in lines:
        by[ln.row.sheet].append(ln)
    for sheet in [*SHEETS, "all"]:
        ls = lines if sheet == "all" else by.get(sheet, [])
        if not ls:
            continue
        inside = [ln for ln in ls if ln.ours.inner]
        matched = [ln for ln in ls if ln.ours.calls and not ln.ours.inner]
        both = [ln for ln in matched if ln.flops is not None and ln.row.gflops is not None]
        g_tl = sum(ln.row.gflops * ln.row.calls for ln in both)
        g_us = sum(ln.flops * ln.ours.calls for ln in both) / 1e9
        bb = [ln for ln in matched if ln.bytes is not None and ln.row.mib is not None]
        m_tl = sum(ln.row.mib * ln.row.calls for ln in bb)
        m_us = sum(ln.bytes * ln.ours.calls for ln in bb) / MIB
        t_tl = sum(ln.row.us_sum or 0 for ln in matched) / 1e3
        t_us = sum(sum(ln.ours.gpu_ns) for ln in matched) / 1e6
        n_eq = sum(ln.verdict[0] == "equal" for ln in matched)
        b_eq = sum(ln.verdict[1] == "equal" for ln in matched)
        out.append(
            f"| {sheet} | {len(ls)} | {len(matched) + len(inside)} | {len(inside)} | {n_eq} | {b_eq} | {g_tl:.6g} | {g_us:.6g} | "
            f"{_r(_ratio(g_us, g_tl))} | {m_tl:.6g} | {m_us:.6g} | {t_tl:.6g} | {t_us:.6g} |"
        )
    return "\n".join(out)


def verdicts(lines: list[Line]) -> str:
    count: dict[tuple[str, str, str], int] = defaultdict(int)
    for ln in lines:
        count[(ln.row.sheet, "FLOPs", ln.verdict[0])] += 1
        count[(ln.row.sheet, "bytes", ln.verdict[1])] += 1
    out = ["| sheet | what | verdict | rows |", "|---|---|---|---:|"]
    out += [f"| {s} | {w} | {v} | {n} |" for (s, w, v), n in sorted(count.items())]
    return "\n".join(out)


def select(lines: list[Line], per_sheet: int = 2) -> list[Line]:
    """The longest-running rows of each sheet and one row of each (sheet, verdict) pair."""
    picked: list[Line] = []
    seen: set[tuple[str, tuple[str, str]]] = set()
    for ln in sorted(lines, key=lambda ln: -(ln.row.us_sum or 0)):
        k = (ln.row.sheet, ln.verdict)
        if k not in seen:
            seen.add(k)
            picked.append(ln)
    for sheet in SHEETS:
        top = [ln for ln in sorted(lines, key=lambda ln: -(ln.row.us_sum or 0)) if ln.row.sheet == sheet]
        picked += [ln for ln in top[:per_sheet] if ln not in picked]
    order = {s: i for i, s in enumerate(SHEETS)}
    return sorted(picked, key=lambda ln: (order[ln.row.sheet], -(ln.row.us_sum or 0)))


def report(lines: list[Line], times: dict[str, float], missing: list[str], selected: bool) -> str:
    rows = select(lines) if selected else lines
    heavy = [ln for ln in lines if ln.row.sheet in ("GEMM", "SDPA_fwd", "CONV_fwd")]
    eq = sum(ln.verdict[0] == "equal" for ln in heavy)
    conv = sum(ln.verdict[0].startswith("convention") for ln in heavy)
    alle = sum(ln.verdict[0] == "equal" for ln in lines)
    allc = sum(ln.verdict[0].startswith("convention") for ln in lines)
    parts = [
        f"GEMM/SDPA/conv: {eq} of {len(heavy)} rows equal to the FLOP (ratio 1.000), {conv} differ by a stated "
        f"convention, {len(heavy) - eq - conv} otherwise. All sheets: {alle} of {len(lines)} rows equal, {allc} "
        f"differ by a convention, {len(lines) - alle - allc} otherwise (gaps, bugs, unmatched: see Verdicts).",
        "",
        "Ingest (rooflake, in-process, per trace): " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()),
    ]
    if missing:
        parts += ["", "Not in the mirror (skipped): " + ", ".join(Path(m).name for m in missing)]
    parts += [
        "",
        "## Totals",
        "",
        totals(lines),
        "",
        "## Verdicts",
        "",
        verdicts(lines),
        "",
        "## Rows",
        "",
        table(rows),
    ]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="bare git directory of AMD-AGI/TraceLens")
    ap.add_argument("--out", type=Path, help="write the markdown here (default: stdout)")
    ap.add_argument("--select", action="store_true", help="a short selection of rows instead of all")
    ap.add_argument("--keep", type=Path, help="extract and ingest here instead of a temporary folder")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rl-tracelens-") as tmp:
        work = a.keep or Path(tmp)
        traces, missing = extract(a.mirror, work / "tracelens")
        if not traces:
            print(f"no TraceLens traces found in {a.mirror}", file=sys.stderr)
            return 1
        lines, times = compare(traces, work / "store")
    text = report(lines, times, missing, a.select)
    if a.out:
        a.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
