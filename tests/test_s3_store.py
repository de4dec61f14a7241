"""A store on object storage (issue 15): ``--store s3://bucket/prefix`` against a real S3-compatible server on
loopback (moto in server mode, started and stopped here), the same answers as a local store for the same reports,
and the store's promises where nothing can be renamed: ``--force``, concurrent ingests, a failed or killed writer.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.pipeline import ingest_file
from rooflake.schema import StoreError
from rooflake.store import Store

from _support import FIXTURES, fixture

pytest.importorskip("s3fs", reason="s3:// stores need s3fs (pip install 'rooflake[s3]')")
moto_server = pytest.importorskip(
    "moto.server", reason="the S3 tests need moto in server mode (pip install 'moto[server]')"
)

A10G = fixture("AveryClapp__ESMM-Research__profile_output")  # 4 kernels, 1252 metrics, ceilings
NVTX = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx")  # 3 kernels
NSYS = FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mock.sqlite"  # 2 kernels, 1 memcpy
ERT = FIXTURES / "ert" / "HPCL__roofline_python__examples__input_files__roofline_cascadelake_DP.json"
REPORTS = [A10G, NVTX, NSYS, ERT]
CLI = "from rooflake.cli import main; main()"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 (a free port) for this module, and the AWS settings that point boto3, s3fs
    and polars at it (subprocesses inherit them)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        for k in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "RL_STORE"):
            mp.delenv(k, raising=False)
        try:
            yield endpoint
        finally:
            server.stop()


@pytest.fixture()
def s3_store(s3_endpoint: str) -> str:
    """``s3://<a new bucket>/store``."""
    import fsspec

    bucket = f"rl-{uuid.uuid4().hex[:12]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    return f"s3://{bucket}/store"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _objects(url: str) -> dict[str, str]:
    """Every object under the store's prefix: key -> ETag (the store's exact state)."""
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
    return {k: v["ETag"] for k, v in fs.find(url, detail=True).items()}


def _sql_csv(store: str | Path, sql: str) -> str:
    r = invoke("sql", "--store", str(store), "--format", "csv", sql)
    assert r.exit_code == 0, r.output
    return str(r.stdout)


