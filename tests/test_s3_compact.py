"""`rl compact` on a store on object storage (issue 15), end to end against moto in server mode on loopback: every
named query answers the same before and after, a `--force` re-ingest of a compacted run is read once, a reader
running beside the compaction sees the store before or after it, and `Store.files` names the compacted files."""

from __future__ import annotations

import shutil
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_compact import NSYS, PAUSED
from test_pruning import REPORTS, copy_runs, named_answers
from test_s3_store import invoke, s3_endpoint  # noqa: F401 - the moto server fixture

from rooflake.pipeline import ingest_file, ingest_paths
from rooflake.schema import StoreError
from rooflake.store import ALL_TABLES, Store, compact, remote

from _support import fixture

pytest.importorskip("s3fs", reason="s3:// stores need s3fs (pip install 'rooflake[s3]')")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A local store: three Nsight Compute runs, one Nsight Systems run, eight copies of them (ids c000…)."""
    src = tmp_path_factory.mktemp("src")
    results = list(ingest_paths([*(fixture(r) for r in REPORTS), NSYS], src, workers=2))
    assert all(r.status == "ingested" for r in results), results
    root = tmp_path_factory.mktemp("local") / "store"
    shutil.copytree(src, root)
    real = sorted(p.name[7:] for p in (src / "runs").iterdir())
    return root, [*real, *copy_runs(src, root, 8)]


def _upload(local: Path, runs: list[str], url: str) -> None:
    """Publish every run of the local store to ``url`` as rooflake writes it there (a generation per run)."""
    import pyarrow.parquet as pq

    from rooflake.store.layout import part_file

    store = Store(url)
    for r in runs:
        tables = {t: pq.read_table(p) for t in ALL_TABLES if (p := part_file(local, t, r)).exists()}
        assert store.publish(r, tables).status == "ingested"


@pytest.fixture()
def s3_runs(s3_endpoint: str, source: tuple[Path, list[str]]) -> tuple[str, list[str], dict[str, Any]]:  # noqa: F811
    """``s3://<new bucket>/store`` holding the twelve runs of ``source``, and the local store's named answers."""
    import fsspec

    local, runs = source
    bucket = f"rl-{uuid.uuid4().hex[:12]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    url = f"s3://{bucket}/store"
    _upload(local, runs, url)
    return url, runs, named_answers(Store(local), runs)


def test_every_named_query_answers_the_same_after_an_s3_compaction(s3_runs) -> None:
    url, runs, local_answers = s3_runs
    before = named_answers(Store(url), runs)
    assert before == local_answers  # the same store on S3 and on disk
    n_before = len(Store(url).files("kernels"))
    r = invoke("compact", "--store", url)
    assert r.exit_code == 0, r.output
    assert f"{len(runs)} runs compacted" in r.stdout
    snap = remote.Snapshot.take(url)
    assert snap.published() == dict.fromkeys(runs, "compacted")
    assert all(not files for files in snap.files.values())  # every partition deleted
    assert Store(url).files("kernels") == [
        f"{url}/kernels/compacted/part-{snap.compaction.generation}.parquet"
    ]
    assert n_before == len(runs)
    assert named_answers(Store(url), runs) == before
    assert Store(url).run_ids() == sorted(runs)
    again = compact.compact(url)  # idempotent: a new generation, the old files deleted
    assert again.runs == len(runs) and again.files_after == len(remote.Snapshot.take(url).compacted)
    assert named_answers(Store(url), runs) == before
    assert remote.clean(url, stale_after_s=-1.0) == 0  # nothing left over


def test_force_reingest_of_a_compacted_run_on_s3_is_read_once(s3_runs) -> None:
    url, runs, _ = s3_runs
    compact.compact(url)
    report = fixture(REPORTS[0])
    kept = ingest_file(report, url)
    assert kept.status == "exists"  # held by the compaction
    count = "SELECT count(*) FROM kernels WHERE run_id = $r"
    n = Store(url).connect().execute(count, {"r": kept.run_id}).fetchall()[0][0]
    assert n > 0
    assert ingest_file(report, url, force=True).status == "replaced"
    assert remote.Snapshot.take(url).published()[kept.run_id] == "partition"
    con = Store(url).connect()
    assert con.execute(count, {"r": kept.run_id}).fetchall() == [(n,)]
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(len(runs),)]
    # Store.files: the run's partition and the compacted files, whose copy of the run readers skip
    files = Store(url).files("kernels")
    assert len(files) == 2 and any(f"run_id={kept.run_id}/" in f for f in files)
    before = named_answers(Store(url), runs)
    compact.compact(url)  # the re-ingested partitions go into the next generation
    assert remote.Snapshot.take(url).published() == dict.fromkeys(runs, "compacted")
    assert named_answers(Store(url), runs) == before


