"""docs/notebook.ipynb runs top to bottom on the real fixtures (ingest -> roofline -> layers -> compare), and every
view result shows as an HTML table (``_repr_html_``, escaped) and every chart as an Altair chart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
FIXTURES = ROOT.parent / "shared" / "fixtures"


def test_the_notebook_runs() -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the dev extra has it)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (the dev extra has it)")
    if not (FIXTURES / "ncu").is_dir():
        pytest.skip(f"no fixtures at {FIXTURES}")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    os.environ["RL_FIXTURES"] = str(FIXTURES)
    try:
        client.execute()
    except (
        Exception
    ) as e:  # a kernel that cannot start (no ipykernel, no sockets) is not the notebook's fault
        if type(e).__name__ in (
            "DeadKernelError",
            "NoSuchKernel",
            "TimeoutError",
            "RuntimeError",
        ) and not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", [])):
            pytest.skip(f"no Jupyter kernel could start: {e}")
        raise
    finally:
        os.environ.pop("RL_FIXTURES", None)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<h3>Roofline</h3>" in h for h in html)
    assert any("<h3>Layers</h3>" in h for h in html)
    assert any("<h3>Comparison</h3>" in h and "fa3db_full_fwd_kernel" in h for h in html)
    # Altair's default renderer: an HTML page of the chart's Vega-Lite spec, drawn by vega-embed
    assert any("vegaEmbed" in h and "$schema" in h for h in html), "the roofline chart did not render inline"


def test_a_view_result_escapes_its_text() -> None:
    import pyarrow as pa

    from rooflake.views.checks import Checks

    hostile = "<script>alert(1)</script>&"
    html = Checks(hostile, pa.table({"name": [hostile], "n": [1.5]}))._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;" in html
    assert html.count("<table>") == 1 and "<td>1.5</td>" in html