# ---- the same answers as a local store ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def both(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The same four reports (two .ncu-rep, an nsys export, an ERT file) ingested by `rl ingest` into a new
    bucket and into a local directory."""
    import fsspec

    bucket = f"rl-{uuid.uuid4().hex[:12]}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    url, local = f"s3://{bucket}/store", tmp_path_factory.mktemp("local") / "store"
    for store in (url, str(local)):
        # a process of its own, as a user runs it: the worker pool's fork server, once started by an earlier test
        # of the session, would keep that moment's environment (without this module's AWS settings)
        args = ["ingest", *map(str, REPORTS), "--store", store, "--json", "--workers", "2"]
        r = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        assert sorted(json.loads(line)["status"] for line in r.stdout.splitlines()) == ["ingested"] * 4
    return url, local


def test_rl_runs_lists_the_same_runs(both: tuple[str, Path]) -> None:
    url, local = both
    runs = [json.loads(invoke("runs", "--store", str(s), "--format", "json").stdout) for s in both]
    s3, here = ([{k: v for k, v in r.items() if k != "ingested_at"} for r in rs] for rs in runs)
    assert sorted(s3, key=lambda r: r["run_id"]) == sorted(here, key=lambda r: r["run_id"])
    assert len(s3) == 4
    assert Store(url).run_ids() == Store(local).run_ids()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM kernel_roofline ORDER BY ALL",
        "SELECT * EXCLUDE (ingested_at) FROM runs ORDER BY run_id",
        "SELECT run_id, count(*) AS n, sum(value_double) AS s FROM metrics GROUP BY run_id ORDER BY run_id",
        "SELECT * FROM ceilings ORDER BY ALL",
        "SELECT * FROM memops ORDER BY ALL",
    ],
)
def test_rl_sql_gives_the_same_rows_as_a_local_store(both: tuple[str, Path], sql: str) -> None:
    url, local = both
    s3_rows = _sql_csv(url, sql)
    assert s3_rows == _sql_csv(local, sql)
    assert s3_rows.count("\n") > 1  # rows, not just a header


def test_kernel_roofline_values_of_the_a10g_run(both: tuple[str, Path]) -> None:
    """Real values through the s3 path: the A10G report's 4 kernels, their DRAM bytes as the local store has
    them (ncu's dram__bytes.sum), in kernel order."""
    url, local = both
    sql = (
        "SELECT k.kernel_id, k.duration_ns, k.bytes_dram FROM kernels k JOIN runs r USING (run_id) "
        "WHERE r.gpu_name = 'NVIDIA A10G' ORDER BY k.kernel_id"
    )
    s3 = Store(url).query(sql).to_pylist()
    assert len(s3) == 4 and all(r["duration_ns"] > 0 for r in s3)
    assert s3 == Store(local).query(sql).to_pylist()


def test_a_store_of_some_runs_reads_only_their_files(both: tuple[str, Path]) -> None:
    """``Store(url, only_runs=…)`` (what rl report uses) lists just those runs' partitions."""
    url, local = both
    ids = Store(url).run_ids()[:2]
    sql = "SELECT run_id, count(*) AS n FROM kernels GROUP BY run_id ORDER BY run_id"
    assert Store(url, only_runs=ids).query(sql) == Store(local, only_runs=ids).query(sql)
    files = Store(url, only_runs=ids).files("runs")
    assert len(files) == 2 and all(
        f.startswith(f"{url}/runs/run_id={r}/part-") for f, r in zip(files, ids, strict=True)
    )


def test_rl_roofline_writes_the_chart_locally(both: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = both
    run = Store(url).query("SELECT run_id FROM runs WHERE gpu_name = 'NVIDIA A10G'").column(0)[0].as_py()
    out = tmp_path / "roofline.html"
    r = invoke("roofline", run, "--store", url, "--out", str(out))
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"wrote {out} (run {run}")
    assert "warptiling" in out.read_text()


def test_rl_store_env_names_the_bucket(both: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    url, local = both
    monkeypatch.setenv("RL_STORE", url)
    r = invoke("sql", "--format", "csv", "SELECT count(*) AS n FROM kernels")
    assert r.exit_code == 0, r.output
    assert r.stdout == _sql_csv(local, "SELECT count(*) AS n FROM kernels")


def test_polars_reads_the_committed_files_natively(both: tuple[str, Path]) -> None:
    import polars as pl

    url, local = both
    s = Store(url)
    files = s.files("kernels")
    assert len(files) == 3 and all(f.startswith(url + "/kernels/run_id=") for f in files)  # ERT: no kernels
    frame = pl.read_parquet(files, storage_options=s.storage_options())
    assert frame.height == Store(local).query("SELECT count(*) AS n FROM kernels").column(0)[0].as_py()
    assert set(frame.get_column("run_id")) < set(s.run_ids())


def test_doctor_finds_a_healthy_store(both: tuple[str, Path]) -> None:
    url, _ = both
    r = invoke("doctor", "--store", url)
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"store {url}: 4 runs, every file reads whole"


# ---- publish without rename ----------------------------------------------------------------------------------
def test_force_reingest_replaces_the_run_with_one_generation(s3_store: str) -> None:
    first = ingest_file(A10G, s3_store)
    assert first.status == "ingested"
    before = _objects(s3_store)
    assert ingest_file(A10G, s3_store).status == "exists"
    assert _objects(s3_store) == before  # a no-op writes nothing
    r = invoke("ingest", str(A10G), "--store", s3_store, "--force", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["status"] == "replaced"
    after = _objects(s3_store)
    assert len(after) == len(before) == 4  # runs, kernels, metrics, ceilings: the old generation deleted
    assert not set(after) & set(before)  # every file of a new name: nothing was overwritten in place
    counts = Store(s3_store).query(
        "SELECT (SELECT count(*) FROM kernels) k, (SELECT count(*) FROM metrics) m"
    )
    assert counts.to_pylist() == [{"k": 4, "m": 1252}]


def test_two_concurrent_ingests_of_different_files_both_succeed(s3_store: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLI, "ingest", str(p), "--store", s3_store, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in (A10G, NVTX)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert [json.loads(out)["status"] for out, _ in results] == ["ingested", "ingested"]
    assert len(Store(s3_store).run_ids()) == 2
    assert Store(s3_store).query("SELECT count(*) AS n FROM kernels").to_pylist() == [{"n": 7}]
    assert Store(s3_store).doctor().num_rows == 0


def test_concurrent_force_reingests_of_one_file_leave_one_generation(s3_store: str) -> None:
    """Three writers republish one run at once: each succeeds, every reader sees one whole run, and when they are
    done one generation is left (the greatest; the others deleted as superseded, by their writers or the clean-up)."""
    run_id = ingest_file(A10G, s3_store).run_id
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLI, "ingest", str(A10G), "--store", s3_store, "--force", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    while any(p.poll() is None for p in procs):
        assert Store(s3_store).run_ids() == [run_id]
        time.sleep(0.05)
    results = [p.communicate(timeout=300) for p in procs]
    assert [json.loads(out)["status"] for out, _ in results] == ["replaced"] * 3, results
    Store(s3_store).clean_staging()
    assert len(_objects(s3_store)) == 4
    counts = Store(s3_store).query(
        "SELECT (SELECT count(*) FROM kernels) k, (SELECT count(*) FROM metrics) m"
    )
    assert counts.to_pylist() == [{"k": 4, "m": 1252}]


def _tables(store: Store, run_id: str) -> dict[str, Any]:
    return {
        t: store.query(f"SELECT * FROM {t} WHERE run_id = $r", {"r": run_id}) for t in ("runs", "kernels")
    }


def test_a_failed_publish_leaves_the_store_as_it_was(s3_store: str) -> None:
    """The metrics table's query fails (DuckDB raises while writing it) after kernels were uploaded: the error
    comes out, the uploads are deleted, and neither the new run nor anything of it is left."""
    import duckdb

    from rooflake.schema import METRICS
    from rooflake.schema.duck import DuckTable

    run_id = ingest_file(A10G, s3_store).run_id
    store = Store(s3_store)
    before = _objects(s3_store)
    tables = _tables(store, run_id)
    con = duckdb.connect()
    bad = DuckTable(con, "SELECT error('the reader failed') AS x", METRICS, 1)
    runs = tables["runs"]
    new = runs.set_column(runs.schema.get_field_index("run_id"), "run_id", [["feedfacefeedface"]])
    with pytest.raises(duckdb.Error, match="the reader failed"):
        store.publish("feedfacefeedface", {"runs": new, "kernels": tables["kernels"], "metrics": bad})
    assert _objects(s3_store) == before
    with pytest.raises(
        duckdb.Error, match="the reader failed"
    ):  # a --force of a published run fails the same way
        store.publish(
            run_id, {"runs": tables["runs"], "kernels": tables["kernels"], "metrics": bad}, force=True
        )
    assert _objects(s3_store) == before
    assert store.run_ids() == [run_id]


WRITER = """
import sys
from rooflake.store import Store
store = Store(sys.argv[1])
tables = {t: store.query(f"SELECT * FROM {t} WHERE run_id = $r", {"r": sys.argv[2]}) for t in
          ("runs", "kernels", "metrics", "ceilings")}
print("ready", flush=True)
while True:
    store.publish(sys.argv[2], tables, force=True)
"""


def test_a_writer_killed_at_any_instant_never_shows_a_half_run(s3_store: str) -> None:
    """A writer republishing the run in a loop is SIGKILLed at 4 random instants: meanwhile and after each kill the
    run is visible with every table's row count; its leftovers are invisible, `rl doctor` names them, and the
    clean-up (once they are stale) leaves exactly one generation."""
    from rooflake.store import remote

    run_id = ingest_file(A10G, s3_store).run_id
    rng = random.Random(15)
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, s3_store, run_id], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        deadline = time.monotonic() + rng.uniform(0.0, 1.5)
        while time.monotonic() < deadline:
            assert Store(s3_store).run_ids() == [run_id]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        counts = Store(s3_store).query(
            "SELECT (SELECT count(*) FROM runs) r, (SELECT count(*) FROM kernels) k, "
            "(SELECT count(*) FROM metrics) m, (SELECT count(*) FROM ceilings) c"
        )
        assert counts.to_pylist() == [{"r": 1, "k": 4, "m": 1252, "c": 24}]
        problems = set(Store(s3_store).doctor().column("problem").to_pylist())
        assert problems <= {"unpublished", "stale-staging"}
        remote.clean(
            s3_store, stale_after_s=-1.0
        )  # every uncommitted upload is stale now (LastModified is whole seconds)
        assert len(_objects(s3_store)) == 4
        assert Store(s3_store).doctor().num_rows == 0


# ---- errors --------------------------------------------------------------------------------------------------
def test_a_missing_bucket_is_one_error_line(s3_endpoint: str) -> None:
    r = invoke("ingest", str(A10G), "--store", f"s3://rl-missing-{uuid.uuid4().hex[:8]}/store")
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: store s3://rl-missing-") and r.stderr.count("\n") == 1, r.stderr


def test_another_scheme_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="only local paths and s3://"):
        Store("gs://bucket/store")
    with pytest.raises(StoreError, match="name a bucket"):
        Store("s3://")
    assert not Store(os.fspath(tmp_path)).is_remote


def test_doctor_names_a_damaged_and_a_missing_file(s3_store: str) -> None:
    """A committed kernels file cut short is `damaged` (and a query of kernels names it); a committed metrics file
    deleted is `missing` (the runs row counts 1252 metrics)."""
    import fsspec

    from rooflake.schema import QueryError

    run_id = ingest_file(A10G, s3_store).run_id
    fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
    files = {k.split("/")[-3]: k for k in _objects(s3_store)}
    fs.pipe_file(files["kernels"], fs.cat_file(files["kernels"])[:-100])
    fs.rm_file(files["metrics"])
    problems = Store(s3_store).doctor().select(["table", "run_id", "problem"]).to_pylist()
    assert problems == [
        {"table": "kernels", "run_id": run_id, "problem": "damaged"},
        {"table": "metrics", "run_id": run_id, "problem": "missing"},
    ]
    with pytest.raises(QueryError, match=files["kernels"].split("/", 1)[1]):
        Store(s3_store).query("SELECT count(*) FROM kernels")
    r = invoke("doctor", "--store", s3_store)
    assert r.exit_code == 1 and "2 problem(s) found" in r.stderr


# ---- compaction on object storage (the remote half of rl compact) ----------------------------------------------
def test_a_compaction_commits_with_its_manifest_and_a_force_reingest_wins_over_it(s3_store: str) -> None:
    """compact.compact_remote: the compacted files and compacted.json replace every run's partitions (the runs
    stay published, a re-ingest without --force is a no-op, the lock object is gone); a --force re-ingest of a
    compacted run gets partitions again; a manifest put over a stale read is refused and leaves the store as it
    was."""
    from rooflake.store import compact, remote

    ids = sorted(ingest_file(p, s3_store).run_id for p in (A10G, NVTX))
    store = Store(s3_store)
    result = compact.compact_remote(s3_store)
    assert result.partitions_removed == 7  # runs, kernels, metrics of both, ceilings of the A10G run
    gen = result.generation
    keys = sorted(k.split("/", 2)[2] for k in _objects(s3_store))
    tables = ["ceilings", "kernels", "metrics", "runs"]
    assert keys == sorted(["compacted.json", *(f"{t}/compacted/part-{gen}.parquet" for t in tables)])
    after = remote.Snapshot.take(s3_store)
    assert after.published() == dict.fromkeys(ids, "compacted") and store.run_ids() == ids
    assert all(store.has_run(r) for r in ids) and ingest_file(A10G, s3_store).status == "exists"

    assert ingest_file(A10G, s3_store, force=True).status == "replaced"
    again = remote.Snapshot.take(s3_store)
    assert sorted(again.published().items()) == sorted(
        {ids[0]: "compacted", ids[1]: "compacted", ingest_file(A10G, s3_store).run_id: "partition"}.items()
    )
    before = _objects(s3_store)
    manifest = compact.Manifest.of("x", (), frozenset())
    with pytest.raises(StoreError, match="another rl compact committed"):  # read no manifest: one exists now
        compact._put_manifest(remote.filesystem(s3_store), s3_store, manifest, None)
    assert _objects(s3_store) == before
    assert remote.clean(s3_store, stale_after_s=-1.0) == 0  # nothing orphaned


def test_doctor_checks_the_compacted_files(s3_store: str) -> None:
    """The remote `rl doctor` read no compacted file: a compacted kernels file cut short went unseen (while every
    query of kernels failed). Now it is `damaged` with an empty run id, as on a local store; a compacted file no
    compaction names is `unpublished` while young and `stale-staging` once older than an hour."""
    import fsspec

    from rooflake.schema import QueryError
    from rooflake.store import compact, remote

    for p in (A10G, NVTX):
        ingest_file(p, s3_store)
    gen = compact.compact_remote(s3_store).generation
    assert Store(s3_store).doctor().num_rows == 0
    fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
    kernels = next(k for k in _objects(s3_store) if k.endswith(f"kernels/compacted/part-{gen}.parquet"))
    fs.pipe_file(kernels, fs.cat_file(kernels)[:-100])
    orphan = kernels.replace(f"part-{gen}", "part-0-orphan")
    fs.pipe_file(orphan, fs.cat_file(next(k for k in _objects(s3_store) if "runs/compacted" in k)))
    problems = Store(s3_store).doctor().select(["table", "run_id", "path", "problem"]).to_pylist()
    assert problems == [
        {"table": "kernels", "run_id": "", "path": f"s3://{kernels}", "problem": "damaged"},
        {"table": "kernels", "run_id": "", "path": f"s3://{orphan}", "problem": "unpublished"},
    ]
    with pytest.raises(QueryError):
        Store(s3_store).query("SELECT count(*) FROM kernels")
    from datetime import timedelta

    old = remote.datetime.now(remote.timezone.utc) + timedelta(seconds=2 * remote.STALE_AFTER_S)
    with pytest.MonkeyPatch.context() as mp:  # an hour later: the orphan is the next ingest's to delete
        mp.setattr(
            remote, "datetime", type("Later", (remote.datetime,), {"now": staticmethod(lambda tz=None: old)})
        )
        later = Store(s3_store).doctor().column("problem").to_pylist()
    assert later == ["damaged", "stale-staging"]
