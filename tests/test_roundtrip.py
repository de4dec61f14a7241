"""Values survive Parquet -> DuckDB exactly: NaN, +-inf, int64/uint64 extremes, unicode kernel names."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflake import queries
from rooflake.store import Store

from _support import tiny_run

doubles = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 5e-324, 1.7976931348623157e308]
)
int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.sampled_from([-(2**63), 2**63 - 1, 0])
uint64s = st.integers(min_value=0, max_value=2**64 - 1) | st.sampled_from([2**64 - 1, 2**53 + 1])
names = st.text(min_size=0, max_size=40)  # any unicode, including NUL, surrogates excluded by hypothesis


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(doubles, int64s, uint64s, names, doubles), min_size=1, max_size=8),
)
def test_values_round_trip(rows: list[tuple[float, int, int, str, float]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        kernels = [
            {"kernel_id": i, "name": name, "duration_ns": dur, "grid_size": grid, "flops_fp32": fl}
            for i, (dur, grid, _, name, fl) in enumerate(rows)
        ]
        metrics = [
            {"kernel_id": i, "metric_name": f"m{i}", "kind": "uint64", "value_double": dur, "value_uint64": u}
            for i, (dur, _, u, _, _) in enumerate(rows)
        ]
        tiny_run(root, "c" * 16, kernels, [], metrics)
        con = queries.connect(Store(root))
        got = con.execute(
            "SELECT kernel_id, name, duration_ns, grid_size, flops_fp32, isnan(duration_ns) FROM kernels ORDER BY kernel_id"
        ).fetchall()
        assert len(got) == len(rows)
        for (_kid, name, dur, grid, fl, dur_isnan), (edur, egrid, _, ename, efl) in zip(
            got, rows, strict=True
        ):
            assert name == ename
            assert same(dur, edur) and same(fl, efl)
            assert dur_isnan == math.isnan(edur)  # NaN stays visible to SQL predicates
            assert grid == egrid
        got_m = con.execute("SELECT value_uint64, value_double FROM metrics ORDER BY kernel_id").fetchall()
        for (u, dv), (edur, _, eu, _, _) in zip(got_m, rows, strict=True):
            assert u == eu and same(dv, edur)
        # filters see NaN as NaN (no min/max statistics folding)
        n_nan = con.execute("SELECT count(*) FROM kernels WHERE isnan(duration_ns)").fetchone()[0]
        assert n_nan == sum(math.isnan(r[0]) for r in rows)
