"""Print docs/model.md's "predicted vs measured" tables from the real Nsight Compute fixtures (run from the project
root: ``.venv/bin/python docs/predicted_vs_measured.py``). Every number comes from
:func:`rooflake.instrument.validate.fixture_rows` over ``rooflake.ingest.read`` of the reports in
``../shared/fixtures/ncu``; tests/test_model_validation.py asserts the same ratios."""

from __future__ import annotations

from pathlib import Path

from rooflake import ingest
from rooflake.instrument import validate

NCU = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "ncu"
LABEL = {"flops": "FLOPs", "l1_read": "L1 reads", "l2_read": "L2 reads", "dram_read": "DRAM reads",
         "dram": "DRAM read+write"}  # fmt: skip


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def main() -> None:
    shapes, table = [], []
    for fk in validate.FIXTURE_KERNELS:
        tables = ingest.read(NCU / fk.report, run_id="0" * 16)
        rows = validate.fixture_rows(fk, tables["kernels"], tables["metrics"])
        gpu, source = rows[0]["gpu"], rows[0]["gpu_source"]
        dims = "×".join(str(d) for d in fk.dims)
        shapes.append(
            f"| `{fk.report}` | {fk.kernel} | {fk.op} {dims}, {fk.elem_bytes} B/element, tile "
            f"{'—' if fk.tile is None else 'x'.join(map(str, fk.tile))} | {fk.derivation} | {gpu.name}: "
            f"{gpu.sm_count} SMs, L2 {gpu.l2_bytes:,} B ({source}) |"
        )
        for r in rows:
            ratio = (
                "—" if r["ratio"] is None else f"{r['ratio']:.2f}" + ("" if r["within_2x"] else " **>2×**")
            )
            table.append(
                f"| `{fk.report}` | {fk.kernel} #{r['kernel_id']} | {LABEL[r['quantity']]} | "
                f"{_num(r['predicted'])} | {_num(r['measured'])} | {ratio} |"
            )
    print("| fixture | kernel | problem | how the shape was derived | GPU (SM count, L2) |")
    print("|---|---|---|---|---|")
    print("\n".join(shapes))
    print()
    print("| fixture | kernel #launch | quantity | predicted | measured | measured ÷ predicted |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))


if __name__ == "__main__":
    main()