def test_a_reader_beside_an_s3_compaction_sees_the_store_before_or_after(s3_runs) -> None:
    url, runs, _ = s3_runs
    sql = "SELECT count(*) AS n, sum(duration_ns) AS t FROM kernels"
    expected = Store(url).query(sql).to_pylist()
    seen: list[Any] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                seen.append(Store(url).query(sql).to_pylist())
            except Exception as e:  # noqa: BLE001 - recorded, the test fails on it
                seen.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(2):
            compact.compact(url)
    finally:
        done.set()
        reader.join()
    assert seen and all(s == expected for s in seen), [s for s in seen if s != expected][:3]


def test_store_files_name_the_compacted_files_of_a_local_store(source, tmp_path: Path) -> None:
    local, runs = source
    root = tmp_path / "store"
    shutil.copytree(local, root)
    assert len(Store(root).files("kernels")) == len(runs)
    result = compact.compact(root)
    assert Store(root).files("kernels") == [
        str(root / "kernels" / "compacted" / f"part-{result.generation}.parquet")
    ]
    assert Store(root, only_runs=[runs[0]]).files("kernels") == Store(root).files("kernels")
    assert Store(root).published() == dict.fromkeys(runs, "compacted")


# ---- incremental compaction and two compactions at once (issue 15) -----------------------------------------------
def _compacted_objects(url: str) -> dict[str, str]:
    """Every compacted file of the store: key -> ETag (a rewritten object has a new name or ETag)."""
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
    found = fs.find(url, detail=True)
    return {k: v["ETag"] for k, v in found.items() if "/compacted/" in k}


@pytest.fixture()
def s3_part(s3_endpoint: str, source: tuple[Path, list[str]]) -> tuple[str, list[str], dict[str, Any]]:  # noqa: F811
    """``s3://<new bucket>/store`` holding the first nine runs of ``source``; the local answers over all twelve."""
    import fsspec

    local, runs = source
    bucket = f"rl-{uuid.uuid4().hex[:12]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    url = f"s3://{bucket}/store"
    _upload(local, runs[:9], url)
    return url, runs, named_answers(Store(local), runs)


def test_s3_compact_ingest_more_compact_again_writes_only_the_new_runs(s3_part, source) -> None:
    url, runs, local_answers = s3_part
    local, _ = source
    assert compact.compact(url).written == 9
    first = _compacted_objects(url)
    _upload(local, runs[9:], url)
    second = compact.compact(url)
    # 3 new runs next to a generation of 9 (> MERGE_RATIO x 3): only they are written, the first files untouched
    assert (second.written, second.merged, second.segments, second.runs) == (3, 0, 2, len(runs))
    now = _compacted_objects(url)
    assert {k: now[k] for k in first} == first and len(now) > len(first)
    snap = remote.Snapshot.take(url)
    assert snap.published() == dict.fromkeys(runs, "compacted") and not any(snap.files.values())
    assert named_answers(Store(url), runs) == local_answers
    # a run of the second generation re-ingested with --force: that one is rewritten, the first still untouched
    import pyarrow.parquet as pq

    from rooflake.store.layout import part_file

    last = runs[-1]
    tables = {t: pq.read_table(p) for t in ALL_TABLES if (p := part_file(local, t, last)).exists()}
    assert Store(url).publish(last, tables, force=True).status == "replaced"  # what --force does
    third = compact.compact(url)
    assert third.merged == 1 and third.segments == 2
    assert {k: v for k, v in _compacted_objects(url).items() if k in first} == first
    assert Store(url).run_ids() == sorted(runs)
    assert compact.compact(url).written == 0
    assert remote.clean(url, stale_after_s=-1.0) == 0  # nothing left over


