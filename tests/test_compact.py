"""`rl compact` (issue 14): many small run partitions rewritten into one file per table, every answer unchanged,
atomic publish and --force still correct, a killed compaction harmless."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from test_pruning import REPORTS, copy_runs, named_answers

from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.store import Store, compact, database
from rooflake.store.layout import PART

from _support import FIXTURES, fixture

CLI = "from rooflake.cli import main; main()"
NSYS = FIXTURES / "nsys" / "NVIDIA__Fuser__report1@da819b5f.sqlite"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three Nsight Compute runs and one Nsight Systems run (every table has files), ingested once."""
    root = tmp_path_factory.mktemp("src")
    results = list(ingest_paths([*(fixture(r) for r in REPORTS), NSYS], root, workers=2))
    assert all(r.status == "ingested" for r in results), results
    return root


@pytest.fixture()
def store(source: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """The four real runs plus eight copies of them under new ids."""
    root = tmp_path / "store"
    shutil.copytree(source, root)
    real = sorted(p.name[7:] for p in (source / "runs").iterdir())
    copies = copy_runs(source, root, 8)
    return root, [*real, *copies]


def parquet_files(root: Path) -> list[Path]:
    return sorted(root.glob("*/*/*.parquet"))


def test_every_named_query_answers_the_same_after_compaction(store) -> None:
    root, runs = store
    before = named_answers(Store(root), runs)
    n_before = len(parquet_files(root))
    result = compact.compact(root)
    assert result.runs == len(runs) and result.files_before == n_before
    files = parquet_files(root)
    assert len(files) == result.files_after <= 8 < n_before  # one per table
    assert all(f.parent.name == "compacted" for f in files)
    assert not list(root.glob("*/run_id=*"))  # every run partition removed
    after = named_answers(Store(root), runs)
    for name in before:
        assert after[name] == before[name], name
    assert Store(root).run_ids() == sorted(runs) and Store(root).has_run(runs[0])
    again = compact.compact(root)  # idempotent
    assert again.runs == len(runs) and named_answers(Store(root), runs) == before


def test_force_reingest_of_a_compacted_run_is_not_read_twice(store) -> None:
    root, runs = store
    compact.compact(root)
    report = fixture(REPORTS[0])
    (kept,) = list(ingest_paths([report], root))
    assert kept.status == "exists"  # the compacted run is in the store
    con = Store(root).connect()
    count = "SELECT count(*) FROM kernels WHERE run_id = $r"
    n = con.execute(count, {"r": kept.run_id}).fetchall()[0][0]
    (again,) = list(ingest_paths([report], root, force=True))
    assert again.status == "replaced"
    con = Store(root).connect()
    assert con.execute(count, {"r": again.run_id}).fetchall()[0][0] == n
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = $r", {"r": again.run_id}).fetchall() == [
        (1,)
    ]
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(len(runs),)]
    before = named_answers(Store(root), runs)
    compact.compact(root)  # the re-ingested partitions go into the next generation
    assert named_answers(Store(root), runs) == before
    assert len(list((root / "kernels" / "compacted").glob("*.parquet"))) == 1


def test_a_compaction_killed_after_its_commit_changes_no_answer(store, monkeypatch) -> None:
    root, runs = store
    before = named_answers(Store(root), runs)
    removed: list[str] = []

    def killed(root_: Path, runs_: frozenset[str]) -> int:  # dies after removing one run's runs partition
        first = sorted(runs_)[0]
        shutil.rmtree(root_ / "runs" / f"run_id={first}")
        removed.append(first)
        raise OSError("killed")

    monkeypatch.setattr(compact, "_remove_partitions", killed)
    with pytest.raises(Exception, match="killed"):
        compact.compact(root)
    assert (root / compact.MANIFEST).exists() and removed
    assert named_answers(Store(root), runs) == before  # half-removed: every run read once, from one place
    monkeypatch.undo()
    compact.compact(root)
    assert named_answers(Store(root), runs) == before


