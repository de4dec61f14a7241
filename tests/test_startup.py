"""Start-up cost of the ``rl`` command (issue 14): ``rl --help`` imports no data library, and the lazy package
faces (``rooflake.schema``, ``rooflake.render``) still give every public name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("pyarrow", "polars", "pandas", "duckdb", "numpy", "altair", "vl_convert", "pydantic")


def imported_by(*args: str, store: str | None = None) -> set[str]:
    """Top-level modules a fresh ``rl ARGS`` imports (from ``-X importtime``)."""
    code = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
    cmd = [sys.executable, "-X", "importtime", "-c", code, *args]
    if store:
        cmd += ["--store", store]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    mods = set()
    for line in p.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return mods


def test_help_imports_no_data_library() -> None:
    mods = imported_by("--help")
    assert "rooflake" in mods or "typer" in mods  # the measurement saw the imports
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    assert "rich" not in mods  # plain click help: Rich's formatter alone doubles `rl --help`


def help_output(code: str, columns: int, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    p = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env
    )
    return p.returncode, p.stdout, p.stderr


MAIN = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
EVERY_COMMAND = (
    "import sys; from rooflake.cli import app; app(sys.argv[1:], prog_name='rl')"  # all modules imported
)


@pytest.mark.parametrize("columns", [40, 63, 80, 200])
def test_help_without_the_commands_lists_them_as_they_describe_themselves(columns: int) -> None:
    """``rl --help`` imports no command module and lists ``SUMMARIES``: the same text, byte for byte, as the app
    with every command built, at a narrow, an odd and a wide terminal (click shortens each line to fit)."""
    quick = help_output(MAIN, columns, "--help")
    full = help_output(EVERY_COMMAND, columns, "--help")
    assert quick[0] == full[0] == 0, (quick[2], full[2])
    assert "Commands:" in full[1] and "  ceilings " in full[1]  # the full help did list the commands
    assert quick[1] == full[1]
    # ``rl`` alone prints the same help (no_args_is_help), with the same exit status, as the app with every command
    assert help_output(MAIN, columns) == help_output(EVERY_COMMAND, columns)


def command_modules_imported(*args: str) -> set[str]:
    """The command modules (``rooflake.cli.*_cmds``) a fresh ``rl ARGS`` has imported when it ends."""
    code = f"import sys\ntry:\n    {MAIN}\nexcept SystemExit:\n    pass\nprint(*sys.modules, file=sys.stderr)"
    rc, out, err = help_output(code, 80, *args)
    names = set(err.split())
    assert "rooflake.cli.common" in names, err[-1000:]  # the listing was printed, after the app ran
    return {m for m in names if m.startswith("rooflake.cli.") and m.endswith("_cmds")}


@pytest.mark.parametrize("args", [["--help"], ["--version"], []])
def test_help_and_version_import_no_command_module(args: list[str]) -> None:
    assert command_modules_imported(*args) == set()


def test_a_command_imports_its_own_module_only() -> None:
    assert command_modules_imported("runs", "--help") == {"rooflake.cli.store_cmds"}
    assert command_modules_imported("ceilings", "--help") == {
        "rooflake.cli.ceilings_cmds",
        "rooflake.cli.measure_cmds",
    }


def test_sql_and_runs_load_no_chart_library(tmp_path) -> None:
    (tmp_path / "empty").mkdir()  # an empty store (a folder that does not exist is refused)
    for args in (["sql", "select 1"], ["runs"]):
        mods = imported_by(*args, store=str(tmp_path / "empty"))
        assert "duckdb" in mods  # they do query
        assert not mods & {"altair", "vl_convert", "pandas"}, (args, sorted(mods & {"altair", "vl_convert"}))


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store holding one real run (an Nsight Compute report)."""
    from _support import fixture

    root = tmp_path_factory.mktemp("startup") / "store"
    code = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
    args = ["ingest", str(fixture("AveryClapp__ESMM-Research__profile_output")), "--store", str(root)]
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return str(root)


