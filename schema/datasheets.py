"""The datasheet catalog: vendor peak rates of common NVIDIA GPUs, each number with its public source.

Data (reviewed by hand, shipped in the package):
- ``datasheet_gpus.csv``: one row per GPU model: ``gpu`` (catalog key), ``match`` (regular expression over the
  normalised device name, see :func:`normalise`), ``compute_capability``, ``architecture``, ``source_url``, ``note``.
- ``datasheets.csv``: one row per number: ``gpu``, ``quantity`` (a rooflake ceiling name — ``FP64``, ``FP32``,
  ``TENSOR <SRC>``, ``DRAM`` — or a property: ``SM_COUNT``, ``L2_BYTES``, ``BOOST_CLOCK``,
  ``TENSOR_BOOST_CLOCK``, ``BASE_CLOCK``, ``MEMORY_CLOCK``, ``NVLINK``: the GPU's NVLink bandwidth as printed,
  both directions together, the roof of a collective's bus bandwidth at half of it), ``published`` (the text as printed, ``*`` = with 2:4
  sparsity), ``value`` and ``unit`` (as published: TFLOP/s, PFLOP/s, TOP/s, GB/s, MHz, byte, count), ``basis``
  (``dense`` as printed; ``sparse/2`` where the datasheet prints only the sparse rate and its footnote says dense
  is half; ``derived`` for a number computed from published ones, the formula in ``note``; ``third-party`` where no
  NVIDIA document was checked: a review, or the driver's ``device__attribute_*`` in a public ncu report of that
  GPU), ``source_url``, ``checked_in`` (the page the number was checked against during review), ``note``.

Tensor-Core roofs are the dense rates. Compute peaks hold at the boost clock (``BOOST_CLOCK``), except where NVIDIA
quotes the low-precision Tensor-Core rates (every ``TENSOR <SRC>`` but FP64) at a lower clock,
``TENSOR_BOOST_CLOCK`` (H100 SXM5: 1830 MHz, 989.5 TFLOP/s dense BF16 = 132 SMs x 4096 FLOP/clk x 1.83 GHz, while
FP32 and FP64 hold at 1980 MHz; an H100's own ncu report, tests/data/gpu, gives 540,672 FLOP/clk, so the per-clock
rates agree only at 1.83 GHz). A report's peak at its own clock relates to them by the ratio of the clocks.
Cells that could not be sourced are absent, never guessed.
"""

from __future__ import annotations

import csv
import json
import re
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from typing import Any

import pyarrow as pa

from rooflake.schema.gpu_names import normalise

GPUS_FILE = "datasheet_gpus.csv"
NUMBERS_FILE = "datasheets.csv"
# published unit -> (base unit, factor)
UNITS: dict[str, tuple[str, Decimal]] = {
    "TFLOP/s": ("FLOP/s", Decimal(10) ** 12),
    "PFLOP/s": ("FLOP/s", Decimal(10) ** 15),
    "TOP/s": ("op/s", Decimal(10) ** 12),
    "POP/s": ("op/s", Decimal(10) ** 15),
    "GB/s": ("byte/s", Decimal(10) ** 9),
    "MHz": ("Hz", Decimal(10) ** 6),
    "byte": ("byte", Decimal(1)),
    "count": ("count", Decimal(1)),
}
PROPERTIES = (
    "SM_COUNT",
    "L2_BYTES",
    "BOOST_CLOCK",
    "TENSOR_BOOST_CLOCK",
    "BASE_CLOCK",
    "MEMORY_CLOCK",
    "NVLINK",
)


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files(__package__ or "rooflake.schema").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


@lru_cache(maxsize=1)
def gpus() -> tuple[dict[str, str], ...]:
    """The catalog's GPU models (rows of ``datasheet_gpus.csv``), in file order."""
    return tuple(_rows(GPUS_FILE))


@lru_cache(maxsize=1)
def numbers() -> pa.Table:
    """Every catalog number in base units.

    Columns: gpu, quantity, value (float64, base units), unit (FLOP/s, op/s, byte/s, Hz, byte, count), published
    (text as printed), published_unit, basis, source_url, checked_in, note. Raises ``ValueError`` for a unit the
    catalog does not know (a broken data file, caught by the tests).
    """
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "gpu",
            "quantity",
            "value",
            "unit",
            "published",
            "published_unit",
            "basis",
            "source_url",
            "checked_in",
            "note",
        )
    }
    for r in _rows(NUMBERS_FILE):
        base, factor = UNITS[r["unit"]]
        cols["gpu"].append(r["gpu"])
        cols["quantity"].append(r["quantity"])
        cols["value"].append(float(Decimal(r["value"]) * factor))
        cols["unit"].append(base)
        cols["published"].append(r["published"])
        cols["published_unit"].append(r["unit"])
        for k in ("basis", "source_url", "checked_in"):
            cols[k].append(r[k])
        cols["note"].append(r["note"] or None)
    return pa.table(cols)


def match(name: str | None, compute_capability: str | None = None) -> str | None:
    """The catalog GPU whose ``match`` pattern matches the whole normalised ``name`` (and whose compute capability
    equals ``compute_capability`` when both are known), or None."""
    if not name:
        return None
    norm = normalise(name)
    for g in gpus():
        if re.fullmatch(g["match"], norm) and (
            compute_capability is None or g["compute_capability"] == compute_capability
        ):
            return g["gpu"]
    return None


