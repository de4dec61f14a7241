"""What the store promises under attack and accident (issue 10): read-only SQL, a run visible at every instant of a
``--force`` re-ingest even when the writer is killed, dead (zombie) writers' staging cleaned, damaged files named."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rooflake.pipeline import expand_paths, ingest_file, ingest_paths
from rooflake.schema import QueryError
from rooflake.store import Store

from _support import FIXTURES, fixture, snapshot

REPORT = fixture("AveryClapp__ESMM-Research__profile_output")  # 4 kernels, 1252 metrics, NVIDIA A10G


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("safety") / "store"
    ingest_file(REPORT, root)
    return root


# ---- rl sql is read-only ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sql, kind",
    [
        ("COPY (SELECT * FROM runs) TO '{runs}'", "COPY"),
        ("COPY runs TO '{tmp}/out.csv'", "COPY"),
        ("ATTACH '{tmp}/x.duckdb' AS x", "ATTACH"),
        ("CREATE TABLE t AS SELECT * FROM runs", "CREATE"),
        ("INSTALL httpfs", "LOAD"),
        ("SET enable_external_access = true", "SET"),
        ("SELECT 1; DROP VIEW runs", "DROP"),
    ],
)
def test_user_sql_cannot_write(store: Path, tmp_path: Path, sql: str, kind: str) -> None:
    """Before: `rl sql "COPY … TO 'STORE/runs/…/part-0.parquet'"` silently deleted a run; ATTACH, CREATE TABLE,
    COPY anywhere and INSTALL all ran. Now each is refused before anything runs, and the store is unchanged."""
    runs = next((store / "runs").glob("*/part-0.parquet"))
    before = snapshot(store)
    with pytest.raises(QueryError, match=f"read-only: a {kind} statement"):
        Store(store).query(sql.format(runs=runs, tmp=tmp_path))
    assert snapshot(store) == before and not list(tmp_path.iterdir())
    assert Store(store).query("SELECT count(*) AS n FROM kernels").to_pylist() == [{"n": 4}]


def test_locked_down_connection_reads_the_store_and_nothing_else(store: Path, tmp_path: Path) -> None:
    """Even a raw cursor of Store.connect() (which any library code gets) reads only the store's own files, writes
    no file and cannot unlock itself."""
    con = Store(store).connect()
    assert con.execute("SELECT count(*) FROM metrics").fetchall() == [(1252,)]
    for sql in (
        f"COPY (SELECT 1) TO '{tmp_path}/x.parquet'",
        "SELECT * FROM read_csv('/etc/passwd')",
        f"ATTACH '{tmp_path}/x.duckdb'",
        "INSTALL httpfs",
    ):
        with pytest.raises(duckdb.PermissionException):
            con.execute(sql)
    with pytest.raises(duckdb.InvalidInputException, match="locked"):
        con.execute("SET enable_external_access = true")
    assert not list(tmp_path.iterdir())


def test_unsafe_lifts_the_lock(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.parquet"
    Store(store).query(f"COPY (SELECT run_id FROM runs) TO '{out}'", unsafe=True)
    assert pq.read_table(out).num_rows == 1
    with pytest.raises(QueryError, match="SQL failed: Parser Error"):
        Store(store).query("SELEC 1")


# ---- crash windows -----------------------------------------------------------------------------------------------
WRITER = """
import sys
import pyarrow.parquet as pq
from rooflake.store import Store
from rooflake.store.layout import ALL_TABLES
root, run_id = sys.argv[1], sys.argv[2]
s = Store(root)
tables = {t: pq.read_table(s.partition(t, run_id) / "part-0.parquet") for t in ALL_TABLES
          if (s.partition(t, run_id) / "part-0.parquet").exists()}
print("ready", flush=True)
while True:
    s.publish(run_id, tables, force=True)
