"""`rl whatif --ceilings SOURCE`: the what-if scales the roofs of the source asked for, as `rl roofline --time
--ceilings` judges the same run (same values, same errors), on real reports: the H100 PCIe silu kernels
(AlpriElse/cs599k) against the datasheet's 2 TB/s and 51 TFLOP/s instead of the report's own peaks."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.schema import RooflineDataError, UsageError
from rooflake.store import Store
from rooflake.views.time_roofline import time_roofline
from rooflake.views.whatif import parse_scales, whatif

from _support import fixture

H100 = fixture("AlpriElse__cs599k")  # NVIDIA H100 PCIe
T_O = 1000.0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("whatif_ceilings")
    assert all(r.status == "ingested" for r in ingest_paths([H100], root, workers=1))
    return root


def _run(store: Path) -> str:
    return queries.execute(Store(store), "SELECT run_id FROM runs").to_pylist()[0]["run_id"]


def _kernels(rows: object) -> dict[int, dict]:
    return {r["kernel_id"]: r for r in rows.to_pylist()}  # type: ignore[attr-defined]


@pytest.mark.parametrize("source", ["datasheet", "report", "default"])
def test_unscaled_terms_equal_the_time_roofline_of_that_source(store: Path, source: str) -> None:
    run = _run(store)
    w = whatif(Store(store), run, parse_scales([]), launch_overhead_ns=T_O, ceilings=source)
    t = time_roofline(Store(store), run, launch_overhead_ns=T_O, ceilings=source)
    tk = _kernels(t.rows.filter(queries_grain(t.rows)))
    wk = _kernels(w.kernels)
    assert set(wk) == set(tk) and len(wk) > 0
    for kid, r in wk.items():
        assert (r["t_min_ns"], r["bound"], r["inefficiency"]) == (
            tk[kid]["t_min_ns"], tk[kid]["bound"], tk[kid]["inefficiency"],
        )  # fmt: skip
        assert r["predicted_ns"] == pytest.approx(r["duration_ns"], rel=1e-12)
    assert w.choice == source
    sources = set(w.ceilings.column("source").to_pylist())
    assert sources == ({"datasheet"} if source == "datasheet" else {"ncu-report"})


def queries_grain(rows: object) -> object:
    import pyarrow.compute as pc

    return pc.equal(rows["grain"], "kernel")  # type: ignore[index]


def test_dram_scaled_against_the_datasheet(store: Path) -> None:
    run = _run(store)
    sheet = whatif(Store(store), run, parse_scales(["dram=2"]), launch_overhead_ns=T_O, ceilings="datasheet")
    own = whatif(Store(store), run, parse_scales(["dram=2"]), launch_overhead_ns=T_O)
    t = time_roofline(Store(store), run, launch_overhead_ns=T_O, ceilings="datasheet")
    terms = _kernels(t.rows.filter(queries_grain(t.rows)))
    for kid, r in _kernels(sheet.kernels).items():
        k = terms[kid]
        assert (k["bw_dram"], k["peak_flops_per_s"]) == (2000e9, 51e12)  # the datasheet's H100 PCIe
        if r["modelled"]:
            scaled = max(x for x in (k["compute_time_ns"], k["dram_time_ns"] / 2, T_O) if x is not None)
            assert r["t_min_scaled_ns"] == pytest.approx(scaled, rel=1e-12)
            assert r["predicted_ns"] == pytest.approx(r["inefficiency"] * scaled, rel=1e-12)
    # the report's own DRAM peak (at the profiled clock) is another roof: another T_min and inefficiency; both keep
    # the kernels DRAM-bound, so halving DRAM time predicts half the measured time either way (s * T_min / 2 = T / 2)
    ks, ko = _kernels(sheet.kernels), _kernels(own.kernels)
    for kid, r in ks.items():
        assert r["bound"] == ko[kid]["bound"] == "DRAM" and r["t_min_ns"] != ko[kid]["t_min_ns"]
        assert r["t_min_ns"] == pytest.approx(terms[kid]["bytes_dram"] / 2000e9 * 1e9, rel=1e-12)
        assert r["predicted_ns"] == pytest.approx(r["duration_ns"] / 2, rel=1e-12)
    assert sheet.total["predicted_ns"] == pytest.approx(own.total["predicted_ns"], rel=1e-12)


def test_cli_names_the_roofs_and_refuses_what_roofline_refuses(store: Path) -> None:
    run = _run(store)
    args = ["whatif", run, "-s", "dram=2", "--launch-overhead", str(T_O), "--store", str(store)]
    out = CliRunner().invoke(app, [*args, "--ceilings", "datasheet"])
    assert out.exit_code == 0, out.output
    assert "roofs: datasheet (" in out.output and "modelled" in out.output
    plain = CliRunner().invoke(app, args)
    assert plain.exit_code == 0 and "roofs:" not in plain.output
    bad = CliRunner().invoke(app, [*args, "--ceilings", "nope"])
    assert bad.exit_code == 2 and "--ceilings" in bad.output
    assert CliRunner().invoke(app, [*args, "--ceilings", "all"]).exit_code == 2
    # no ERT result for this GPU: the same Error line as rl roofline --ceilings ert
    ert = CliRunner().invoke(app, [*args, "--ceilings", "ert"])
    roof = CliRunner().invoke(app, ["roofline", run, "--ceilings", "ert", "-o", f"{store}/x.html", "--store",
                                    str(store)])  # fmt: skip
    assert ert.exit_code == roof.exit_code == 1
    assert ert.output.splitlines()[-1] == roof.output.splitlines()[-1]
    with pytest.raises(UsageError, match="ceilings 'all'"):
        whatif(Store(store), run, parse_scales([]), ceilings="all")
    with pytest.raises(RooflineDataError):
        whatif(Store(store), run, parse_scales([]), ceilings="measured")


def test_default_roofs_of_a_run_without_report_peaks_are_named(tmp_path: Path) -> None:
    """A run whose report has no roofline sections is predicted against the datasheet's roofs by default: the
    summary line says so (it named the roofs only when --ceilings was given; found in review). A run on its own
    report peaks keeps the short line."""
    root = tmp_path / "s"
    list(ingest_paths([fixture("AveryClapp__ESMM-Research__profile.ncu-rep")], root))
    (rid,) = Store(root).run_ids()
    r = CliRunner().invoke(app, ["whatif", rid, "--scale", "dram=2", "--store", str(root)])
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]
    assert first.startswith(f"run {rid}: dram×2: "), first
    assert first.endswith(", default, roofs: datasheet (A10G))"), first
