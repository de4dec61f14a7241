"""`rl compact` (issue 14): many small run partitions rewritten into one file per table, every answer unchanged,
atomic publish and --force still correct, a killed compaction harmless."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_pruning import REPORTS, copy_runs, named_answers

from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.store import Store, compact

from _support import FIXTURES, fixture

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