@pytest.mark.parametrize("args", [["sql", "select 1"], ["runs"], ["sql", "SELECT * FROM runs"]], ids=" ".join)
def test_sql_and_runs_tables_load_no_dataframe_library(one_run: str, args: list[str]) -> None:
    """A terminal table from ``rl sql`` or ``rl runs`` comes from DuckDB's own values: neither pyarrow (0.1 s),
    polars (0.15 s) nor pandas is imported (issue 14: ``rl sql "select 1"`` ≤ 0.35 s), nor pydantic: their
    arguments need no coercion (``rooflake.cli.coercion``: ~0.1 s)."""
    mods = imported_by(*args, store=one_run)
    assert "duckdb" in mods  # the query ran
    assert not mods & {"pyarrow", "polars", "pandas", "numpy", "pydantic"}, (args, sorted(mods & set(HEAVY)))


@pytest.mark.parametrize("package", ["rooflake.render", "rooflake.schema"])
def test_lazy_package_gives_every_public_name(package: str) -> None:
    import importlib

    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name
    with pytest.raises(AttributeError):
        mod.no_such_name  # noqa: B018


def test_lazy_names_are_the_defining_modules_objects() -> None:
    from rooflake import render, schema
    from rooflake.render.roofline import roofline_chart
    from rooflake.schema.tables import TABLES

    assert render.roofline_chart is roofline_chart
    assert schema.TABLES is TABLES


def test_ncu_ingest_workers_never_import_pandas(tmp_path) -> None:
    """pyarrow imports pandas where it is installed when Arrow is built from Python lists; an ingest worker must not
    pay for it (issue 14). A stand-in ``pandas`` on the path records every import of it."""
    import os

    from _support import fixture

    fake = tmp_path / "site" / "pandas"
    fake.mkdir(parents=True)
    marker = tmp_path / "imported"
    (fake / "__init__.py").write_text(
        f"import os\nopen({str(marker)!r} + '.' + str(os.getpid()), 'w').close()\nraise ImportError('stand-in')\n"
    )
    reports = [fixture("AveryClapp__ESMM-Research__profile_output"), fixture("AlpriElse__cs599k__silu")]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    code = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
    args = ["ingest", *map(str, reports), "--store", str(tmp_path / "s"), "--workers", "2"]
    p = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("ingested") == 2
    assert not list(tmp_path.glob("imported.*"))


def test_report_imports_no_altair(one_run: str, tmp_path) -> None:
    """``rl report`` draws its charts as Vega-Lite dicts (``roofline_spec``, ``time_roofline_spec``) and renders them
    in renderer processes: no process of it imports Altair (0.2-0.3 s; issue 14: a chart in a report ≤ 0.35 s). The
    renderers inherit ``-X importtime``, so their imports (vl-convert) are in the list too."""
    mods = imported_by("report", "-o", str(tmp_path / "rep"), store=one_run)
    assert "polars" in mods and "vl_convert" in mods  # the report's tables were built, its charts rendered
    assert not mods & {"altair", "pandas", "pydantic"}, sorted(mods & set(HEAVY))
    assert len(list((tmp_path / "rep" / "charts").glob("*.svg"))) == 2  # the roofline and the time-based one


def test_time_roofline_png_imports_no_altair(one_run: str, tmp_path) -> None:
    """``rl roofline --time -o x.png`` saves the time-based roofline's spec dict (``time_roofline_spec``) through
    ``save_chart``, which imports Altair only for a chart object or an HTML page; the run's row is read as DuckDB
    gives it (a TIMESTAMPTZ through pyarrow imports pandas; issue 14)."""
    out = tmp_path / "t.png"
    mods = imported_by("roofline", "--time", "-o", str(out), store=one_run)
    assert "vl_convert" in mods and out.read_bytes()[:4] == b"\x89PNG"
    assert not mods & {"altair", "pandas", "pydantic"}, sorted(mods & set(HEAVY))
