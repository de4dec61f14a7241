"""Shared pytest fixtures: stores built from the real reports in ../shared/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from _support import NCU_REPORTS


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
