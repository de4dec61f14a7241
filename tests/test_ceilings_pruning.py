"""`rl ceilings RUN` on a store read query by query: which files each step binds, and why step machine_runs binds
every run's ``runs`` file.

The machine's ceilings include the ERT and measured results of runs *labelled* for it (``--label gpu=NAME`` or
``machine=NAME``), and a run's labels live only in its own ``runs`` file: which runs these are cannot be known from
the run asked about, so machine_runs reads every runs row (``rl compact`` makes that a few files). Everything else
prunes: run_info binds the run's runs file, machine_ceilings the ceilings files of the run and of the runs
machine_runs names, the side-by-side step no file. Reading only the run's runs file would lose the ERT column.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_pruning import canonical

import rooflake.views.ceilings as view
from rooflake import queries
from rooflake.ingest import file_sha256
from rooflake.pipeline import ingest_paths
from rooflake.store import Store, database
from rooflake.store.compact import compact
from rooflake.store.layout import ALL_TABLES

from _support import FIXTURES, fixture

H100 = fixture("AlpriElse__cs599k")  # NVIDIA H100 PCIe
OTHER = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv")
ERT = (
    FIXTURES
    / "ert"
    / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
)


def _run_of(path: Path) -> str:
    return file_sha256(path)[:16]


@pytest.fixture(scope="module")
def machine_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An H100 report, a report of another GPU, and an ERT result labelled for the H100 (``--label gpu=…``)."""
    root = tmp_path_factory.mktemp("machine")
    list(ingest_paths([H100, OTHER], root, workers=1))
    list(ingest_paths([ERT], root, {"gpu": "NVIDIA H100 PCIe"}, workers=1))
    return root


def test_rl_ceilings_run_binds_the_machines_files_and_every_runs_row(
    machine_store: Path, monkeypatch
) -> None:
    run, ert, other = (_run_of(p) for p in (H100, ERT, OTHER))
    monkeypatch.setattr(database, "PRUNE_FROM", 10**9)
    whole = view.machine_ceilings(Store(machine_store), run).rows  # every file bound once
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    bound: dict[str, dict[str, set[str]]] = {}
    fetch = view.fetch

    def recording(con: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        out = fetch(con, name, *args, **kwargs)
        db = con.database
        assert db.prune
        bound[name] = {t: {f.split("run_id=")[1][:16] for f in db.reading(t)} for t in ALL_TABLES}
        bound[name] = {t: runs for t, runs in bound[name].items() if runs}
        return out

    monkeypatch.setattr(view, "fetch", recording)
    result = view.machine_ceilings(Store(machine_store), run)
    assert canonical(result.rows) == canonical(whole)
    assert {"ncu-report", "ert", "datasheet"} <= set(result.rows.column("source").to_pylist())
    assert bound == {
        "run_info": {"runs": {run}},
        "machine_runs": {"runs": {run, ert, other}},  # the labels of every run: the ERT run's name the H100
        "machine_ceilings": {"ceilings": {run, ert}},
        "ceilings_side_by_side": {},
    }

    def only_the_run(con: Any, name: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        if name == "machine_runs":  # as if only the run's own runs file were read
            return fetch(con, "run_info", {"run_id": params["run_id"]}).select(["run_id"])
        return fetch(con, name, params, *args, **kwargs)

    monkeypatch.setattr(view, "fetch", only_the_run)
    lost = view.machine_ceilings(Store(machine_store), run).rows
    assert "ert" not in set(lost.column("source").to_pylist())


def test_after_rl_compact_every_runs_row_is_in_the_compacted_files(
    machine_store: Path, tmp_path: Path, monkeypatch
) -> None:
    """After `rl compact` the runs rows machine_runs reads are the compacted files' (no partition), and the answer
    is the same."""
    root = tmp_path / "store"
    shutil.copytree(machine_store, root)
    run = _run_of(H100)
    before = view.machine_ceilings(Store(root), run).rows
    compact(root)
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    con = queries.connect(Store(root))
    named = {"run_id": run, "names": ["nvidia h100 pcie"]}
    assert queries.fetch(con, "machine_runs", named).num_rows == 2
    reading = con.database.reading("runs")
    assert reading and all("/runs/run_id=" not in f for f in reading)
    assert canonical(view.machine_ceilings(Store(root), run).rows) == canonical(before)
