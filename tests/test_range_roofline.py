"""`range_roofline` judges each layer against the measured roof of its own precision (the estimates' dtype: a
bfloat16 model against the BF16 ceiling `rl ceilings measure` measured, never FP32), says which ceiling it used, gives
NULL with the reason where that precision was not measured, and keeps only the layers of one NVTX domain with
`$domain` (golden, on the tiny runs of tests/test_profile_range_queries.py plus a second domain and a bf16 model)."""

from __future__ import annotations

import pytest
from test_profile_range_queries import KEY, _publish, _table
from test_profile_range_queries import store as store  # noqa: F401 - the tiny store fixture

from rooflake import queries
from rooflake.schema import CEILINGS, ESTIMATES, RANGES
from rooflake.store import Store

# forward(conv) twice in domain `other` on another run, and conv's estimates in bfloat16
BF16_PEAK, FP32_PEAK = 200.0e9, 50.0e9


def _add_bf16(store: Store) -> None:
    est = [{"op_id": 0, "module_path": "conv", "phase": "forward", "flops": 1000.0, "bytes_compulsory": 100,
            "dtype": "bfloat16"},
           {"op_id": 1, "module_path": "conv", "phase": "forward", "flops": 10.0, "bytes_compulsory": 4,
            "dtype": "float32"}]  # fmt: skip
    _publish(store, "e2", "torch-model", estimates=_table(ESTIMATES, est, run_id="e2"))
    ceil = [
        {"ceiling": "BF16", "kind": "compute", "value": BF16_PEAK, "unit": "FLOP/s", "source": "measured"}
    ]
    _publish(store, "c2", "measured-json", ceilings=_table(CEILINGS, ceil, run_id="c2", machine_key=KEY))


def _rows(store: Store, sql: str, **params: object) -> dict[str, dict]:
    return {r["layer"]: r for r in queries.execute(store, sql, {"k": KEY, **params}).to_pylist()}


def test_bf16_layers_take_the_measured_bf16_roof(store: Store) -> None:  # noqa: F811
    _add_bf16(store)
    conv = _rows(store, "SELECT * FROM range_roofline('r1', 'e2', $k)")["m:forward/conv"]
    # bfloat16 carries 1000 of the layer's 1010 FLOPs: its roof is BF16 (200 GFLOP/s), not FP32 (50)
    assert (conv["dtype"], conv["ceiling"], conv["peak_reason"]) == ("bfloat16", "BF16", None)
    assert conv["flops"] == 1010.0 and conv["bytes"] == 104 and conv["peak_flops_per_s"] == BF16_PEAK
    ai = 1010.0 / 104
    assert conv["attainable_flops_per_s"] == min(BF16_PEAK, ai * 10e9)
    assert conv["t_min_ns"] == max(1010.0 / BF16_PEAK, 104 / 10e9) * 1e9 and conv["bound"] == "L2"
    # an explicit $ceiling is the roof of every layer
    fp32 = _rows(store, """SELECT * FROM range_roofline('r1', 'e2', $k, "$ceiling" := 'FP32')""")[
        "m:forward/conv"
    ]
    assert (fp32["ceiling"], fp32["peak_flops_per_s"]) == ("FP32", FP32_PEAK)


def test_a_precision_not_measured_is_null_with_the_reason(store: Store) -> None:  # noqa: F811
    est = [{"op_id": 0, "module_path": "conv", "phase": "forward", "flops": 1000.0, "bytes_compulsory": 100,
            "dtype": "float16"}]  # fmt: skip
    _publish(store, "e3", "torch-model", estimates=_table(ESTIMATES, est, run_id="e3"))
    conv = _rows(store, "SELECT * FROM range_roofline('r1', 'e3', $k)")["m:forward/conv"]
    assert (conv["dtype"], conv["ceiling"]) == ("float16", "FP16")
    assert conv["peak_reason"] == (
        f"NULL: no FP16 ceiling measured for {KEY} (the float16 roof: rl ceilings measure; another precision's roof "
        "is not used)"
    )
    for col in (
        "peak_flops_per_s",
        "attainable_flops_per_s",
        "t_min_ns",
        "inefficiency",
        "bound",
        "above_roof",
    ):
        assert conv[col] is None, col
    assert conv["flops_per_s"] == 1000.0 / 25e-9 and conv["bw"] == 10e9


def test_domain_keeps_one_models_layers(store: Store) -> None:  # noqa: F811
    rows = [
        {"range_id": 1, "parent_id": None, "name": "forward", "start_ns": 0, "end_ns": 100, "depth": 0},
        {"range_id": 2, "parent_id": 1, "name": "conv", "start_ns": 10, "end_ns": 50, "depth": 1},
        {"range_id": 3, "parent_id": None, "name": "forward", "start_ns": 0, "end_ns": 60, "depth": 0,
         "domain": "x"},
    ]  # fmt: skip
    ranges = _table(RANGES, rows, run_id="r2", domain="m", kind="push_pop", thread=7, process=1)
    _publish(store, "r2", "nsys-sqlite", ranges=ranges)
    every = _rows(store, "SELECT * FROM range_roofline('r2', 'e1', $k)")
    assert set(every) == {"m:forward", "m:forward/conv", "x:forward"}
    m = _rows(store, """SELECT * FROM range_roofline('r2', 'e1', $k, "$domain" := 'm')""")
    assert m == {k: v for k, v in every.items() if k.startswith("m:")}
    x = _rows(store, """SELECT * FROM range_roofline('r2', 'e1', $k, "$domain" := $d)""", d="x")
    assert set(x) == {"x:forward"} and x["x:forward"]["time_ns"] == 60.0


@pytest.mark.parametrize("domain", ["nope"])
def test_an_unknown_domain_has_no_layers(store: Store, domain: str) -> None:  # noqa: F811
    assert _rows(store, """SELECT * FROM range_roofline('r1', 'e1', $k, "$domain" := $d)""", d=domain) == {}
