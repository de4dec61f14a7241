"""rooflake benchmark, issue 15: a big compacted store in DuckDB and in Spark local mode; ingest through Spark vs the
process pool. Figures for docs/scale.md.

    python bench/bench_scale.py [N_RUNS] [--ten-k] [--no-spark] [--no-ingest]

- DuckDB: ``rl sql`` as a whole process over a store of ``N_RUNS`` (default 100,000) copied fixture runs in the
  layout ``rl compact`` writes (bench/stores.py ``cached_compacted``): ``count(*) FROM kernel_roofline`` and one
  run's ``kernel_roofline``, each beside a one-line DuckDB script reading the compacted kernels file (the floor:
  what any reader of that file pays). ``--ten-k``: the same two questions over 10,000 runs as ingest leaves them
  (30,000 partition files) and compacted (bench/stores.py ``cached_store``, then ``rl compact``).
- Spark: one process (local[2]) that starts a session, registers the store (``rooflake.spark.register``), then
  counts ``kernel_roofline`` and reads one run's rows; each step timed inside it.
- Ingest: the fixture .ncu-rep reports into a new store, ``rl ingest --workers CORES`` against
  ``rooflake.spark.ingest`` on local[CORES] (a whole process each: Spark's start is part of its cost).

Whole processes, contenders in turn, medians of ``RL_BENCH_RUNS`` (default 3) after a warm-up (bench_store.pair).
Prints the load average beside the figures: the machine is shared, so read CPU seconds where wall time is waiting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RL_BENCH_RUNS", "3")
from bench_store import PY, RL, TABLE, pair, row, timed  # noqa: E402
from stores import CACHE, REPORTS, cached_compacted, cached_store, copy_store  # noqa: E402

SPARK = """
import json, sys, time
t0 = time.perf_counter()
from rooflake import spark as rs
from rooflake.store import Store
s = rs.session("local[2]"); s.sparkContext.setLogLevel("ERROR")
out = {"session_s": time.perf_counter() - t0}
t = time.perf_counter(); rs.register(s, Store(sys.argv[1])); out["register_s"] = time.perf_counter() - t
for name, q in (("count_s", "SELECT count(*) FROM kernel_roofline"),
                ("one_run_s", f"SELECT * FROM kernel_roofline WHERE run_id = '{sys.argv[2]}'")):
    for i in range(2):  # the second: after the JVM warmed up
        t = time.perf_counter(); n = s.sql(q).collect(); out[f"{name}{i}"] = time.perf_counter() - t
    out[name.replace("_s", "_rows")] = len(n) if name == "one_run_s" else n[0][0]
print(json.dumps(out))
"""

SPARK_INGEST = """
import sys, time
from rooflake import spark as rs
from rooflake.pipeline import ingest_file
s = rs.session(f"local[{sys.argv[2]}]"); s.sparkContext.setLogLevel("ERROR")
t = time.perf_counter()
res = rs.ingest(s, sys.argv[3:], sys.argv[1], ingest_file, force=True)
assert all(r["status"] in ("ingested", "replaced") for r in res), res
print(f"ingest only {time.perf_counter() - t:.2f} s", file=sys.stderr)
"""


def load() -> str:
    return "load avg {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def duckdb_questions(store: Path, label: str, floor_file: Path | None) -> None:
    """count(*) and one run of kernel_roofline with ``rl sql``, beside a one-line DuckDB script on the file."""
    run = "0000000000000abc"
    qs = (
        (
            "count(*) FROM kernel_roofline",
            "SELECT count(*) FROM kernel_roofline",
            "SELECT count(*) FROM '{f}'",
        ),
        (
            "one run of kernel_roofline",
            f"SELECT * FROM kernel_roofline WHERE run_id = '{run}'",
            f"SELECT COLUMNS(*)::VARCHAR FROM '{{f}}' WHERE run_id = '{run}'",
        ),
    )
    for work, q, floor_sql in qs:
        ours_cmd = [*RL, "sql", q, "--store", str(store), "-f", "json"]
        if floor_file is None:
            (ours,) = pair(ours_cmd)
            row(f"{work}, {label} [{load()}]", ours, None, "-")
            continue
        line = f'import duckdb; duckdb.sql("{floor_sql.format(f=floor_file)}").fetchall()'
        (ours, floor) = pair(ours_cmd, [PY, "-c", line])
        row(f"{work}, {label} [{load()}]", ours, floor, "floor: one-line DuckDB on the kernels file")


def ten_k() -> None:
    t0 = time.perf_counter()
    big = cached_store(10_000)
    print(f"10,000-run store ready in {time.perf_counter() - t0:.0f} s", flush=True)
    compacted = CACHE / "runs10000-compacted"
    if not (compacted / "compacted.json").exists():
        from rooflake.store.compact import compact

        copy_store(big, compacted)
        t0 = time.perf_counter()
        r = compact(compacted)
        print(f"rl compact of 10,000 runs: {time.perf_counter() - t0:.1f} s [{load()}]", flush=True)
        print(f"  {r.files_before} -> {r.files_after} Parquet files", flush=True)
    duckdb_questions(big, "10,000 runs, not compacted", None)
    kfile = next((compacted / "kernels" / "compacted").glob("*.parquet"))
    duckdb_questions(compacted, "10,000 runs, compacted", kfile)


def spark_questions(store: Path, n: int) -> None:
    wall, cpu = timed([PY, "-c", "pass"])  # warm the interpreter's files
    t0 = time.perf_counter()
    p = subprocess.run([PY, "-c", SPARK, str(store), "0000000000000abc"], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    print(
        f"Spark local[2], {n:,} runs compacted [{load()}]: whole process {time.perf_counter() - t0:.1f} s; {r}"
    )
    for key in ("count_s", "one_run_s"):
        work = (
            f"Spark local[2] {key[:-2]} of kernel_roofline, {n:,} runs compacted (warm; cold in peer column)"
        )
        row(f"{work} [{load()}]", (r[f"{key}1"], float("nan")), (r[f"{key}0"], float("nan")), "-")


def ingest_both() -> None:
    files = [str(p) for p in REPORTS]
    cores = str(os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as d:
        pool = [*RL, "ingest", *files, "--store", f"{d}/pool", "--force", "--workers", cores]
        spark = [PY, "-c", SPARK_INGEST, f"{d}/spark", cores, *files]
        (ours, peer) = pair(spark, pool, runs=1)
    row(
        f"ingest {len(files)} .ncu-rep, Spark local[{cores}] (whole process) vs process pool [{load()}]",
        ours,
        peer,
        "-",
    )


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 100_000
    print(f"{os.cpu_count()} cores, {load()}; stores under {CACHE}", flush=True)
    t0 = time.perf_counter()
    store = cached_compacted(n)
    size = sum(f.stat().st_size for f in store.rglob("*.parquet"))
    print(
        f"{n:,}-run compacted store: {time.perf_counter() - t0:.0f} s to build (or cached), {size / 1e6:.1f} MB"
    )
    kfile = next((store / "kernels" / "compacted").glob("*.parquet"))
    duckdb_questions(store, f"{n:,} runs, compacted", kfile)
    if "--ten-k" in sys.argv:
        ten_k()
    if "--no-spark" not in sys.argv:
        spark_questions(store, n)
    if "--no-ingest" not in sys.argv:
        ingest_both()
    print()
    for r in TABLE:
        print(" | ".join(r))


if __name__ == "__main__":
    main()