def test_a_compaction_killed_before_its_commit_changes_nothing(store, monkeypatch) -> None:
    root, runs = store
    before = named_answers(Store(root), runs)
    monkeypatch.setattr(compact, "write_manifest", lambda *a: (_ for _ in ()).throw(OSError("killed")))
    with pytest.raises(Exception, match="killed"):
        compact.compact(root)
    assert not (root / compact.MANIFEST).exists()
    assert named_answers(Store(root), runs) == before
    monkeypatch.undo()
    compact.compact(root)  # the orphan files of the killed one are removed
    assert len(list((root / "kernels" / "compacted").glob("*.parquet"))) == 1


def test_rl_compact(store) -> None:
    from typer.testing import CliRunner

    root, runs = store
    r = CliRunner().invoke(app, ["compact", "--store", str(root)])
    assert r.exit_code == 0, r.stderr
    assert f"{len(runs)} runs compacted" in r.stdout
    r = CliRunner().invoke(app, ["sql", "SELECT count(*) AS n FROM runs", "--store", str(root), "-f", "json"])
    assert r.stdout.strip() == f'[{{"n": {len(runs)}}}]'


def test_rl_doctor_after_compaction(store) -> None:
    """A compacted store is healthy (its runs have no partitions left: doctor read the gone runs files as damaged),
    and a damaged compacted file is found, naming its path."""
    from typer.testing import CliRunner

    root, _ = store
    compact.compact(root)
    r = CliRunner().invoke(app, ["doctor", "--store", str(root)])
    assert r.exit_code == 0 and "every file reads whole" in r.stdout, r.output
    (kernels_file,) = (root / "kernels" / "compacted").glob("*.parquet")
    kernels_file.write_bytes(kernels_file.read_bytes()[:100])
    r = CliRunner().invoke(app, ["doctor", "--store", str(root), "-f", "json"])
    assert r.exit_code == 1 and r.stderr.strip() == f"Error: store {root}: 1 problem(s) found", r.output
    (row,) = json.loads(r.stdout)
    assert (row["table"], row["run_id"], row["path"], row["problem"]) == (
        "kernels", "", str(kernels_file), "damaged",
    )  # fmt: skip


def test_rl_doctor_names_the_leftovers_a_plain_glob_reads_twice(store) -> None:
    """A compacted file compacted.json does not name and a partition of a run the compacted files hold (what a
    compaction stopped after its rename or while removing partitions leaves): rl reads neither, a plain glob over
    the table reads both; doctor said "every file reads whole". Both are unpublished; the next compaction deletes
    them."""
    from typer.testing import CliRunner

    root, runs = store
    compact.compact(root)
    (kernels_file,) = (root / "kernels" / "compacted").glob("*.parquet")
    extra = kernels_file.with_name("part-09999999999999999999.parquet")
    shutil.copy(kernels_file, extra)
    left = root / "metrics" / f"run_id={runs[0]}"
    left.mkdir()
    (metrics_file,) = (root / "metrics" / "compacted").glob("*.parquet")
    metrics = pq.read_table(metrics_file)
    pq.write_table(metrics.filter(pc.equal(metrics["run_id"], runs[0])), left / PART)  # its rows again
    r = CliRunner().invoke(app, ["doctor", "--store", str(root), "-f", "json"])
    assert r.exit_code == 1, r.output
    rows = sorted((x["table"], x["run_id"], x["path"], x["problem"]) for x in json.loads(r.stdout))
    assert rows == [
        ("kernels", "", str(extra), "unpublished"),
        ("metrics", runs[0], str(left / PART), "unpublished"),
    ]
    compact.compact(root)
    assert not extra.exists() and not left.exists()
    r = CliRunner().invoke(app, ["doctor", "--store", str(root)])
    assert r.exit_code == 0 and "every file reads whole" in r.stdout, r.output


# ---- incremental compaction (issue 15) --------------------------------------------------------------------------
EXTRA = "LakshyaSingh354__CudaCode__gemm__reps__naive"  # a real report the store does not hold yet