"""


def _visible(root: Path, run_id: str) -> bool:
    return Store(root).has_run(run_id)


def test_force_reingest_killed_at_any_instant_never_hides_the_run(tmp_path: Path) -> None:
    """Before: one in ten SIGKILLed `--force` re-ingests hid the run until the next ingest (its runs partition was
    moved aside first). A writer republishing the run in a loop (~20 ms a publish) is killed at 10 random instants; meanwhile and after
    each kill the run is visible and every table queryable with its row count; the next clean-up leaves the store
    whole."""
    root = tmp_path / "store"
    run_id = ingest_file(REPORT, root).run_id
    rng = random.Random(10)
    for _ in range(10):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), run_id], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        deadline = time.monotonic() + rng.uniform(0.0, 0.4)
        while time.monotonic() < deadline:  # a reader polling while the writer swaps
            assert _visible(root, run_id)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _visible(root, run_id)
        counts = (
            Store(root)
            .connect()
            .execute("SELECT count(*) FROM kernels UNION ALL SELECT count(*) FROM metrics")
        )
        assert [r[0] for r in counts.fetchall()] == [4, 1252]
        Store(root).clean_staging()
        assert not any((root / ".staging").iterdir())
    assert Store(root).doctor().num_rows == 0


def test_clean_up_removes_the_writability_probe_of_a_killed_writer(tmp_path: Path) -> None:
    """A writer killed between writing and unlinking its probe (ensure_root, every publish) left
    `.staging/.rooflake-probe.PID.TOKEN`, which no clean-up removed (it made the test above fail now and then);
    a live writer's probe stays."""
    root = tmp_path / "store"
    ingest_file(REPORT, root)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (root / ".staging" / f".rooflake-probe.{dead.pid}.0badc0de").write_bytes(b"")
    live = root / ".staging" / f".rooflake-probe.{os.getpid()}.0badc0de"
    live.write_bytes(b"")
    Store(root).clean_staging()
    assert [p.name for p in (root / ".staging").iterdir()] == [live.name]


def test_a_new_run_killed_mid_swap_leaves_no_invisible_partition(tmp_path: Path) -> None:
    """A first ingest killed after moving some tables in, before its runs file: the clean-up removes them (they
    would otherwise sit invisible on disk, listed by doctor as unpublished)."""
    root = tmp_path / "store"
    run_id = ingest_file(REPORT, root).run_id
    new = "feedfacefeedface"
    stage = root / ".staging" / f"{new}.999999999.dead"
    (stage / "old").mkdir(parents=True)
    (stage / "runs").mkdir()
    shutil.copyfile(root / "runs" / f"run_id={run_id}" / "part-0.parquet", stage / "runs" / "part-0.parquet")
    shutil.copytree(root / "ceilings" / f"run_id={run_id}", root / "ceilings" / f"run_id={new}")  # moved in
    (stage / "manifest").write_text("ceilings\nruns")
    assert Store(root).doctor().column("problem").to_pylist() == ["unpublished", "stale-staging"]
    assert Store(root).clean_staging() == 1
    assert not (root / "ceilings" / f"run_id={new}").exists() and Store(root).doctor().num_rows == 0


def test_a_zombie_writers_staging_is_cleaned(tmp_path: Path) -> None:
    """Before: a killed worker not yet reaped by its parent is a zombie, kill(pid, 0) succeeds on it, and its
    staging folder survived every clean-up."""
    root = tmp_path / "store"
    ingest_file(REPORT, root)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{child.pid}/stat")
    for _ in range(200):  # exited, not reaped: state Z
        if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.02)
    stage = root / ".staging" / f"0123456789abcdef.{child.pid}.0000"
    (stage / "kernels").mkdir(parents=True)
    try:
        assert Store(root).clean_staging() == 1
        assert not stage.exists()
    finally:
        child.wait()


