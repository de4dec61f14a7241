"""rooflake: GPU profiler exports of NVTX-annotated runs in a Parquet store, and roofline questions about them.

The front door of the library, one name per task (each loaded on first use: ``import rooflake`` imports nothing
else, so ``rl`` starts fast)::

    import rooflake

    store = rooflake.Store("rl-store")
    rooflake.ingest_file("run.ncu-rep", "rl-store", {"model": "resnet50"})
    view = rooflake.roofline(store, None, "all")           # the latest run, every memory level
    rooflake.report_html(store, "report/")                 # what `rl report --out report/` writes

- The store: :class:`Store`; :func:`ingest_file` (one file into a store, one run).
- The views (a store and a question in, a frozen dataclass of documented tables out; :mod:`rooflake.views`):
  :func:`roofline`, :func:`layers`, :func:`time_roofline`, :func:`trajectory`, :func:`compare`, :func:`checks`,
  :func:`whatif`, :func:`report`, :func:`machine_ceilings`, :func:`run_list`.
- The report: :func:`report_html` (the static HTML report ``rl report`` writes).
- The run side (the ``rooflake[torch]`` extra): :func:`annotate` (NVTX ranges per ``torch.nn.Module``),
  :func:`estimate` (a model's analytic per-op FLOPs and bytes: the ``estimates`` table), :func:`profile` (run a
  command under ``ncu``/``nsys``), :func:`measure_ceilings` (this machine's measured roofs).

The subpackages (:mod:`rooflake.schema`, ``ingest``, ``store``, ``queries``, ``views``, ``render``,
``instrument``, ``pipeline``, ``spark``, ``cli``) hold the rest; docs/architecture.md says what each holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rooflake.instrument.annotate import annotate
    from rooflake.instrument.ceilings import measure as measure_ceilings
    from rooflake.instrument.estimate import estimate
    from rooflake.instrument.profiling import profile
    from rooflake.pipeline import ingest_file
    from rooflake.reporting import report_html
    from rooflake.store import Store
    from rooflake.views.ceilings import machine_ceilings
    from rooflake.views.checks import checks
    from rooflake.views.compare import compare
    from rooflake.views.layers import layers
    from rooflake.views.report import report
    from rooflake.views.roofline import roofline
    from rooflake.views.runs import run_list
    from rooflake.views.time_roofline import time_roofline
    from rooflake.views.trajectory import trajectory
    from rooflake.views.whatif import whatif

    __version__: str

#: public name -> (module, its name there); imported on first use (PEP 562). No name here is also the name of a
#: subpackage or module of rooflake: importing one would replace the name's value by the module.
_WHERE: dict[str, tuple[str, str]] = {
    "Store": ("rooflake.store", "Store"),
    "ingest_file": ("rooflake.pipeline", "ingest_file"),
    "roofline": ("rooflake.views.roofline", "roofline"),
    "layers": ("rooflake.views.layers", "layers"),
    "time_roofline": ("rooflake.views.time_roofline", "time_roofline"),
    "trajectory": ("rooflake.views.trajectory", "trajectory"),
    "compare": ("rooflake.views.compare", "compare"),
    "checks": ("rooflake.views.checks", "checks"),
    "whatif": ("rooflake.views.whatif", "whatif"),
    "report": ("rooflake.views.report", "report"),
    "machine_ceilings": ("rooflake.views.ceilings", "machine_ceilings"),
    "run_list": ("rooflake.views.runs", "run_list"),
    "report_html": ("rooflake.reporting", "report_html"),
    "annotate": ("rooflake.instrument.annotate", "annotate"),
    "estimate": ("rooflake.instrument.estimate", "estimate"),
    "profile": ("rooflake.instrument.profiling", "profile"),
    "measure_ceilings": ("rooflake.instrument.ceilings", "measure"),
}


def __getattr__(name: str) -> Any:
    """A public name, its module imported on first use; ``__version__`` from the installed distribution."""
    if name == "__version__":
        from importlib.metadata import version

        return version("rooflake")
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(where[0]), where[1])
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE, "__version__"])


__all__ = [
    "Store",
    "annotate",
    "checks",
    "compare",
    "estimate",
    "ingest_file",
    "layers",
    "machine_ceilings",
    "measure_ceilings",
    "profile",
    "report",
    "report_html",
    "roofline",
    "run_list",
    "time_roofline",
    "trajectory",
    "whatif",
]