def more_runs(src: Path, dst: Path, n: int, prefix: str) -> list[str]:
    """``n`` more copies of ``src``'s runs in ``dst`` under ids ``<prefix>…`` (every table), as copy_runs does."""
    ids = []
    for rid in copy_runs(src, dst / f".tmp-{prefix}", n):
        new = prefix + rid[len(prefix) :]
        for part in (dst / f".tmp-{prefix}").glob(f"*/run_id={rid}"):
            tab = pq.read_table(part / PART)
            tab = tab.set_column(
                tab.schema.get_field_index("run_id"), "run_id", pa.array([new] * tab.num_rows)
            )
            out = dst / part.parent.name / f"run_id={new}"
            out.mkdir(parents=True)
            pq.write_table(tab, out / PART)
        ids.append(new)
    shutil.rmtree(dst / f".tmp-{prefix}")
    return ids


def kernels_files(root: Path) -> dict[str, int]:
    """Each compacted kernels file and its modification time (ns): a rewritten file has another name or time."""
    return {f.name: f.stat().st_mtime_ns for f in (root / "kernels" / "compacted").glob("*.parquet")}


def segment_runs(root: Path, segment: compact.Segment) -> set[str]:
    return set(pq.read_table(root / segment.files["runs"][0], columns=["run_id"]).column(0).to_pylist())


def test_compact_ingest_more_compact_again_writes_only_the_new_runs(source, store, monkeypatch) -> None:
    root, runs = store
    first = compact.compact(root)
    assert first.written == len(runs) and first.segments == 1
    old_files = kernels_files(root)
    new = more_runs(source, root, 3, "d")
    (extra,) = list(ingest_paths([fixture(EXTRA)], root))
    assert extra.status == "ingested"
    everything = [*runs, *new, extra.run_id]
    before = named_answers(Store(root), everything)
    read: list[list[str]] = []
    rows_sql = compact._rows_sql
    monkeypatch.setattr(compact, "_rows_sql", lambda t, p, m, **kw: read.append(m) or rows_sql(t, p, m, **kw))
    second = compact.compact(root)
    # 4 new runs next to a generation of 12 (> MERGE_RATIO x 4): only the new runs are read and written
    assert (second.written, second.merged, second.segments, second.runs) == (4, 0, 2, len(everything))
    assert read and not any(read)  # no compacted file of the first generation was read
    files = kernels_files(root)
    assert {k: files[k] for k in old_files} == old_files and len(files) == 2  # the first one untouched
    manifest = compact.read_manifest(root)
    assert [s.n_runs for s in manifest.segments] == [len(runs), 4]
    assert segment_runs(root, manifest.segments[1]) == {*new, extra.run_id}
    assert manifest.runs == set(everything) and not list(root.glob("*/run_id=*"))
    assert named_answers(Store(root), everything) == before
    # --force re-ingest of a run of the second generation: that one is rewritten, the first still untouched
    (again,) = list(ingest_paths([fixture(EXTRA)], root, force=True))
    assert again.status == "replaced"
    before = named_answers(Store(root), everything)  # ingested_at of the run is new
    third = compact.compact(root)
    assert (third.written, third.merged, third.segments) == (4, 1, 2)
    assert {k: kernels_files(root)[k] for k in old_files} == old_files
    assert named_answers(Store(root), everything) == before
    # --force of a run of the first generation: that one is rewritten without the run's old rows (and the small
    # one merged into it: 4 <= 2 x 12)
    (kept,) = list(ingest_paths([fixture(REPORTS[0])], root, force=True))
    assert kept.status == "replaced"
    before = named_answers(Store(root), everything)
    fourth = compact.compact(root)
    assert (fourth.written, fourth.merged, fourth.segments) == (len(everything), 2, 1)
    assert named_answers(Store(root), everything) == before
    assert compact.compact(root).written == 0  # nothing new: nothing written


