"""``rl demo`` and the package's front door: the two H100 reports shipped as package data are ingested into a
store, their report and a roofline PNG written; the regular wheel holds them and runs ``rl demo`` on its own, from a
folder with nothing beside it; ``import rooflake`` exposes the library's public names, loading none of them."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import demo as demo_module
from rooflake.cli import app
from rooflake.store import Store
from rooflake.views.runs import run_list

from _support import ROOT

SHIPPED = sorted(f"{name}.ncu-rep.xz" for name in demo_module.REPORTS)


def test_the_shipped_reports_are_the_test_data() -> None:
    """The package's reports are tests/data/gpu's, byte for byte, and a few hundred KB in all."""
    data = ROOT / "api" / "data"
    assert sorted(p.name for p in data.iterdir()) == SHIPPED
    for name in SHIPPED:
        assert (data / name).read_bytes() == (ROOT / "tests" / "data" / "gpu" / name).read_bytes()
    assert sum((data / n).stat().st_size for n in SHIPPED) < 500_000
    assert demo_module.report_bytes("block_train") == lzma.decompress(
        (data / "block_train.ncu-rep.xz").read_bytes()
    )


def test_rl_demo_writes_the_report_and_a_roofline(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    r = CliRunner().invoke(app, ["demo", "--out", str(out)])
    assert r.exit_code == 0, r.output
    runs = run_list(Store(out / "store")).to_pylist()
    assert sorted(x["source"] for x in runs) == ["block_fwd.ncu-rep", "block_train.ncu-rep"]
    assert {x["kernels"] for x in runs} == {4, 14}
    index = out / "report" / "index.html"
    page = index.read_text()
    assert all(f"run {x['run_id']}" in page for x in runs)
    assert (out / "roofline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list((out / "report" / "charts").glob("*.png"))) == 4
    assert f"wrote {index} (2 runs, 4 charts as HTML, PNG and SVG)" in r.output
    assert f"wrote {out / 'roofline.png'}" in r.output
    # again, into a store of its own: the runs are there already, the files written again
    store = tmp_path / "mine"
    again = CliRunner().invoke(app, ["demo", "--out", str(out), "--store", str(store)])
    assert again.exit_code == 0, again.output
    assert len(run_list(Store(store)).to_pylist()) == 2 and "ingested" in again.output
    third = CliRunner().invoke(app, ["demo", "--out", str(out), "--store", str(store)])
    assert third.exit_code == 0 and third.output.count("already in the store") == 2, third.output


def test_import_rooflake_is_the_front_door() -> None:
    """Every name of ``__all__`` resolves to the library's own object; importing the package loads none of them."""
    probe = (
        "import json, sys, rooflake\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('rooflake.'))\n"
        "print(json.dumps([loaded, rooflake.__all__, rooflake.__version__]))\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    loaded, names, version = json.loads(p.stdout)
    assert loaded == [] and version
    import rooflake
    from rooflake.instrument import estimate, measure_ceilings, profile
    from rooflake.views import roofline

    assert {"Store", "annotate", "estimate", "profile", "measure_ceilings", "roofline", "report_html"} <= set(
        names
    )
    assert rooflake.estimate is estimate.estimate and callable(rooflake.estimate)
    assert rooflake.measure_ceilings is measure_ceilings and rooflake.profile is profile
    assert rooflake.roofline is roofline.roofline and rooflake.Store is Store
    assert all(getattr(rooflake, n) is not None for n in names)
    with pytest.raises(AttributeError):
        rooflake.no_such_name  # noqa: B018


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The regular wheel of the checkout, built as CI builds it (no build isolation: no network here)."""
    dist = tmp_path_factory.mktemp("wheel")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(dist),
        str(ROOT),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0 and "No module named" in p.stderr:
        pytest.skip(f"cannot build a wheel here: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr
    (built,) = dist.glob("rooflake-*.whl")
    return built


def test_the_wheel_holds_the_front_door_and_the_demo_reports(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"rooflake/__init__.py", "rooflake/demo.py", "rooflake/reporting.py"} <= names
    assert {f"rooflake/data/{n}" for n in SHIPPED} <= names
    assert "rooflake/cli/demo_cmds.py" in names and "rooflake/render/sections.py" in names


def test_rl_demo_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    """The wheel installed into a folder of its own and run from an empty folder (no checkout, no ../shared
    beside it): ``rl demo`` writes its files."""
    target, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    code = (
        "import sys, rooflake; assert rooflake.__file__.startswith(sys.argv[1]), rooflake.__file__\n"
        "from rooflake.cli import main\n"
        "sys.argv = ['rl', 'demo']\n"
        "main()\n"
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    p = subprocess.run(
        [sys.executable, "-c", code, str(target)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert (work / "rl-demo" / "report" / "index.html").is_file() and (
        work / "rl-demo" / "roofline.png"
    ).is_file()
    assert len(list((work / "rl-demo" / "store" / "runs").iterdir())) == 2
