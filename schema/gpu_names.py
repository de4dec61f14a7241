"""How a device name is written before the datasheet catalog's ``match`` patterns see it: one rule, for Python
(:func:`normalise`) and for SQL (the ``datasheet_name`` macro, :func:`datasheet_name_macro`, made from the same
pattern and words, so the two cannot drift). No import beyond the standard library: the queries' macros are made
from it on every connection."""

from __future__ import annotations

import re

#: what splits a name into words (anything that is not a lower-case letter or a digit, after lower-casing)
SPLIT = "[^a-z0-9]+"
#: vendor and brand words a catalog pattern never holds
DROP_WORDS = ("nvidia", "tesla", "geforce")


def normalise(name: str) -> str:
    """A device name as the catalog's ``match`` patterns see it: lower case, words split on anything that is not a
    letter or digit, vendor and brand words dropped (``NVIDIA GeForce RTX 4060 Ti`` -> ``rtx 4060 ti``,
    ``NVIDIA A100-PCIE-40GB`` -> ``a100 pcie 40gb``)."""
    words = re.split(SPLIT, name.lower())
    return " ".join(w for w in words if w and w not in DROP_WORDS)


def datasheet_name_macro() -> str:
    """SQL creating the scalar macro ``datasheet_name(name)``: :func:`normalise` in DuckDB ('NVIDIA H100 80GB
    HBM3' -> 'h100 80gb hbm3'), used by query ``datasheet_gpu``."""
    words = ", ".join(f"'{w}'" for w in DROP_WORDS)
    return (
        "-- datasheet_name(name): a device name as the datasheet catalog's `match` patterns see it (made by\n"
        "-- rooflake.schema.gpu_names.datasheet_name_macro from the rule normalise follows).\n"
        "CREATE MACRO datasheet_name(name) AS array_to_string(list_filter(string_split_regex(lower(name), "
        f"'{SPLIT}'), lambda w: w <> '' AND w NOT IN ({words})), ' ');\n"
    )
