"""One-run questions read only that run's files (issue 14), and every answer is the same pruned or not.

A store with ``PRUNE_FROM`` partition files or more per table is read query by query: the query is planned over
empty stand-ins, and each table's view then binds the files of the runs the plan's scans filter on
(rooflake.store.database). Stores here are real fixture runs copied under new run ids, as the benchmark makes them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rooflake import queries
from rooflake.schema import QueryError
from rooflake.store import Store, database
from rooflake.store.layout import PART

from _support import fixture

REPORTS = [
    "AveryClapp__ESMM-Research__profile_output",
    "AlpriElse__cs599k__silu",
    "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx",
]


def copy_runs(src: Path, dst: Path, n: int) -> list[str]:
    """``n`` runs in ``dst``: copies of ``src``'s runs (every table) under ids ``c000…``, labels ``copy=<i>``."""
    runs = sorted(p.name[7:] for p in (src / "runs").iterdir())
    ids = []
    for i in range(n):
        rid = f"c{i:015x}"
        old = runs[i % len(runs)]
        for table_dir in src.iterdir():
            part = table_dir / f"run_id={old}" / PART
            if table_dir.name.startswith(".") or not part.exists():
                continue
            tab = pq.read_table(part)
            tab = tab.set_column(
                tab.schema.get_field_index("run_id"), "run_id", pa.array([rid] * tab.num_rows)
            )
            if table_dir.name == "runs":
                labels = pa.array([[("copy", str(i)), ("model", old)]], tab.schema.field("labels").type)
                tab = tab.set_column(tab.schema.get_field_index("labels"), "labels", labels)
            out = dst / table_dir.name / f"run_id={rid}"
            out.mkdir(parents=True)
            pq.write_table(tab, out / PART)
        ids.append(rid)
    return ids


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store of 3 fixture reports copied into 12 runs."""
    from rooflake.pipeline import ingest_paths

    src = tmp_path_factory.mktemp("src")
    list(ingest_paths([fixture(r) for r in REPORTS], src, workers=1))
    dst = tmp_path_factory.mktemp("many")
    return dst, copy_runs(src, dst, 12)


def canonical(table: pa.Table) -> list[str]:
    """Rows as sorted text (NaN as 'nan', floats to 12 digits): equal for equal answers whatever the row order."""

    def value(v: Any) -> Any:
        if isinstance(
            v, float
        ):  # 12 digits: a sum over rows read in another order may differ in the last bit
            return "nan" if math.isnan(v) else float(f"{v:.12g}")
        if isinstance(v, list):
            return [value(x) for x in v]
        if isinstance(v, dict):
            return {k: value(x) for k, x in v.items()}
        return v

    return sorted(repr({k: value(v) for k, v in row.items()}) for row in table.to_pylist())


def named_answers(store: Store, runs: list[str]) -> dict[str, Any]:
    """Every named query's answer over ``store``: each view, and each table macro for the first two ``runs``
    (an error is an answer too: its message)."""
    a, b = runs[0], runs[1]
    calls = {name: f"SELECT * FROM {name}" for name in queries.names() if not queries.parameters(name)}
    calls |= {
        "time_roofline": f"SELECT * FROM time_roofline('{a}', 1000)",
        "whatif": f"SELECT * FROM whatif('{a}', 1000, scale_dram := 2)",
        "compare_kernels": f"SELECT * FROM compare_kernels('{a}', '{b}')",
        "compare_layers": f"SELECT * FROM compare_layers('{a}', '{b}', 1)",
        "trajectory": "SELECT * FROM trajectory('copy', 1)",
        "nsys_ncu_match": f"SELECT * FROM nsys_ncu_match('{a}', '{b}')",
        "one run": f"SELECT * FROM kernel_roofline WHERE run_id = '{a}'",
        "two runs": f"SELECT * FROM layer_summary WHERE run_id IN ('{a}', '{b}')",
        "runs": "SELECT * FROM runs",
    }
    out: dict[str, Any] = {}
    for name, sql in calls.items():
        try:
            out[name] = canonical(queries.execute(store, sql))
        except QueryError as e:
            out[name] = f"error: {e}"
    return out


def test_every_named_query_answers_the_same_pruned_or_not(many_runs, monkeypatch) -> None:
    root, runs = many_runs
    monkeypatch.setattr(database, "PRUNE_FROM", 10**9)
    whole = named_answers(Store(root), runs)
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    pruned = named_answers(Store(root), runs)
    assert whole.keys() == pruned.keys()
    for name in whole:
        assert pruned[name] == whole[name], name
    assert len(whole["one run"]) > 0 and not str(whole["kernel_roofline"]).startswith("error")


def test_a_one_run_query_binds_only_that_runs_files(many_runs, monkeypatch) -> None:
    root, runs = many_runs
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    con = Store(root).connect(queries.views(), queries.macros())
    rows = con.execute(f"SELECT count(*) FROM kernel_roofline WHERE run_id = '{runs[3]}'").fetchall()
    assert rows[0][0] > 0
    assert con.database.reading("kernels") == [str(root / "kernels" / f"run_id={runs[3]}" / PART)]
    assert con.database.reading("metrics") == []  # no scan of it: no file bound
    con.execute(f"SELECT count(*) FROM kernels WHERE run_id IN ('{runs[1]}', '{runs[2]}')").fetchall()
    assert sorted(con.database.reading("kernels")) == sorted(
        str(root / "kernels" / f"run_id={r}" / PART) for r in runs[1:3]
    )
    con.execute("SELECT count(*) FROM kernels").fetchall()  # no run filter: every file
    assert len(con.database.reading("kernels")) == len(runs)


def test_small_stores_bind_every_file_once(many_runs) -> None:
    root, runs = many_runs
    con = Store(root).connect()
    assert not con.database.prune  # 12 runs < PRUNE_FROM
    assert len(con.database.reading("kernels")) == len(runs)


@pytest.mark.parametrize("prune_from", [0, 10**9])
def test_an_old_schema_partition_beside_a_new_one(many_runs, tmp_path, monkeypatch, prune_from) -> None:
    """A partition written before a column existed reads it as NULL (union by name), the new one its values."""
    monkeypatch.setattr(database, "PRUNE_FROM", prune_from)
    src, runs = many_runs
    root = tmp_path / "s"
    old, new = runs[0], runs[3]  # both copies of the same report
    for rid in (old, new):
        for t in ("runs", "kernels"):
            (root / t / f"run_id={rid}").mkdir(parents=True)
            tab = pq.read_table(src / t / f"run_id={rid}" / PART)
            if rid == old and t == "kernels":
                tab = tab.drop_columns(["invalid_utf8_hex", "flags"])  # the columns this session added
            pq.write_table(tab, root / t / f"run_id={rid}" / PART)
    con = Store(root).connect()
    got = dict(con.execute("SELECT run_id, count(flags) FROM kernels GROUP BY run_id").fetchall())
    n_new = pq.read_metadata(src / "kernels" / f"run_id={new}" / PART).num_rows
    assert got == {old: 0, new: n_new}
    first = con.execute(f"SELECT flags FROM kernels WHERE run_id = '{old}' LIMIT 1").fetchall()
    assert first == [(None,)]
    # through a relation (rl sql's path), in a fresh database: the same answer
    counted = queries.execute(Store(root), "SELECT count(flags) AS n, count(*) AS m FROM kernels").to_pylist()
    assert counted == [
        {"n": n_new, "m": n_new + pq.read_metadata(root / "kernels" / f"run_id={old}" / PART).num_rows}
    ]


@pytest.mark.parametrize(
    ("filters", "runs"),
    [
        ("(run_id = 'a')", {"a"}),
        (["(run_id = 'a')", "(x > 3)"], {"a"}),
        ("optional: (run_id IN ('a', 'b'))", {"a", "b"}),
        ("(run_id = 'it''s')", {"it's"}),
        ("((run_id = 'a') OR (x > 3))", None),
        ("(x > 3)", None),
        (None, None),
        ("", None),
    ],
)
def test_filters_read_from_a_plan(filters, runs) -> None:
    got = database._filter_runs(filters)
    assert got == (frozenset(runs) if runs is not None else None)


def test_scan_runs_unions_scans_and_gives_up_on_an_unfiltered_one() -> None:
    def scan(table: str, filters: Any) -> dict[str, Any]:
        return {
            "name": "SEQ_SCAN",
            "extra_info": {"Table": f"memory.main.__empty_{table}", "Filters": filters},
        }

    plan = [
        {
            "name": "HASH_JOIN",
            "children": [scan("kernels", "(run_id = 'a')"), scan("kernels", "(run_id = 'b')")],
        }
    ]
    got = database.scan_runs(plan)
    assert got is not None and got["kernels"] == {"a", "b"} and got["metrics"] == frozenset()
    plan[0]["children"].append(scan("ceilings", None))
    assert database.scan_runs(plan)["ceilings"] is None
    assert database.scan_runs([{"name": "PROJECTION", "children": []}]) is None  # no stand-in seen: read all


def test_named_objects_are_created_when_first_named(many_runs) -> None:
    """A command that runs two queries does not create thirty views and macros; each appears when named."""
    root, runs = many_runs
    con = queries.connect(Store(root))
    made = "SELECT count(*) FROM duckdb_views() WHERE view_name = $v"
    assert con.execute(made, {"v": "kernel_roofline"}).fetchall() == [(0,)]
    assert (
        con.execute(f"SELECT count(*) FROM kernel_roofline WHERE run_id = '{runs[0]}'").fetchall()[0][0] > 0
    )
    assert con.execute(made, {"v": "kernel_roofline"}).fetchall() == [(1,)]
    assert con.execute(made, {"v": "range_times"}).fetchall() == [(0,)]
    assert con.view("range_times").columns  # the relation API creates it too
    assert con.execute(f"SELECT count(*) FROM time_roofline('{runs[0]}', 1000)").fetchall()[0][0] > 0