def test_the_merge_policy_keeps_generations_few_and_rewrites_little() -> None:
    """A 100,000-run generation, then 400 nightly compactions of 1,000 runs: never more than MAX_SEGMENTS
    generations, and each run rewritten a logarithmic number of times."""
    seg = compact.Segment
    segments = (seg("0", {"runs": ["runs/compacted/part-0.parquet"]}, 100_000),)
    written = 0
    for night in range(1, 401):
        manifest = compact.Manifest.of(str(night), segments, frozenset())
        p = compact.plan(manifest, frozenset(f"{night}-{i}" for i in range(1000)), lambda s: frozenset())
        size = 1000 + sum(s.n_runs for s in p.merged)
        written += size
        segments = (*p.kept, seg(str(night), {"runs": [f"runs/compacted/part-{night}.parquet"]}, size))
        assert len(segments) <= compact.MAX_SEGMENTS
        sizes = sorted((s.n_runs for s in segments), reverse=True)
        assert all(a > compact.MERGE_RATIO * b for a, b in zip(sizes[1:], sizes[2:], strict=False)), sizes
    assert sum(s.n_runs for s in segments) == 500_000
    # a full rewrite every night would write 100,000 x 400 + 1,000 x 400 x 401 / 2 runs (120 M); this: ~12x less
    assert written < 10 * 500_000, written
    assert compact.plan(
        compact.Manifest.of("x", segments, frozenset()), frozenset(), lambda s: frozenset()
    ).empty


def test_a_legacy_manifest_is_one_generation(store) -> None:
    """A compacted.json written before generations were recorded (no ``segments``) reads as one generation."""
    import json

    root, runs = store
    compact.compact(root)
    body = json.loads((root / compact.MANIFEST).read_text())
    del body["segments"]
    (root / compact.MANIFEST).write_text(json.dumps(body))
    (segment,) = compact.read_manifest(root).parts()
    assert segment.n_runs == len(runs) and segment.files == body["files"]


# ---- two compactions of one store at once (issue 15) ------------------------------------------------------------
#: a compaction in a process of its own that stops before writing its new generation until a file appears
PAUSED = """
import sys, time
from pathlib import Path
from rooflake.store import compact
write, ready, go = compact.write_generation, Path(sys.argv[2]), Path(sys.argv[3])
def paused(*a, **k):
    ready.touch()
    t0 = time.monotonic()
    while not go.exists() and time.monotonic() - t0 < 300:
        time.sleep(0.05)
    return write(*a, **k)
compact.write_generation = paused
r = compact.compact(sys.argv[1])
print(r.runs, r.written)
"""


def paused_compaction(store: str, tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    """A compaction of ``store`` in another process, holding the store's compaction lock and waiting before its
    writes until the returned file exists."""
    ready, go = tmp / "ready", tmp / "go"
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED, store, str(ready), str(go)], stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the first compaction did not start"
        time.sleep(0.05)
    return proc, go


def test_a_second_compaction_of_a_local_store_fails_and_changes_nothing(store, tmp_path: Path) -> None:
    root, runs = store
    before = named_answers(Store(root), runs)
    first, go = paused_compaction(str(root), tmp_path)
    try:
        second = subprocess.run(
            [sys.executable, "-c", CLI, "compact", "--store", str(root)], capture_output=True, text=True
        )
        assert second.returncode == 1, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert line.startswith(
            f"Error: store {root}: another rl compact is running on it (pid {first.pid} on "
        )
        assert line.endswith("this one changed nothing")
        assert not (root / compact.MANIFEST).exists()  # the second wrote nothing
    finally:
        go.touch()
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0 and out.split() == [str(len(runs)), str(len(runs))]
    assert named_answers(Store(root), runs) == before and Store(root).run_ids() == sorted(runs)
    assert compact.compact(root).written == 0  # the lock is free again


