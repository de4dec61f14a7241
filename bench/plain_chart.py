"""The floor of a chart (bench_store.py): a plain Altair + vl-convert roofline PNG of one run, its kernels' points read
from the run's Parquet file with DuckDB, one roof line. Usage: plain_chart.py STORE RUN_ID OUT.png"""

import sys

import altair as alt
import duckdb
import vl_convert as vlc

store, run, out = sys.argv[1:4]
rows = duckdb.sql(
    f"SELECT name, flops_fp32 + flops_fp64 + coalesce(flops_fp16, 0) AS flops, bytes_dram, duration_ns "
    f"FROM read_parquet('{store}/kernels/run_id={run}/*.parquet') WHERE bytes_dram > 0"
).fetchall()
data = [{"name": n, "ai": f / b, "flops_per_s": f / (d * 1e-9)} for n, f, b, d in rows if f and b and d]
points = (
    alt.Chart(alt.Data(values=data))
    .mark_point(filled=True, size=60)
    .encode(
        x=alt.X("ai:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)"),
        y=alt.Y("flops_per_s:Q", scale=alt.Scale(type="log"), title="FLOP/s"),
        tooltip=["name:N"],
    )
)
roof = (
    alt.Chart(alt.Data(values=[{"ai": 0.01, "p": 1e10}, {"ai": 10, "p": 1e13}, {"ai": 1000, "p": 1e13}]))
    .mark_line()
    .encode(x="ai:Q", y="p:Q")
)
png = vlc.vegalite_to_png((roof + points).properties(width=800, height=500).to_json(), scale=2)
with open(out, "wb") as f:
    f.write(png)