# ---- damaged files -----------------------------------------------------------------------------------------------
def test_doctor_names_a_damaged_partition_and_queries_name_the_file(tmp_path: Path) -> None:
    """Before: one damaged Parquet file failed every query of its table for every run, and nothing said which file.
    Store.doctor() lists it (path, reason); the query error names it as DuckDB reports it."""
    root = tmp_path / "store"
    run_id = ingest_file(REPORT, root).run_id
    assert Store(root).doctor().num_rows == 0
    part = root / "metrics" / f"run_id={run_id}" / "part-0.parquet"
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])  # torn: no footer
    kernels = pq.read_table(root / "kernels" / f"run_id={run_id}" / "part-0.parquet")
    orphan = kernels.set_column(
        kernels.schema.get_field_index("run_id"), "run_id", pa.array(["feedfacefeedface"] * 4)
    )
    (root / "kernels" / "run_id=feedfacefeedface").mkdir()  # a writer that died before its commit
    pq.write_table(orphan, root / "kernels" / "run_id=feedfacefeedface" / "part-0.parquet")
    rows = {(r["table"], r["problem"]): r for r in Store(root).doctor().to_pylist()}
    assert set(rows) == {("metrics", "damaged"), ("kernels", "unpublished")}
    assert rows["metrics", "damaged"]["path"] == str(part) and rows["metrics", "damaged"]["run_id"] == run_id
    assert (
        "magic bytes" in rows["metrics", "damaged"]["error"]
        or "footer" in rows["metrics", "damaged"]["error"]
    )
    with pytest.raises(QueryError, match=str(part)):
        Store(root).query("SELECT count(*) FROM metrics")
    assert Store(root).query("SELECT count(*) AS n FROM kernels").to_pylist() == [{"n": 4}]


def test_doctor_finds_a_missing_partition(tmp_path: Path) -> None:
    root = tmp_path / "store"
    run_id = ingest_file(REPORT, root).run_id
    (root / "kernels" / f"run_id={run_id}" / "part-0.parquet").unlink()
    (row,) = Store(root).doctor().to_pylist()
    assert (row["table"], row["problem"], row["run_id"]) == ("kernels", "missing", run_id)
    assert "counts 4 kernels rows" in row["error"]


# ---- directories with broken reports -----------------------------------------------------------------------------
def test_directory_ingest_reports_a_broken_report_instead_of_skipping_it(tmp_path: Path) -> None:
    """Before: an unreadable report in a directory was skipped without a word and the ingest exited 0. An empty
    file named like a report, or one this user cannot read, is now ingested and fails with its reason."""
    d = tmp_path / "reports"
    d.mkdir()
    (d / "good.ncu-rep").write_bytes(REPORT.read_bytes())
    (d / "empty.ncu-rep").write_bytes(b"")
    (d / "junk.ncu-rep").write_bytes(b"junk")  # named like a report, not one: skipped unseen before
    (d / "junk.sqlite").write_bytes(b"junk")
    (d / "notes.txt").write_text("not a report")
    (d / "empty.txt").write_bytes(b"")
    files = expand_paths([str(d)])
    assert sorted(p.name for p in files) == ["empty.ncu-rep", "good.ncu-rep", "junk.ncu-rep", "junk.sqlite"]
    results = {Path(r.path).name: r for r in ingest_paths(files, tmp_path / "store", workers=1)}
    assert results["good.ncu-rep"].status == "ingested"
    assert results["empty.ncu-rep"].status == "error" and "empty file" in (
        results["empty.ncu-rep"].error or ""
    )
    for junk in ("junk.ncu-rep", "junk.sqlite"):
        assert results[junk].status == "error" and "unknown format" in (results[junk].error or "")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_directory_ingest_reports_an_unreadable_report(tmp_path: Path) -> None:
    d = tmp_path / "reports"
    d.mkdir()
    locked = d / "locked.ncu-rep"
    locked.write_bytes(REPORT.read_bytes())
    locked.chmod(0)
    (r,) = list(ingest_paths(expand_paths([str(d)]), tmp_path / "store"))
    assert r.status == "error" and "cannot read" in (r.error or "")