def test_a_damaged_compacted_runs_file_is_one_error_line(store) -> None:
    """A run re-ingested with --force makes the next compaction read its generation's files again (DuckDB, and
    pyarrow for the run ids it holds): a damaged one is one Error line naming the store, and the store is left as
    it was."""
    from typer.testing import CliRunner

    root, _ = store
    compact.compact(root)
    (again,) = list(ingest_paths([fixture(REPORTS[0])], root, force=True))
    assert again.status == "replaced"
    (runs_file,) = (root / "runs" / "compacted").glob("*.parquet")
    runs_file.write_bytes(runs_file.read_bytes()[:100])
    before = sorted((p, p.stat().st_size) for p in root.rglob("*") if p.is_file() and ".lock" not in p.name)
    r = CliRunner().invoke(app, ["compact", "--store", str(root)])
    assert r.exit_code == 1 and r.stderr.startswith(f"Error: cannot compact store {root}:"), r.output
    assert len(r.stderr.strip().splitlines()) == 1
    after = sorted((p, p.stat().st_size) for p in root.rglob("*") if p.is_file() and ".lock" not in p.name)
    assert after == before


def test_a_generation_split_into_several_files_answers_the_same(source, store, monkeypatch) -> None:
    """A big generation is written as several files per table (one per FILE_BYTES, here every row group of 64
    rows), sorted by run across them: every named query answers as before, pruned to one run or not, and the next
    compactions (new runs, a --force of a run whose rows span files) read all of a generation's files."""
    root, runs = store
    monkeypatch.setattr(compact, "ROW_GROUP_ROWS", 64)
    monkeypatch.setattr(compact, "FILE_BYTES", 1)
    before = named_answers(Store(root), runs)
    first = compact.compact(root)
    manifest = compact.read_manifest(root)
    files = manifest.files
    assert first.written == len(runs) and len(files["metrics"]) > 10 and len(files["kernels"]) > 1
    assert files["metrics"][0].endswith(f"part-{first.generation}-0000.parquet")
    assert files["runs"] == [f"runs/compacted/part-{first.generation}.parquet"]  # 12 rows: one file
    for t, fs in files.items():  # every file named, none left over, rows sorted by run across the files
        assert sorted(fs) == fs and {
            str(p.relative_to(root)) for p in (root / t / "compacted").iterdir()
        } == set(fs)
        ids = [r for f in fs for r in pq.read_table(root / f, columns=["run_id"]).column(0).to_pylist()]
        assert ids == sorted(ids) and all(pq.ParquetFile(root / f).metadata.num_row_groups == 1 for f in fs)
    assert named_answers(Store(root), runs) == before
    for pruned in (0, 10**9):  # read query by query, and bound whole
        monkeypatch.setattr(database, "PRUNE_FROM", pruned)
        assert named_answers(Store(root), runs) == before
    new = more_runs(source, root, 2, "e")
    (kept,) = list(ingest_paths([fixture(REPORTS[0])], root, force=True))  # a run of the split generation
    assert kept.status == "replaced"
    everything = [*runs, *new]
    before = named_answers(Store(root), everything)
    second = compact.compact(root)  # the dirty generation is merged: its stale rows of the run dropped
    assert (second.written, second.merged, second.segments) == (len(everything), 1, 1)
    assert named_answers(Store(root), everything) == before
    assert {str(p.relative_to(root)) for p in root.glob("*/compacted/*")} == {
        f for fs in compact.read_manifest(root).files.values() for f in fs
    }


@pytest.mark.parametrize("copies", [8, 70])  # a database reading every file, and one pruning query by query
def test_a_reader_open_across_a_compaction_sees_every_run(source, tmp_path: Path, copies: int) -> None:
    """A reader that took the store's sources before a compaction committed and queried after it removed the
    partitions: with every file pointed at open, the query failed ("No files found"); with the folders listed per
    query, the compacted runs were in neither the old manifest nor a folder: silently left out (17 runs -> 16)."""
    root = tmp_path / "store"
    shutil.copytree(source, root)
    ids = copy_runs(source, root, copies)
    s = Store(root)
    want = len(ids) + 4
    con = s.connect()
    compact.compact(root)
    assert not list((root / "runs").glob("run_id=*"))  # the partitions are gone
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (want,)
    assert con.execute("SELECT count(DISTINCT run_id) FROM kernels").fetchone() == (
        want,
    )  # every run has some
    one = ids[-1]
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = $r", {"r": one}).fetchone() == (1,)