def test_a_second_s3_compaction_fails_and_changes_nothing(s3_runs, tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    url, runs, local_answers = s3_runs
    ready, go = tmp_path / "ready", tmp_path / "go"
    first = subprocess.Popen(
        [sys.executable, "-c", PAUSED, url, str(ready), str(go)], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first compaction did not start"
            time.sleep(0.05)
        cli = "from rooflake.cli import main; main()"
        second = subprocess.run(
            [sys.executable, "-c", cli, "compact", "--store", url], capture_output=True, text=True
        )
        assert second.returncode == 1, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert line.startswith(
            f"Error: store {url}: another rl compact is running on it (pid {first.pid} on "
        )
        assert not _compacted_objects(url)  # the second wrote nothing
    finally:
        go.touch()
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0 and out.split() == [str(len(runs)), str(len(runs))]
    assert named_answers(Store(url), runs) == local_answers
    assert compact.compact(url).written == 0  # the lock object is gone


def test_a_compaction_whose_lock_was_taken_over_cannot_commit(s3_runs, monkeypatch) -> None:
    """A compaction that outlived its lock (taken over as stale by another one, which committed first) fails at
    its conditional manifest PUT, or when the files it reads are gone, and changes nothing: no run is lost."""
    url, runs, local_answers = s3_runs
    write = compact.write_generation
    started, resume = threading.Event(), threading.Event()

    def paused(*a: Any, **k: Any) -> Any:
        if threading.current_thread().name == "slow":
            started.set()
            resume.wait(120)
        return write(*a, **k)

    monkeypatch.setattr(compact, "write_generation", paused)
    errors: list[Exception] = []

    def slow() -> None:
        try:
            compact.compact(url)
        except StoreError as e:
            errors.append(e)

    thread = threading.Thread(target=slow, name="slow")
    thread.start()
    assert started.wait(120)
    with pytest.raises(StoreError, match="another rl compact is running on it"):
        compact.compact(url)
    taker = compact.compact_remote(url, stale_after_s=-1.0)  # the lock is "stale": taken over
    assert taker.written == len(runs)
    resume.set()
    thread.join(120)
    (error,) = errors
    assert str(error).startswith(f"store {url}: another rl compact committed while this one ran")
    assert named_answers(Store(url), runs) == local_answers
    assert remote.Snapshot.take(url).published() == dict.fromkeys(runs, "compacted")


def test_a_generation_split_into_several_files_on_s3_answers_the_same(s3_runs, monkeypatch) -> None:
    """A generation written as several files per table (one per FILE_BYTES: here every row group of 64 rows):
    uploaded under the manifest's names, every named query unchanged, and a --force re-ingest of a run whose rows
    span files is compacted again without its stale rows; nothing left for clean()."""
    url, runs, local_answers = s3_runs
    monkeypatch.setattr(compact, "ROW_GROUP_ROWS", 64)
    monkeypatch.setattr(compact, "FILE_BYTES", 1)
    first = compact.compact(url)
    snap = remote.Snapshot.take(url)
    assert len(snap.compacted["metrics"]) > 10 and snap.compaction.files["metrics"][0].endswith(
        f"part-{first.generation}-0000.parquet"
    )
    assert named_answers(Store(url), runs) == local_answers
    kept = ingest_file(fixture(REPORTS[0]), url, force=True)
    assert kept.status == "replaced"
    before = named_answers(Store(url), runs)
    second = compact.compact(url)
    assert (second.written, second.merged, second.segments) == (len(runs), 1, 1)
    assert named_answers(Store(url), runs) == before
    assert remote.clean(url, stale_after_s=-1.0) == 0


def test_a_force_reingest_during_an_s3_compaction_is_listed_again(s3_runs, monkeypatch) -> None:
    """A `--force` re-ingest that commits while a compaction runs deletes the partition files the compaction
    listed: it failed (5 of 6 tries beside a re-ingest loop), its error line carrying s3fs's traceback text. It
    lists the store again and compacts what is there; when that keeps happening, one line without a traceback."""
    url, runs, _ = s3_runs
    report = fixture(REPORTS[0])
    before = named_answers(Store(url), runs)
    before.pop("runs")  # (the re-ingest's runs row has its own ingested_at)
    real = compact.write_generation
    calls: list[int] = []

    def reingest_first(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            assert ingest_file(report, url, force=True).status == "replaced"
        return real(*args, **kwargs)

    monkeypatch.setattr(compact, "write_generation", reingest_first)
    result = compact.compact(url)
    assert len(calls) == 2 and result.runs == len(runs)
    assert remote.Snapshot.take(url).published() == dict.fromkeys(runs, "compacted")
    after = named_answers(Store(url), runs)
    assert len(after.pop("runs")) == len(runs) and after == before

    def always(*args: Any, **kwargs: Any) -> Any:
        assert ingest_file(report, url, force=True).status == "replaced"
        return real(*args, **kwargs)

    for _ in range(2):  # (the first compaction folds the re-ingested run in)
        assert ingest_file(report, url, force=True).status == "replaced"
        monkeypatch.setattr(compact, "write_generation", always)
        try:
            compact.compact(url)
        except StoreError as e:
            message = str(e)
            break
    else:
        pytest.fail("the compaction never saw its files replaced")
    assert "re-ingested (--force) while it ran" in message and "Traceback" not in message, message
    assert len(message.splitlines()) == 1
