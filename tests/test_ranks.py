"""Many ranks: rank, world size and job on each run (Kineto distributedInfo, the trace's folder, --label), the
``ranks(job)`` table (compute, communication and idle GPU time as unions of intervals over every stream, the
straggler per step), ``rl ranks``; on tiny literal traces and on HTA's two-rank test traces against HTA's own
figures (docs/ranks.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.queries.runner import macros
from rooflake.store import Store
from rooflake.views.layers import layers
from rooflake.views.ranks import ranks, spans

HTA_JOB = Path(__file__).parent / "data" / "torch" / "hta_sampled_2rank"
US = 1000  # ns per µs (trace times are µs)


def _launch(corr: int, ts: float, start: float, dur: float, name: str, stream: int) -> list[dict]:
    return [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 1,
         "args": {"correlation": corr}},
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur,
         "args": {"correlation": corr, "device": 0, "stream": stream, "grid": [1, 1, 1], "block": [128, 1, 1]}},
    ]  # fmt: skip


def _rank_trace(
    folder: Path, rank: int, world: int, last_dur: float, extra: bool = False, comms: bool = False
) -> Path:
    """One rank of a job: ProfilerStep#1 over [0, 100) µs launching two overlapping GEMMs on two streams
    ([10, 30) and [20, 40)), an NCCL all-reduce on a third ([35, 60)) and an elementwise kernel ([70, 70 +
    last_dur)); ``extra``: a kernel launched after the step ([200, 210)); ``comms``: the all-reduce's
    record_param_comms op with its message size."""
    events: list[dict[str, Any]] = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 100,
        },
        *_launch(1, 1, 10, 20, "ampere_sgemm_128x64_nn", 7),
        *_launch(2, 2, 20, 20, "ampere_sgemm_64x64_nn", 8),
        *_launch(
            3, 3, 35, 25, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 9
        ),
        *_launch(4, 4, 70, last_dur, "vectorized_elementwise_kernel", 7),
    ]
    if extra:
        events += _launch(5, 150, 200, 10, "vectorized_elementwise_kernel", 7)
    if comms:  # torch's record_param_comms op around the all-reduce's launch: 1 Mi floats over 2 ranks
        args = {
            "Collective name": "allreduce",
            "dtype": "Float",
            "In msg nelems": 1 << 20,
            "Out msg nelems": 1 << 20,
            "Group size": 2,
        }
        events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 2.5,
                       "dur": 1, "args": args})  # fmt: skip
    doc = {
        "schemaVersion": 1,
        "baseTimeNanoseconds": 0,
        "deviceProperties": [
            {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}
        ],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": events,
    }
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"rank-{rank}-{last_dur}.json"
    p.write_text(json.dumps(doc))
    return p


def _rl(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _ingest(store: Path, *paths: Path | str, labels: tuple[str, ...] = ()) -> Any:
    flags = [x for kv in labels for x in ("--label", kv)]
    r = _rl("ingest", *map(str, paths), "--store", str(store), "--workers", "1", *flags)
    return r


@pytest.fixture()
def job(tmp_path: Path) -> Path:
    """A store holding the two ranks of job ``train``."""
    store = tmp_path / "store"
    _rank_trace(tmp_path / "train", 0, 2, 10, extra=True)
    _rank_trace(tmp_path / "train", 1, 2, 20)
    r = _ingest(store, tmp_path / "train")
    assert r.exit_code == 0, r.output
    return store


def test_runs_hold_rank_world_size_and_the_folder_as_job(job: Path) -> None:
    r = _rl("sql", "--store", str(job), "-f", "csv", "select rank, world_size, job from runs order by rank")
    assert r.exit_code == 0, r.output
    assert r.stdout.split() == ["rank,world_size,job", "0,2,train", "1,2,train"]


def test_ranks_split_gpu_time_into_compute_comm_and_idle(job: Path) -> None:
    v = ranks(Store(job), "train")
    rows = {(r["rank"], r["step"]): r for r in v.table.to_pylist()}
    r0, r1 = rows[0, "ProfilerStep#1"], rows[1, "ProfilerStep#1"]
    # rank 0: busy [10, 60) + [70, 80); compute [10, 40) + [70, 80) (the two GEMMs overlap: counted once)
    assert (r0["span_ns"], r0["gpu_time_ns"], r0["idle_time_ns"]) == (70 * US, 60 * US, 10 * US)
    assert (r0["compute_time_ns"], r0["comm_time_ns"], r0["overlap_time_ns"]) == (40 * US, 25 * US, 5 * US)
    assert (r0["kernels"], r0["collectives"], r0["step_number"]) == (4, 1, 1)
    assert r1["compute_time_ns"] == 50 * US and r1["idle_time_ns"] == 10 * US
    assert r1["straggler"] and not r0["straggler"]
    assert r1["median_compute_time_ns"] == 45 * US and r1["gap_to_median_ns"] == 5 * US
    assert r0["comm_overlap_share"] == pytest.approx(5 / 25)
    outside = rows[0, None]  # the kernel launched after the step
    assert (outside["kernels"], outside["gpu_time_ns"], outside["straggler"]) == (1, 10 * US, False)
    assert v.ranks == [0, 1] and v.missing == [] and v.note is None


def test_rl_ranks_marks_the_straggler(job: Path) -> None:
    r = _rl("ranks", "train", "--store", str(job))
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if "1 ◀" in x)
    assert "#1" in line and "50 µs" in line
    assert "◀ straggler" in r.stdout
    j = _rl("ranks", "train", "--store", str(job), "-f", "json")
    assert json.loads(j.stdout)[0]["job"] == "train"


def test_a_missing_rank_is_named(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _rank_trace(tmp_path / "big", 0, 4, 10)
    _rank_trace(tmp_path / "big", 1, 4, 20)
    assert _ingest(store, tmp_path / "big").exit_code == 0
    v = ranks(Store(store), "big")
    assert v.missing == [2, 3] and v.world_size == 4
    r = _rl("ranks", "big", "--store", str(store))
    assert "note: ranks 2-3 of world size 4 missing (2 of 4)" in r.stdout
    assert spans([0, 2, 3, 4, 9]) == "0, 2-4, 9"


def test_two_files_claiming_one_rank_are_one_error_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a = _rank_trace(tmp_path / "dup", 0, 2, 10)
    b = _rank_trace(tmp_path / "dup", 0, 2, 30)  # other bytes, same rank
    assert _ingest(store, tmp_path / "dup").exit_code == 0
    r = _rl("ranks", "dup", "--store", str(store))
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: job dup: runs "), r.stderr
    assert str(a.name) in lines[0] and str(b.name) in lines[0] and "claim rank 0" in lines[0]


def test_labels_override_the_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    p = _rank_trace(tmp_path / "x", 0, 2, 10)
    assert _ingest(store, p, labels=("rank=1", "job=llm", "world_size=8")).exit_code == 0
    v = ranks(Store(store), "llm")
    assert (v.ranks, v.world_size) == ([1], 8)
    bad = _ingest(tmp_path / "s2", p, labels=("rank=first",))
    assert bad.exit_code == 1 and "--label rank='first' is not a non-negative integer" in bad.output
    worse = _ingest(tmp_path / "s3", p, labels=("rank=9", "world_size=8"))
    assert worse.exit_code == 1 and "is not below --label world_size=8" in worse.output


def test_an_unknown_job_names_the_jobs(job: Path) -> None:
    r = _rl("ranks", "nope", "--store", str(job))
    assert r.exit_code == 1 and "no run of job 'nope'" in r.stderr and "train (2 runs)" in r.stderr


def test_a_store_written_before_the_rank_columns_still_reads(job: Path) -> None:
    for f in (job / "runs").glob("*/*.parquet"):  # the runs files as rooflake wrote them before rank/job
        t = pq.read_table(f)
        pq.write_table(
            t.drop_columns(["rank", "world_size", "job"]).replace_schema_metadata(t.schema.metadata), f
        )
    r = _rl("runs", "--store", str(job))
    assert r.exit_code == 0 and r.stdout.count("rank-") == 2, r.output
    s = _rl(
        "sql",
        "--store",
        str(job),
        "-f",
        "csv",
        "select count(*) n, count(rank) ranked, count(job) j from runs",
    )
    assert s.exit_code == 0 and s.stdout.split() == ["n,ranked,j", "2,0,0"], s.output
    gone = _rl("ranks", "train", "--store", str(job))
    assert gone.exit_code == 1 and "no run of job 'train'" in gone.stderr


def test_rl_layers_shows_collectives_with_bytes_and_bus_bandwidth(tmp_path: Path) -> None:
    store = tmp_path / "store"
    p = _rank_trace(tmp_path / "j", 0, 2, 10, comms=True)
    assert _ingest(store, p).exit_code == 0
    v = layers(Store(store))
    (row,) = v.collectives.to_pylist()
    assert (row["collective"], row["dtype"], row["group_size"], row["launches"]) == (
        "allreduce",
        "Float",
        2,
        1,
    )
    assert row["bytes"] == 4 << 20 and row["time_ns"] == 25 * US
    algbw = (4 << 20) / 25e-6
    assert row["algbw_bytes_per_s"] == pytest.approx(algbw)
    assert row["busbw_bytes_per_s"] == pytest.approx(
        algbw * 2 * (2 - 1) / 2
    )  # NCCL tests: all-reduce 2(n-1)/n
    assert row["roof_bytes_per_s"] == pytest.approx(450e9)  # H100 SXM5 NVLink 900 GB/s, one direction
    assert row["fraction_of_roof"] == pytest.approx(algbw / 450e9) and row["roof_reason"] is None
    r = _rl("layers", "--store", str(store))
    assert r.exit_code == 0 and "allreduce" in r.stdout and "4.19 MB" in r.stdout, r.stdout


def test_collectives_without_a_message_size_say_why(job: Path) -> None:
    (row,) = [
        r
        for r in layers(
            Store(job), ranks(Store(job), "train").table["run_id"][0].as_py()
        ).collectives.to_pylist()
    ]
    assert row["bytes"] is None and row["busbw_bytes_per_s"] is None
    assert "no message size" in row["roof_reason"]


@pytest.mark.parametrize(
    ("name", "collective"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", True),
        ("void ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", True),
        ("ncclSymkDevKernel_AllReduce_LL_sum_f32(ncclSymkDevWorkArgs4K)", True),
        ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>(...)", True),
        ("void c10d::symmetric_memory::multimem_all_reduce_kernel<16, true>(...)", True),
        ("rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)", True),
        ("ampere_sgemm_128x64_nn", False),
        ("void at::native::reduce_kernel<512, 1>(...)", False),
        (None, False),
    ],
)
def test_collective_kernels_by_name(name: str | None, collective: bool) -> None:
    con = duckdb.connect()
    con.execute(macros())
    assert con.execute("SELECT is_collective($n)", {"n": name}).fetchone() == (collective,)


# HTA 0.5.0 (pip install holistictraceanalysis) on the same two files: TraceAnalysis(trace_dir).
# get_temporal_breakdown() and get_comm_comp_overlap() (the last profiler step left out, HTA's default: step
# 551), and get_potential_stragglers(num_candidates=1); µs
HTA_551 = {
    0: {
        "idle": 321378,
        "compute": 106252,
        "non_compute": 172428,
        "kernel_time": 600058,
        "overlap_pct": 11.81,
    },
    1: {
        "idle": 328671,
        "compute": 135548,
        "non_compute": 136455,
        "kernel_time": 600674,
        "overlap_pct": 20.05,
    },
}
HTA_STRAGGLER = 1


def test_hta_two_rank_traces_give_htas_figures(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _ingest(store, HTA_JOB).exit_code == 0
    v = ranks(Store(store), "hta_sampled_2rank")
    assert v.ranks == [0, 1] and v.world_size == 128 and len(v.missing) == 126
    rows = {r["rank"]: r for r in v.table.to_pylist() if r["step"] == "ProfilerStep#551"}
    for rank, hta in HTA_551.items():
        r = rows[rank]
        assert r["idle_time_ns"] == hta["idle"] * US
        assert r["compute_time_ns"] == hta["compute"] * US
        assert r["gpu_time_ns"] - r["compute_time_ns"] == hta["non_compute"] * US
        assert r["span_ns"] == hta["kernel_time"] * US
        assert round(100 * r["comm_overlap_share"], 2) == pytest.approx(hta["overlap_pct"], abs=0.01)
    assert [r for r, x in rows.items() if x["straggler"]] == [HTA_STRAGGLER]