def test_a_compacted_file_gone_fails_its_table_only(store) -> None:
    """A compacted file deleted (by hand, or by a compaction merging generations under a reader) ended every
    command in a traceback (parquet_schema of the file, while pointing the views): only its table fails, with
    one Error line naming it."""
    from typer.testing import CliRunner

    root, _ = store
    compact.compact(root)
    ert = (
        FIXTURES
        / "ert"
        / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
    )
    (new,) = list(ingest_paths([ert], root))
    compact.compact(root)  # two generations: the views read their files in an order checked first
    files = json.loads((root / "compacted.json").read_text())["files"]["ceilings"]
    assert len(files) == 2, files
    gone = root / files[-1]
    gone.unlink()
    r = CliRunner().invoke(app, ["runs", "--store", str(root)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["sql", "SELECT count(*) FROM ceilings", "--store", str(root)])
    assert r.exit_code == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.output
    assert r.stderr.startswith("Error: ") and gone.name in r.stderr


@pytest.mark.parametrize("how", ["compact", "doctor"])
def test_the_library_refuses_a_store_folder_that_does_not_exist(tmp_path: Path, how: str) -> None:
    """As the CLI does: compact() created the mistyped folder (and its lock files) and reported 0 runs; doctor()
    called it a healthy store (no rows). Both raise one line, and nothing is created."""
    from rooflake.schema import StoreError

    typo = tmp_path / "no-such-store"
    with pytest.raises(StoreError) as e:
        compact.compact(typo) if how == "compact" else Store(typo).doctor()
    assert str(e.value) == (
        f"{typo}: no store there (no such folder; check --store or $RL_STORE; rl ingest creates one)"
    )
    assert not typo.exists()


def test_a_compaction_in_batches_of_runs_answers_the_same(source, store, monkeypatch) -> None:
    """Compaction reads each table by run ranges of BATCH_RUNS runs (here 3), not by one statement over every
    partition file (DuckDB keeps a reader per file of such a scan: 1.9 GB at 10,000 runs): every named query
    answers as before, rows stay sorted by run in full row groups across the batches, and a second compaction that
    merges the first generation (new runs between its runs, a --force re-ingest of one) writes each run once."""
    root, runs = store
    monkeypatch.setattr(compact, "BATCH_RUNS", 3)
    monkeypatch.setattr(compact, "ROW_GROUP_ROWS", 64)
    statements: list[tuple[str, int]] = []
    rows_sql = compact._rows_sql
    monkeypatch.setattr(
        compact, "_rows_sql", lambda t, p, m, **kw: statements.append((t, len(p))) or rows_sql(t, p, m, **kw)
    )
    before = named_answers(Store(root), runs)
    first = compact.compact(root)
    assert first.written == len(runs) == 12
    kernel_reads = [n for t, n in statements if t == "kernels"]
    assert len(kernel_reads) == 4 and max(kernel_reads) <= 3  # 12 runs: 4 statements of at most 3 runs' files
    assert named_answers(Store(root), runs) == before
    for t, fs in compact.read_manifest(root).files.items():
        for f in fs:
            meta = pq.ParquetFile(root / f).metadata
            groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            assert all(g == 64 for g in groups[:-1]), (t, groups)  # whole row groups across the batches
            ids = pq.read_table(root / f, columns=["run_id"]).column(0).to_pylist()
            assert ids == sorted(ids), t
    new = more_runs(source, root, 4, "0")  # ids sorting before and between the compacted ones
    (kept,) = list(ingest_paths([fixture(REPORTS[0])], root, force=True))
    assert kept.status == "replaced"
    everything = [*runs, *new]
    before = named_answers(Store(root), everything)
    monkeypatch.setattr(compact, "MERGE_RATIO", 100)  # merge the first generation into the second
    second = compact.compact(root)
    assert (second.written, second.merged, second.segments) == (len(everything), 1, 1)
    assert named_answers(Store(root), everything) == before
    runs_file = root / compact.read_manifest(root).files["runs"][0]
    ids = pq.read_table(runs_file, columns=["run_id"]).column(0).to_pylist()
    assert ids == sorted(everything)  # each run once, in order