def candidates(text: str) -> list[str]:
    """Catalog GPUs whose key or match pattern contains ``text`` (case-insensitive words), for a user's ``--gpu``
    that names no model exactly (``A100`` -> the four A100 variants)."""
    norm = normalise(text)
    exact = match(text)
    if exact:
        return [exact]
    return [g["gpu"] for g in gpus() if norm and (norm in normalise(g["gpu"]) or norm in g["match"])]


def one_gpu(text: str, option: str = "--gpu") -> str:
    """The one catalog GPU that a user's ``option`` value ``text`` names (a device name such as ``NVIDIA
    A100-SXM4-40GB``, or a catalog key: :func:`candidates`). Raises :class:`rooflake.schema.BadArgument` when it
    names none (the message lists the catalog) or several (it lists them)."""
    from rooflake.schema.errors import BadArgument

    found = candidates(text)
    if len(found) != 1:
        hint = f"one of {', '.join(found)}" if found else f"known: {', '.join(g['gpu'] for g in gpus())}"
        raise BadArgument(f"{option} {text!r} matches {len(found)} GPUs of the datasheet catalog ({hint})")
    return found[0]


def _clock(row: dict[str, Any], boost: dict[str, Any], tensor_boost: dict[str, Any]) -> Any:
    """The clock (Hz) a catalog compute peak holds at: the Tensor-Core boost clock for a low-precision
    ``TENSOR <SRC>`` row of a GPU that has one (module docstring), else the boost clock; None without either."""
    low_precision_tensor = row["quantity"].startswith("TENSOR ") and row["quantity"] != "TENSOR FP64"
    if low_precision_tensor and row["gpu"] in tensor_boost:
        return tensor_boost[row["gpu"]]
    return boost.get(row["gpu"])


@lru_cache(maxsize=1)
def ceilings() -> pa.Table:
    """The catalog's ceilings, one row per GPU x ceiling (properties excluded).

    Columns: gpu, compute_capability, ceiling (FP64, FP32, TENSOR <SRC> as ncu's roofs name the source type, DRAM), kind (compute | bandwidth), value
    (FLOP/s, op/s or byte/s; dense), unit, clock_hz (the boost clock compute peaks hold at: ``TENSOR_BOOST_CLOCK``
    for the low-precision Tensor-Core rows where the catalog has one, else ``BOOST_CLOCK``; NULL for DRAM and where
    the catalog has no clock), formula ("datasheet: <published> [<unit>], <basis>"), source
    ('datasheet'), source_name (the published text), details (JSON: source_url, checked_in, basis, note).
    """
    nums = numbers().to_pylist()
    cc = {g["gpu"]: g["compute_capability"] for g in gpus()}
    boost = {r["gpu"]: r["value"] for r in nums if r["quantity"] == "BOOST_CLOCK"}
    tensor_boost = {r["gpu"]: r["value"] for r in nums if r["quantity"] == "TENSOR_BOOST_CLOCK"}
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "gpu",
            "compute_capability",
            "ceiling",
            "kind",
            "value",
            "unit",
            "clock_hz",
            "formula",
            "source",
            "source_name",
            "details",
        )
    }
    for r in nums:
        if r["quantity"] in PROPERTIES:
            continue
        kind = "bandwidth" if r["unit"] == "byte/s" else "compute"
        details = {k: r[k] for k in ("source_url", "checked_in", "basis", "note") if r[k]}
        row = {
            "gpu": r["gpu"],
            "compute_capability": cc.get(r["gpu"]),
            "ceiling": r["quantity"],
            "kind": kind,
            "value": r["value"],
            "unit": r["unit"],
            "clock_hz": _clock(r, boost, tensor_boost) if kind == "compute" else None,
            "formula": f"datasheet: {r['published']} [{r['published_unit']}], {r['basis']}",
            "source": "datasheet",
            "source_name": r["published"],
            "details": json.dumps(details, sort_keys=True),
        }
        for k, v in row.items():
            out[k].append(v)
    return pa.table(out)


def tables() -> dict[str, pa.Table]:
    """The catalog as tables, for SQL (``rl sql "select * from datasheets"``; registered by
    :func:`rooflake.queries.connect`): ``datasheets`` = :func:`numbers` (every number in base units, with its
    published text and source) with the GPU's compute_capability and architecture; ``datasheet_gpus`` = the GPU
    models (gpu, match, compute_capability, architecture, source_url, note; all text)."""
    models = gpus()
    cols = list(models[0]) if models else []
    gpu_table = pa.table(
        {c: [g[c] for g in models] for c in cols}, schema=pa.schema([(c, pa.string()) for c in cols])
    )
    info = {g["gpu"]: g for g in models}
    nums = numbers()
    for col in ("compute_capability", "architecture"):
        values = [info.get(g, {}).get(col) for g in nums.column("gpu").to_pylist()]
        nums = nums.append_column(col, pa.array(values, pa.string()))
    return {"datasheets": nums, "datasheet_gpus": gpu_table}
