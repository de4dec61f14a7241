"""Many ranks: ``rl ingest`` of an 8-rank job with ``--workers 2``, then ``rl ranks`` over it.

The job is 8 scaled copies of a real rank trace (HTA's ``sampled_rank-0``, tests/data/torch/hta_sampled_2rank):
copy r says rank r of world size 8 in its ``distributedInfo`` and has every GPU op's duration scaled by
1 + r/100 (so rank 7 is the straggler). Each figure is the median of ``RL_BENCH_RUNS`` (default 3) runs, each a
fresh store, after one warm-up: wall seconds of the whole ``rl`` process and the peak RSS of the largest single
process: the parent (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a child that ran only it) or a worker (the
``peak_rss_mb`` each file's ``rl ingest --json`` line reports).

Run with ``make bench``. Prints figures; asserts nothing (timings on a shared 2-core machine are noisy).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "torch" / "hta_sampled_2rank" / "rank-0.json.gz"
RANKS = 8
RL = [sys.executable, "-c", "from rooflake.cli import main; main()"]


def make_job(folder: Path) -> list[Path]:
    """Write the 8 rank files of the job into ``folder`` (gzip JSON, as torch writes them); their paths."""
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()))
    paths = []
    for r in range(RANKS):
        scaled = dict(doc, distributedInfo={"backend": "nccl", "rank": r, "world_size": RANKS})
        f = 1 + r / 100
        scaled["traceEvents"] = [
            dict(e, dur=e["dur"] * f) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") else e
            for e in doc["traceEvents"]
        ]
        p = folder / f"rank-{r}.json.gz"
        p.write_bytes(gzip.compress(json.dumps(scaled).encode(), 6))
        paths.append(p)
    return paths


def measured(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB of its largest process, stdout) of one ``rl`` run, in a child that runs only
    it (so the children's peak is this run's)."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter(); out = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "w = time.perf_counter() - t\n"
        "if out.returncode: sys.exit(out.stderr)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps({'wall': w, 'rss': rss, 'out': out.stdout}))"
    )
    res = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
    got = json.loads(res.stdout)
    return got["wall"], got["rss"], got["out"]


def main() -> None:
    """Build the job, time its ingest and ``rl ranks`` over fresh stores, print the medians."""
    runs = int(os.environ.get("RL_BENCH_RUNS", "3"))
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job8"
        job.mkdir()
        paths = make_job(job)
        size = sum(p.stat().st_size for p in paths) / 2**20
        ingest, query = [], []
        for i in range(runs + 1):
            store = Path(tmp) / f"store{i}"
            t0 = time.perf_counter()
            wall, rss, out = measured(
                [*RL, "ingest", str(job), "--store", str(store), "--workers", "2", "--json"]
            )
            workers = [
                json.loads(line).get("peak_rss_mb") or 0 for line in out.splitlines() if line.startswith("{")
            ]
            ingest.append((wall, max([rss, *workers]), out))
            query.append(measured([*RL, "ranks", "job8", "--store", str(store)]))
            shutil.rmtree(store)
            print(f"  run {i}{' (warm-up)' if i == 0 else ''}: {time.perf_counter() - t0:.1f} s", flush=True)
        print(query[-1][2])
        for what, got in (("ingest of 8 rank traces, --workers 2", ingest[1:]), ("rl ranks job8", query[1:])):
            wall = statistics.median(w for w, _, _ in got)
            rss = statistics.median(r for _, r, _ in got)
            print(
                f"{what:40s} median {wall:6.2f} s wall, peak RSS {rss:6.0f} MiB ({size:.1f} MiB of gzip traces)"
            )


if __name__ == "__main__":
    main()
