"""Benchmark of the torch.profiler trace reader: a scaled copy of a real Kineto trace (>= 400 MB of JSON), read by
``rooflake.ingest.torch_trace.read`` as a whole process (Python start and imports included), beside

- the floor / peer: ``json.load`` of the same file in a one-line process (what the reader did before: every event
  a Python dict), and ``msgspec.json.decode`` of it untyped (the decoder alone, every event a dict);
- the goals: >= 100 MB/s of uncompressed JSON and <= 1 GB peak RSS;
- the whole ingest of the same file (``rooflake.pipeline.ingest_file``: the reader, the ops post-pass with each
  op's work and GPU time, the serving steps and the store's Parquet), the figure a user of ``rl ingest`` sees;
- Perfetto's trace processor, which imports Chrome JSON at about 177 MB/s (its maintainers' figure in
  google/perfetto issue 1641): our ratio to it.

The copy: the TraceLens H100 BERT-small trace of ``tests/data/torch`` (2,551 events, 1.08 MB: kernels, runtime
calls, ac2g flows, cpu_ops with shapes, module scopes, Python frames) replicated until the file holds
``RL_BENCH_TRACE_MB`` (default 420) MB; copy *i* has ``ts`` shifted by *i* x the trace's span (exact decimals) and its
correlation, External id and flow ids shifted by *i* x their range, so it is one longer trace, not the same events
again. It is built once under ``$RL_BENCH_CACHE`` (default: the system temporary directory) and checked: the reader
finds *copies* x 60 kernels, each attributed to its op. MB/s = file bytes / wall seconds (and / CPU seconds: the
machine is shared, so the CPU figure is the steadier one). Medians of ``RL_BENCH_RUNS`` (default 3) runs per
contender, interleaved; peak RSS is the highest over the runs (``wait4``'s ru_maxrss). Prints figures, asserts
nothing. ``python bench/bench_torch_trace.py``; ``make bench`` runs it.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from statistics import median
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "torch" / "h100_bert-small_inference.json.gz"
TARGET_MB = float(os.environ.get("RL_BENCH_TRACE_MB", "420"))
RUNS = int(os.environ.get("RL_BENCH_RUNS", "3"))
CACHE = Path(os.environ.get("RL_BENCH_CACHE", tempfile.gettempdir())) / "rooflake-bench-traces"
GOAL_MB_S, GOAL_RSS_MB, PERFETTO_MB_S = 100.0, 1000.0, 177.0
ID_ARGS = ("correlation", "External id", "external id")

CONTENDERS = {
    "rooflake torch_trace.read": "from rooflake.ingest import torch_trace as tt\n"
    "out = tt.read(sys.argv[1], run_id='bench')\nprint(out['kernels'].num_rows, out['ranges'].num_rows)",
    "rl ingest (+ ops, publish)": "import tempfile\nfrom rooflake.pipeline import ingest_file\n"
    "with tempfile.TemporaryDirectory() as d:\n    r = ingest_file(sys.argv[1], d)\nprint(r.n_kernels, r.ranges)",
    "json.load (floor/peer)": "import json\ndoc = json.load(open(sys.argv[1], 'rb'))\n"
    "print(len(doc['traceEvents']))",
    "msgspec.json.decode untyped": "import msgspec\ndoc = msgspec.json.decode(open(sys.argv[1], 'rb').read())\n"
    "print(len(doc['traceEvents']))",
}


def _spans(events: list[dict[str, Any]]) -> tuple[Decimal, int]:
    """(µs, ids) one copy shifts by: past the trace's last time and its largest id."""
    times = [e["ts"] + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, Decimal))]
    ids = [e["id"] for e in events if isinstance(e.get("id"), int)]
    ids += [
        v for e in events for k, v in (e.get("args") or {}).items() if k in ID_ARGS and isinstance(v, int)
    ]
    return Decimal(int(max(times) - min(times)) + 1000), max(ids) + 1


