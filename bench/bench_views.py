"""rooflake benchmark, views (issue 4): `rl report` over 100 runs and `rl trajectory` over 1,000 runs.

Runs are copies of the ingested fixture reports under distinct run ids with labels model=<fixture>, batch=<i>, so
every fixture forms one batch sweep. Prints seconds and peak RSS of each command (a fresh process); asserts nothing.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("RL_FIXTURES", ROOT.parent / "shared" / "fixtures"))
RL = Path(sys.executable).with_name("rl")


def build_store(dst: Path, n_runs: int) -> list[str]:
    from rooflake.pipeline import ingest_paths

    src = dst.parent / "src"
    reports = [FIXTURES / "ncu" / "AveryClapp__ESMM-Research__profile_output.ncu-rep",
               FIXTURES / "ncu" / "AlpriElse__cs599k__silu__CUDA__ncu-reports__2025-04-21-vector-based.ncu-rep"]  # fmt: skip
    list(ingest_paths(reports, src))
    tables = {t: sorted((src / t).glob("*/part-0.parquet")) for t in ("runs", "kernels", "ceilings")}
    ids = []
    for i in range(n_runs):
        rid = f"{i:016x}"
        j = i % len(tables["runs"])
        for t, parts in tables.items():
            tab = pq.read_table(parts[j])
            tab = tab.set_column(0, "run_id", pa.array([rid] * tab.num_rows, pa.string()))
            if t == "runs":
                labels = [[("model", f"m{j}"), ("batch", str(i // len(tables["runs"]) + 1))]]
                tab = tab.set_column(
                    tab.schema.get_field_index("labels"),
                    "labels",
                    pa.array(labels, tab.schema.field("labels").type),
                )
            out = dst / t / f"run_id={rid}"
            out.mkdir(parents=True)
            pq.write_table(tab, out / "part-0.parquet")
        ids.append(rid)
    return ids


def timed(cmd: list[str]) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run(cmd, capture_output=True, text=True)
    rss = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return time.perf_counter() - t0, rss, (p.stdout or p.stderr).strip().splitlines()[-1][:150]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "store"
        ids = build_store(store, 1000)
        secs, rss, msg = timed([str(RL), "report", "--store", str(store), "--out", str(Path(d) / "report"),
                                *sum((["--runs", r] for r in ids[:100]), [])])  # fmt: skip
        print(f"rl report over 100 runs: {secs:.1f} s, peak RSS {rss:.0f} MB — {msg}")
        secs, rss, msg = timed([str(RL), "trajectory", "--vary", "batch", "--by", "kernel", "--store", str(store),
                                "--out", str(Path(d) / "t.html")])  # fmt: skip
        print(f"rl trajectory --by kernel over 1,000 runs: {secs:.1f} s, peak RSS {rss:.0f} MB — {msg}")