# ---- the CLI over these --------------------------------------------------------------------------------------------
def _rl(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from rooflake.cli import app

    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_rl_sql_copy_into_the_store_is_one_error_line(store: Path) -> None:
    runs = next((store / "runs").glob("*/part-0.parquet"))
    before = snapshot(store)
    code, out, err = _rl("sql", f"COPY (SELECT * FROM runs LIMIT 0) TO '{runs}'", "--store", str(store))
    assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("Error: ")
    assert "read-only: a COPY statement" in err and snapshot(store) == before


def test_a_label_given_twice_is_refused(tmp_path: Path) -> None:
    """Before: `-l k=v -l k=w` silently kept the last value."""
    code, _, err = _rl("ingest", str(REPORT), "--store", str(tmp_path / "s"), "-l", "k=v", "-l", "k=w")
    assert code == 2 and "'k' is given twice" in err
    assert not (tmp_path / "s").exists()


def test_rl_doctor(tmp_path: Path) -> None:
    root = tmp_path / "store"
    run_id = ingest_file(REPORT, root).run_id
    code, out, _ = _rl("doctor", "--store", str(root))
    assert code == 0 and "1 runs, every file reads whole" in out
    part = root / "ceilings" / f"run_id={run_id}" / "part-0.parquet"
    part.write_bytes(part.read_bytes()[:100])
    code, out, err = _rl("doctor", "--store", str(root), "--format", "json")
    assert code == 1 and err.startswith("Error: ") and "1 problem(s)" in err
    import json

    (row,) = json.loads(out)
    assert (row["table"], row["problem"], row["path"]) == ("ceilings", "damaged", str(part))


def test_doctor_tells_a_file_of_other_columns_from_a_damaged_one(tmp_path: Path) -> None:
    root = tmp_path / "store"
    run_id = ingest_file(REPORT, root).run_id
    part = root / "ceilings" / f"run_id={run_id}" / "part-0.parquet"
    pq.write_table(
        pq.read_table(part).drop_columns(["unit"]), part
    )  # as an older rooflake might have written it
    (row,) = Store(root).doctor().to_pylist()
    assert (row["problem"], row["path"]) == ("other-columns", str(part))
    assert "missing ['unit']" in row["error"] and "--force" in row["error"]


BERT_CSV = (
    FIXTURES
    / "csv"
    / "leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention__actual_parameter_analysis__data__5-9__bert_torch_nsight.csv"
)
DIES_IN_SWAP = """
import os, sys
from pathlib import Path
from rooflake.store import publish
from rooflake.pipeline import ingest_file

moved = publish._move_in

def move_in(root, run_id, stage, name):
    moved(root, run_id, stage, name)
    if name == "kernels":  # killed (OOM, kill -9) between two renames of a --force swap
        os._exit(137)

publish._move_in = move_in
ingest_file(Path(sys.argv[1]), Path(sys.argv[2]), force=True, fp16="nersc")
"""


def test_compaction_rolls_back_a_swap_killed_halfway_first(tmp_path: Path) -> None:
    """A `--force` re-ingest killed between its renames leaves the new kernels beside the old runs row until the
    next ingest rolls it back; `rl compact` wrote that half-old, half-new run into its files for good. It rolls
    back dead writers' swaps first, as an ingest does."""
    from rooflake.store import compact

    root = tmp_path / "store"
    run_id = ingest_file(BERT_CSV, root).run_id  # FP16 work: its FLOPs differ under the nersc convention
    con = Store(root).connect()
    before = con.execute("SELECT kernel_id, flops_fp16 FROM kernels ORDER BY 1").fetchall()
    proc = subprocess.run([sys.executable, "-c", DIES_IN_SWAP, str(BERT_CSV), str(root)], check=False)
    assert proc.returncode == 137
    compact.compact(root)
    con = Store(root).connect()
    assert con.execute("SELECT kernel_id, flops_fp16 FROM kernels ORDER BY 1").fetchall() == before
    assert con.execute("SELECT fp16_convention FROM runs WHERE run_id = $r", {"r": run_id}).fetchone() == (
        "ncu",
    )
    assert not any((root / ".staging").iterdir())


def test_sigterm_ends_rl_ingest_as_ctrl_c_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SIGTERM (what systemd, cron and CI timeouts send) killed rl at once: each worker then printed a traceback
    and went on alone. rl exits 143 and stops its workers; the store reads whole."""
    from _support import NCU

    store = tmp_path / "store"
    cmd = [
        sys.executable,
        "-c",
        "from rooflake.cli import main; main()",
        "ingest",
        str(NCU),
        "--store",
        str(store),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list((store / "runs").glob("run_id=*")) and time.monotonic() < deadline:
        time.sleep(0.05)  # in the middle of the batch: a run published, others in the workers
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert Store(store).doctor().num_rows == 0


def test_a_signal_inside_the_stage_removal_leaves_no_stale_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rl's SIGTERM handler raises SystemExit between any two bytecodes: once in the middle of publish's removal of
    its staging folder (after the run was swapped in), it left that folder half removed, which `rl doctor` called a
    stale staging folder (test_sigterm_ends_rl_ingest_as_ctrl_c_does failed so in CI, stop 37). The removal is done
    again before the exit goes on: the run is published, the staging folder empty."""
    from rooflake.store import publish

    real = shutil.rmtree
    calls: list[Path] = []

    def interrupted(path: Path, *args: object, **kwargs: object) -> None:
        calls.append(Path(path))
        if len(calls) == 1:
            assert Path(path).is_dir()
            raise SystemExit(143)  # the signal, before rmtree removed anything
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(publish.shutil, "rmtree", interrupted)
    root = tmp_path / "store"
    with pytest.raises(SystemExit):
        ingest_file(REPORT, root)
    assert len(calls) == 2 and calls[0] == calls[1]
    assert [p.name for p in (root / ".staging").iterdir()] == []
    assert Store(root).doctor().num_rows == 0 and len(Store(root).run_ids()) == 1


def test_a_live_writer_in_another_pid_namespace_keeps_its_staging(tmp_path: Path) -> None:
    """Writers in containers sharing one store volume: a writer's PID from another PID namespace is none here, so
    clean-up (every ingest) deleted its staging folder while it wrote, and its ingest failed ("No such file");
    doctor called it stale. A writer holds the flock of `<stage>.alive` while it writes: the kernel drops it when
    the writer dies, whatever its PID."""
    import fcntl

    root = tmp_path / "store"
    ingest_file(REPORT, root)
    stage = root / ".staging" / f"{'a' * 16}.999999999.c0ffee00"  # a PID with no process in this namespace
    lock = stage.with_name(stage.name + ".alive")
    with open(lock, "a+b") as held:  # the writer's lock, as rooflake.store.publish.stage_held takes it
        fcntl.flock(held, fcntl.LOCK_EX)
        stage.mkdir()
        (stage / "partial").write_text("being written")
        assert Store(root).clean_staging() == 0 and stage.is_dir()
        assert "stale-staging" not in Store(root).doctor().column("problem").to_pylist()
    # the writer gone (its lock dropped), its folder left
    orphan = root / ".staging" / f"{'b' * 16}.999999999.c0ffee01.alive"  # died before making its folder
    orphan.touch()
    assert Store(root).doctor().column("problem").to_pylist() == ["stale-staging"]
    assert Store(root).clean_staging() == 1
    assert not stage.exists() and not lock.exists() and not orphan.exists()
    run = ingest_file(
        fixture("LakshyaSingh354__CudaCode__gemm__reps__naive"), root
    )  # a real writer's lock, gone
    assert run.status == "ingested" and sorted(p.name for p in (root / ".staging").iterdir()) == []