def _shifted(events: list[dict[str, Any]], i: int, dt: Decimal, di: int) -> list[dict[str, Any]]:
    out = []
    for e in events:
        e = dict(e)
        if isinstance(e.get("ts"), (int, Decimal)):
            e["ts"] = e["ts"] + i * dt
        if isinstance(e.get("id"), int):
            e["id"] = e["id"] + i * di
        args = e.get("args")
        if isinstance(args, dict) and any(k in args for k in ID_ARGS):
            e["args"] = {k: v + i * di if k in ID_ARGS and isinstance(v, int) else v for k, v in args.items()}
        out.append(e)
    return out


def build(dst: Path) -> int:
    """Write the scaled copy to ``dst`` (kept when already there); returns the number of copies."""
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()), parse_float=Decimal)
    events = doc.pop("traceEvents")
    enc = msgspec.json.Encoder(decimal_format="number")
    one = len(enc.encode(events))
    copies = max(1, round(TARGET_MB * 1e6 / one))
    if dst.exists() and dst.stat().st_size > 0.9 * copies * one:
        return copies
    dt, di = _spans(events)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(".part")
    with open(tmp, "wb") as f:
        f.write(enc.encode(doc)[:-1] + b', "traceEvents": [\n')
        for i in range(copies):
            f.write((b",\n" if i else b"") + enc.encode(_shifted(events, i, dt, di))[1:-1])
        f.write(b"\n]}\n")
    tmp.replace(dst)
    return copies


def _once(code: str, path: Path) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, stdout) of one whole process running ``code``."""
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-c", "import sys\n" + code, str(path)], stdout=subprocess.PIPE, cwd=ROOT
    )
    out = p.stdout.read().decode() if p.stdout else ""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out.strip()


def main() -> None:
    path = CACHE / f"h100_bert_x{TARGET_MB:.0f}MB.json"
    t = time.perf_counter()
    copies = build(path)
    size = path.stat().st_size
    print(f"scaled copy: {path} ({size / 1e6:.0f} MB, {copies} copies of {SOURCE.name}, "
          f"{time.perf_counter() - t:.0f} s to build or find)")  # fmt: skip
    runs: dict[str, list[tuple[float, float, float, str]]] = {name: [] for name in CONTENDERS}
    for _ in range(RUNS):
        for name, code in CONTENDERS.items():
            runs[name].append(_once(code, path))
    kernels = runs["rooflake torch_trace.read"][0][3]
    print(f"reader found (kernels ranges): {kernels}; expected kernels {copies * 60}")
    print(
        f"{'contender':30s} {'wall s':>7s} {'CPU s':>7s} {'MB/s wall':>10s} {'MB/s CPU':>9s} {'peak MB':>8s}"
    )
    for name, rs in runs.items():
        wall, cpu, rss = median(r[0] for r in rs), median(r[1] for r in rs), max(r[2] for r in rs)
        print(
            f"{name:30s} {wall:7.2f} {cpu:7.2f} {size / 1e6 / wall:10.1f} {size / 1e6 / cpu:9.1f} {rss:8.0f}"
        )
    ours = runs["rooflake torch_trace.read"]
    wall, cpu = median(r[0] for r in ours), median(r[1] for r in ours)
    rss = max(r[2] for r in ours)
    print(f"goal >= {GOAL_MB_S:.0f} MB/s: {size / 1e6 / wall:.0f} (wall), {size / 1e6 / cpu:.0f} (CPU); "
          f"goal <= {GOAL_RSS_MB:.0f} MB peak RSS: {rss:.0f}")  # fmt: skip
    print(f"Perfetto trace processor's JSON import, ~{PERFETTO_MB_S:.0f} MB/s: ours is "
          f"{size / 1e6 / wall / PERFETTO_MB_S:.2f}x of it (wall), {size / 1e6 / cpu / PERFETTO_MB_S:.2f}x (CPU)")  # fmt: skip


if __name__ == "__main__":
    main()
