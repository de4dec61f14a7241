"""Shared pytest fixtures: stores built from the real reports in ../shared/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from _support import FIXTURES_PRESENT, NCU, NCU_REPORTS

# Test modules that need nothing from ../shared/fixtures: golden queries on tiny tables built in code, chart specs,
# the package's shape. Without the fixtures only these are collected (the others would fail on missing files).
FIXTURE_FREE = {
    "test_architecture.py",
    "test_attribution.py",
    "test_compare.py",
    "test_cpu_e2e.py",
    "test_datasheet.py",
    "test_estimate.py",
    "test_gpu_h100.py",
    "test_html_escape.py",
    "test_instrument_annotate.py",
    "test_instrument_ceilings.py",
    "test_isolated.py",
    "test_nsys_hostile.py",
    "test_nsys_positions.py",
    "test_profile_commands.py",
    "test_profile_range_queries.py",
    "test_progress_bar.py",
    "test_queries.py",
    "test_query_columns.py",
    "test_ranks.py",
    "test_render.py",
    "test_roundtrip.py",
    "test_shared_definitions.py",
    "test_sqlscript.py",
    "test_torch_trace.py",
    "test_trajectory.py",
}
collect_ignore = (
    []
    if FIXTURES_PRESENT
    else sorted(p.name for p in Path(__file__).parent.glob("test_*.py") if p.name not in FIXTURE_FREE)
)


def pytest_report_header(config: pytest.Config) -> str:
    if FIXTURES_PRESENT:
        return f"fixtures: {NCU.parent}"
    return f"fixtures: not found at {NCU.parent}; only the {len(FIXTURE_FREE)} fixture-free test modules run"


@pytest.fixture(autouse=True)
def _arrow_pool_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with ARROW_DEFAULT_MEMORY_POOL as the session had it: `rl ingest` run in this process sets
    it (cli.common.system_allocator), and the subprocesses of later tests would inherit it."""
    import os

    original = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", original or "")  # restored after the test, unset or not
    if original is None:
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL")


@pytest.fixture(scope="session")
def fixture_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding every fixture .ncu-rep, ingested once per test session (in worker processes)."""
    from rooflake.pipeline import ingest_paths

    root = tmp_path_factory.mktemp("fixture_store")
    results = list(ingest_paths(NCU_REPORTS, root, workers=2))
    bad = [r for r in results if r.status not in ("ingested",)]
    assert not bad, bad
    return root


@pytest.fixture()
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"
